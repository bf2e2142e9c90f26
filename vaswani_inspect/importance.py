"""Which heads matter for the translation: switch each off and measure (Michel et al. 2019), estimate the same from
one gradient pass, and set both next to what the head's attention looks like (Voita et al. 2019, Clark et al. 2019).

`head_importance(model, tokenizer, pairs, direction)` measures, on sentence pairs:

(a) *ablation*: for each head alone switched off (`vaswani_inspect.ablate_heads`), the drop in corpus BLEU and chrF
    of the translations (greedy by default) and in the reference log-likelihood (teacher-forced, the sum of
    log p(reference token) per sentence, averaged over sentences, no label smoothing);
(b) the *gradient estimate* of Michel et al. (2019): I_h = mean over sentences of |dL/dmask_h|, L the negative
    reference log-likelihood of one sentence, from one forward and backward pass per sentence with every head's
    mask at 1; and its Spearman rank correlation with each measure of (a), over all heads and per kind;
(c) the head's *confidence* (Voita et al. 2019: the mean over query rows of the row's largest weight, rows whose
    query is ``</s>`` left out) and its category (`vaswani_inspect.head_statistics`: positional, special-token,
    broad, other), both from the attention of the teacher-forced references; and the rank correlation of the
    confidence with (a), as for (b);
(d) the *pruning curve*: BLEU as the heads of one kind (and of all kinds together) are switched off one after the
    other in order of estimated importance, least important first (Michel et al. Fig. 1);

and the joint ablation of each head category and of the model's alignment heads (`config.alignment`).

Attention is not explanation: what a head's weights look like (c) need not say what it does for the output (a).
This measures what the output loses without the head, on these sentences, with the other heads left as they are.
"""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from .ablation import Head, ablate_heads, gradient_masks, list_heads
from .record import KINDS, AttentionRecord

__all__ = [
    "MEASURES",
    "PRUNING_CURVES",
    "GroupAblation",
    "HeadImportance",
    "HeadScore",
    "PruningPoint",
    "alignment_heads",
    "head_confidence",
    "head_importance",
    "prunable_heads",
    "reference_log_likelihood",
]

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


def alignment_heads(model: torch.nn.Module) -> list[Head]:
    """The cross-attention heads the model's `config.alignment` reads alignments from, averaged readings included
    (``"mean"`` layer: that head in every layer; ``"all"`` heads: every head of the layer); none without an
    alignment configuration."""
    alignment = getattr(model.config, "alignment", None)
    if not alignment:
        return []
    layers = int(model.config.decoder_layers)
    heads = int(model.config.decoder_attention_heads)
    found: list[Head] = []
    for reading in [alignment, *alignment.get("average_with", [])]:
        chosen_layers = range(layers) if reading["layer"] == "mean" else [int(reading["layer"])]
        chosen_heads = range(heads) if reading["heads"] == "all" else [int(h) for h in reading["heads"]]
        found += [Head("cross", layer, head) for layer in chosen_layers for head in chosen_heads]
    return list(dict.fromkeys(found))


# --------------------------------------------------------------------------------------------------- passes


class _Pairs:
    """The sources, references and teacher-forced batches of `head_importance`'s sentence pairs."""

    def __init__(self, model: Any, tokenizer: Any, pairs: Sequence[Sequence[str]], direction: str, batch_size: int):
        from hf_vaswani.data import LANGUAGES
        from hf_vaswani.languages import direction_to_languages, source_with_language

        source_lang, target_lang = direction_to_languages(direction)
        pairs = [tuple(pair) for pair in pairs]
        if not pairs:
            raise ValueError("No sentence pair to measure head importance on.")
        if any(len(pair) != 2 for pair in pairs):
            raise ValueError("Each pair must be (English, Spanish), two texts.")
        self.direction = direction
        self.sources = [pair[LANGUAGES.index(source_lang)] for pair in pairs]
        self.references = [pair[LANGUAGES.index(target_lang)] for pair in pairs]
        self.tagged = [source_with_language(text, target_lang) for text in self.sources]
        self.batches = [
            _teacher_forced(model, tokenizer, self.tagged[i : i + batch_size], self.references[i : i + batch_size])
            for i in range(0, len(pairs), batch_size)
        ]


