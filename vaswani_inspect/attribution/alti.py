"""ALTI+ (Ferrando, Gállego, Alastruey, Escolano & Costa-jussà 2022): the "alti_plus" method.

No maintained library offers ALTI+ for transformers models (the authors' code is a research repository tied to
fairseq), so it is written here from the two papers' definitions:

* **ALTI** (Ferrando et al. 2022, "Measuring the Mixing of Contextual Information in the Transformer"). An attention
  block (multi-head attention, its residual connection and, where the model puts it there, its layer
  normalisation) maps its inputs x_j to outputs y_i. Written out, y_i is a sum of one *transformed vector* per
  input, y_i = sum_j T_i(x_j) + b_i: T_i(x_j) = sum_h alpha^h_ij W_O^h (W_V^h x_j + b_V^h) (head h's value of x_j
  through its slice of the output projection), plus x_i itself for j = i (the residual), and b_i the part no input
  carries (the output projection's bias, the layer norm's bias). A post-LN block (the paper's model, Marian, BART)
  normalises the sum: LN(z) = (z - mean(z)) / s * gamma + beta, with s the standard deviation of the *whole* z_i, is
  linear in z once s is fixed, so each T_i(x_j) goes through (z - mean(z)) / s_i * gamma and beta joins b_i. A
  pre-LN block (mBART, NLLB, T5) normalises each input alone before the attention, a function of x_j only, so it
  stays inside T_i(x_j), and the residual is the un-normalised x_i. The contribution of x_j to y_i is the
  Manhattan-distance measure c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1), normalised so that a row sums to 1,
  where y_i = sum_j T_i(x_j) is the part of the output the inputs carry. The token-to-token contributions of a
  stack are the product of its layers' matrices, rollout-like: R = C^L ... C^1. The feed-forward sublayers are not
  modelled (ALTI's assumption: they transform each position alone).
* **ALTI+** (Ferrando et al. 2022, "Towards Opening the Black Box of Neural Machine Translation: Source and Target
  Contributions to the Model") carries this through the decoder. Decoder position t is tracked as a mix of the
  target prefix (P, (T, T)) and of the source tokens (Q, (T, S)), from P = I, Q = 0; per decoder layer:
  self-attention, whose contributions C_self mix the decoder positions: P <- C_self P, Q <- C_self Q;
  cross-attention, whose inputs are the encoder outputs and the decoder state (its residual), contributions
  C_enc (T, S) and c_res (T,): P <- c_res P, Q <- c_res Q + C_enc R_enc, with R_enc the encoder's ALTI matrix.
  Each row of [P, Q] sums to 1 at every layer; after the last, Q[t] is how much each source token contributes to
  the prediction of target piece t + 1 and its row sum is the *source share* (the rest, P's, is the prefix's).

Unlike rollout's 0.5 residual convention (`vaswani_inspect.attribution.rollout`), every mixing weight here is
measured on the vectors the model computes, so the source share differs from word to word and sentence to sentence.

Where the model keeps each block is read from `vaswani_inspect.architectures` (attention modules, projections,
heads); its layer norm is the attention module's sibling (``self_attn`` -> ``self_attn_layer_norm``, T5's
``layer.0.SelfAttention`` -> ``layer.0.layer_norm``), and whether it comes before or after the attention is read
off one forward pass (which tensor it normalises), not assumed. Each block's decomposition is checked against the
model's own outputs on that pass: an attention this module cannot write out (a head mask, another layout) is
refused rather than measured wrong.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..architectures import UnsupportedModelError, attention_modules, ensure_attention_weights, head_size, projections
from ..record import KINDS, AttentionRecord
from .inputs import eval_mode, record_inputs


@dataclass(frozen=True)
class BlockDecomposition:
    """One attention block's outputs written as a sum over its inputs (float64).

    Attributes:
        vectors: (queries, inputs, d): T_i(x_j), the transformed vector of input j in output i. For
            self-attention the inputs are the block's positions (the residual is in T_i(x_i)); for cross-attention
            the encoder outputs, then one last column for the decoder state (the residual).
        bias: (queries, d): what no input carries (output projection bias, layer norm bias).
        output: (queries, d): the block's output as the model computed it; ``vectors.sum(1) + bias`` equals it.
        pre_norm: whether the block normalises its input (pre-LN) rather than its output (post-LN).
    """

    vectors: torch.Tensor
    bias: torch.Tensor
    output: torch.Tensor
    pre_norm: bool


@dataclass
class _Capture:
    """What one forward pass showed of one attention block: the attention module's query input and output, and
    its layer norm's input and output."""

    norm: torch.nn.Module | None = None
    query_input: torch.Tensor | None = None
    attention_output: torch.Tensor | None = None
    norm_input: torch.Tensor | None = None
    norm_output: torch.Tensor | None = None


