"""`compare_bert`: our Transformer and a BERT read the same English sentences, and their heads are compared at the
word level. Its steps: check the input, prepare the sentences (`prepare`), run both models (`passes`), compare the
heads of each attention kind (`comparison`)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any

from ..record import AttentionRecord
from .comparison import HeadComparison, compare_records
from .distances import Specials
from .errors import CompareInputError
from .models import DECODER_DIRECTION, ENCODER_DIRECTION, ensure_eager_attention, family_name, max_positions
from .passes import collect_records, translate_missing
from .prepare import OnLong, PreparedSentence, prepare_sentences
from .result import CompareResult
from .sentences import Sentence, as_sentences

__all__ = ["compare_bert"]


def compare_bert(
    sentences: Sequence[Sentence | str],
    model: Any,
    tokenizer: Any,
    bert: Any,
    bert_tokenizer: Any,
    *,
    decoder: bool = False,
    specials: Specials = "drop",
    batch_size: int = 16,
    on_long: OnLong = "skip",
    progress: bool = True,
    model_name: str = "ours",
    bert_name: str = "bert",
) -> CompareResult:
    """Run our model and BERT on the same English sentences and compare their heads at the word level.

    Args:
        sentences: `Sentence`s (`read_sentences`) or plain strings.
        model / tokenizer: our translation model (`load_ours`); bert / bert_tokenizer: a BERT-family encoder
            (`load_bert`: BERT, RoBERTa, XLM-RoBERTa, DistilBERT, ELECTRA, DeBERTa-v2), switched to eager attention
            if it was loaded with a fused kernel (said in the notes).
        decoder: also compare our decoder's self-attention (English teacher-forced, es->en) with causally masked
            BERT.
        specials: "drop" (default) or "keep": the special-token slots in the distance (`vaswani_inspect.compare`,
            Special tokens).
        batch_size: sentences per forward pass.
        on_long: "skip" (warn, list in the result) or "error" for sentences longer than either model accepts.
        progress: show a tqdm progress bar over the sentences.
        model_name / bert_name: stored in the records and the report.

    Returns:
        A `CompareResult`: one `HeadComparison` per attention kind, the sentences compared and skipped, the
        settings, timings (seconds) and notes on what was merged, translated or cut.

    Raises:
        CompareInputError: no sentences, or none left to compare; a too-long one with `on_long="error"`; a
            tokenizer that cannot give character offsets.
        ValueError: an unknown `specials` or `on_long`, or `batch_size` < 1.
    """
    _check_options(specials, batch_size, on_long)
    sentences = as_sentences(sentences)
    _check_inputs(sentences, tokenizer, bert_tokenizer)
    timings: dict[str, float] = {}
    notes: list[str] = []
    switched = ensure_eager_attention(bert)
    if switched:
        notes.append(f"bert: switched from {switched} to eager attention (the fused kernel returns no weights)")
    clock = time.perf_counter()
    items, skipped = _comparable_sentences(sentences, model, tokenizer, bert, bert_tokenizer, decoder, on_long, notes)
    timings["tokenize_and_align"] = time.perf_counter() - clock
    spanish: list[str] = []
    if decoder:
        clock = time.perf_counter()
        spanish = translate_missing(model, tokenizer, items, batch_size, progress, notes)
        timings["translate_for_decoder"] = time.perf_counter() - clock
    kinds = ["encoder", "decoder"] if decoder else ["encoder"]
    records = collect_records(
        model,
        tokenizer,
        bert,
        items,
        spanish,
        kinds,
        batch_size=batch_size,
        progress=progress,
        names=(model_name, bert_name),
        timings=timings,
        notes=notes,
    )
    clock = time.perf_counter()
    comparisons = _compare_heads(records, specials, (model_name, bert_name))
    timings["distances_and_mds"] = time.perf_counter() - clock
    return CompareResult(
        comparisons=comparisons,
        sentences=[item.sentence for item in items],
        skipped=skipped,
        settings=_settings(model_name, bert_name, bert, decoder, specials, batch_size, on_long, len(sentences)),
        timings=timings,
        notes=notes,
    )


def _check_options(specials: str, batch_size: int, on_long: str) -> None:
    if on_long not in ("skip", "error"):
        raise ValueError(f"on_long must be 'skip' or 'error', got {on_long!r}.")
    if specials not in ("drop", "keep"):
        raise ValueError(f"specials must be 'drop' or 'keep', got {specials!r}.")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}.")


def _check_inputs(sentences: Sequence[Sentence], tokenizer: Any, bert_tokenizer: Any) -> None:
    if not sentences:
        raise CompareInputError("No sentences to compare.")
    # (our side may be a slow sentencepiece tokenizer, as Marian's: its pieces' spans come from decoding them)
    if not getattr(bert_tokenizer, "is_fast", False):
        raise CompareInputError(
            "the BERT tokenizer is not a fast tokenizer: character offsets are needed to find words."
        )


def _comparable_sentences(
    sentences: Sequence[Sentence],
    model: Any,
    tokenizer: Any,
    bert: Any,
    bert_tokenizer: Any,
    decoder: bool,
    on_long: OnLong,
    notes: list[str],
) -> tuple[list[PreparedSentence], list[dict[str, Any]]]:
    """The sentences both models can read, and the skipped ones (each with a warning)."""
    from hf_vaswani.directions import resolve_direction

    try:  # how our model reads the English: as a source (en->es), and as a translation (es->en)
        directions = (
            resolve_direction(model, tokenizer, ENCODER_DIRECTION),
            resolve_direction(model, tokenizer, DECODER_DIRECTION) if decoder else None,
        )
    except ValueError as error:
        raise CompareInputError(
            f"The comparison reads English through the model's encoder ({ENCODER_DIRECTION}) and, with the decoder, "
            f"its decoder ({DECODER_DIRECTION}): {error}"
        ) from None
    items, skipped, merged = prepare_sentences(
        sentences,
        tokenizer,
        bert_tokenizer,
        ours_limit=max_positions(model),
        bert_limit=max_positions(bert, bert_tokenizer),
        decoder=decoder,
        on_long=on_long,
        directions=directions,
    )
    for entry in skipped:
        # stacklevel 3: the warning points at the caller of compare_bert.
        warnings.warn(f"compare-bert: skipping line {entry['line']} ({entry['reason']}).", stacklevel=3)
    if not items:
        raise CompareInputError(f"None of the {len(sentences)} sentences can be compared (all were skipped).")
    if merged:
        notes.append(
            f"words: in {merged} of {len(items)} sentences a piece of one tokenizer spans two words (e.g. our piece "
            "'▁him.'), so those words were merged into one for both models"
        )
    return items, skipped


def _compare_heads(
    records: dict[str, tuple[list[AttentionRecord], list[AttentionRecord]]],
    specials: Specials,
    model_names: tuple[str, str],
) -> dict[str, HeadComparison]:
    """One `HeadComparison` of our heads with BERT's per attention kind."""
    return {
        kind: compare_records(
            ours,
            bert,
            kind,
            kind,
            specials=specials,
            names=("ours", "bert"),
            model_names=model_names,
            kind=kind,
        )
        for kind, (ours, bert) in records.items()
    }


def _settings(
    model_name: str,
    bert_name: str,
    bert: Any,
    decoder: bool,
    specials: str,
    batch_size: int,
    on_long: str,
    sentences_read: int,
) -> dict[str, Any]:
    """The settings of a run, as report.json lists them."""
    return {
        "model": model_name,
        "bert": bert_name,
        "bert_family": family_name(getattr(bert.config, "model_type", None)),
        "decoder": decoder,
        "specials": specials,
        "batch_size": batch_size,
        "on_long": on_long,
        "sentences_read": sentences_read,
        "encoder_direction": f"{ENCODER_DIRECTION} (source '>>es<< sentence')",
        "decoder_direction": f"{DECODER_DIRECTION} (decoder reads '<s> sentence </s>')" if decoder else None,
        "words": "split_words + shared_words (see vaswani_inspect.compare)",
        "word_merge": "to a word: sum over pieces; from a word: mean over pieces",
    }
