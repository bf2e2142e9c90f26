"""Two models' heads compared on the same sentences: Clark et al. statistics per head, the mean Jensen-Shannon
divergence between every pair of heads, each head's nearest heads in the other model, and the MDS map
(`compare_records`, which returns a `HeadComparison`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..heads import HeadStats, head_statistics
from ..record import AttentionRecord
from .distances import DistanceAccumulator, Specials, comparable_rows, mds_embedding

__all__ = ["JSON_DECIMALS", "HeadComparison", "compare_records", "head_label", "json_ready"]

#: Decimals of the distance matrices and MDS coordinates in report.json (the JS sums carry ~1e-6 rounding anyway).
JSON_DECIMALS = 6


def head_label(layer: int, head: int) -> str:
    """`"L{layer}H{head}"`, 0-based like `HeadStats`."""
    return f"L{layer}H{head}"


@dataclass
class HeadComparison:
    """Two models' heads compared on the same sentences (see `compare_records`).

    Heads are numbered layer-major (`index = layer * heads_per_layer + head`, 0-based) in `stats_*`, the rows and
    columns of `distance`, and `labels_*`; `distance_all`, `mds` and `labels_all` list model A's heads first.
    """

    kind: str
    names: tuple[str, str]
    model_names: tuple[str, str]
    kinds: tuple[str, str]
    shapes: tuple[tuple[int, int], tuple[int, int]]
    stats_a: list[HeadStats]
    stats_b: list[HeadStats]
    distance: np.ndarray
    distance_all: np.ndarray
    mds: np.ndarray
    mds_stress: float
    rows: int
    sentences: int
    words: int
    specials: str

    @property
    def labels_a(self) -> list[str]:
        return [head_label(s.layer, s.head) for s in self.stats_a]

    @property
    def labels_b(self) -> list[str]:
        return [head_label(s.layer, s.head) for s in self.stats_b]

    @property
    def labels_all(self) -> list[str]:
        return [f"{self.names[0]}:{x}" for x in self.labels_a] + [f"{self.names[1]}:{x}" for x in self.labels_b]

    def nearest(self, top: int = 3) -> list[dict[str, Any]]:
        """For each head of model A, its nearest heads of model B (smallest mean JS divergence first)."""
        result = []
        for i, stats in enumerate(self.stats_a):
            order = np.argsort(self.distance[i], kind="stable")[:top]
            best = self.stats_b[int(order[0])]
            result.append(
                {
                    "head": self.labels_a[i],
                    "layer": stats.layer,
                    "index": stats.head,
                    "tag": stats.tag,
                    "focus": stats.focus,
                    "nearest": self.labels_b[int(order[0])],
                    "nearest_layer": best.layer,
                    "nearest_index": best.head,
                    "nearest_tag": best.tag,
                    "nearest_focus": best.focus,
                    "distance": float(self.distance[i, order[0]]),
                    "same_tag": (stats.tag, stats.focus) == (best.tag, best.focus),
                    "top": [{"head": self.labels_b[int(j)], "distance": float(self.distance[i, j])} for j in order],
                }
            )
        return result

    def tag_counts(self) -> dict[str, dict[str, int]]:
        """Per model, how many heads carry each tag (`"positional/previous"` etc., see `heads.tag_head`)."""
        counts: dict[str, dict[str, int]] = {}
        for name, stats in zip(self.names, (self.stats_a, self.stats_b)):
            tally: dict[str, int] = {}
            for s in stats:
                key = f"{s.tag}/{s.focus}" if s.focus and s.tag == "positional" else s.tag
                tally[key] = tally.get(key, 0) + 1
            counts[name] = dict(sorted(tally.items()))
        return counts

    def summary(self) -> dict[str, Any]:
        """A few numbers that help read `distance`: how close A's heads get to B's, compared with how close B's
        heads are to each other."""
        na = len(self.stats_a)
        within_b = self.distance_all[na:, na:].copy()
        np.fill_diagonal(within_b, np.inf)
        within_a = self.distance_all[:na, :na].copy()
        np.fill_diagonal(within_a, np.inf)
        nearest = self.nearest(top=1)
        return {
            "a_to_nearest_b_median": _finite_median(self.distance.min(axis=1)),
            "b_to_nearest_b_median": _finite_median(within_b.min(axis=1)) if within_b.shape[0] > 1 else None,
            "a_to_nearest_a_median": _finite_median(within_a.min(axis=1)) if na > 1 else None,
            "mean_distance": float(np.nanmean(self.distance)),
            "same_tag_as_nearest": sum(n["same_tag"] for n in nearest),
            "heads_a": na,
            "heads_b": len(self.stats_b),
        }

    def to_dict(self) -> dict[str, Any]:
        """Every number, JSON-ready (NaN becomes null)."""
        return json_ready(
            {
                "kind": self.kind,
                "names": list(self.names),
                "model_names": list(self.model_names),
                "attention_kinds": list(self.kinds),
                "layers_heads": [list(self.shapes[0]), list(self.shapes[1])],
                "sentences": self.sentences,
                "words": self.words,
                "rows": self.rows,
                "specials": self.specials,
                "distance_measure": "mean Jensen-Shannon divergence (bits) over word rows",
                "summary": self.summary(),
                "tag_counts": self.tag_counts(),
                "nearest": self.nearest(),
                "labels_a": self.labels_a,
                "labels_b": self.labels_b,
                "labels_all": self.labels_all,
                "statistics_a": [asdict(s) for s in self.stats_a],
                "statistics_b": [asdict(s) for s in self.stats_b],
                "distance": np.round(self.distance, JSON_DECIMALS).tolist(),
                "distance_all": np.round(self.distance_all, JSON_DECIMALS).tolist(),
                "mds": {"coordinates": np.round(self.mds, JSON_DECIMALS).tolist(), "stress": self.mds_stress},
            }
        )


def _finite_median(values: np.ndarray) -> float | None:
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    return float(np.median(values)) if values.size else None


def json_ready(value: Any) -> Any:
    """`value` with NaN and infinities as None, tuples as lists and numpy scalars as Python numbers."""
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if isinstance(value, np.generic):
        return json_ready(value.item())
    return value


def compare_records(
    records_a: Sequence[AttentionRecord],
    records_b: Sequence[AttentionRecord],
    kind_a: str = "encoder",
    kind_b: str = "encoder",
    *,
    specials: Specials = "drop",
    names: tuple[str, str] = ("ours", "bert"),
    model_names: tuple[str, str] | None = None,
    kind: str | None = None,
    mds: bool = True,
) -> HeadComparison:
    """Compare the heads of two models on the same sentences.

    Args:
        records_a / records_b: word-level records (`word_level_record`), one per sentence, in the same order, with
            the same words: `[start slot, *words, end slot]`.
        kind_a / kind_b: which self-attention of each record ("encoder" or "decoder"; "decoder" is causal).
        specials: how the two slots enter the distance (`vaswani_inspect.compare`, Special tokens); the
            statistics always keep them.
        names: short names of the two models (labels, JSON keys); model_names: where they came from.
        kind: name of this comparison (default: `kind_a`).
        mds: compute the 2-D MDS map (else zeros).

    Returns:
        A `HeadComparison` with Clark et al. statistics and tags per head (`vaswani_inspect.heads`), the mean JS
        divergence matrices and the MDS map.
    """
    if len(records_a) != len(records_b):
        raise ValueError(f"Got {len(records_a)} records for {names[0]} but {len(records_b)} for {names[1]}.")
    if not records_a:
        raise ValueError("compare_records() needs at least one sentence.")
    shape_a = records_a[0].attention(kind_a).shape[:2]
    shape_b = records_b[0].attention(kind_b).shape[:2]
    heads_a = shape_a[0] * shape_a[1]
    accumulator = DistanceAccumulator(heads_a + shape_b[0] * shape_b[1])
    words = 0
    for index, (a, b) in enumerate(zip(records_a, records_b)):
        if a.query_tokens(kind_a)[1:-1] != b.query_tokens(kind_b)[1:-1]:
            raise ValueError(
                f"sentence {index}: the two models have different words ({a.query_tokens(kind_a)} vs "
                f"{b.query_tokens(kind_b)}); build both records from the same `shared_words`."
            )
        rows_a = comparable_rows(a, kind_a, specials)
        rows_b = comparable_rows(b, kind_b, specials)
        accumulator.add(np.concatenate([rows_a, rows_b], axis=0))
        words += len(a.query_tokens(kind_a)) - 2
    distance_all = accumulator.mean()
    stats_a = head_statistics(list(records_a), kind_a)
    stats_b = head_statistics(list(records_b), kind_b)
    if mds and accumulator.rows:
        coordinates, stress = mds_embedding(distance_all)
    else:
        coordinates, stress = np.zeros((distance_all.shape[0], 2)), math.nan
    return HeadComparison(
        kind=kind or kind_a,
        names=names,
        model_names=model_names or (records_a[0].model_name, records_b[0].model_name),
        kinds=(kind_a, kind_b),
        shapes=(tuple(shape_a), tuple(shape_b)),
        stats_a=stats_a,
        stats_b=stats_b,
        distance=distance_all[:heads_a, heads_a:],
        distance_all=distance_all,
        mds=coordinates,
        mds_stress=stress,
        rows=accumulator.rows,
        sentences=len(records_a),
        words=words,
        specials=specials,
    )