def manhattan_contributions(vectors: torch.Tensor) -> torch.Tensor:
    """ALTI's contributions (queries, inputs) of transformed vectors (queries, inputs, d): c_ij = max(0, ||y_i||_1
    - ||y_i - T_i(x_j)||_1) with y_i = sum_j T_i(x_j), each row normalised to sum to 1 (a row where every input
    scores 0 keeps nothing: a zero row)."""
    total = vectors.sum(dim=1, keepdim=True)
    raw = (total.abs().sum(dim=-1) - (total - vectors).abs().sum(dim=-1)).clamp(min=0.0)
    sums = raw.sum(dim=-1, keepdim=True)
    return torch.where(sums > 0, raw / sums.clamp(min=torch.finfo(raw.dtype).tiny), torch.zeros_like(raw))


def _norm_of(model: Any, module: torch.nn.Module, names: dict[int, str]) -> torch.nn.Module:
    """The layer norm that goes with an attention module: its sibling ``<name>_layer_norm`` (transformers' BART
    family and ours) or ``layer_norm`` (T5's ``layer.N`` wrappers). `names`: id(module) -> qualified name."""
    qualified = names.get(id(module))
    if qualified is None:
        raise UnsupportedModelError(f"{type(model).__name__}: an attention module is not among its modules.")
    parent_name, _, own = qualified.rpartition(".")
    parent = model.get_submodule(parent_name)
    for candidate in (f"{own}_layer_norm", "layer_norm"):
        norm = getattr(parent, candidate, None)
        if isinstance(norm, torch.nn.Module):
            return norm
    raise UnsupportedModelError(
        f"{type(model).__name__}: found no layer norm beside {qualified} ({own}_layer_norm or layer_norm): "
        "ALTI+ needs it to write the attention block out."
    )


@contextlib.contextmanager
def _captured(model: Any, modules: list[torch.nn.Module]) -> Iterator[list[_Capture]]:
    """Inside: every forward of `modules` (attention modules) and of their layer norms is recorded, one `_Capture`
    per module, in order."""
    names = {id(m): name for name, m in model.named_modules()}
    captures = [_Capture(norm=_norm_of(model, module, names)) for module in modules]
    handles = []

    def on_attention(capture: _Capture):
        def hook(module: Any, args: tuple, kwargs: dict, output: Any) -> None:
            capture.query_input = (args[0] if args else kwargs["hidden_states"]).detach()
            capture.attention_output = (output[0] if isinstance(output, tuple) else output).detach()

        return hook

    def on_norm(capture: _Capture):
        def hook(module: Any, args: tuple, output: torch.Tensor) -> None:
            capture.norm_input, capture.norm_output = args[0].detach(), output.detach()

        return hook

    try:
        for module, capture in zip(modules, captures):
            handles.append(module.register_forward_hook(on_attention(capture), with_kwargs=True))
            handles.append(capture.norm.register_forward_hook(on_norm(capture)))
        yield captures
    finally:
        for handle in handles:
            handle.remove()


def _tolerance(dtype: torch.dtype) -> float:
    # Relative error allowed between the decomposition and the model's own tensors: rounding only.
    return 3e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-4


def _relative_error(found: torch.Tensor, expected: torch.Tensor) -> float:
    return float((found - expected).norm() / expected.norm().clamp(min=1e-12))


