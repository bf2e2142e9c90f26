"""The result of `head_importance`: one `HeadScore` per head, the pruning curves' `PruningPoint`s, the joint
`GroupAblation`s, all in a `HeadImportance` that summarises its findings (`HeadImportance.summary`) and writes
itself as JSON (`HeadImportance.to_dict`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..ablation import Head
from ..record import KINDS

#: What is measured with a head switched off; a drop is baseline minus ablated (positive: the head helped).
MEASURES = ("bleu", "chrf", "log_likelihood")
#: The pruning curves: one per attention kind, and "all" for every head of the model in one order.
PRUNING_CURVES = (*KINDS, "all")


@dataclass
class HeadScore:
    """What one head does for the output and what its attention looks like (see the module docstring)."""

    kind: str
    layer: int
    head: int
    bleu: float
    chrf: float
    log_likelihood: float
    bleu_drop: float
    chrf_drop: float
    log_likelihood_drop: float
    gradient: float
    gradient_normalized: float
    confidence: float
    tag: str
    focus: str
    alignment: bool = False

    @property
    def label(self) -> str:
        return Head(self.kind, self.layer, self.head).label()


@dataclass
class PruningPoint:
    """The scores with the first `removed` heads of a pruning order switched off (`heads`: those heads' labels)."""

    removed: int
    heads: list[str]
    bleu: float
    chrf: float


@dataclass
class GroupAblation:
    """The scores with a group of heads switched off together (a category, the alignment heads)."""

    name: str
    heads: list[str]
    bleu: float
    chrf: float
    log_likelihood: float
    bleu_drop: float
    chrf_drop: float
    log_likelihood_drop: float


@dataclass
class HeadImportance:
    """The result of `head_importance`: `baseline` scores (``bleu``, ``chrf``, ``log_likelihood``), one `HeadScore`
    per head, Spearman `correlations` of the gradient estimate and of the confidence with each measured drop
    (``{"gradient" or "confidence": {"all" or kind: {measure: rho}}}``), pruning `curves` (``{curve:
    [PruningPoint, ...]}``), joint `groups` ablations, `settings` and `timings` (seconds)."""

    baseline: dict[str, float]
    heads: list[HeadScore]
    correlations: dict[str, dict[str, dict[str, float]]]
    curves: dict[str, list[PruningPoint]]
    groups: list[GroupAblation]
    settings: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)

    def head(self, kind: str, layer: int, head: int) -> HeadScore:
        """The score of one head."""
        for score in self.heads:
            if (score.kind, score.layer, score.head) == (kind, layer, head):
                return score
        raise KeyError(f"No head {kind} L{layer} H{head}.")

    def ranked(self, by: str = "bleu_drop") -> list[HeadScore]:
        """The heads, most important first by `by` (a `HeadScore` field: ``bleu_drop``, ``gradient``, ...)."""
        return sorted(self.heads, key=lambda score: -getattr(score, by))

    def summary(self, tolerance: float = 1.0) -> dict[str, Any]:
        """The findings in numbers: heads each curve removes before BLEU drops more than `tolerance` points, the
        positional heads' drops against the others', the alignment heads', the most important heads."""
        positional = [s for s in self.heads if s.tag == "positional"]
        others = [s for s in self.heads if s.tag != "positional"]
        return {
            "baseline": self.baseline,
            "prunable_heads": {
                curve: prunable_heads(points, self.baseline["bleu"], tolerance) for curve, points in self.curves.items()
            },
            "tolerance_bleu": tolerance,
            "positional": {
                "heads": [s.label for s in positional],
                "mean_bleu_drop": _mean([s.bleu_drop for s in positional]),
                "mean_bleu_drop_other_heads": _mean([s.bleu_drop for s in others]),
                "mean_log_likelihood_drop": _mean([s.log_likelihood_drop for s in positional]),
                "mean_log_likelihood_drop_other_heads": _mean([s.log_likelihood_drop for s in others]),
            },
            "alignment": {
                "config": self.settings.get("alignment"),
                "heads": [s.label for s in self.heads if s.alignment],
                "bleu_drop": [s.bleu_drop for s in self.heads if s.alignment],
                "rank_by_bleu_drop": [self.ranked().index(s) + 1 for s in self.heads if s.alignment],
            },
            "top_by_bleu_drop": [s.label for s in self.ranked("bleu_drop")[:5]],
            "top_by_gradient": [s.label for s in self.ranked("gradient")[:5]],
            "spearman_gradient_vs_drop": self.correlations.get("gradient", {}).get("all", {}),
            "spearman_confidence_vs_drop": self.correlations.get("confidence", {}).get("all", {}),
        }

    def to_dict(self) -> dict[str, Any]:
        """Everything, JSON-ready (NaN as None)."""
        data = {
            "settings": self.settings,
            "baseline": self.baseline,
            "heads": [{**asdict(score), "label": score.label} for score in self.heads],
            "correlations": self.correlations,
            "curves": {curve: [asdict(point) for point in points] for curve, points in self.curves.items()},
            "groups": [asdict(group) for group in self.groups],
            "summary": self.summary(),
            "timings": self.timings,
        }
        return _json_ready(data)


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else math.nan


def _json_ready(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) or math.isinf(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def prunable_heads(points: Sequence[PruningPoint], baseline_bleu: float, tolerance: float = 1.0) -> int:
    """How many heads a pruning curve switches off before BLEU first falls more than `tolerance` points below
    `baseline_bleu`."""
    removable = 0
    for point in points:
        if point.bleu < baseline_bleu - tolerance:
            break
        removable = point.removed
    return removable


__all__ = [
    "MEASURES",
    "PRUNING_CURVES",
    "GroupAblation",
    "HeadImportance",
    "HeadScore",
    "PruningPoint",
    "prunable_heads",
]
