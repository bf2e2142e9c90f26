"""Value zeroing (Mohebbi et al. 2023), adapted to cross-attention: the "value_zeroing" method.

For each source token s: its value vector is set to zero in the cross-attention of every decoder layer (the
output of each cross-attention `v_proj` at position s, bias included; the keys, hence the attention weights, stay
as they are, so only what s *carries* is removed), and the teacher-forced decoder runs again on the same
encoder output. The score of (target row t, source token s) is the cosine distance 1 - cos(h_t, h~_t) between the
final decoder output at row t (after the last layer norm, what the output layer reads) with and without s's
values: Mohebbi et al.'s distance. Every zeroed token is a batch row of its own, so one forward pass with S + 1
rows (the unchanged pass first) gives the whole (T - 1, S) matrix. The target prefix is not perturbed: this
method gives no source-vs-prefix share.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from ..architectures import projections
from ..record import AttentionRecord
from .attention import _cross_attention_modules
from .checks import check_positive_int
from .inputs import eval_mode, record_inputs


@contextlib.contextmanager
def zeroed_values(model: Any, keep: torch.Tensor) -> Iterator[None]:
    """Inside: every decoder cross-attention's value vectors are multiplied by `keep` (batch, S): 0 zeroes the
    value of that source token in that batch row, 1 leaves it."""

    def hook(module: Any, args: Any, output: torch.Tensor) -> torch.Tensor:
        return output * keep[..., None].to(output.dtype)

    values = [projections(model, module).value for module in _cross_attention_modules(model)]
    handles = [projection.register_forward_hook(hook) for projection in values]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def decoder_outputs(model: Any, encoded: torch.Tensor, decoder_ids: torch.Tensor) -> torch.Tensor:
    """The final decoder states (batch, T - 1, d) for given encoder outputs."""
    return model.get_decoder()(input_ids=decoder_ids, encoder_hidden_states=encoded, use_cache=False).last_hidden_state


def cosine_distance(original: torch.Tensor, changed: torch.Tensor) -> torch.Tensor:
    return 1.0 - torch.nn.functional.cosine_similarity(original, changed, dim=-1)


def value_zeroing_scores(model: Any, record: AttentionRecord, batch_size: int = 64) -> np.ndarray:
    """(T - 1, S): the cosine distance of each predicting row's decoder output when each source token's
    cross-attention values are zeroed (module docstring); `batch_size` zeroed tokens per forward pass."""
    batch_size = check_positive_int("batch_size", batch_size)
    inputs = record_inputs(model, record)
    length = inputs.source.shape[1]
    columns = []
    with eval_mode(model), torch.no_grad():
        encoded = model.get_encoder()(input_ids=inputs.source).last_hidden_state
        original = decoder_outputs(model, encoded, inputs.decoder)[0]
        for start in range(0, length, batch_size):
            tokens = torch.arange(start, min(start + batch_size, length), device=encoded.device)
            keep = torch.ones(len(tokens), length, device=encoded.device)
            keep[torch.arange(len(tokens)), tokens] = 0.0
            with zeroed_values(model, keep):
                changed = decoder_outputs(
                    model, encoded.expand(len(tokens), -1, -1), inputs.decoder.expand(len(tokens), -1)
                )
            columns.append(cosine_distance(original[None], changed).T)  # (T - 1, tokens)
    scores = torch.cat(columns, dim=1).double().cpu().numpy()
    return np.clip(scores, 0.0, None)  # float rounding can leave -1e-8 where nothing moved


__all__ = ["cosine_distance", "decoder_outputs", "value_zeroing_scores", "zeroed_values"]
