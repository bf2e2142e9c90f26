"""`head_importance`: the whole measurement, from the baseline to each head switched off alone, the pruning curves,
the joint ablation of each head category and of the alignment heads, and the rank correlations of the estimates
with the measured drops (see `vaswani_inspect.importance`)."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from typing import Any

import torch

from ..ablation import Head, ablate_heads, list_heads
from ..record import KINDS
from .measures import (
    PairBatches,
    alignment_heads,
    eval_mode,
    gradient_importance,
    head_confidence,
    mean_log_likelihood,
    normalized_by_layer,
)
from .result import MEASURES, PRUNING_CURVES, GroupAblation, HeadImportance, HeadScore, PruningPoint


class _Runner:
    """Translates and scores the pairs with a set of heads off, counting passes on a progress bar."""

    def __init__(self, model: Any, tokenizer: Any, data: PairBatches, generation: dict[str, Any], bar: Any):
        self.model, self.tokenizer, self.data, self.generation, self.bar = model, tokenizer, data, generation, bar

    def scores(self, heads: Sequence[Head], *, log_likelihood: bool = True) -> dict[str, float]:
        from hf_vaswani.inference import score_translations

        from ..translation import translate_any

        with ablate_heads(self.model, heads):
            hypotheses = translate_any(
                self.model, self.tokenizer, self.data.sources, self.data.direction, **self.generation
            )
            scores = score_translations(hypotheses, self.data.references)
            result = {"bleu": float(scores["bleu"]), "chrf": float(scores["chrf"])}
            if log_likelihood:
                result["log_likelihood"] = mean_log_likelihood(self.model, self.data.batches)
        self.bar.update(1)
        return result


def head_importance(
    model: torch.nn.Module,
    tokenizer: Any,
    pairs: Sequence[Sequence[str]],
    direction: str = "es-en",
    *,
    num_beams: int = 1,
    max_new_tokens: int | None = None,
    batch_size: int = 32,
    curves: Sequence[str] = PRUNING_CURVES,
    prune_by: str = "gradient",
    progress: bool = True,
    model_name: str | None = None,
) -> HeadImportance:
    """Measure how much each attention head matters for translating `pairs` (see the module docstring).

    Args:
        model, tokenizer: a Vaswani translation model and its tokenizer.
        pairs: (English, Spanish) sentence pairs (`hf_vaswani.data.SentencePair` or tuples); `direction` says which
            side is the source and which the reference.
        direction: ``"es-en"`` or ``"en-es"``.
        num_beams, max_new_tokens: decoding of every translation (greedy by default).
        batch_size: sentences per translation and teacher-forced batch.
        curves: the pruning curves to draw: kinds and/or ``"all"`` (empty: none, which saves a translation of the
            pairs per head of each curve).
        prune_by: the pruning order: ``"gradient"`` (the estimate (b), normalised per layer as Michel et al. do,
            least important first) or ``"ablation"`` (the measured BLEU drop, then log-likelihood drop).
        progress: show a tqdm progress bar over the translation passes.
        model_name: stored in the settings (default: the model's `name_or_path`).

    Cost: one translation of the pairs per head, per point of each pruning curve and per group, and one forward and
    backward pass per sentence. The model's head masks are left as they were.

    Raises:
        ValueError: no pairs, an unknown direction, curve or order, a sentence or setting `translate` refuses.
    """
    from tqdm.auto import tqdm

    unknown = [curve for curve in curves if curve not in PRUNING_CURVES]
    if unknown:
        raise ValueError(f"Unknown pruning curve(s) {unknown}: choose from {', '.join(PRUNING_CURVES)}.")
    if prune_by not in ("gradient", "ablation"):
        raise ValueError(f"prune_by must be 'gradient' or 'ablation', got {prune_by!r}.")
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    heads, aligned = list_heads(model), alignment_heads(model)
    total = 1 + len(heads) + sum(len(_curve_heads(heads, c)) for c in curves) + 4 + bool(aligned)
    with eval_mode(model), tqdm(total=total, desc="head-importance", unit="pass", disable=not progress) as bar:
        data = PairBatches(model, tokenizer, pairs, direction, batch_size)
        generation = dict(num_beams=num_beams, max_new_tokens=max_new_tokens, batch_size=batch_size)
        runner = _Runner(model, tokenizer, data, generation, bar)
        baseline = runner.scores([])
        timings["baseline"] = time.perf_counter() - clock

        clock = time.perf_counter()
        stats, confidence = _attention_of_references(model, tokenizer, data, batch_size)
        gradient = gradient_importance(model, data)
        timings["attention_and_gradient"] = time.perf_counter() - clock

        clock = time.perf_counter()
        bar.set_description("head-importance: one head off")
        ablated = {head: runner.scores([head]) for head in heads}
        timings["ablation"] = time.perf_counter() - clock
        scores = _head_scores(heads, baseline, ablated, gradient, confidence, stats, aligned)

        clock = time.perf_counter()
        points = _pruning_curves(runner, baseline, _pruning_order(scores, prune_by), curves)
        timings["pruning"] = time.perf_counter() - clock

        clock = time.perf_counter()
        bar.set_description("head-importance: groups")
        groups = _group_ablations(runner, baseline, scores, aligned)
        timings["groups"] = time.perf_counter() - clock

    settings = {
        "model": model_name if model_name is not None else str(getattr(model.config, "_name_or_path", "")),
        "direction": direction,
        "pairs": len(data.sources),
        "num_beams": num_beams,
        "max_new_tokens": max_new_tokens,
        "prune_by": prune_by,
        "alignment": getattr(model.config, "alignment", None),
        "heads": {kind: sum(h.kind == kind for h in heads) for kind in KINDS},
    }
    correlations = _correlations(scores)
    return HeadImportance(baseline, scores, correlations, points, groups, settings, timings)


def _curve_heads(heads: Sequence[Head], curve: str) -> list[Head]:
    return [head for head in heads if curve in ("all", head.kind)]


def _attention_of_references(
    model: Any, tokenizer: Any, data: PairBatches, batch_size: int
) -> tuple[dict[Head, Any], dict[Head, float]]:
    """Each head's statistics (`head_statistics`: its category) and confidence, from the attention of the
    teacher-forced references."""
    from ..extract import extract
    from ..heads import head_statistics

    settings = dict(direction=data.direction, batch_size=batch_size, truncation=True)
    records = extract(model, tokenizer, data.sources, data.references, **settings)
    stats = {Head(s.kind, s.layer, s.head): s for s in head_statistics(records)}
    return stats, head_confidence(records, getattr(tokenizer, "eos_token", None) or "</s>")


def _head_scores(
    heads: Sequence[Head],
    baseline: dict[str, float],
    ablated: dict[Head, dict[str, float]],
    gradient: dict[Head, float],
    confidence: dict[Head, float],
    stats: dict[Head, Any],
    aligned: Sequence[Head],
) -> list[HeadScore]:
    normalized = normalized_by_layer(gradient)
    return [
        HeadScore(
            *head,
            **ablated[head],
            **{f"{measure}_drop": baseline[measure] - ablated[head][measure] for measure in MEASURES},
            gradient=gradient[head],
            gradient_normalized=normalized[head],
            confidence=confidence[head],
            tag=stats[head].tag,
            focus=stats[head].focus,
            alignment=head in aligned,
        )
        for head in heads
    ]


def _pruning_order(scores: Sequence[HeadScore], prune_by: str) -> list[Head]:
    """Every head, least important first."""
    if prune_by == "gradient":
        key = lambda s: (s.gradient_normalized, s.gradient)  # noqa: E731
    else:
        key = lambda s: (s.bleu_drop, s.log_likelihood_drop)  # noqa: E731
    return [Head(s.kind, s.layer, s.head) for s in sorted(scores, key=key)]


def _pruning_curves(
    runner: _Runner, baseline: dict[str, float], order: Sequence[Head], curves: Sequence[str]
) -> dict[str, list[PruningPoint]]:
    points = {}
    for curve in curves:
        runner.bar.set_description(f"head-importance: pruning {curve}")
        points[curve] = _pruning_curve(runner, baseline, _curve_heads(order, curve))
    return points


def _pruning_curve(runner: _Runner, baseline: dict[str, float], order: Sequence[Head]) -> list[PruningPoint]:
    points = [PruningPoint(0, [], baseline["bleu"], baseline["chrf"])]
    for removed in range(1, len(order) + 1):
        off = list(order[:removed])
        scores = runner.scores(off, log_likelihood=False)
        points.append(PruningPoint(removed, [h.label() for h in off], scores["bleu"], scores["chrf"]))
    return points


def _group_ablations(
    runner: _Runner, baseline: dict[str, float], scores: Sequence[HeadScore], aligned: Sequence[Head]
) -> list[GroupAblation]:
    groups: dict[str, list[Head]] = {}
    for tag in ("positional", "special-token", "broad", "other"):
        groups[f"{tag} heads"] = [Head(s.kind, s.layer, s.head) for s in scores if s.tag == tag]
    if aligned:
        groups["alignment heads"] = list(aligned)
    result = []
    for name, heads in groups.items():
        if not heads:
            runner.bar.update(1)
            continue
        measured = runner.scores(heads)
        drops = {f"{measure}_drop": baseline[measure] - measured[measure] for measure in MEASURES}
        result.append(GroupAblation(name, [h.label() for h in heads], **measured, **drops))
    return result


def _correlations(scores: Sequence[HeadScore]) -> dict[str, dict[str, dict[str, float]]]:
    """Spearman's rho of each estimate (gradient, confidence) with each measured drop, over all heads and per kind."""
    result: dict[str, dict[str, dict[str, float]]] = {}
    for estimate in ("gradient", "confidence"):
        result[estimate] = {}
        for group in ("all", *KINDS):
            chosen = [s for s in scores if group in ("all", s.kind)]
            values = [getattr(s, estimate) for s in chosen]
            result[estimate][group] = {
                measure: _spearman(values, [getattr(s, f"{measure}_drop") for s in chosen]) for measure in MEASURES
            }
    return result


def _spearman(x: Sequence[float], y: Sequence[float]) -> float:
    from scipy.stats import spearmanr

    if len(x) < 3:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant input gives NaN, which is what it is reported as
        return float(spearmanr(x, y).statistic)


__all__ = ["head_importance"]
