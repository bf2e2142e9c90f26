"""Word-level attention (Clark et al. 2019, "What Does BERT Look At?", sec. 4.1).

The tokenizer splits words into Metaspace pieces: a piece that starts with "▁" begins a new word, the others
continue the previous one (`["▁", "g", "ato"]` is the word "gato", `["▁gat", "o", "."]` the word "gato.").
Special tokens (language token, `<s>`, `</s>`, `<pad>`) are always words of their own; `to_words` keeps them or
drops them (`special_tokens="keep" | "drop"`).

Merging a (queries, keys) attention matrix into words:

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

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Literal

import numpy as np

from .record import AttentionRecord

WORD_BOUNDARY = "▁"  # Metaspace's replacement for a space: the first piece of every word starts with it.
LANGUAGE_TOKEN = re.compile(r"^>>[A-Za-z0-9_\-]+<<$")
#: Tokens treated as special when a record lists none (the tokenizer's special tokens, `<unk>` excluded).
DEFAULT_SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", ">>en<<", ">>es<<")

AttentionTo = Literal["sum", "mean", "max"]
AttentionFrom = Literal["mean", "sum", "max", "first"]
SpecialTokens = Literal["keep", "drop"]


def is_special(token: str, special_tokens: Iterable[str] = DEFAULT_SPECIAL_TOKENS) -> bool:
    """True for a structural special token: one of `special_tokens` or any `>>xx<<` language token."""
    return token in set(special_tokens) or bool(LANGUAGE_TOKEN.match(token))


def word_spans(tokens: Sequence[str], special_tokens: Iterable[str] = DEFAULT_SPECIAL_TOKENS) -> list[list[int]]:
    """Group piece positions into words: a special token or a piece starting with "▁" starts a new word.

    A piece that does not start with "▁" joins the previous word, unless that word is a special token (then it
    starts a word of its own: a sentence whose first piece lacks the boundary marker is still a word).
    """
    specials = set(special_tokens)
    spans: list[list[int]] = []
    previous_special = True
    for position, token in enumerate(tokens):
        special = is_special(token, specials)
        if special or previous_special or token.startswith(WORD_BOUNDARY):
            spans.append([position])
        else:
            spans[-1].append(position)
        previous_special = special
    return spans


def word_text(tokens: Sequence[str], span: Sequence[int]) -> str:
    """The text of the word made of `tokens[i] for i in span`, without the "▁" markers."""
    return "".join(tokens[i] for i in span).replace(WORD_BOUNDARY, " ").strip()


def words(tokens: Sequence[str], special_tokens: Iterable[str] = DEFAULT_SPECIAL_TOKENS) -> list[str]:
    """The words of a piece sequence (special tokens as they are)."""
    specials = set(special_tokens)
    result = []
    for span in word_spans(tokens, specials):
        token = tokens[span[0]]
        result.append(token if len(span) == 1 and is_special(token, specials) else word_text(tokens, span))
    return result


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

    Decoder and cross rows are grouped by the decoder *input* word (row labels stay the record's convention: the
    row of word w is read while w is the decoder input). The returned tokens keep a leading "▁" on every
    non-special word so that `to_words` can be applied again; `metadata["source_word_pieces"]` and
    `metadata["target_word_pieces"]` give, for each word, the piece positions of the token-level record.
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
        source_tokens=[_word_token(record.source_tokens, s, specials) for s in source_spans],
        target_tokens=[_word_token(record.target_tokens, s, specials) for s in target_spans],
        source_ids=[record.source_ids[s[0]] for s in source_spans],
        target_ids=[record.target_ids[s[0]] for s in target_spans],
        level="word",
        metadata=metadata,
        **arrays,
    )


def _is_special_span(tokens: Sequence[str], span: Sequence[int], specials: Iterable[str]) -> bool:
    return len(span) == 1 and is_special(tokens[span[0]], specials)


def _word_token(tokens: Sequence[str], span: Sequence[int], specials: Iterable[str]) -> str:
    if _is_special_span(tokens, span, specials):
        return tokens[span[0]]
    return WORD_BOUNDARY + word_text(tokens, span)


def _compose(previous: list[list[int]] | None, spans: list[list[int]]) -> list[list[int]]:
    """Piece positions of each new word, following an earlier merge when there was one."""
    if previous is None:
        return [list(span) for span in spans]
    return [[piece for i in span for piece in previous[i]] for span in spans]


__all__ = [
    "DEFAULT_SPECIAL_TOKENS",
    "WORD_BOUNDARY",
    "is_special",
    "merge_attention",
    "renormalize_rows",
    "to_words",
    "word_spans",
    "word_text",
    "words",
]
