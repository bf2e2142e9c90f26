"""The one place that knows encoder-decoder architectures: where each keeps its attention, and how to read it.

The rest of `vaswani_inspect` asks this module, never a model's class or config field names:

* `architecture_of(model)`: the entry of `ARCHITECTURES` the model is (by ``config.model_type``), or, for any other
  model whose layers follow transformers' common layout (``encoder.layers[i].self_attn``,
  ``decoder.layers[i].self_attn`` / ``encoder_attn`` with ``q_proj``, ``k_proj``, ``v_proj``, ``out_proj``), a generic
  entry; anything else gets one `UnsupportedModelError` that names what was not found.
* `attention_modules(model)`: ``{kind: [module per layer]}`` for the three kinds (``"encoder"`` self-attention,
  ``"decoder"`` self-attention, ``"cross"`` encoder-decoder attention); `head_counts`, `projections` (the query, key,
  value and output `nn.Linear` of a module) and `head_size` read the rest; `score_scale` and `position_bias` what
  a module's scores are made of besides the dot products (the 1/sqrt(d_k) factor, T5's relative position bias).
* `ensure_attention_weights(model)`: most transformers models compute attention with PyTorch's fused kernel (sdpa),
  which returns no weights; this switches a loaded model to the eager implementation once and says so.
* `position_module(model)`: the module of the encoder that gives it its positions, and what kind it is
  (sinusoidal, learned, or T5's relative bias), as the entry's ``positions`` and ``position_kind`` say.
* `output_logits(model, states)`: the vocabulary logits from the decoder's last hidden states, as the model's own
  forward computes them (T5 scales tied outputs by d_model^-0.5; Marian adds a bias).

The entries themselves (`Architecture`, `ARCHITECTURES`) are plain data in `hf_vaswani.architectures`, re-exported
here, since `hf_vaswani`'s backends and the demo read them too: adding an architecture is one entry there and one
tiny model in `vaswani_inspect.testing_models` (docs/extending.md).
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any, NamedTuple

import torch

from hf_vaswani.architectures import ARCHITECTURES, MODEL_TYPES, Architecture, architecture_for_model_type

from .record import KINDS

__all__ = [
    "ARCHITECTURES",
    "Architecture",
    "PositionModule",
    "Projections",
    "UnsupportedModelError",
    "architecture_of",
    "attention_modules",
    "ensure_attention_weights",
    "head_counts",
    "head_size",
    "input_embeddings",
    "is_vaswani",
    "output_logits",
    "position_limit",
    "position_bias",
    "position_module",
    "projections",
    "score_scale",
]


class UnsupportedModelError(TypeError):
    """The model is not an encoder-decoder whose attention modules this toolkit can find."""


class Projections(NamedTuple):
    """The four linear maps of a multi-head attention module (the paper's W^Q, W^K, W^V and W^O)."""

    query: torch.nn.Module
    key: torch.nn.Module
    value: torch.nn.Module
    output: torch.nn.Module


def _model_type(model: Any) -> str:
    return str(getattr(getattr(model, "config", None), "model_type", "") or "")


def is_vaswani(model: Any) -> bool:
    """Whether `model` is the project's own `VaswaniForConditionalGeneration` (or a model of its type)."""
    return _model_type(model) == "vaswani"


def architecture_of(model: Any) -> Architecture:
    """The `Architecture` of `model`: its entry in `ARCHITECTURES`, or a generic one when its attention modules
    follow transformers' common q/k/v/out layout.

    Raises:
        UnsupportedModelError: `model` is not an encoder-decoder model, or its attention modules are not where
            any known layout puts them (the message names what was not found).
    """
    entry = _entry(model)
    _find_modules(model, entry)  # a known type with another layout (a future version) says what is missing
    return entry


def _entry(model: Any) -> Architecture:
    """The entry `model` is of, by its ``config.model_type``, without walking its modules (`architecture_of`
    checks that they are where the entry says)."""
    config = getattr(model, "config", None)
    if config is None or not getattr(config, "is_encoder_decoder", False):
        raise UnsupportedModelError(
            f"{type(model).__name__} is not an encoder-decoder model (config.is_encoder_decoder is not True): "
            "there is no cross-attention to inspect."
        )
    model_type = _model_type(model)
    entry = architecture_for_model_type(model_type)
    return entry if entry is not None else Architecture(model_type or type(model).__name__, (model_type,))


def _attribute(root: Any, path: str) -> Any:
    value = root
    for part in path.split("."):
        value = value[int(part)] if part.isdigit() else getattr(value, part)
    return value


def _find_modules(model: Any, entry: Architecture) -> dict[str, list[torch.nn.Module]]:
    supported = ", ".join(sorted(MODEL_TYPES))
    stacks = {}
    for side, getter, attribute in (
        ("encoder", "get_encoder", entry.layers[0]),
        ("decoder", "get_decoder", entry.layers[1]),
    ):
        try:
            stacks[side] = list(_attribute(getattr(model, getter)(), attribute))
        except (AttributeError, TypeError, IndexError):
            raise UnsupportedModelError(
                f"{type(model).__name__} (model_type {_model_type(model)!r}): found no {side} layers at "
                f"{getter}().{attribute}. Supported: {supported}, and models whose attention follows transformers' "
                "encoder.layers[i].self_attn / decoder.layers[i].encoder_attn layout with q_proj, k_proj, v_proj, "
                "out_proj."
            ) from None
    found: dict[str, list[torch.nn.Module]] = {}
    for kind, side, path in zip(KINDS, ("encoder", "decoder", "decoder"), entry.modules):
        try:
            found[kind] = [_attribute(layer, path) for layer in stacks[side]]
            for module in found[kind]:
                for name in (*entry.projections, entry.heads):
                    getattr(module, name)
        except (AttributeError, IndexError) as error:
            raise UnsupportedModelError(
                f"{type(model).__name__} (model_type {_model_type(model)!r}): its {kind} attention is not at "
                f"{side} layer.{path} with {', '.join(entry.projections)} and {entry.heads} ({error}). "
                f"Supported: {supported}, and models of transformers' common q_proj/k_proj/v_proj/out_proj layout."
            ) from None
    if not found["encoder"] or not found["cross"]:
        raise UnsupportedModelError(f"{type(model).__name__} has no encoder or decoder layers.")
    return found


def attention_modules(model: Any) -> dict[str, list[torch.nn.Module]]:
    """The attention modules of `model` per kind (``"encoder"``, ``"decoder"``, ``"cross"``), in layer order.

    Raises:
        UnsupportedModelError: see `architecture_of`.
    """
    return _find_modules(model, _entry(model))


def head_size(model: Any, module: torch.nn.Module) -> tuple[int, int]:
    """(number of heads, size of each head) of one attention module of `model`."""
    entry = _entry(model)
    heads = int(getattr(module, entry.heads))
    size = getattr(module, entry.head_dim, None)
    if size is None:
        size = projections(model, module).output.in_features // heads
    return heads, int(size)


def head_counts(model: Any) -> dict[str, tuple[int, int]]:
    """``{kind: (layers, heads per layer)}`` of `model`."""
    return {kind: (len(group), head_size(model, group[0])[0]) for kind, group in attention_modules(model).items()}


def projections(model: Any, module: torch.nn.Module) -> Projections:
    """The query, key, value and output projections of one attention module of `model`."""
    return Projections(*(getattr(module, name) for name in _entry(model).projections))


def score_scale(model: Any, module: torch.nn.Module) -> float:
    """The factor one attention module of `model` multiplies its query-key dot products by: 1/sqrt(d_k) as in the
    paper (read from the module, or computed from its head size), 1 in T5."""
    factor = getattr(module, _entry(model).scaling, None)
    if factor is None:
        factor = head_size(model, module)[1] ** -0.5
    return float(factor)


def position_bias(model: Any, kind: str, query_length: int, key_length: int) -> torch.Tensor | None:
    """The relative position bias the `kind` attention of `model` adds to its scores, (heads, queries, keys) for
    a pass of `query_length` queries over `key_length` keys, the same in every layer (T5 computes it in the first
    layer and hands it on); None where positions are in the embeddings, and for cross-attention."""
    method = _entry(model).position_bias
    if not method or kind == "cross":
        return None
    first = attention_modules(model)[kind][0]
    with torch.no_grad():
        return getattr(first, method)(query_length, key_length)[0]


def ensure_attention_weights(model: Any) -> None:
    """Make `model` return its attention weights when asked (``output_attentions=True``).

    Our model computes them whatever its implementation. Other transformers models return none under sdpa or
    flash attention: the model is switched to the eager implementation (the same numbers, slower), once, with a
    warning; loading with ``attn_implementation="eager"`` avoids the switch.
    """
    if is_vaswani(model):
        return
    architecture_of(model)
    implementation = getattr(model.config, "_attn_implementation", None)
    if implementation in (None, "eager"):
        return
    try:
        model.set_attn_implementation("eager")
    except (AttributeError, ValueError) as error:
        raise UnsupportedModelError(
            f"{type(model).__name__} runs {implementation!r} attention, which returns no weights, and cannot be "
            f"switched to eager ({error}): load it with attn_implementation='eager'."
        ) from None
    warnings.warn(
        f"{type(model).__name__} was loaded with {implementation!r} attention, which returns no attention weights: "
        "switched to attn_implementation='eager' (same results, slower). Load it with attn_implementation='eager' "
        "to skip this step.",
        stacklevel=3,
    )


def position_limit(config: Any) -> int | None:
    """How many positions the model's position table has; None for relative positions (T5), which have no limit."""
    if getattr(config, "relative_attention_num_buckets", None) is not None:
        return None
    return int(getattr(config, "max_position_embeddings", 0) or 0) or None


class PositionModule(NamedTuple):
    """The module that gives the encoder its positions, and its kind.

    ``kind`` is "sinusoidal" or "learned" for a table whose output, one row per position (..., positions, d_model),
    is added to the token embeddings; "relative" for T5's bucketed bias table of the first layer, whose output
    (queries, keys, heads) is what each head adds to its attention scores in every layer (the first layer computes
    it and shares it with the others).
    """

    module: torch.nn.Module
    kind: str


def position_module(model: Any) -> PositionModule:
    """The encoder's positional module of `model` and its kind (`PositionModule`).

    Raises:
        ValueError: the model has no positional encoding (ours with ``position_encoding="none"``).
        UnsupportedModelError: no module at the path the model's entry names (``Architecture.positions``).
    """
    entry = _entry(model)
    kind = entry.position_kind(model.config)
    if kind == "none":
        raise ValueError(f"{type(model).__name__} has no positional encoding (position_encoding='none').")
    try:
        module = _attribute(model.get_encoder(), entry.positions)
    except (AttributeError, IndexError, TypeError):
        module = None
    if not isinstance(module, torch.nn.Module):
        raise UnsupportedModelError(
            f"{type(model).__name__} (model_type {_model_type(model)!r}): found no positional module at "
            f"get_encoder().{entry.positions}."
        )
    if kind is None:  # a generic entry: a table with a trained weight is learned, a fixed (frozen, buffer) one not
        trained = any(parameter.requires_grad for parameter in module.parameters())
        kind = "learned" if trained else "sinusoidal"
    return PositionModule(module, kind)


def output_logits(model: Any, states: torch.Tensor) -> torch.Tensor:
    """The logits over the vocabulary from decoder last hidden states (..., d), as the model's forward makes them."""
    scale = _entry(model).output_scale(model.config)
    logits = model.get_output_embeddings()(states * scale if scale != 1.0 else states)
    bias = getattr(model, "final_logits_bias", None)
    if isinstance(bias, torch.Tensor):
        logits = logits + bias.reshape(-1)
    return logits


_EMBEDDING_FACTORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def input_embeddings(model: Any, side: str, ids: torch.Tensor) -> torch.Tensor:
    """The embeddings of `ids` (batch, length) that, passed as ``inputs_embeds`` to the `side` stack ("encoder" or
    "decoder"), give exactly what ``input_ids=ids`` gives. Models differ in where they scale embeddings by
    sqrt(d_model) (Marian's encoder scales only token ids, its decoder both): the factor is found once per model
    by running the stack both ways on a few tokens, so gradient methods explain the function the model computes.

    Raises:
        UnsupportedModelError: neither the embedding table's output nor its scaled output reproduces the stack.
    """
    stack = model.get_encoder() if side == "encoder" else model.get_decoder()
    embedded = stack.get_input_embeddings()(ids)
    factors = _EMBEDDING_FACTORS.setdefault(model, {})
    if side not in factors:
        factors[side] = _embedding_factor(model, side, ids[:1, :8])
    return embedded * factors[side] if factors[side] != 1.0 else embedded


def _embedding_factor(model: Any, side: str, probe: torch.Tensor) -> float:
    encoder, decoder = model.get_encoder(), model.get_decoder()
    stack = encoder if side == "encoder" else decoder
    scale = getattr(stack, "embed_scale", None)
    candidates = [1.0] + ([float(scale)] if isinstance(scale, (int, float)) and float(scale) != 1.0 else [])
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            extra = {}
            if side == "decoder":
                extra = {"encoder_hidden_states": encoder(input_ids=probe).last_hidden_state, "use_cache": False}
            reference = stack(input_ids=probe, **extra).last_hidden_state
            embedded = stack.get_input_embeddings()(probe)
            for factor in candidates:
                fed = stack(inputs_embeds=embedded * factor, **extra).last_hidden_state
                if torch.allclose(fed, reference, rtol=1e-4, atol=1e-5):
                    return factor
    finally:
        model.train(was_training)
    raise UnsupportedModelError(
        f"{type(model).__name__}: its {side} does not give the same states from its embeddings as from token ids "
        f"(tried factors {candidates}): gradient methods cannot feed it embeddings."
    )
