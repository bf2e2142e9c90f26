"""Guided alignment (Garg et al. 2019, "Jointly Learning to Align and Translate with Transformer Models").

One encoder-decoder attention head of one decoder layer is trained to follow statistical word alignments: for
each target token that has links, the target distribution is uniform over the source tokens it is linked to, and
the loss is the cross-entropy between that distribution and the head's attention weights, averaged over those
tokens. Training minimises translation loss + `weight` x this loss (the paper: weight 0.05, the penultimate layer).
The head then *is* a word aligner: it is supervised to align, which says nothing about how the other heads
decide the translation.

The row of a target token is the decoder position that predicts it (the position of its label), which
`vaswani_inspect` reads with ``shift=False``.

Pieces: `GuidedAlignmentCollator` turns the ``alignment`` column of `hf_vaswani.data.tokenize_pairs` into a
(batch, target, source) target tensor; `AttentionCapture` keeps the supervised head's weights of the last forward
pass (the model must run eager attention, which returns weights); `guided_alignment_loss` compares the two.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

__all__ = ["AttentionCapture", "GuidedAlignmentCollator", "alignment_targets", "guided_alignment_loss"]


def alignment_targets(links: Sequence[Sequence[int]], target_length: int, source_length: int) -> torch.Tensor:
    """(batch, target_length, source_length): row t of sentence b is uniform over the source tokens linked to
    label position t by ``links[b]`` (flat ``[s0, t0, s1, t1, ...]``), and all zero when t has no link."""
    targets = torch.zeros(len(links), target_length, source_length)
    for row, flat in enumerate(links):
        for source, target in zip(flat[0::2], flat[1::2], strict=True):
            if target < target_length and source < source_length:
                targets[row, target, source] = 1.0
    totals = targets.sum(-1, keepdim=True)
    return targets / totals.clamp(min=1.0)


@dataclass
class GuidedAlignmentCollator:
    """Wraps a collator (e.g. `DataCollatorForSeq2Seq`): pops each feature's ``alignment`` links before it
    pads the rest, then adds ``alignment_targets`` for the padded lengths of the batch."""

    collator: Any

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, Any]:
        supervised = any("alignment" in feature for feature in features)  # evaluation batches have none
        links = [feature.pop("alignment", None) or [] for feature in features]
        batch = self.collator(features)
        if supervised:
            shape = batch["labels"].shape[1], batch["input_ids"].shape[1]
            batch["alignment_targets"] = alignment_targets(links, *shape)
        return batch


class AttentionCapture:
    """Keeps the weights of one head of one attention module from its last forward pass (with autograd)."""

    def __init__(self, attention: nn.Module, head: int):
        self.head = head
        self.weights: torch.Tensor | None = None
        self._handle = attention.register_forward_hook(self._keep)

    def _keep(self, module: nn.Module, args: Any, output: tuple[torch.Tensor, torch.Tensor | None]) -> None:
        weights = output[1]
        if weights is None:
            raise RuntimeError(
                "Guided alignment needs the attention weights: run the model with eager attention "
                '(model.set_attn_implementation("eager")).'
            )
        self.weights = weights[:, self.head]

    def pop(self) -> torch.Tensor:
        weights, self.weights = self.weights, None
        if weights is None:
            raise RuntimeError("No attention weights were captured: the model did not run the supervised layer.")
        return weights

    def remove(self) -> None:
        self._handle.remove()


def guided_alignment_loss(weights: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy between the target alignment rows and the attention rows, averaged over the rows that have
    a target (zero when none has): -sum_s p(s | t) log a(t, s)."""
    targets = targets.to(weights.device)
    supervised = targets.sum(-1) > 0
    log_weights = torch.log(weights.float().clamp(min=1e-9))
    per_row = -(targets * log_weights).sum(-1)
    return per_row[supervised].sum() / supervised.sum().clamp(min=1)
