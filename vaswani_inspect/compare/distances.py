"""Jensen-Shannon distances between attention heads, and the 2-D map of all heads drawn from them.

Two heads are compared row by row on the same word-level rows (`comparable_rows`); `DistanceAccumulator` sums the
divergences of every pair of heads over sentences (`pairwise_js_sums`), and `mds_embedding` places every head on a
plane so that near heads attend alike (Clark et al. 2019, Fig. 6).
"""

from __future__ import annotations

import inspect
import math
import warnings
from typing import Literal

import numpy as np

from ..dependencies import is_extra_module, missing_extra_error
from ..record import AttentionRecord
from ..words import renormalize_rows

__all__ = [
    "DistanceAccumulator",
    "Specials",
    "comparable_rows",
    "js_divergence",
    "mds_embedding",
    "pairwise_js_sums",
]

#: How the two special-token slots enter the distance: dropped (rows renormalised over the words) or kept.
Specials = Literal["drop", "keep"]


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence in bits (base 2, in [0, 1]) between distributions along the last axis."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    m = 0.5 * (p + q)
    return 0.5 * (_kl_bits(p, m) + _kl_bits(q, m))


def _kl_bits(p: np.ndarray, m: np.ndarray) -> np.ndarray:
    """sum_k p log2(p / m) along the last axis, with 0 log 0 = 0 (m > 0 wherever p > 0)."""
    p, m = np.broadcast_arrays(p, m)
    ratio = np.divide(p, m, out=np.ones_like(p), where=p > 0)
    return (p * np.log2(ratio)).sum(-1)


def pairwise_js_sums(rows: np.ndarray, block: int = 16) -> np.ndarray:
    """(heads, heads) sums over rows of JS(rows[i, r], rows[j, r]) for `rows` of shape (heads, rows, keys).

    Computed as JS(p, q) = H((p + q) / 2) - (H(p) + H(q)) / 2 (bits), for the upper triangle only, then mirrored:
    symmetric, and exactly 0 for identical rows (the mixture is then the row itself). The weights and their
    mixtures are float32 (attention weights are float32 to begin with), the sums float64: about 1e-6 absolute
    error per row, tiny negatives from rounding clipped to 0.
    """
    rows = np.asarray(rows, dtype=np.float32)
    heads = rows.shape[0]
    negative_entropy = _xlog2x(rows).sum(-1, dtype=np.float64)  # (heads, R): sum_k p log2 p
    sums = np.zeros((heads, heads))
    half = np.float32(0.5)
    for first in range(0, heads, block):
        last = min(first + block, heads)
        mixture = half * (rows[first:last, None] + rows[None, first:])  # (b, heads - first, R, K)
        mixed = _xlog2x(mixture).sum(-1, dtype=np.float64)
        values = 0.5 * (negative_entropy[first:last, None] + negative_entropy[None, first:]) - mixed
        sums[first:last, first:] = np.maximum(values, 0.0).sum(-1)
    return np.triu(sums) + np.triu(sums, 1).T


def _xlog2x(values: np.ndarray) -> np.ndarray:
    """x log2 x elementwise, 0 for x = 0."""
    logs = np.log2(values, out=np.zeros_like(values), where=values > 0)
    return values * logs


def comparable_rows(record: AttentionRecord, kind: str, specials: Specials = "drop") -> np.ndarray:
    """The word-level rows of `record`'s `kind` attention that enter the distance: (layers * heads, rows, keys).

    `specials="drop"`: the two slots are removed from both axes and rows renormalised over the words (a row with
    no weight left becomes uniform over the words it may see); `"keep"`: full rows. Rows that may see a single key
    (a one-word sentence, the first word of a causal row) are left out.
    """
    if specials not in ("drop", "keep"):
        raise ValueError(f"specials must be 'drop' or 'keep', got {specials!r}.")
    attention = record.attention(kind).astype(np.float64)
    layers, heads, n, _ = attention.shape
    attention = attention.reshape(layers * heads, n, n)
    causal = kind == "decoder"
    if specials == "drop":
        attention = renormalize_rows(attention[:, 1:-1, 1:-1])
        n -= 2
        allowed = np.tril(np.ones((n, n))) if causal else np.ones((n, n))
        empty = attention.sum(-1) == 0
        if empty.any():
            uniform = allowed / allowed.sum(-1, keepdims=True)
            attention = np.where(empty[..., None], uniform[None], attention)
    available = np.arange(1, n + 1) if causal else np.full(n, n)
    return attention[:, available >= 2]


class DistanceAccumulator:
    """Running sums of `pairwise_js_sums` over sentences; `mean()` is the average over every row added."""

    def __init__(self, heads: int):
        self.sums = np.zeros((heads, heads))
        self.rows = 0

    def add(self, rows: np.ndarray) -> None:
        """Add (heads, rows, keys) word rows of all heads for one sentence."""
        if rows.shape[0] != self.sums.shape[0]:
            raise ValueError(f"expected {self.sums.shape[0]} heads, got {rows.shape[0]}.")
        if rows.shape[1]:
            self.sums += pairwise_js_sums(rows)
            self.rows += rows.shape[1]

    def mean(self) -> np.ndarray:
        """The mean JS divergence matrix (symmetrised, zero diagonal); NaN when no row was added."""
        if not self.rows:
            return np.full_like(self.sums, np.nan)
        mean = self.sums / self.rows
        mean = 0.5 * (mean + mean.T)
        np.fill_diagonal(mean, 0.0)
        return np.maximum(mean, 0.0)


def mds_embedding(distance: np.ndarray, random_state: int = 0) -> tuple[np.ndarray, float]:
    """2-D metric multidimensional scaling of a precomputed distance matrix (`sklearn.manifold.MDS`).

    Returns (coordinates, Kruskal's stress-1: sqrt(sum (d - d_2D)^2 / sum d^2), 0 = distances kept exactly, above
    ~0.2 = a rough picture). scikit-learn >= 1.8 names the option `metric="precomputed"` (the older
    `dissimilarity="precomputed"` is deprecated there) and starts from classical MDS; older versions get
    `dissimilarity="precomputed"` with 4 random starts.
    """
    try:
        from sklearn.manifold import MDS
    except ModuleNotFoundError as error:  # pragma: no cover - scikit-learn comes with the [inspect] extra
        if not is_extra_module(error):
            raise
        raise missing_extra_error(error, "The MDS map") from error
    distance = np.asarray(distance, dtype=np.float64)
    if distance.shape[0] < 3:
        return np.zeros((distance.shape[0], 2)), 0.0
    parameters = inspect.signature(MDS).parameters
    if "metric_mds" in parameters:
        mds = MDS(n_components=2, metric="precomputed", init="classical_mds", n_init=1, random_state=random_state)
    else:  # pragma: no cover - scikit-learn < 1.8
        mds = MDS(n_components=2, dissimilarity="precomputed", n_init=4, random_state=random_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        coordinates = np.asarray(mds.fit_transform(distance))
    embedded = np.linalg.norm(coordinates[:, None] - coordinates[None], axis=-1)
    total = float((distance**2).sum())
    stress = math.sqrt(float(((distance - embedded) ** 2).sum()) / total) if total > 0 else 0.0
    return coordinates, stress
