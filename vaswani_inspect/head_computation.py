"""Inside one head: the paper's softmax(q·K/√d_k) V for one query position, on the model's own numbers.

`head_computation(model, tokenizer, source, kind=..., layer=..., head=..., query=...)` runs the teacher-forced pass
`extract` runs (the same source and decoder ids: the decoder start token and the translation, the model's own when
no `target` is given), captures with forward hooks what the attention module reads (its input at every position,
and the encoder output that cross-attention's keys and values read), and redoes the head's arithmetic step by step
with the module's own projections:

    x (hidden) -> q = W_Q x + b (this head's slice)      key_hidden -> K = W_K x_j + b,  V = W_V x_j + b
    scores = K q  ->  scores * scale + bias  ->  masked softmax = weights  ->  output = weights V
    head_output = W_O[:, head] output (this head's share of the module's output, W_O's bias not included)

`scale` is what the architecture multiplies the scores by (1/sqrt(d_k); T5: 1) and `bias` any other term added to
them (T5's relative position bias; zeros elsewhere), both read from `vaswani_inspect.architectures`. The weights are
the row `extract` returns for the same kind, layer, head and query (to float32 rounding); `with_scale` redoes the
softmax with another factor, the lecture's point about √d_k (`entropy` says how peaked the weights are).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .architectures import attention_modules, head_counts, head_size, position_bias, projections, score_scale
from .record import check_kind

__all__ = ["HeadComputation", "head_computation"]


@dataclass(frozen=True, eq=False)
class HeadComputation:
    """One head's attention for one query position, every step of it (module docstring). Arrays are float32.

    Attributes:
        kind, layer, head: which head ("encoder", "decoder" or "cross"; layers and heads count from 0).
        query_position: the query's position among `query_tokens` (positions as in `AttentionRecord`).
        query_tokens / key_tokens: the pieces of the query side and of the key side (source pieces for the
            encoder's keys and cross-attention's, decoder inputs for the decoder's).
        hidden: (d_model,) what the projections read at the query position; key_hidden: (keys, d_model) at each key.
        query: (d_k,) W_Q x + b, this head's slice, unscaled; keys, values: (keys, d_k) one row per key.
        scores: (keys,) the raw dot products keys @ query.
        scale: the factor the scores are multiplied by (the architecture's, or the one asked for).
        bias: (keys,) any other term added to the scores (T5's relative position bias), zeros otherwise.
        mask: (keys,) bool, the keys the query may see (the decoder's causal mask; a single sentence has no padding).
        weights: (keys,) softmax(scores * scale + bias) over the masked keys, 0 elsewhere.
        output: (d_k,) weights @ values.
        head_output: (d_model,) this head's share of the module's output: W_O[:, head slice] @ output.
        model_scale: the architecture's own factor (what `with_scale(None)` goes back to).
    """

    kind: str
    layer: int
    head: int
    query_position: int
    query_tokens: list[str]
    key_tokens: list[str]
    hidden: np.ndarray
    key_hidden: np.ndarray
    query: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    scores: np.ndarray
    scale: float
    bias: np.ndarray
    mask: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    head_output: np.ndarray
    output_weight: np.ndarray = dataclasses.field(repr=False)
    model_scale: float = 1.0

    @property
    def entropy(self) -> float:
        """The entropy of `weights` in nats: 0 when one key takes all, log(keys seen) when they share evenly."""
        seen = self.weights[self.weights > 0].astype(np.float64)
        return float(-(seen * np.log(seen)).sum())

    @property
    def logits(self) -> np.ndarray:
        """(keys,) what the softmax reads: scores * scale + bias, -inf at the masked keys."""
        return _logits(self.scores, self.scale, self.bias, self.mask).astype(np.float32)

    def with_scale(self, scale: float | None) -> HeadComputation:
        """The same computation with the scores multiplied by `scale` instead (None: the model's own factor):
        new weights, output and head output; what the projections give is unchanged."""
        factor = self.model_scale if scale is None else _check_scale(scale)
        weights, output, head_output = _combine(
            self.scores, factor, self.bias, self.mask, self.values, self.output_weight
        )
        return dataclasses.replace(self, scale=factor, weights=weights, output=output, head_output=head_output)

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON-ready lists and numbers (the output projection's slice left out), and the entropy."""
        fields = {
            field.name: _listed(getattr(self, field.name))
            for field in dataclasses.fields(self)
            if field.name != "output_weight"
        }
        return {**fields, "entropy": self.entropy}


def head_computation(
    model: torch.nn.Module,
    tokenizer: Any,
    source: str,
    *,
    direction: str | None = None,
    target: str | None = None,
    kind: str,
    layer: int,
    head: int,
    query: int,
    scale: float | None = None,
    generate_kwargs: dict[str, Any] | None = None,
) -> HeadComputation:
    """Every step of one head's attention at one query position (module docstring).

    Args:
        model, tokenizer, source, direction, target: as for `extract` (one sentence): `target` is teacher-forced
            after the decoder start token; None translates first (greedy) and reads the model's own translation.
        kind: "encoder", "decoder" or "cross"; layer, head: counted from 0.
        query: the query position: a source position for the encoder, a decoder input position (row t predicts
            token t + 1) for the decoder and cross-attention.
        scale: multiply the scores by this instead of the architecture's factor (1/sqrt(d_k); 1 in T5).
        generate_kwargs: the ``generate()`` settings of the translation when `target` is None, as for `extract`
            (default: greedy).

    Raises:
        ValueError: a kind, layer, head or query position the model or sentence does not have (the message names
            the valid range), a scale that is not a positive number, or what `extract` refuses.
    """
    from .extract import _check_model, _eval_mode, record_from_ids

    check_kind(kind)
    _check_model(model)
    layers, heads = head_counts(model)[kind]
    _check_index("layer", layer, layers, f"the model has {layers} {kind} layers")
    _check_index("head", head, heads, f"the model has {heads} heads per {kind} layer")
    factor = None if scale is None else _check_scale(scale)
    source_ids, decoder_ids, mark = _ids(model, tokenizer, source, target, direction, generate_kwargs)
    query_length = len(source_ids) if kind == "encoder" else len(decoder_ids)
    side = "source" if kind == "encoder" else "decoder input"
    _check_index("query", query, query_length, f"the sentence has {query_length} {side} positions")
    module = attention_modules(model)[kind][layer]
    with _eval_mode(model), torch.inference_mode(), _captured(model, module) as captured:
        record = record_from_ids(model, tokenizer, source_ids, decoder_ids)
        mark(record)
        inputs = captured["input"][0].float()
        key_input = captured["encoder"][0].float() if kind == "cross" else inputs
        return _computation(model, module, record, kind, layer, head, query, inputs, key_input, factor)


def _ids(
    model: Any, tokenizer: Any, source: str, target: str | None, direction: str | None, settings: dict | None
) -> tuple:
    """(source ids, decoder input ids, a function labelling a record's task prefix) as `extract` makes them."""
    from .architectures import position_limit
    from .extract import _direction, _eval_mode, _generate, _generate_settings, _source_ids, _target_ids
    from .pieces import mark_task_prefix

    if not isinstance(source, str):
        raise ValueError(f"source must be one sentence (a string), got {type(source).__name__}.")
    how = _direction(model, tokenizer, direction)
    limit = position_limit(model.config)
    (source_ids,) = _source_ids(model, tokenizer, [source], how, limit, False)
    if target is None:
        with _eval_mode(model), torch.inference_mode():
            used = _generate_settings(model, settings, [source_ids], limit, how)
            (decoder_ids,) = _generate(model, tokenizer, [source_ids], used)
    else:
        (decoder_ids,) = _target_ids(model, tokenizer, [target], how, limit, False)
    return source_ids, decoder_ids, lambda record: mark_task_prefix(record, tokenizer, how)


@contextlib.contextmanager
def _captured(model: Any, module: torch.nn.Module) -> Iterator[dict[str, torch.Tensor]]:
    """Inside: ``captured["input"]`` is what `module` read last (batch, length, d_model) and ``captured["encoder"]``
    the encoder's last output (what cross-attention's keys and values read)."""
    captured: dict[str, torch.Tensor] = {}

    def on_module(_module: Any, args: tuple, kwargs: dict) -> None:
        captured["input"] = (args[0] if args else kwargs["hidden_states"]).detach()

    def on_encoder(_module: Any, _args: tuple, output: Any) -> None:
        captured["encoder"] = (output[0] if isinstance(output, tuple) else output.last_hidden_state).detach()

    handles = [
        module.register_forward_pre_hook(on_module, with_kwargs=True),
        model.get_encoder().register_forward_hook(on_encoder),
    ]
    try:
        yield captured
    finally:
        for handle in handles:
            handle.remove()


def _computation(
    model: Any,
    module: torch.nn.Module,
    record: Any,
    kind: str,
    layer: int,
    head: int,
    query: int,
    inputs: torch.Tensor,
    key_input: torch.Tensor,
    scale: float | None,
) -> HeadComputation:
    heads, size = head_size(model, module)
    maps = projections(model, module)
    part = slice(head * size, (head + 1) * size)
    hidden = inputs[query]
    query_vector = maps.query(hidden)[part].double()
    keys = maps.key(key_input)[:, part].double()
    values = maps.value(key_input)[:, part].double()
    scores = keys @ query_vector
    key_count = key_input.shape[0]
    bias = position_bias(model, kind, inputs.shape[0], key_count)
    bias_row = np.zeros(key_count) if bias is None else bias[head, query].double().cpu().numpy()
    mask = np.ones(key_count, dtype=bool)
    if kind == "decoder":  # causal: a position sees itself and the positions before it
        mask[query + 1 :] = False
    output_weight = maps.output.weight[:, part].double().cpu().numpy()
    model_scale = score_scale(model, module)
    factor = model_scale if scale is None else scale
    scores_array = scores.cpu().numpy()
    values_array = values.cpu().numpy()
    weights, output, head_output = _combine(scores_array, factor, bias_row, mask, values_array, output_weight)
    queries, keys_side = (
        (record.source_tokens, record.source_tokens)
        if kind == "encoder"
        else (record.target_tokens, record.target_tokens if kind == "decoder" else record.source_tokens)
    )
    return HeadComputation(
        kind=kind,
        layer=layer,
        head=head,
        query_position=query,
        query_tokens=list(queries),
        key_tokens=list(keys_side),
        hidden=_float32(hidden),
        key_hidden=_float32(key_input),
        query=_float32(query_vector),
        keys=_float32(keys),
        values=values_array.astype(np.float32),
        scores=scores_array.astype(np.float32),
        scale=float(factor),
        bias=bias_row.astype(np.float32),
        mask=mask,
        weights=weights,
        output=output,
        head_output=head_output,
        output_weight=output_weight.astype(np.float32),
        model_scale=model_scale,
    )


def _logits(scores: np.ndarray, scale: float, bias: np.ndarray, mask: np.ndarray) -> np.ndarray:
    logits = scores.astype(np.float64) * scale + bias.astype(np.float64)
    return np.where(mask, logits, -np.inf)


def _combine(
    scores: np.ndarray, scale: float, bias: np.ndarray, mask: np.ndarray, values: np.ndarray, output_weight: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weights, output, head output) from the scores, in float64, returned as float32."""
    logits = _logits(scores, scale, bias, mask)
    exponentials = np.exp(logits - logits[mask].max())  # (masked keys: exp(-inf) = 0)
    weights = exponentials / exponentials.sum()
    output = weights @ values.astype(np.float64)
    head_output = output_weight.astype(np.float64) @ output
    return weights.astype(np.float32), output.astype(np.float32), head_output.astype(np.float32)


def _float32(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().float().cpu().numpy()


def _check_index(name: str, value: Any, count: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < count:
        raise ValueError(f"{name} must be from 0 to {count - 1} ({what}), got {value!r}.")


def _check_scale(scale: Any) -> float:
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not np.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale must be a positive number, got {scale!r}.")
    return float(scale)


def _listed(value: Any) -> Any:
    return value.tolist() if isinstance(value, np.ndarray) else value
