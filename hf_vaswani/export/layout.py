"""The two sinusoidal layouts are one model in two coordinate systems: an exact change of layout.

`sinusoidal_layout="interleaved"` (the paper's formula) puts sin and cos of frequency i at dimensions 2i and
2i + 1; `"concatenated"` (Marian, tensor2tensor, CTranslate2's built-in table) puts all sines first. Reordering the
d_model dimensions of the residual stream with `concatenated_order` turns one table into the other. Every weight that
reads the residual stream (token embeddings, q/k/v projections, first FFN layer, output projection) has its input
columns reordered, every weight that writes to it (attention output projection, second FFN layer, their biases)
has its output rows reordered, and LayerNorm gains and biases follow; LayerNorm's mean and variance do not depend
on the order of the dimensions. The result computes the same function, up to the order of float additions.
"""

from __future__ import annotations

import copy

import torch

from ..configuration_vaswani import VaswaniConfig
from ..modeling_vaswani import VaswaniForConditionalGeneration

__all__ = ["concatenated_order", "to_concatenated_layout", "to_concatenated_state_dict"]

#: Weights of one layer (relative to ``model.<side>.layers.<i>.``) whose *input* dimension is d_model.
_READS = ("q_proj.weight", "k_proj.weight", "v_proj.weight", "ffn.fc1.weight")
#: Weights and biases whose *output* dimension is d_model, and LayerNorm parameters.
_WRITES = ("out_proj.weight", "out_proj.bias", "ffn.fc2.weight", "ffn.fc2.bias", "layer_norm.weight", "layer_norm.bias")


def concatenated_order(d_model: int) -> torch.Tensor:
    """The dimension order that turns the interleaved table into the concatenated one: 0, 2, 4, ..., 1, 3, 5, ..."""
    return torch.cat((torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)))


def to_concatenated_state_dict(state_dict: dict[str, torch.Tensor], config: VaswaniConfig) -> dict[str, torch.Tensor]:
    """The weights of a model with `config` for the same model with ``sinusoidal_layout="concatenated"``.

    A model already in the concatenated layout (or without sinusoidal positions) gets its weights back unchanged.
    """
    if config.position_encoding != "sinusoidal" or config.sinusoidal_layout == "concatenated":
        return dict(state_dict)
    order = concatenated_order(config.d_model)
    permuted = {}
    for name, tensor in state_dict.items():
        if name.endswith("embed_tokens.weight") or name == "lm_head.weight" or name.endswith(_READS):
            permuted[name] = tensor[:, order]
        elif name.endswith(_WRITES):
            permuted[name] = tensor[order]
        elif name == "final_logits_bias" or name.endswith(("q_proj.bias", "k_proj.bias", "v_proj.bias", "fc1.bias")):
            permuted[name] = tensor
        else:
            raise ValueError(f"No rule to change the sinusoidal layout of the weight {name!r}.")
    return permuted


def to_concatenated_layout(model: VaswaniForConditionalGeneration) -> VaswaniForConditionalGeneration:
    """A copy of `model` with ``sinusoidal_layout="concatenated"`` that computes the same function (see above)."""
    config = copy.deepcopy(model.config)
    state_dict = to_concatenated_state_dict(model.state_dict(), config)
    if config.position_encoding == "sinusoidal":
        config.sinusoidal_layout = "concatenated"
    converted = VaswaniForConditionalGeneration(config)
    converted.load_state_dict(state_dict)
    converted.generation_config = copy.deepcopy(model.generation_config)
    return converted.to(next(model.parameters()).device).train(model.training)
