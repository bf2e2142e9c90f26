"""The words both models are compared on: one split of the sentence that every tokenizer's pieces respect.

The sentence is split once (`split_words`), each model's pieces are located in it through the tokenizer's character
offsets (`encode_pieces`), neighbouring words that a piece straddles are merged for every model (`shared_words`),
and each tokenization's pieces are grouped by word, its special tokens into a start and an end slot
(`word_groups`). The package docstring of `vaswani_inspect.compare` gives the rules with examples.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import CompareInputError

__all__ = ["Pieces", "Span", "WordGroups", "encode_pieces", "shared_words", "special_ids", "split_words", "word_groups"]

#: A (start, end) character range of the sentence.
Span = tuple[int, int]


def _is_edge_character(character: str) -> bool:
    """Punctuation or symbol (Unicode categories P*, S*): split off at the start and end of a word."""
    return unicodedata.category(character)[0] in ("P", "S")


def split_words(text: str) -> list[Span]:
    """The words of `text` as (start, end) character offsets (`vaswani_inspect.compare`, Words, step 1).

    >>> [text[s:e] for text in ["I don't like café, niño!"] for s, e in split_words(text)]
    ['I', "don't", 'like', 'café', ',', 'niño', '!']
    """
    spans: list[Span] = []
    for match in re.finditer(r"\S+", text):
        start, end = match.span()
        leading: list[Span] = []
        while start < end and _is_edge_character(text[start]):
            leading.append((start, start + 1))
            start += 1
        trailing: list[Span] = []
        while end > start and _is_edge_character(text[end - 1]):
            trailing.append((end - 1, end))
            end -= 1
        spans += leading
        if start < end:
            spans.append((start, end))
        spans += reversed(trailing)
    return spans


@dataclass
class Pieces:
    """One model's tokenization of one sentence, with the character span of every piece in the sentence.

    Attributes:
        tokens / ids: the pieces as the model reads them, special tokens included.
        spans: per piece, `None` for a structural special token ([CLS], `>>es<<`, `</s>`, `<s>`...) or its
            (start, end) offsets in the sentence with surrounding white space trimmed; an empty span (start == end)
            is a piece made of white space only (a lone Metaspace "▁").
    """

    tokens: list[str]
    ids: list[int]
    spans: list[Span | None]

    def __len__(self) -> int:
        return len(self.ids)


def special_ids(tokenizer: Any) -> set[int]:
    """Ids of the tokenizer's structural special tokens (the unknown token excluded: it stands for real text)."""
    unk = getattr(tokenizer, "unk_token_id", None)
    return {int(i) for i in getattr(tokenizer, "all_special_ids", []) if i is not None and i != unk}


def encode_pieces(tokenizer: Any, text: str, prefix: str = "", *, target: bool = False) -> Pieces:
    """Tokenize `prefix + text` with character offsets and express them in `text` coordinates.

    `prefix` is what the model reads before the text: a language token and a space (`">>es<< "`), or a task
    prefix (T5's `"translate English to Spanish: "`); its pieces belong to no word. `target`: tokenize the text as
    a translation (``text_target``: the target language's code and segmentation).

    A tokenizer without offsets (Marian's sentencepiece tokenizer) gets each piece's span by decoding the pieces
    one by one (`vaswani_inspect.pieces.piece_spans`), when they decode to the text itself.

    Raises:
        CompareInputError: the tokenizer has no offsets and its pieces do not decode to the text.
    """
    encode = (lambda t, **kw: tokenizer(text_target=t, **kw)) if target else (lambda t, **kw: tokenizer(t, **kw))
    try:
        encoding = encode(prefix + text, add_special_tokens=True, return_offsets_mapping=True)
    except (NotImplementedError, ValueError):
        encoding = encode(prefix + text, add_special_tokens=True)
    if "offset_mapping" not in encoding:  # (slow tokenizers leave it out, or refuse it)
        return _decoded_pieces(tokenizer, text, prefix, [int(i) for i in encoding["input_ids"]])
    ids = [int(i) for i in encoding["input_ids"]]
    specials = special_ids(tokenizer)
    tokens = tokenizer.convert_ids_to_tokens(ids)
    spans: list[Span | None] = []
    for token_id, (start, end) in zip(ids, encoding["offset_mapping"]):
        if token_id in specials or (prefix and end <= len(prefix)):
            spans.append(None)
            continue
        start, end = max(start - len(prefix), 0), max(end - len(prefix), 0)
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        spans.append((start, end))
    return Pieces(tokens=list(tokens), ids=ids, spans=spans)


