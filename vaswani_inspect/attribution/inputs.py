"""What the model-running methods share: the record's ids as tensors, eval mode, the token embeddings, and the
log-probability of each target piece from embeddings (the function the gradient methods explain)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from ..architectures import input_embeddings, output_logits
from ..record import AttentionRecord


@dataclass(frozen=True)
class RecordInputs:
    """The ids of one token-level record: `source` (1, S), `decoder` (1, T - 1) the decoder inputs that predict a
    piece (the record's last input, `</s>`, predicts nothing), `labels` (T - 1,) the piece each row predicts."""

    source: torch.Tensor
    decoder: torch.Tensor
    labels: torch.Tensor

    @property
    def rows(self) -> int:
        return int(self.labels.numel())


def device_of(model: Any) -> torch.device:
    try:
        return next(model.parameters()).device
    except (AttributeError, StopIteration):
        return torch.device("cpu")


def record_inputs(model: Any, record: AttentionRecord) -> RecordInputs:
    """The record's ids on the model's device; a ValueError for a word-level record or one with nothing to explain."""
    if record.level != "token":
        raise ValueError("attribute() needs a token-level record (one from extract, before to_words).")
    if len(record.target_tokens) < 2:
        raise ValueError("The record's target has no piece after the decoder start token: nothing to explain.")
    device = device_of(model)
    ids = torch.tensor(record.target_ids, dtype=torch.long, device=device)
    return RecordInputs(
        source=torch.tensor([record.source_ids], dtype=torch.long, device=device),
        decoder=ids[None, :-1],
        labels=ids[1:],
    )


@contextlib.contextmanager
def eval_mode(model: Any) -> Iterator[Any]:
    """Eval mode inside (no dropout), the previous mode restored afterwards."""
    was_training = bool(getattr(model, "training", False))
    if was_training:
        model.eval()
    try:
        yield model
    finally:
        if was_training:
            model.train()


def embeddings(model: Any, inputs: RecordInputs) -> tuple[torch.Tensor, torch.Tensor]:
    """The token embeddings the encoder and the decoder read, (1, S, d) and (1, T - 1, d), as `inputs_embeds`
    (scaled by sqrt(d_model) where the model scales them; positional encodings are added inside the model)."""
    source = input_embeddings(model, "encoder", inputs.source)
    target = input_embeddings(model, "decoder", inputs.decoder)
    return source.detach(), target.detach()


def _final_states(model: Any, source_embeds: torch.Tensor, target_embeds: torch.Tensor) -> torch.Tensor:
    """The decoder's last hidden states from embeddings. Attention runs the eager path (`output_attentions`):
    plain matmuls, whose backward is fast on the CPU (PyTorch's fused attention's is not, in bfloat16 least)."""
    encoded = model.get_encoder()(inputs_embeds=source_embeds, output_attentions=True).last_hidden_state
    decoder = model.get_decoder()
    return decoder(
        inputs_embeds=target_embeds, encoder_hidden_states=encoded, use_cache=False, output_attentions=True
    ).last_hidden_state


def _log_softmax_of(model: Any, hidden: torch.Tensor) -> torch.Tensor:
    """log p over the vocabulary from decoder states (..., d), in float32 at least."""
    logits = output_logits(model, hidden)
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()  # a log-softmax over the vocabulary in half precision loses the small ones
    return torch.log_softmax(logits, dim=-1)


def log_probabilities(
    model: Any,
    source_embeds: torch.Tensor,
    target_embeds: torch.Tensor,
    positions: torch.Tensor,
    labels: torch.Tensor,
    contrast: torch.Tensor | None = None,
) -> torch.Tensor:
    """For each batch row b: log p(labels[b] | source_embeds[b], target_embeds[b, :positions[b] + 1]), read at
    decoder position positions[b]. Only the needed positions go through the output layer (one vocabulary-sized
    row per batch row instead of one per position), and the decoder runs on the longest prefix the batch needs.
    With `contrast` (a foil piece per batch row): log p(labels[b]) - log p(contrast[b]) from the same prefix, 0
    where the two pieces are the same (`contrasted`)."""
    length = int(positions.max()) + 1
    hidden = _final_states(model, source_embeds, target_embeds[:, :length])
    rows = torch.arange(hidden.shape[0], device=hidden.device)
    log_p = _log_softmax_of(model, hidden[rows, positions])
    return contrasted(log_p[rows, labels], None if contrast is None else log_p[rows, contrast], labels, contrast)


def contrasted(
    log_p: torch.Tensor, foil_log_p: torch.Tensor | None, labels: torch.Tensor, contrast: torch.Tensor | None
) -> torch.Tensor:
    """`log_p` alone, or with a foil the difference log p(label) - log p(foil) where the label and the foil piece
    differ and exactly 0 where they agree (nothing is contrasted there: the gradient is zero, not a rounding)."""
    if contrast is None or foil_log_p is None:
        return log_p
    return (log_p - foil_log_p) * (labels != contrast).to(log_p.dtype)


def point_log_probabilities(
    model: Any,
    source_embeds: torch.Tensor,
    target_embeds: torch.Tensor,
    positions: torch.Tensor,
    labels: torch.Tensor,
    contrast: torch.Tensor | None = None,
) -> torch.Tensor:
    """(points, pieces): for each input point p (a batch row of `source_embeds` (P, S, d) and `target_embeds`
    (P, L, d)) and each piece r, log p(labels[r] | point p's source and prefix up to positions[r]), read at decoder
    position positions[r]: every piece from one forward of the point (causality: position r reads no later input).
    With `contrast` (a foil piece per r): log p(labels[r]) - log p(contrast[r]), 0 where they agree
    (`contrasted`)."""
    hidden = _final_states(model, source_embeds, target_embeds[:, : int(positions.max()) + 1])
    log_p = _log_softmax_of(model, hidden[:, positions])  # (P, R, vocabulary)

    def read(pieces: torch.Tensor) -> torch.Tensor:
        return log_p.gather(-1, pieces.expand(hidden.shape[0], -1)[..., None])[..., 0]

    return contrasted(read(labels), None if contrast is None else read(contrast), labels, contrast)


__all__ = [
    "RecordInputs",
    "contrasted",
    "device_of",
    "embeddings",
    "eval_mode",
    "log_probabilities",
    "point_log_probabilities",
    "record_inputs",
]
