"""How the pieces of a record are labelled, whatever the tokenizer: the text each covers, "▁" marking a word start.

The toolkit's word functions (`vaswani_inspect.words`) read a side's words from its piece labels in the Metaspace
convention of sentencepiece: a piece that starts a word begins with "▁" (``["▁el", "▁g", "ato"]``). Tokenizers of
that family (ours, Marian, M2M100/NLLB, mBART, T5) label their pieces so already, and their labels are kept as
they are. Others mark words otherwise, or not at all: byte-level BPE (BART, RoBERTa, GPT-2) writes a space as
"Ġ" and an accented letter as two symbols ("comiÃ³"), WordPiece marks a continuation with "##". For those, each
piece is relabelled with the text it covers, read from the tokenizer's character offsets (``offset_mapping`` of
a fast tokenizer), or, for a tokenizer without offsets, by decoding the pieces one by one; "▁" is put in front of
a piece that follows a space. Special tokens keep their names.

    >>> piece_labels(bart_tokenizer, bart_tokenizer("El gato comió.")["input_ids"])
    ['<s>', '▁El', '▁gato', '▁com', 'i', 'ó', '.', '</s>']     # (a tokenizer's pieces, relabelled)

A character split over several pieces (one byte each) is labelled on its last piece; the others cover no
character and belong to the word of the next piece.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

__all__ = ["METASPACE", "is_metaspace_tokenizer", "mark_task_prefix", "piece_labels", "piece_spans"]

METASPACE = "▁"


def is_metaspace_tokenizer(tokenizer: Any) -> bool:
    """Whether the tokenizer's pieces mark a word start with "▁" (sentencepiece, or a Metaspace pre-tokenizer)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        parts = [getattr(backend, "pre_tokenizer", None), getattr(backend, "decoder", None)]
        if any(part is not None and "Metaspace" in repr(part) for part in parts):
            return True
        if any(part is not None and ("ByteLevel" in repr(part) or "WordPiece" in repr(part)) for part in parts):
            return False
    vocabulary_file = str(getattr(tokenizer, "vocab_file", "") or "")
    has_sentencepiece = any(hasattr(tokenizer, name) for name in ("sp_model", "spm_source", "spm_target"))
    return has_sentencepiece or os.path.splitext(vocabulary_file)[1] == ".model"


def piece_labels(tokenizer: Any, ids: Sequence[int]) -> list[str]:
    """The label of each piece of `ids` (module docstring): the tokenizer's own piece for a Metaspace tokenizer or
    a special token, else "▁" (when the piece starts a word) followed by the text the piece covers."""
    ids = [int(i) for i in ids]
    tokens = [str(token) for token in tokenizer.convert_ids_to_tokens(ids)]
    if is_metaspace_tokenizer(tokenizer):
        return tokens
    text, spans = piece_spans(tokenizer, ids)
    labels = []
    for token, span in zip(tokens, spans):
        if span is None:
            labels.append(token)
            continue
        start, end = span
        covered = text[start:end]
        words = covered.lstrip()
        starts_word = bool(words) and (words != covered or start == 0 or text[start - 1].isspace())
        labels.append((METASPACE if starts_word else "") + words.rstrip())
    return labels


def piece_spans(tokenizer: Any, ids: Sequence[int]) -> tuple[str, list[tuple[int, int] | None]]:
    """(the text `ids` spell, special tokens left out; each piece's character span in it, None for a special
    token). Spans come from the tokenizer's offsets when re-encoding the text gives the same pieces, else from
    decoding the pieces one by one. Spans never overlap: a character shared by several pieces is the last one's."""
    ids = [int(i) for i in ids]
    specials = set(getattr(tokenizer, "all_special_ids", []) or [])
    unknown = getattr(tokenizer, "unk_token_id", None)
    kept = [i for i, token_id in enumerate(ids) if token_id not in specials or token_id == unknown]
    pieces = [ids[i] for i in kept]
    text = tokenizer.decode(pieces, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    found = _spans_from_offsets(tokenizer, text, pieces) or _spans_from_decoding(tokenizer, text, pieces)
    spans: list[tuple[int, int] | None] = [None] * len(ids)
    for position, span in zip(kept, _without_overlaps(found)):
        spans[position] = span
    return text, spans


def _spans_from_offsets(tokenizer: Any, text: str, pieces: list[int]) -> list[tuple[int, int]] | None:
    if not getattr(tokenizer, "is_fast", False):
        return None
    try:
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    except (NotImplementedError, ValueError, TypeError):
        return None
    if list(encoded["input_ids"]) != pieces:
        return None  # the text does not tokenize back to these pieces (a generated, unusual segmentation)
    return [(int(start), int(end)) for start, end in encoded["offset_mapping"]]


def _spans_from_decoding(tokenizer: Any, text: str, pieces: list[int]) -> list[tuple[int, int]]:
    """Each piece's span as the growth of the decoded prefix: the part of the prefix up to piece i + 1 that
    agrees with the whole text, minus that of the prefix up to piece i (a half-decoded character agrees with
    nothing, so its first bytes cover no character and the last one covers it)."""
    ends = []
    for count in range(1, len(pieces) + 1):
        prefix = tokenizer.decode(pieces[:count], skip_special_tokens=False, clean_up_tokenization_spaces=False)
        ends.append(_agreeing_length(prefix, text))
    spans, start = [], 0
    for end in ends:
        end = max(end, start)
        spans.append((start, end))
        start = end
    return spans


def _agreeing_length(prefix: str, text: str) -> int:
    length = 0
    for a, b in zip(prefix, text):
        if a != b:
            break
        length += 1
    return length


def _without_overlaps(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Cut each span where the next one starts, so that a shared character belongs to the last piece only."""
    result = list(spans)
    for i in range(len(result) - 2, -1, -1):
        start, end = result[i]
        following = result[i + 1][0]
        if end > following and following >= start:
            result[i] = (start, following)
    return result


def mark_task_prefix(record: Any, tokenizer: Any, direction: Any) -> None:
    """Label the pieces of a task prefix (T5's "translate English to German: ") as special tokens, ``⟨▁translate⟩``:
    the model reads them, so they keep their attention, but they are an instruction, not words of the sentence."""
    if direction is None or direction.scheme != "task_prefix" or not direction.source_prefix.strip():
        return
    prefix_ids = list(tokenizer(direction.source_prefix.strip(), add_special_tokens=False)["input_ids"])
    if not prefix_ids or record.source_ids[: len(prefix_ids)] != prefix_ids:
        return  # the prefix was segmented with the sentence: its pieces cannot be told apart, leave them
    labels = [f"⟨{token}⟩" for token in record.source_tokens[: len(prefix_ids)]]
    record.source_tokens = [*labels, *record.source_tokens[len(prefix_ids) :]]
    record.special_tokens = list(dict.fromkeys([*record.special_tokens, *labels]))
