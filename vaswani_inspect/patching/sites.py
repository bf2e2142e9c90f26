"""Where a site's activations are and how a run reaches them: forward hooks on the encoder's and decoder's layers
(their outputs), forward pre-hooks on the attention modules' output projections (the heads' outputs side by side,
seen split per head), found by `vaswani_inspect.architectures`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

import torch

from ..architectures import attention_modules, head_size, layer_stacks, projections

__all__ = ["HEAD_KINDS", "Site", "capture", "find_sites", "hooked"]

#: The attention kind (`vaswani_inspect.record.KINDS`) of each head site.
HEAD_KINDS = {"encoder_heads": "encoder", "decoder_heads": "decoder", "cross_heads": "cross"}


def _hidden(output: Any) -> torch.Tensor:
    return output[0] if isinstance(output, tuple) else output


def _replaced(output: Any, hidden: torch.Tensor) -> Any:
    return (hidden, *output[1:]) if isinstance(output, tuple) else hidden


class Site(NamedTuple):
    """Where a site's activations are: per layer, the module and whether it is an output (layer) or an input
    (output projection) hook, with the heads' split for head sites."""

    modules: list[torch.nn.Module]
    heads: tuple[int, int] | None  # (heads, head size) for head sites


def find_sites(model: Any, chosen: Sequence[str]) -> dict[str, Site]:
    found = {}
    stacks = layer_stacks(model) if {"encoder", "decoder"} & set(chosen) else {}
    modules = attention_modules(model) if set(HEAD_KINDS) & set(chosen) else {}
    for site in chosen:
        if site in stacks:
            found[site] = Site(stacks[site], None)
        else:
            group = modules[HEAD_KINDS[site]]
            found[site] = Site([projections(model, m).output for m in group], head_size(model, group[0]))
    return found


@contextmanager
def hooked(site: Site, edit: Callable[[int, torch.Tensor], torch.Tensor | None]) -> Iterator[None]:
    """Inside: each layer's activation of `site` goes through ``edit(layer, activation)`` (None keeps it); head
    sites see the output projection's input as (batch, positions, heads, head size)."""
    handles = []

    def output_hook(layer: int) -> Any:
        def hook(module: torch.nn.Module, args: Any, output: Any) -> Any:
            new = edit(layer, _hidden(output))
            return None if new is None else _replaced(output, new)

        return hook

    def input_hook(layer: int, heads: tuple[int, int]) -> Any:
        def hook(module: torch.nn.Module, args: tuple[Any, ...]) -> Any:
            new = edit(layer, args[0].unflatten(-1, heads))
            return None if new is None else (new.flatten(-2), *args[1:])

        return hook

    try:
        for layer, module in enumerate(site.modules):
            if site.heads is None:
                handles.append(module.register_forward_hook(output_hook(layer)))
            else:
                handles.append(module.register_forward_pre_hook(input_hook(layer, site.heads)))
        yield
    finally:
        for handle in handles:
            handle.remove()


def capture(site: Site, store: dict[int, torch.Tensor]) -> Any:
    def edit(layer: int, activation: torch.Tensor) -> None:
        store[layer] = activation.detach()[0]

    return hooked(site, edit)
