"""What `head_importance` measures besides translations: the teacher-forced reference log-likelihood, the gradient
estimate of each head's importance (Michel et al. 2019), each head's confidence (Voita et al. 2019), and which heads
the model's alignment configuration reads."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch

from hf_vaswani.directions import source_for, target_language_settings

from ..ablation import Head, gradient_masks, head_counts
from ..alignment.config import model_alignment
from ..record import KINDS, AttentionRecord


def alignment_heads(model: torch.nn.Module) -> list[Head]:
    """The cross-attention heads the model's `config.alignment` reads alignments from, averaged readings included
    (``"mean"`` layer: that head in every layer; ``"all"`` heads: every head of the layer); none without an
    alignment configuration."""
    alignment = model_alignment(model.config)
    if not alignment:
        return []
    layers, heads = head_counts(model)["cross"]
    found: list[Head] = []
    for reading in [alignment, *alignment.get("average_with", [])]:
        chosen_layers = range(layers) if reading["layer"] == "mean" else [int(reading["layer"])]
        chosen_heads = range(heads) if reading["heads"] == "all" else [int(h) for h in reading["heads"]]
        found += [Head("cross", layer, head) for layer in chosen_layers for head in chosen_heads]
    return list(dict.fromkeys(found))


class PairBatches:
    """The sources, references and teacher-forced batches of `head_importance`'s sentence pairs."""

    def __init__(self, model: Any, tokenizer: Any, pairs: Sequence[Sequence[str]], direction: str, batch_size: int):
        from hf_vaswani.data import LANGUAGES
        from hf_vaswani.directions import pair_language, resolve_direction

        how = resolve_direction(model, tokenizer, direction)
        source_lang, target_lang = pair_language(how.name.split("-")[0]), pair_language(how.name.split("-")[1])
        if {source_lang, target_lang} != set(LANGUAGES):
            raise ValueError(f"The pairs are English and Spanish: direction {direction!r} is not between them.")
        pairs = [tuple(pair) for pair in pairs]
        if not pairs:
            raise ValueError("No sentence pair to measure head importance on.")
        if any(len(pair) != 2 for pair in pairs):
            raise ValueError("Each pair must be (English, Spanish), two texts.")
        self.direction = direction
        self.sources = [pair[LANGUAGES.index(source_lang)] for pair in pairs]
        self.references = [pair[LANGUAGES.index(target_lang)] for pair in pairs]
        self.tagged = [source_for(how, text) for text in self.sources]
        with target_language_settings(tokenizer, how):
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
    with eval_mode(model):
        return mean_log_likelihood(model, PairBatches(model, tokenizer, pairs, direction, batch_size).batches)


def mean_log_likelihood(model: Any, batches: Sequence[dict[str, torch.Tensor]]) -> float:
    with torch.inference_mode():
        values = torch.cat([_sentence_log_likelihoods(model, batch) for batch in batches])
    return float(values.mean())


def gradient_importance(model: Any, data: PairBatches) -> dict[Head, float]:
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


def normalized_by_layer(gradient: dict[Head, float]) -> dict[Head, float]:
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
def eval_mode(model: torch.nn.Module) -> Iterator[None]:
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


__all__ = [
    "PairBatches",
    "alignment_heads",
    "eval_mode",
    "gradient_importance",
    "head_confidence",
    "mean_log_likelihood",
    "normalized_by_layer",
    "reference_log_likelihood",
]