def _decoded_pieces(tokenizer: Any, text: str, prefix: str, ids: list[int]) -> Pieces:
    from ..pieces import piece_spans

    spelled, found = piece_spans(tokenizer, ids)
    sentence = text.strip()
    offset = spelled.rfind(sentence) if spelled.rstrip().endswith(sentence) else -1
    if not sentence or offset < 0:
        raise CompareInputError(
            f"{type(tokenizer).__name__} gives no character offsets and its pieces spell {spelled!r}, not the "
            f"sentence {text!r}: its pieces cannot be mapped to words."
        )
    offset -= len(text) - len(text.lstrip())  # spans in `text` coordinates
    spans: list[Span | None] = []
    for span in found:
        start, end = (0, 0) if span is None else (max(span[0] - offset, 0), span[1] - offset)
        while start < end and text[start].isspace():
            start += 1
        spans.append((start, end) if start < end else None)
    return Pieces(tokens=list(tokenizer.convert_ids_to_tokens(ids)), ids=ids, spans=spans)


def shared_words(text: str, tokenizations: Sequence[Pieces]) -> list[Span]:
    """The words of `text` that every tokenization in `tokenizations` respects (`vaswani_inspect.compare`, Words,
    step 2).

    Starts from `split_words(text)`, merges neighbouring words that a piece straddles, then merges a word that some
    tokenization gives no piece for into the previous word (the next one for the first word).

    Raises:
        CompareInputError: the sentence has no words, or a tokenization has no piece for any of them.
    """
    units = split_words(text)
    if not units:
        raise CompareInputError("the sentence has no words (empty or white space only)")
    join = [False] * (len(units) - 1)  # join[i]: units i and i + 1 belong to the same word
    for pieces in tokenizations:
        for span in pieces.spans:
            if span is None or span[0] == span[1]:
                continue
            covered = [u for u, (start, end) in enumerate(units) if start < span[1] and span[0] < end]
            for u in range(min(covered, default=0), max(covered, default=0)):
                join[u] = True
    words: list[Span] = []
    for u, (start, end) in enumerate(units):
        if u > 0 and join[u - 1]:
            words[-1] = (words[-1][0], end)
        else:
            words.append((start, end))
    while True:
        missing = _first_word_without_piece(words, tokenizations)
        if missing is None:
            return words
        if len(words) == 1:
            raise CompareInputError(f"a tokenizer gives no piece for any word of {text!r}")
        if missing == 0:
            words[0:2] = [(words[0][0], words[1][1])]
        else:
            words[missing - 1 : missing + 1] = [(words[missing - 1][0], words[missing][1])]


def _word_of(words: Sequence[Span], position: int) -> int:
    for index, (start, end) in enumerate(words):
        if start <= position < end:
            return index
    raise CompareInputError(f"character {position} of the sentence is in no word")


def _first_word_without_piece(words: Sequence[Span], tokenizations: Sequence[Pieces]) -> int | None:
    for pieces in tokenizations:
        covered = {_word_of(words, span[0]) for span in pieces.spans if span is not None and span[0] < span[1]}
        for index in range(len(words)):
            if index not in covered:
                return index
    return None


@dataclass
class WordGroups:
    """Which pieces make each word of one tokenization: `start`/`end` are the special tokens before/after the words
    (the two slots), `words[i]` the piece positions of word i."""

    start: list[int]
    words: list[list[int]]
    end: list[int]

    def all(self) -> list[list[int]]:
        """`[start, *words, end]`: the groups of the word-level sequence."""
        return [self.start, *self.words, self.end]


def word_groups(pieces: Pieces, words: Sequence[Span]) -> WordGroups:
    """Map every piece of `pieces` to one of `words` (white-space-only pieces join the next word) and the special
    tokens to the start and end slots.

    Raises:
        CompareInputError: a special token sits between words, there is no special token before or after the
            words, or a word gets no piece.
    """
    groups: list[list[int]] = [[] for _ in words]
    start: list[int] = []
    end: list[int] = []
    pending: list[int] = []
    for position, span in enumerate(pieces.spans):
        if span is None:
            if any(groups) or pending:
                end.append(position)
            else:
                start.append(position)
            continue
        if end:
            raise CompareInputError(f"special token {pieces.tokens[end[0]]!r} sits between words: {pieces.tokens}")
        if span[0] == span[1]:
            pending.append(position)
            continue
        groups[_word_of(words, span[0])] += [*pending, position]
        pending = []
    if pending:
        groups[-1] += pending
    if not start or not end:
        raise CompareInputError(
            f"expected special tokens before and after the words ([CLS] ... [SEP], >>es<< ... </s> or "
            f"<s> ... </s>), got {pieces.tokens}"
        )
    empty = [i for i, group in enumerate(groups) if not group]
    if empty:
        raise CompareInputError(f"word {empty[0]} has no piece in {pieces.tokens}")
    return WordGroups(start=start, words=[sorted(g) for g in groups], end=end)