def _teacher_forced(model: Any, tokenizer: Any, sources: list[str], references: list[str]) -> dict[str, torch.Tensor]:
    """One batch: encoder inputs, decoder inputs (the references shifted right behind the start token) and labels
    (-100 on padding), cut to the model's positions."""
    from hf_vaswani.modeling_vaswani import shift_tokens_right

    limit = int(getattr(model.config, "max_position_embeddings", 0) or 0) or None
    device = next(model.parameters()).device
    encoded = tokenizer(sources, text_target=references, padding=True, truncation=limit is not None, max_length=limit)
    labels = torch.tensor(encoded["labels"])
    pad, start = model.config.pad_token_id, model.config.decoder_start_token_id
    decoder_input_ids = shift_tokens_right(labels, pad, start)
    labels = labels.masked_fill(labels == pad, -100)
    return {
        "input_ids": torch.tensor(encoded["input_ids"]).to(device),
        "attention_mask": torch.tensor(encoded["attention_mask"]).to(device),
        "decoder_input_ids": decoder_input_ids.to(device),
        "labels": labels.to(device),
    }


def _sentence_log_likelihoods(model: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Sum of log p(reference token) per sentence of the batch (no label smoothing)."""
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    logits = model(**inputs).logits.float()
    labels = batch["labels"]
    log_probs = -torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels.clamp(min=0), reduction="none")
    return (log_probs * (labels != -100)).sum(-1)


def reference_log_likelihood(
    model: torch.nn.Module,
    tokenizer: Any,
    pairs: Sequence[Sequence[str]],
    direction: str = "es-en",
    *,
    batch_size: int = 32,
) -> float:
    """The mean over (English, Spanish) `pairs` of the teacher-forced log-likelihood of the reference in
    `direction` (the sum of log p(reference token) over its tokens, ``</s>`` included; no label smoothing), with
    the model's heads as they are (inside `ablate_heads`: without the heads switched off)."""
    with _eval_mode(model):
        return _mean_log_likelihood(model, _Pairs(model, tokenizer, pairs, direction, batch_size).batches)


def _mean_log_likelihood(model: Any, batches: Sequence[dict[str, torch.Tensor]]) -> float:
    with torch.inference_mode():
        values = torch.cat([_sentence_log_likelihoods(model, batch) for batch in batches])
    return float(values.mean())


def _gradient_importance(model: Any, data: _Pairs) -> dict[Head, float]:
    """Michel et al.'s I_h = mean over sentences of |dL/dmask_h|, L the negative reference log-likelihood."""
    totals: dict[str, torch.Tensor] = {}
    count = 0
    with _frozen(model), torch.enable_grad():
        for batch in data.batches:
            for row in range(batch["input_ids"].shape[0]):
                one = {k: v[row : row + 1] for k, v in batch.items()}
                with gradient_masks(model) as masks:
                    (-_sentence_log_likelihoods(model, one).sum()).backward()
                for kind, mask in masks.items():
                    totals[kind] = totals.get(kind, 0) + mask.grad.abs()
                count += 1
    return {
        Head(kind, layer, head): float(total[layer, head] / count)
        for kind, total in totals.items()
        for layer in range(total.shape[0])
        for head in range(total.shape[1])
    }


def _normalized_by_layer(gradient: dict[Head, float]) -> dict[Head, float]:
    """Each head's gradient importance over the l2 norm of its layer's (Michel et al. sec. 4.2)."""
    norms: dict[tuple[str, int], float] = {}
    for head, value in gradient.items():
        norms[head.kind, head.layer] = norms.get((head.kind, head.layer), 0.0) + value**2
    return {head: value / math.sqrt(norms[head.kind, head.layer] or 1.0) for head, value in gradient.items()}


def head_confidence(records: Sequence[AttentionRecord], eos_token: str = "</s>") -> dict[Head, float]:
    """Voita et al. (2019)'s confidence of every head: the mean over query rows of the row's largest weight,
    without the rows whose query token is `eos_token` and the decoder's first row (it can attend one key only)."""
    totals: dict[str, np.ndarray] = {}
    rows: dict[str, int] = {}
    for record in records:
        for kind in KINDS:
            attention = record.attention(kind)
            keep = np.array([token != eos_token for token in record.query_tokens(kind)])
            if kind == "decoder":
                keep[0] = False
            totals[kind] = totals.get(kind, 0.0) + attention[:, :, keep].max(-1).sum(-1)
            rows[kind] = rows.get(kind, 0) + int(keep.sum())
    return {
        Head(kind, layer, head): float(total[layer, head] / max(rows[kind], 1))
        for kind, total in totals.items()
        for layer in range(total.shape[0])
        for head in range(total.shape[1])
    }


def _spearman(x: Sequence[float], y: Sequence[float]) -> float:
    from scipy.stats import spearmanr

    if len(x) < 3:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant input gives NaN, which is what it is reported as
        return float(spearmanr(x, y).statistic)


@contextlib.contextmanager
def _frozen(model: torch.nn.Module) -> Iterator[None]:
    """No gradient for the weights inside the block (only the head masks get one), and no `.grad` left on them."""
    flags = [(parameter, parameter.requires_grad) for parameter in model.parameters()]
    for parameter, _ in flags:
        parameter.requires_grad_(False)
    try:
        yield
    finally:
        for parameter, flag in flags:
            parameter.requires_grad_(flag)


@contextlib.contextmanager
def _eval_mode(model: torch.nn.Module) -> Iterator[None]:
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


# --------------------------------------------------------------------------------------------------- the run


class _Runner:
    """Translates and scores the pairs with a set of heads off, counting passes on a progress bar."""

    def __init__(self, model: Any, tokenizer: Any, data: _Pairs, generation: dict[str, Any], bar: Any):
        self.model, self.tokenizer, self.data, self.generation, self.bar = model, tokenizer, data, generation, bar

    def scores(self, heads: Sequence[Head], *, log_likelihood: bool = True) -> dict[str, float]:
        from hf_vaswani.inference import score_translations, translate

        with ablate_heads(self.model, heads):
            hypotheses = translate(
                self.model, self.tokenizer, self.data.sources, self.data.direction, **self.generation
            )
            scores = score_translations(hypotheses, self.data.references)
            result = {"bleu": float(scores["bleu"]), "chrf": float(scores["chrf"])}
            if log_likelihood:
                result["log_likelihood"] = _mean_log_likelihood(self.model, self.data.batches)
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
    with _eval_mode(model), tqdm(total=total, desc="head-importance", unit="pass", disable=not progress) as bar:
        data = _Pairs(model, tokenizer, pairs, direction, batch_size)
        generation = dict(num_beams=num_beams, max_new_tokens=max_new_tokens, batch_size=batch_size)
        runner = _Runner(model, tokenizer, data, generation, bar)
        baseline = runner.scores([])
        timings["baseline"] = time.perf_counter() - clock

        clock = time.perf_counter()
        stats, confidence = _attention_of_references(model, tokenizer, data, batch_size)
        gradient = _gradient_importance(model, data)
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
    model: Any, tokenizer: Any, data: _Pairs, batch_size: int
) -> tuple[dict[Head, Any], dict[Head, float]]:
    """Each head's statistics (`head_statistics`: its category) and confidence, from the attention of the
    teacher-forced references."""
    from .extract import extract
    from .heads import head_statistics

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
    normalized = _normalized_by_layer(gradient)
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
