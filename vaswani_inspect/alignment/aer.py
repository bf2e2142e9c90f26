"""The alignment error rate (Och & Ney 2003), with precision and recall, of predicted links against sure and
possible gold links, for one sentence or summed over a corpus (`alignment_error_rate`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..words import is_punctuation_word
from .links import Pair


class AlignmentScores(NamedTuple):
    """Alignment error rate (Och & Ney 2003) with precision and recall, all in [0, 1]."""

    aer: float
    precision: float
    recall: float


def _is_pair(item: object) -> bool:
    return (
        isinstance(item, (tuple, list))
        and len(item) == 2
        and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in item)
    )


def _as_corpus(value: object, name: str) -> list[set[Pair]]:
    items = list(value)  # type: ignore[call-overload]
    if not items or all(_is_pair(x) for x in items):
        return [{(int(i), int(j)) for i, j in items}]
    if all(not _is_pair(x) for x in items):
        return [{(int(i), int(j)) for i, j in sentence} for sentence in items]
    raise ValueError(f"{name} mixes pairs and lists of pairs: pass one sentence's pairs, or one set per sentence.")


def _is_word_list(value: object) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(word, str) for word in value)


def _punctuation_per_sentence(words: object, sentences: int) -> list[tuple[set[int], set[int]]]:
    """For each sentence, (punctuation source word indices, punctuation target word indices)."""
    if words is None:
        raise ValueError("skip_punctuation=True needs words=: (source words, target words) for each sentence.")
    items = list(words)  # type: ignore[call-overload]
    if len(items) == 2 and all(_is_word_list(side) for side in items):
        items = [items]  # the words of one sentence
    if len(items) != sentences or not all(
        isinstance(pair, (list, tuple)) and len(pair) == 2 and all(_is_word_list(side) for side in pair)
        for pair in items
    ):
        raise ValueError(
            f"words must give (source words, target words) for each of the {sentences} sentences, e.g. "
            "[(source_words(record), target_words(record)) for record in records]."
        )
    return [
        (
            {i for i, word in enumerate(source) if is_punctuation_word(word)},
            {j for j, word in enumerate(target) if is_punctuation_word(word)},
        )
        for source, target in items
    ]


def alignment_error_rate(
    predicted: Iterable[Pair] | Sequence[Iterable[Pair]],
    sure: Iterable[Pair] | Sequence[Iterable[Pair]],
    possible: Iterable[Pair] | Sequence[Iterable[Pair]] | None = None,
    *,
    skip_punctuation: bool = False,
    words: Sequence[tuple[Sequence[str], Sequence[str]]] | tuple[Sequence[str], Sequence[str]] | None = None,
) -> AlignmentScores:
    """AER = 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|), precision = |A ∩ P| / |A|, recall = |A ∩ S| / |S|.

    `predicted` (A), `sure` (S) and `possible` (P) are either the pairs of one sentence or one collection of pairs
    per sentence (counts are then summed over the corpus). P always includes S (`possible=None` means P = S).
    Precision is 0 when nothing is predicted, recall 0 when there are no sure links; with neither predicted nor
    sure links the score is undefined and a ValueError is raised.

    With `skip_punctuation=True`, links that touch a punctuation word on either side are dropped from A, S and P
    alike; `words` then gives the words of each sentence, ``(source words, target words)`` (one such pair for one
    sentence, or one per sentence: ``[(source_words(r), target_words(r)) for r in records]``).
    """
    predicted_sets = _as_corpus(predicted, "predicted")
    sure_sets = _as_corpus(sure, "sure")
    possible_sets = _as_corpus(possible, "possible") if possible is not None else [set() for _ in sure_sets]
    if not len(predicted_sets) == len(sure_sets) == len(possible_sets):
        raise ValueError(
            f"predicted ({len(predicted_sets)}), sure ({len(sure_sets)}) and possible ({len(possible_sets)}) "
            "must cover the same number of sentences."
        )
    if skip_punctuation:
        punctuation = _punctuation_per_sentence(words, len(sure_sets))
        predicted_sets, sure_sets, possible_sets = (
            [_without(links, marks) for links, marks in zip(sets, punctuation)]
            for sets in (predicted_sets, sure_sets, possible_sets)
        )
    counts = np.zeros(4, dtype=np.int64)  # |A|, |S|, |A & S|, |A & P|
    for a, s, p in zip(predicted_sets, sure_sets, possible_sets):
        p = p | s
        counts += (len(a), len(s), len(a & s), len(a & p))
    return scores_from_counts(*counts)


def _without(links: set[Pair], skipped: tuple[set[int], set[int]]) -> set[Pair]:
    return {(i, j) for i, j in links if i not in skipped[0] and j not in skipped[1]}


def scores_from_counts(a_total: Any, s_total: Any, a_and_s: Any, a_and_p: Any) -> AlignmentScores:
    if a_total + s_total == 0:
        raise ValueError("AER is undefined with no predicted and no sure links.")
    aer = 1.0 - (a_and_s + a_and_p) / (a_total + s_total)
    precision = a_and_p / a_total if a_total else 0.0
    recall = a_and_s / s_total if s_total else 0.0
    return AlignmentScores(float(aer), float(precision), float(recall))


__all__ = ["AlignmentScores", "alignment_error_rate"]
