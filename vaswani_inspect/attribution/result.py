"""`Attribution`: which source words one method says each target word of a translation comes from, and its links.

The matrix is read the way `vaswani_inspect.alignment.alignment_matrix` is: rows are the target words, columns the
source words (`source_words` / `target_words` of the record: special tokens left out, punctuation marks words of
their own), each row a distribution over the source words. So everything that reads an alignment matrix (links,
AER, heatmaps) reads an attribution: `attribution_links` is `align`'s link reading on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..alignment.links import DEFAULT_THRESHOLD, Method, Pair, links_of, word_lists
from ..record import AttentionRecord
from .pooling import pool_to_words, source_shares


@dataclass(frozen=True, eq=False)
class Attribution:
    """One method's word-level source attribution of a translation (what `attribute` returns).

    Attributes:
        method: the method's name (one of `METHODS`).
        record: the token-level `AttentionRecord` it explains (its attention is what the attention methods read).
        matrix: (target words, source words) float64; row j is how much each source word counts for target word j,
            summing to 1 (a zero row for a word without pieces of its own). Same words, same shape, as
            `alignment_matrix(record)`.
        source_share: (target words,) the share of each target word that comes from the source rather than the
            target prefix, in [0, 1] (NaN for a word without pieces); None for a method that does not measure it.
        token_scores: (T - 1, S) the method's token-level scores before pooling, row t explaining the prediction of
            `record.target_tokens[t + 1]` (non-negative); None for "attention" (its matrix is `alignment_matrix`).
        prefix_scores: (T - 1, T - 1) the scores of the decoder inputs 0..t for row t (zero above the diagonal),
            on the same scale as `token_scores`; None when the method gives no share.
        settings: the method's options as used (steps, layers, distance...), JSON-ready.
        details: anything else a method measured (e.g. integrated gradients' completeness error per row).
    """

    method: str
    record: AttentionRecord
    matrix: np.ndarray
    source_share: np.ndarray | None = None
    token_scores: np.ndarray | None = None
    prefix_scores: np.ndarray | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        source, target = word_lists(self.record)
        expected = (len(target.words), len(source.words))
        if np.shape(self.matrix) != expected:
            raise ValueError(f"an attribution matrix must be (target words, source words) = {expected}.")
        if self.source_share is not None and np.shape(self.source_share) != expected[:1]:
            raise ValueError(f"source_share must have one value per target word ({expected[0]}).")

    @classmethod
    def from_token_scores(
        cls,
        method: str,
        record: AttentionRecord,
        source: np.ndarray,
        prefix: np.ndarray | None = None,
        *,
        settings: dict[str, Any] | None = None,
        details: dict[str, Any] | None = None,
    ) -> Attribution:
        """The attribution of a method's token scores: `source` (T - 1, S) pooled to words (`pool_to_words`)
        and, given the prefix's scores `prefix` (T - 1, T - 1), the source share of each word (`source_shares`)."""
        return cls(
            method,
            record,
            pool_to_words(source, record),
            None if prefix is None else source_shares(source, prefix, record),
            token_scores=source,
            prefix_scores=prefix,
            settings=settings or {},
            details=details or {},
        )

    @property
    def source_words(self) -> list[str]:
        """The matrix's column labels."""
        return word_lists(self.record)[0].words

    @property
    def target_words(self) -> list[str]:
        """The matrix's row labels."""
        return word_lists(self.record)[1].words

    def links(self, method: Method = "argmax", threshold: float = DEFAULT_THRESHOLD) -> list[Pair]:
        """`attribution_links(self, method, threshold)`."""
        return attribution_links(self, method, threshold)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary: method, words, matrix, shares, settings (not the record's attention)."""

        def plain(array: np.ndarray | None) -> Any:
            if array is None:
                return None
            return [None if np.isnan(v) else float(v) for v in array] if array.ndim == 1 else array.tolist()

        return {
            "method": self.method,
            "source_text": self.record.source_text,
            "target_text": self.record.target_text,
            "direction": self.record.direction,
            "source_words": self.source_words,
            "target_words": self.target_words,
            "matrix": plain(self.matrix),
            "source_share": plain(self.source_share),
            "settings": self.settings,
        }

    def __repr__(self) -> str:
        shape = "x".join(str(n) for n in self.matrix.shape)
        share = "" if self.source_share is None else ", with source shares"
        return f"Attribution(method={self.method!r}, {shape} words{share})"


def attribution_links(
    attribution: Attribution | np.ndarray, method: Method = "argmax", threshold: float = DEFAULT_THRESHOLD
) -> list[Pair]:
    """Word links `(source_word, target_word)`, sorted, read off an attribution matrix as `align` reads attention.

    `method="argmax"`: each target word with a non-zero row is linked to its highest-scoring source word;
    `"threshold"`: every cell >= `threshold` (in (0, 1]) is a link. Accepts an `Attribution` or its matrix."""
    matrix = attribution.matrix if isinstance(attribution, Attribution) else np.asarray(attribution)
    targets, sources = np.nonzero(links_of(matrix, method, threshold))
    return sorted((int(i), int(j)) for j, i in zip(targets, sources))


__all__ = ["Attribution", "attribution_links"]