def _linear(layer: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    bias = None if getattr(layer, "bias", None) is None else layer.bias.double()
    return torch.nn.functional.linear(x, layer.weight.double(), bias)


def attention_parts(
    model: Any, module: torch.nn.Module, weights: torch.Tensor, key_input: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(parts (queries, keys, d): sum_h alpha^h_ij W_O^h (W_V^h x_j + b_V^h), the output projection's bias (d,))
    of one attention module, in float64, from its weights (heads, queries, keys) and key inputs (keys, d)."""
    heads, size = head_size(model, module)
    maps = projections(model, module)
    values = _linear(maps.value, key_input.double()).view(-1, heads, size)  # (keys, H, d_h)
    output_weight = maps.output.weight.double().view(-1, heads, size)  # (d, H, d_h): block h is W_O^h
    transformed = torch.einsum("khe,dhe->hkd", values, output_weight)  # f_h(x_j)
    parts = torch.einsum("hik,hkd->ikd", weights.double(), transformed)
    bias = getattr(maps.output, "bias", None)
    return parts, torch.zeros(parts.shape[-1], dtype=torch.float64) if bias is None else bias.double()


def decompose_block(
    model: Any,
    module: torch.nn.Module,
    capture: _Capture,
    weights: torch.Tensor,
    key_input: torch.Tensor | None,
) -> BlockDecomposition:
    """One attention block written as `BlockDecomposition` (module docstring), from one captured forward pass.

    Args:
        module: the attention module; capture: its forward (batch row 0 is read); weights: its attention weights
            (heads, queries, keys); key_input: the encoder output (keys, d) for cross-attention, None for
            self-attention (its keys are its own inputs).

    Raises:
        UnsupportedModelError: the block is neither pre- nor post-LN as captured, or the written-out attention does
            not give the module's output (a head mask, another attention layout).
    """
    query = capture.query_input[0].double()
    output = capture.attention_output[0].double()
    norm_input, norm_output = capture.norm_input[0].double(), capture.norm_output[0].double()
    tolerance = _tolerance(capture.query_input.dtype)
    pre_error = _relative_error(query, norm_output)  # pre-LN: the module reads LN(x)
    post_error = _relative_error(query + output, norm_input)  # post-LN: LN reads x + attention(x)
    pre_norm = pre_error <= post_error
    if min(pre_error, post_error) > tolerance:
        raise UnsupportedModelError(
            f"{type(model).__name__}: an attention block is neither x + attention(LN(x)) nor LN(x + attention(x)) "
            f"(relative errors {pre_error:.2g} and {post_error:.2g}): ALTI+ cannot write it out."
        )
    self_attention = key_input is None
    parts, out_bias = attention_parts(model, module, weights, query if self_attention else key_input.double())
    error = _relative_error(parts.sum(dim=1) + out_bias, output)
    if error > tolerance:
        raise UnsupportedModelError(
            f"{type(model).__name__}: the attention written out from its weights and projections differs from the "
            f"module's output (relative error {error:.2g}; a head mask or another attention layout?)."
        )
    residual = norm_input if pre_norm else query
    if self_attention:
        vectors = parts + torch.diag_embed(residual.T).permute(1, 2, 0)  # x_i joins T_i(x_i)
    else:
        vectors = torch.cat([parts, residual[:, None, :]], dim=1)  # the decoder state: one more input
    bias = out_bias.expand(vectors.shape[0], -1)
    if pre_norm:
        return BlockDecomposition(vectors, bias, norm_input + output, True)
    vectors, bias = _through_layer_norm(model, capture, vectors, bias, norm_input)
    return BlockDecomposition(vectors, bias, norm_output, False)


def _through_layer_norm(
    model: Any, capture: _Capture, vectors: torch.Tensor, bias: torch.Tensor, norm_input: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Post-LN: each summand z through (z - mean(z)) / s_i * gamma, s_i the standard deviation of the whole input
    of row i; beta joins the bias."""
    norm = capture.norm
    if not isinstance(norm, torch.nn.LayerNorm):
        raise UnsupportedModelError(
            f"{type(model).__name__}: a post-LN block whose norm is not a LayerNorm: ALTI+ cannot write it out."
        )
    scale = torch.sqrt(norm_input.var(dim=-1, unbiased=False) + norm.eps)  # (queries,)
    gamma = torch.ones_like(norm_input[0]) if norm.weight is None else norm.weight.double()
    beta = torch.zeros_like(norm_input[0]) if norm.bias is None else norm.bias.double()

    def transform(z: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        return (z - z.mean(dim=-1, keepdim=True)) / rows * gamma

    return transform(vectors, scale[:, None, None]), transform(bias, scale[:, None]) + beta


def alti_contributions(model: Any, record: AttentionRecord) -> dict[str, list[torch.Tensor]]:
    """The per-layer ALTI contribution matrices of one teacher-forced pass on `record`:
    ``{"encoder": [(S, S)], "decoder": [(T - 1, T - 1)], "cross": [(T - 1, S + 1)]}`` (float64; the cross
    matrices' last column is the decoder state's, the residual), and ``"blocks"``: every `BlockDecomposition`
    (encoder, decoder, cross, in layer order)."""
    inputs = record_inputs(model, record)
    ensure_attention_weights(model)
    modules = attention_modules(model)
    ordered = [*modules["encoder"], *modules["decoder"], *modules["cross"]]
    with eval_mode(model), torch.no_grad(), _captured(model, ordered) as captures:
        outputs = model(
            input_ids=inputs.source,
            decoder_input_ids=inputs.decoder,
            output_attentions=True,
            use_cache=False,
            return_dict=True,
        )
        _check_captured(model, captures)
        # The decoder reads the encoder's last hidden state as cross-attention keys and values.
        encoded = outputs.encoder_last_hidden_state[0]
        found: dict[str, list[Any]] = {"encoder": [], "decoder": [], "cross": [], "blocks": []}
        weights = {
            "encoder": outputs.encoder_attentions,
            "decoder": outputs.decoder_attentions,
            "cross": outputs.cross_attentions,
        }
        position = 0
        for kind in KINDS:
            for layer, module in enumerate(modules[kind]):
                block = decompose_block(
                    model,
                    module,
                    captures[position],
                    weights[kind][layer][0],
                    encoded if kind == "cross" else None,
                )
                position += 1
                found["blocks"].append(block)
                found[kind].append(manhattan_contributions(block.vectors))
    return found


def _check_captured(model: Any, captures: list[_Capture]) -> None:
    for capture in captures:
        if capture.query_input is None or capture.norm_input is None:
            raise UnsupportedModelError(
                f"{type(model).__name__}: an attention module or its layer norm did not run in the forward pass."
            )


def alti_plus_scores(model: Any, record: AttentionRecord) -> tuple[np.ndarray, np.ndarray]:
    """(Q (T - 1, S) the source tokens' contributions, P (T - 1, T - 1) the prefix tokens') of every predicting
    row: ALTI+ (module docstring); each row of [P, Q] sums to 1."""
    found = alti_contributions(model, record)
    encoder = torch.eye(len(record.source_ids), dtype=torch.float64)
    for contributions in found["encoder"]:
        encoder = contributions @ encoder
    rows = len(record.target_ids) - 1
    prefix = torch.eye(rows, dtype=torch.float64)
    source = torch.zeros(rows, encoder.shape[0], dtype=torch.float64)
    for self_contributions, cross in zip(found["decoder"], found["cross"]):
        prefix, source = self_contributions @ prefix, self_contributions @ source
        kept = cross[:, -1:]  # the decoder state's own contribution (the residual)
        prefix, source = kept * prefix, kept * source + cross[:, :-1] @ encoder
    return source.numpy(), prefix.numpy()


__all__ = [
    "BlockDecomposition",
    "alti_contributions",
    "alti_plus_scores",
    "attention_parts",
    "decompose_block",
    "manhattan_contributions",
]
