"""Words of a record, and word-level attention (Clark et al. 2019, "What Does BERT Look At?", sec. 4.1).

**Words.** The words of a side are the words of the text its pieces spell: the pieces are joined, "▁" read as a
space and special tokens left out, and the text is split by `hf_vaswani.data.word_alignment.word_spans`: a word is a run
of letters and digits (with inner apostrophes), and every punctuation mark is a word of its own. The pieces
`["▁¿Qué", "▁es", "▁eso", "?"]` spell " ¿Qué es eso?", whose words are ¿ Qué es eso ?; the pieces `["▁rat", "ón",
"."]` spell the words ratón and ".". These are the words that gold alignment files and guided-alignment training
index, so word indices agree everywhere (`text_words`).

Each piece belongs to one word (`hf_vaswani.data.word_alignment.token_words`): a piece that holds a word and a glued
punctuation mark ("▁¿Qué", "▁eso.") belongs to the word, so that punctuation mark is a word no piece stands for:
it is in the word list, but it has no attention row or column of its own. A piece that is only "▁" joins the next
word. An unknown piece (`<unk>`, text the tokenizer does not know) is one character: a letter inside a word
("c<unk>t"), else a symbol, i.e. a word of its own ("roja<unk>" is "roja" and "<unk>"), which is what an emoji or a
rare punctuation mark is. Special tokens (language token, `<s>`, `</s>`, `<pad>`) are no word; `to_words` keeps
them as units of their own or drops them (`special_tokens="keep" | "drop"`).

Merging a (queries, keys) attention matrix into words (`to_words`, over the words that have pieces):

* attention *to* a word (the key axis) is the **sum** over its pieces by default (`attention_to`): the weights
  stay a distribution, so every row still sums to 1;
* attention *from* a word (the query axis) is the **mean** over its pieces by default (`attention_from`): the mean
  of distributions is a distribution, so rows still sum to 1.

Other reductions exist (`attention_to="mean" | "max"`, `attention_from="sum" | "max" | "first"`) but rows then
sum to 1 only with `attention_to="sum"` and `attention_from` in {"mean", "first"}. When special tokens are
dropped, the attention mass they received is removed and each row is renormalised to sum to 1 (a row whose whole
mass went to special tokens stays all zero).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from hf_vaswani.data import word_alignment
from hf_vaswani.data.word_alignment import token_words
from hf_vaswani.data.word_alignment import word_spans as text_word_spans
from hf_vaswani.languages import is_language_token

from .record import AttentionRecord

WORD_BOUNDARY = "▁"  # Metaspace's replacement for a space: the first piece of every word starts with it.
#: Tokens treated as special when a record lists none (the tokenizer's special tokens, `<unk>` excluded).
DEFAULT_SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", ">>en<<", ">>es<<")
#: The piece that stands for text the tokenizer does not know (see the module docstring for the words it makes).
UNKNOWN_TOKEN = "<unk>"
_UNKNOWN_LETTER, _UNKNOWN_SYMBOL = "x", "\ufffd"  # what an unknown piece is while words are found

AttentionTo = Literal["sum", "mean", "max"]
AttentionFrom = Literal["mean", "sum", "max", "first"]
SpecialTokens = Literal["keep", "drop"]


def is_special(token: str, special_tokens: Iterable[str] = DEFAULT_SPECIAL_TOKENS) -> bool:
    """True for a structural special token: one of `special_tokens` or any `>>xx<<` language token."""
    return token in set(special_tokens) or is_language_token(token)


def is_punctuation_word(word: str) -> bool:
    """Whether a word of `text_words` is a punctuation mark or another symbol
    (`hf_vaswani.data.word_alignment.is_punctuation_word`), an unknown piece standing alone included."""
    return word_alignment.is_punctuation_word(word) or word == UNKNOWN_TOKEN


@dataclass(frozen=True)
class TextWords:
    """The words of one side of a record (special tokens left out) and the pieces that stand for each.

    Attributes:
        words: the words, as `hf_vaswani.data.word_alignment.words` splits the text the pieces spell; alignments and
            gold files index this list.
        pieces: for each word, the positions of its pieces in the token list; empty for a punctuation mark glued
            into a piece of another word (it gets no attention row or column, and no alignment link).
        glued_to: for each word without pieces of its own, the index of the word whose piece holds it ("." of
            "▁dog." is glued to "dog"); None for the other words. A target word's attribution row is its word's
            (`vaswani_inspect.attribution.pooling`): the prediction of "▁dog." wrote the "." too.
    """

    words: list[str]
    pieces: list[list[int]]
    glued_to: list[int | None] = field(default_factory=list)

    def punctuation(self) -> list[bool]:
        """For each word, whether it is a punctuation mark or another symbol (`is_punctuation_word`)."""
        return [is_punctuation_word(word) for word in self.words]


def text_words(tokens: Sequence[str], special_tokens: Iterable[str] = DEFAULT_SPECIAL_TOKENS) -> TextWords:
    """The words of a piece sequence and the pieces of each word (see the module docstring).

    >>> text_words([">>en<<", "▁¿Qué", "▁es", "▁eso", "?", "</s>"]).words
    ['¿', 'Qué', 'es', 'eso', '?']
    """
    specials = set(special_tokens)
    text, unknown, offsets = _spell(tokens, specials)
    spans = text_word_spans(text)
    word_of = _attach_spaces(token_words(offsets, text), tokens, specials)
    pieces: list[list[int]] = [[] for _ in spans]
    for position, word in enumerate(word_of):
        if word is not None:
            pieces[word].append(position)
    glued_to = [None if own else _holder(start, end, offsets, word_of) for own, (start, end) in zip(pieces, spans)]
    shown = ["".join(UNKNOWN_TOKEN if i in unknown else text[i] for i in range(start, end)) for start, end in spans]
    return TextWords(shown, pieces, glued_to)


def _holder(start: int, end: int, offsets: list[tuple[int, int]], word_of: list[int | None]) -> int | None:
    """The word of the first piece whose characters overlap [start, end) (the word a glued mark is glued to)."""
    holders = [word_of[p] for p, (first, last) in enumerate(offsets) if first < end and start < last]
    return next((word for word in holders if word is not None), None)


def _spell(tokens: Sequence[str], specials: set[str]) -> tuple[str, set[int], list[tuple[int, int]]]:
    """(the text the pieces spell, each unknown piece one character; the positions of those characters; each
    token's character span). A word-level token holds its pieces joined, so an unknown piece may sit inside one."""
    text = ""
    unknown: set[int] = set()
    offsets: list[tuple[int, int]] = []
    for position, token in enumerate(tokens):
        start = len(text)
        if is_special(token, specials):
            offsets.append((start, start))  # covers no character: belongs to no word
            continue
        following = tokens[position + 1].replace(WORD_BOUNDARY, " ") if position + 1 < len(tokens) else ""
        parts = token.replace(WORD_BOUNDARY, " ").split(UNKNOWN_TOKEN)
        for index, part in enumerate(parts):
            text += part
            if index + 1 < len(parts):
                after = parts[index + 1] or following
                inside_word = text[-1:].isalnum() and after[:1].isalnum()
                unknown.add(len(text))
                text += _UNKNOWN_LETTER if inside_word else _UNKNOWN_SYMBOL
        offsets.append((start, len(text)))
    return text, unknown, offsets


def _attach_spaces(word_of: list[int | None], tokens: Sequence[str], specials: set[str]) -> list[int | None]:
    """A piece that covers no word (a lone "▁") joins the next word, else the previous one, without crossing a
    special token, so that the attention it receives still counts for a word."""
    result = list(word_of)
    for position, word in enumerate(word_of):
        if word is not None or is_special(tokens[position], specials):
            continue
        for step in (1, -1):
            other = position + step
            while 0 <= other < len(tokens) and not is_special(tokens[other], specials):
                if word_of[other] is not None:
                    result[position] = word_of[other]
                    break
                other += step
            if result[position] is not None:
                break
    return result


def word_spans(tokens: Sequence[str], special_tokens: Iterable[str] = DEFAULT_SPECIAL_TOKENS) -> list[list[int]]:
    """Group piece positions into the units `to_words` merges, in order: each special token on its own, and the
    pieces of each word that has pieces (`text_words`). A piece that belongs to no word (a side made only of "▁")
    is a unit of its own.

    >>> word_spans([">>en<<", "▁el", "▁", "g", "ato", "▁neg", "ro", ".", "</s>"])
    [[0], [1], [2, 3, 4], [5, 6], [7], [8]]
    """
    units = [pieces for pieces in text_words(tokens, special_tokens).pieces if pieces]
    grouped = {position for pieces in units for position in pieces}
    units += [[position] for position in range(len(tokens)) if position not in grouped]
    return sorted(units)


def word_text(tokens: Sequence[str], span: Sequence[int]) -> str:
    """The text of the pieces `tokens[i] for i in span`, without the "▁" markers."""
    return "".join(tokens[i] for i in span).replace(WORD_BOUNDARY, " ").strip()


def words(tokens: Sequence[str], special_tokens: Iterable[str] = DEFAULT_SPECIAL_TOKENS) -> list[str]:
    """The label of each unit of `word_spans`: the word (without the punctuation glued into its pieces), or the
    special token as it is.

    >>> words([">>en<<", "▁¿Qué", "▁es", "▁eso", "?", "</s>"])
    ['>>en<<', 'Qué', 'es', 'eso', '?', '</s>']
    """
    specials = set(special_tokens)
    found = text_words(tokens, specials)
    label = {tuple(pieces): word for word, pieces in zip(found.words, found.pieces) if pieces}
    return [label.get(tuple(span), word_text(tokens, span)) for span in word_spans(tokens, specials)]


def merge_attention(
    attention: np.ndarray,
    query_groups: Sequence[Sequence[int]],
    key_groups: Sequence[Sequence[int]],
    attention_to: AttentionTo = "sum",
    attention_from: AttentionFrom = "mean",
) -> np.ndarray:
    """Merge the last two axes (queries, keys) of `attention` into groups of positions (words).

    Returns an array of shape (..., len(query_groups), len(key_groups)). See the module docstring for which
    reductions keep the rows normalised.
    """
    if not query_groups or not key_groups or any(len(g) == 0 for g in [*query_groups, *key_groups]):
        raise ValueError("Every word group must contain at least one position, and there must be at least one word.")
    to_reduce = _reducer(attention_to, ("sum", "mean", "max"), "attention_to")
    from_reduce = _reducer(attention_from, ("mean", "sum", "max", "first"), "attention_from")
    columns = np.stack([to_reduce(attention[..., list(g)], -1) for g in key_groups], axis=-1)
    return np.stack([from_reduce(columns[..., list(g), :], -2) for g in query_groups], axis=-2)


def _reducer(name: str, allowed: tuple[str, ...], parameter: str):  # noqa: ANN202 - tiny private helper
    if name not in allowed:
        raise ValueError(f"{parameter}={name!r} is not supported; choose one of {', '.join(allowed)}.")
    if name == "first":
        return lambda array, axis: np.take(array, 0, axis=axis)
    return getattr(np, name)


def renormalize_rows(attention: np.ndarray) -> np.ndarray:
    """Divide each row (last axis) by its sum; all-zero rows stay zero."""
    totals = attention.sum(axis=-1, keepdims=True)
    return np.divide(attention, totals, out=np.zeros_like(attention), where=totals > 0)


def to_words(
    record: AttentionRecord,
    *,
    special_tokens: SpecialTokens = "keep",
    attention_to: AttentionTo = "sum",
    attention_from: AttentionFrom = "mean",
) -> AttentionRecord:
    """A word-level copy of `record` (Clark et al. 2019): pieces merged into words along both axes.

    Args:
        record: a token-level record (a word-level one is returned unchanged in shape: merging is idempotent).
        special_tokens: `"keep"`: the language token, `<s>` and `</s>` stay as words of their own; `"drop"`: they
            are removed from both axes and every row is renormalised over the remaining words.
        attention_to: how the weights of a word's pieces combine on the key axis (`"sum"`: rows still sum to 1).
        attention_from: how the rows of a word's pieces combine on the query axis (`"mean"`: rows still sum to 1).

    The units are those of `word_spans`: every word that has pieces, and the special tokens. A punctuation mark
    glued into another word's piece has no unit (its attention is its word's). Decoder and cross rows are grouped
    by the decoder *input* word (row labels stay the record's convention: the row of word w is read while w is the
    decoder input). Each returned token is its pieces joined ("▁rat" + "ón" = "▁ratón", "▁¿Qué" stays), so the
    word-level record spells the same text and has the same words (`text_words`) as the token-level one, and
    `to_words` can be applied again; `metadata["source_word_pieces"]` and `metadata["target_word_pieces"]` give,
    for each unit, the piece positions of the token-level record.
    """
    if special_tokens not in ("keep", "drop"):
        raise ValueError(f"special_tokens must be 'keep' or 'drop', got {special_tokens!r}.")
    specials = record.special_tokens or list(DEFAULT_SPECIAL_TOKENS)
    source_spans = word_spans(record.source_tokens, specials)
    target_spans = word_spans(record.target_tokens, specials)
    if special_tokens == "drop":
        source_spans = [s for s in source_spans if not _is_special_span(record.source_tokens, s, specials)]
        target_spans = [s for s in target_spans if not _is_special_span(record.target_tokens, s, specials)]
        if not source_spans or not target_spans:
            side = "source" if not source_spans else "target"
            raise ValueError(f"Dropping special tokens leaves no {side} words: the {side} has only special tokens.")
    # The key axis keeps every word (special ones included) while merging, then special columns are removed, so
    # that dropping means "remove that mass and renormalise" rather than "pretend it went elsewhere".
    all_source = word_spans(record.source_tokens, specials)
    all_target = word_spans(record.target_tokens, specials)
    arrays = {}
    for kind, queries, keys, all_keys in (
        ("encoder", source_spans, source_spans, all_source),
        ("decoder", target_spans, target_spans, all_target),
        ("cross", target_spans, source_spans, all_source),
    ):
        merged = merge_attention(record.attention(kind), queries, all_keys, attention_to, attention_from)
        keep = [i for i, span in enumerate(all_keys) if span in keys]
        merged = merged[..., keep]
        arrays[kind] = renormalize_rows(merged) if special_tokens == "drop" else merged
    metadata = dict(record.metadata)
    metadata.update(
        word_merge={
            "special_tokens": special_tokens,
            "attention_to": attention_to,
            "attention_from": attention_from,
        },
        source_word_pieces=_compose(record.metadata.get("source_word_pieces"), source_spans),
        target_word_pieces=_compose(record.metadata.get("target_word_pieces"), target_spans),
    )
    return replace(
        record,
        source_tokens=[_word_token(record.source_tokens, s) for s in source_spans],
        target_tokens=[_word_token(record.target_tokens, s) for s in target_spans],
        source_ids=[record.source_ids[s[0]] for s in source_spans],
        target_ids=[record.target_ids[s[0]] for s in target_spans],
        level="word",
        metadata=metadata,
        **arrays,
    )


def _is_special_span(tokens: Sequence[str], span: Sequence[int], specials: Iterable[str]) -> bool:
    return len(span) == 1 and is_special(tokens[span[0]], specials)


def _word_token(tokens: Sequence[str], span: Sequence[int]) -> str:
    return "".join(tokens[i] for i in span)


def _compose(previous: list[list[int]] | None, spans: list[list[int]]) -> list[list[int]]:
    """Piece positions of each new word, following an earlier merge when there was one."""
    if previous is None:
        return [list(span) for span in spans]
    return [[piece for i in span for piece in previous[i]] for span in spans]


__all__ = [
    "DEFAULT_SPECIAL_TOKENS",
    "UNKNOWN_TOKEN",
    "WORD_BOUNDARY",
    "TextWords",
    "is_punctuation_word",
    "is_special",
    "merge_attention",
    "renormalize_rows",
    "text_words",
    "to_words",
    "word_spans",
    "word_text",
    "words",
]
