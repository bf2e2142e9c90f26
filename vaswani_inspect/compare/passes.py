"""The forward passes: our model and BERT read the prepared sentences in batches, and every self-attention is merged
to the shared words (`collect_records`); for the decoder comparison, the Spanish sources the file does not give
come from our own en->es translation (`translate_missing`)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any

from ..extract import extract
from ..record import AttentionRecord
from .models import DECODER_DIRECTION, ENCODER_DIRECTION, bert_attention, max_positions
from .prepare import PreparedSentence
from .records import word_level_record
from .words import Pieces

__all__ = ["collect_records", "translate_missing"]


def translate_missing(
    model: Any, tokenizer: Any, items: Sequence[PreparedSentence], batch_size: int, progress: bool, notes: list[str]
) -> list[str]:
    """The Spanish source of each item for the decoder pass: the file's, else our model's en->es translation.
    What was translated (or came out empty) is added to `notes`."""
    sources = [item.sentence.spanish for item in items]
    missing = [i for i, s in enumerate(sources) if not s]
    if missing:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(missing), desc="translating en->es", unit="sentence", disable=not progress)
        fallback = 0
        for start in range(0, len(missing), batch_size):
            chunk = missing[start : start + batch_size]
            # The translation becomes a source (`>>en<< ... </s>`): keep it within the position limit.
            wanted = max(len(items[i].ours_source) for i in chunk) + 16
            limit = max_positions(model)
            records = extract(
                model,
                tokenizer,
                [items[i].sentence.text for i in chunk],
                direction=ENCODER_DIRECTION,
                generate_kwargs={"max_new_tokens": max(1, wanted if limit is None else min(wanted, limit - 2))},
                batch_size=batch_size,
            )
            for i, record in zip(chunk, records):
                if record.target_text.strip():
                    sources[i] = record.target_text
                else:  # an empty translation: let the decoder read the English with the English as source
                    sources[i] = items[i].sentence.text
                    fallback += 1
            bar.update(len(chunk))
        bar.close()
        notes.append(f"decoder: {len(missing)} Spanish sources were our model's own en->es translations")
        if fallback:
            notes.append(f"decoder: {fallback} translations were empty; those sentences used the English as source")
    return [s or "" for s in sources]


def collect_records(
    model: Any,
    tokenizer: Any,
    bert: Any,
    items: Sequence[PreparedSentence],
    spanish: Sequence[str],
    kinds: Sequence[str],
    *,
    batch_size: int,
    progress: bool,
    names: tuple[str, str],
    timings: dict[str, float],
    notes: list[str],
) -> dict[str, tuple[list[AttentionRecord], list[AttentionRecord]]]:
    """Per attention kind ("encoder", "decoder"), the word-level records of our model and of BERT, one per item.

    `spanish` holds the decoder pass's sources (`translate_missing`; unused without "decoder"); `names` the model
    names stored in the records. Seconds spent are added to `timings` (``ours_forward``, ``bert_forward``,
    ``word_merge``), and how many Spanish sources were cut to our position limit to `notes`.
    """
    from tqdm.auto import tqdm

    records: dict[str, tuple[list[AttentionRecord], list[AttentionRecord]]] = {kind: ([], []) for kind in kinds}
    timings.update(ours_forward=0.0, bert_forward=0.0, word_merge=0.0)
    truncated_sources = 0
    bar = tqdm(total=len(items), desc="compare-bert", unit="sentence", disable=not progress)
    for start in range(0, len(items), batch_size):
        batch = items[start : start + batch_size]
        for kind in kinds:
            clock = time.perf_counter()
            if kind == "encoder":
                ours = _encoder_pass(model, tokenizer, batch, batch_size)
            else:
                ours, cut = _decoder_pass(model, tokenizer, batch, spanish[start : start + batch_size], batch_size)
                truncated_sources += cut
            timings["ours_forward"] += time.perf_counter() - clock
            clock = time.perf_counter()
            bert_arrays = bert_attention(bert, [item.bert for item in batch], causal=kind == "decoder")
            timings["bert_forward"] += time.perf_counter() - clock
            clock = time.perf_counter()
            for item, record, bert_array in zip(batch, ours, bert_arrays):
                text = item.sentence.text
                records[kind][0].append(_our_word_record(kind, item, record, names[0]))
                records[kind][1].append(
                    word_level_record(kind, bert_array, item.bert, item.words, text, model_name=names[1])
                )
            timings["word_merge"] += time.perf_counter() - clock
        bar.update(len(batch))
    bar.close()
    if truncated_sources:
        notes.append(f"decoder: {truncated_sources} Spanish sources were cut to our model's position limit")
    return records


def _encoder_pass(
    model: Any, tokenizer: Any, batch: Sequence[PreparedSentence], batch_size: int
) -> list[AttentionRecord]:
    texts = [item.sentence.text for item in batch]
    # The target only feeds the decoder, which this comparison does not read: the sentence's first word keeps that
    # pass (and its vocabulary projection) short, and always fits.
    first_words = [text.split()[0] for text in texts]
    return extract(model, tokenizer, texts, first_words, direction=ENCODER_DIRECTION, batch_size=batch_size)


def _decoder_pass(
    model: Any, tokenizer: Any, batch: Sequence[PreparedSentence], sources: Sequence[str], batch_size: int
) -> tuple[list[AttentionRecord], int]:
    """Our decoder reading the English with teacher forcing; also returns how many sources were cut."""
    texts = [item.sentence.text for item in batch]
    # A Spanish source (our own translation, re-tokenized) may exceed the position limit by a token or two: it is
    # cut (it only feeds the cross-attention); the English decoder side was checked.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = extract(
            model, tokenizer, list(sources), texts, direction=DECODER_DIRECTION, batch_size=batch_size, truncation=True
        )
    cut = 0
    for warning in caught:
        if "truncated" in str(warning.message) and str(warning.message).startswith("source"):
            cut += 1
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return records, cut


def _our_word_record(kind: str, item: PreparedSentence, record: AttentionRecord, model_name: str) -> AttentionRecord:
    """Our `kind` self-attention of one sentence merged to its shared words."""
    where = f"line {item.sentence.line}"
    if kind == "encoder":
        pieces = item.ours_source
        _check_same_ids(pieces.ids, record.source_ids, where)
        attention = record.encoder
    else:
        target = item.ours_target
        assert target is not None
        _check_same_ids(target.ids[1:], record.target_ids[1:], where)
        pieces = Pieces(record.target_tokens, record.target_ids, target.spans)
        attention = record.decoder
    return word_level_record(kind, attention, pieces, item.words, item.sentence.text, model_name=model_name)


def _check_same_ids(expected: Sequence[int], got: Sequence[int], what: str) -> None:
    if list(expected) != list(got):
        raise RuntimeError(f"{what}: extract() tokenized the sentence differently from the offsets pass.")
