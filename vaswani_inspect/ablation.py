"""Switch attention heads off, or measure how much the loss depends on each (Michel et al. 2019, "Are Sixteen
Heads Really Better than One?").

A head's output is scaled by a factor before the output projection W^O of its layer: 0 switches the head off (what
is left of the attention is W^O applied to the other heads, plus the projection's bias), 1 keeps it, and a factor
that requires grad collects dL/dfactor. The factor is applied by a forward pre-hook on the output projection, whose
input is the heads' outputs side by side (one slice of `head_dim` columns per head), the same patch nnsight and
TransformerLens make; so it works on every architecture `vaswani_inspect.architectures` knows (ours, Marian,
M2M100/NLLB, BART/mBART, T5...), on the eager and sdpa paths, in `forward` and `generate`.

A head is named by its attention kind (`KINDS`: ``"encoder"`` self-attention, ``"decoder"`` self-attention,
``"cross"`` encoder-decoder attention), its layer and its index, all from 0. A set of heads is a mapping
``{kind: {layer: [head, ...] or "all"}}``:

    with ablate_heads(model, {"cross": {2: [1, 3]}, "encoder": {0: "all"}}):
        model.generate(**batch)          # greedy or beam search, with the cache, sdpa or eager

    with gradient_masks(model) as masks:  # {kind: (layers, heads) leaf tensors of ones}
        loss.backward()
    masks["cross"].grad                   # dL/dmask, one value per layer and head

Both remove their hooks on the way out, also after an error, and nest (an inner ablation keeps the outer one's
heads off: the factors multiply).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

import torch

from .architectures import attention_modules as _attention_modules
from .architectures import head_counts as _head_counts
from .architectures import head_size, projections
from .record import check_kind

__all__ = [
    "Head",
    "HeadSpec",
    "ablate_heads",
    "attention_modules",
    "check_heads",
    "gradient_masks",
    "head_counts",
    "heads_of",
    "list_heads",
]

#: ``{kind: {layer: [head, ...] or "all"}}``: the heads to switch off.
HeadSpec = Mapping[str, Mapping[int, "Iterable[int] | str"]]


class Head(NamedTuple):
    """One attention head: its kind (``"encoder"``, ``"decoder"`` or ``"cross"``), layer and index."""

    kind: str
    layer: int
    head: int

    def label(self) -> str:
        """``"cross L1 H0"``: how reports and the demo name the head."""
        return f"{self.kind} L{self.layer} H{self.head}"


def attention_modules(model: torch.nn.Module) -> dict[str, list[torch.nn.Module]]:
    """The attention modules of an encoder-decoder model, per kind, in layer order
    (`vaswani_inspect.architectures.attention_modules`).

    Raises:
        TypeError: (`UnsupportedModelError`) `model` is not an encoder-decoder whose attention modules are known.
    """
    return _attention_modules(model)


def head_counts(model: torch.nn.Module) -> dict[str, tuple[int, int]]:
    """``{kind: (layers, heads per layer)}`` of `model`."""
    return _head_counts(model)


def list_heads(model: torch.nn.Module) -> list[Head]:
    """Every head of `model`: encoder, then decoder, then cross-attention, by layer and head."""
    return [
        Head(kind, layer, head)
        for kind, (layers, heads) in head_counts(model).items()
        for layer in range(layers)
        for head in range(heads)
    ]


def _index(value: Any, size: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} must be a whole number from 0 to {size - 1}, got {value!r}.")
    if not 0 <= value < size:
        raise ValueError(f"{what} {value} does not exist: there are {size}, numbered 0 to {size - 1}.")
    return value


def check_heads(model: torch.nn.Module, heads: HeadSpec | Iterable[Head]) -> dict[str, dict[int, list[int]]]:
    """`heads` checked against `model` and written out: ``{kind: {layer: sorted heads}}``, kinds and layers
    without a head left out. Also takes an iterable of `Head` (or ``(kind, layer, head)`` tuples).

    Raises:
        ValueError: an unknown kind, a layer or head the model does not have, or a spec that is not a mapping of
            layers to head lists (or ``"all"``).
    """
    counts = head_counts(model)
    if not isinstance(heads, Mapping):
        spec: dict[str, dict[int, list[int]]] = {}
        for item in heads:
            kind, layer, head = Head(*item)
            spec.setdefault(kind, {}).setdefault(layer, []).append(head)
        heads = spec
    checked: dict[str, dict[int, list[int]]] = {}
    for kind, layers in heads.items():
        check_kind(kind)
        if not isinstance(layers, Mapping):
            raise ValueError(f"The {kind} heads must be a mapping {{layer: [head, ...] or 'all'}}, got {layers!r}.")
        num_layers, num_heads = counts[kind]
        for layer, chosen in layers.items():
            layer = _index(layer, num_layers, f"{kind} layer")
            if isinstance(chosen, str):
                if chosen != "all":
                    raise ValueError(f"The heads of {kind} layer {layer} must be a list or 'all', got {chosen!r}.")
                chosen = range(num_heads)
            elif not isinstance(chosen, Iterable):
                raise ValueError(f"The heads of {kind} layer {layer} must be a list or 'all', got {chosen!r}.")
            indices = {_index(head, num_heads, f"{kind} layer {layer} head") for head in chosen}
            if indices:
                merged = checked.setdefault(kind, {}).setdefault(layer, [])
                checked[kind][layer] = sorted(set(merged) | indices)
    return checked


def heads_of(spec: Mapping[str, Mapping[int, Iterable[int]]]) -> list[Head]:
    """The heads of a checked spec (`check_heads`), as a sorted list of `Head`."""
    return sorted(
        Head(kind, layer, head) for kind, layers in spec.items() for layer, hs in layers.items() for head in hs
    )


@contextlib.contextmanager
def _scaled_heads(model: torch.nn.Module, factors: Mapping[str, Mapping[int, torch.Tensor]]) -> Iterator[None]:
    """Inside: the output of head h of `kind` layer l is multiplied by ``factors[kind][l][h]`` before the layer's
    output projection; every hook is removed on the way out."""
    modules = attention_modules(model)
    handles = []
    try:
        for kind, layers in factors.items():
            for layer, factor in layers.items():
                module = modules[kind][layer]
                heads, size = head_size(model, module)
                output = projections(model, module).output
                handles.append(output.register_forward_pre_hook(_head_scaling_hook(factor, heads, size)))
        yield
    finally:
        for handle in handles:
            handle.remove()


def _head_scaling_hook(factor: torch.Tensor, heads: int, size: int) -> Any:
    def hook(module: torch.nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
        concatenated = args[0]  # (..., heads * size): the heads' outputs side by side, before W^O
        split = concatenated.unflatten(-1, (heads, size))
        scaled = split * factor.to(device=split.device, dtype=split.dtype)[:, None]
        return (scaled.flatten(-2), *args[1:])

    return hook


def _parameter(model: torch.nn.Module) -> torch.Tensor:
    return next(model.parameters())


@contextlib.contextmanager
def ablate_heads(model: torch.nn.Module, heads: HeadSpec | Iterable[Head]) -> Iterator[dict[str, dict[int, list[int]]]]:
    """Switch `heads` off inside the block: their outputs are zeroed before the output projection of their layer
    (Michel et al. 2019). Works for `forward` and `generate` (greedy, beam search, with the cache), on the eager
    and sdpa paths, for every architecture `vaswani_inspect.architectures` knows. Layers without a chosen head are
    not touched, so an empty spec changes no bit of the logits.

    Yields the checked spec (`check_heads`). On exit the hooks are removed, error or not.

    Raises:
        ValueError: an unknown kind, layer or head (before anything is changed).
        TypeError: a model whose attention modules are not known (`vaswani_inspect.architectures`).
    """
    spec = check_heads(model, heads)
    counts = head_counts(model)
    reference = _parameter(model)
    factors: dict[str, dict[int, torch.Tensor]] = {}
    for kind, layers in spec.items():
        for layer, chosen in layers.items():
            factor = torch.ones(counts[kind][1], device=reference.device, dtype=torch.float32)
            factor[chosen] = 0.0
            factors.setdefault(kind, {})[layer] = factor
    with _scaled_heads(model, factors):
        yield spec


@contextlib.contextmanager
def gradient_masks(model: torch.nn.Module) -> Iterator[dict[str, torch.Tensor]]:
    """Scale every head by a factor of one that requires grad, for the block: a backward pass then leaves
    dL/dmask_h, how much the loss L changes as head h is scaled, in ``masks[kind].grad`` (shape (layers, heads)).
    The head importance of Michel et al. (2019) is its absolute value, averaged over examples.

    Yields ``{kind: (layers, heads) leaf tensor}``; the hooks are removed on exit.
    """
    reference = _parameter(model)
    counts = head_counts(model)
    masks = {
        kind: torch.ones(layers, heads, device=reference.device, dtype=torch.float32, requires_grad=True)
        for kind, (layers, heads) in counts.items()
    }
    factors = {kind: {layer: masks[kind][layer] for layer in range(layers)} for kind, (layers, _) in counts.items()}
    with _scaled_heads(model, factors):
        yield masks
