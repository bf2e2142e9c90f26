"""`patch_activations`: the clean run, then the exhaustive patched runs (batched) or the attribution pass."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any

import numpy as np
import torch
from transformers.modeling_outputs import BaseModelOutput

from ..extract import _device, _eval_mode
from ..pieces import piece_labels
from .inputs import Metric, build_metric, prepare_inputs
from .result import METHODS, SITES, Contrast, PatchingResult
from .sites import Site, capture, find_sites, hooked

__all__ = ["patch_activations"]

#: Sites whose patch leaves the encoder untouched: their runs reuse the corrupted encoder output.
_DECODER_SIDE = ("decoder", "decoder_heads", "cross_heads")


def patch_activations(
    model: torch.nn.Module,
    tokenizer: Any,
    clean: str,
    corrupted: str,
    *,
    direction: str | None = None,
    target: str | None = None,
    sites: Sequence[str] = SITES,
    method: str = "exhaustive",
    metric: Contrast | tuple[Any, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    batch_size: int = 32,
) -> PatchingResult:
    """Patch each site of the corrupted run with the clean run's activation and measure how much of the clean
    output comes back (module docstring).

    Args:
        model, tokenizer: an encoder-decoder model of an architecture `vaswani_inspect.architectures` knows, and its
            tokenizer. The model runs in eval mode (its mode is restored); its parameters get no gradients.
        clean, corrupted: the two sources; they must tokenize to the same number of pieces and differ.
        direction: ``"es-en"``...: the direction tokens or codes are added as `vaswani_inspect.extract` adds them.
        target: the translation teacher-forced in every run (default: the model's translation of `clean` with its
            generation config).
        sites: some of `SITES`.
        method: ``"exhaustive"`` or ``"attribution"``.
        metric: None for the summed log-probability of the target's tokens (the decoder start token and the
            direction's forced language code are inputs, not predictions); a `Contrast` (or an (answer, foil) tuple)
            for log p(answer) - log p(foil).
        progress: called as ``progress(done, total)`` as the work advances (cells for exhaustive, passes for
            attribution), from ``(0, total)`` to ``(total, total)``.
        batch_size: patched copies of the corrupted input per forward pass (exhaustive).

    Raises:
        ValueError: an unknown site or method; sources of different lengths, or identical ones (the message names
            both sources' tokens); a contrast whose answer is not in the target or does not differ from the foil;
            what `extract` refuses (empty or too long texts, a wrong direction...).
        UnsupportedModelError: a model whose layers or attention modules are not found.
    """
    chosen = _check_options(sites, method, batch_size)
    with _eval_mode(model):
        inputs = prepare_inputs(model, tokenizer, clean, corrupted, direction, target)
        scorer = build_metric(model, tokenizer, inputs, metric)
        device = _device(model)
        ids = {
            name: torch.tensor([values], dtype=torch.long, device=device)
            for name, values in (("clean", inputs.clean), ("corrupted", inputs.corrupted), ("target", inputs.target))
        }
        compute = _exhaustive if method == "exhaustive" else _attribution
        run = compute(model, ids, chosen, scorer, progress, batch_size)
    effects, clean_value, corrupted_value, passes = run
    return PatchingResult(
        effects=effects,
        clean_metric=clean_value,
        corrupted_metric=corrupted_value,
        source_tokens=piece_labels(tokenizer, inputs.clean),
        corrupted_tokens=piece_labels(tokenizer, inputs.corrupted),
        target_tokens=piece_labels(tokenizer, inputs.target),
        target_ids=list(inputs.target),
        method=method,
        sites=chosen,
        metric=scorer.description,
        source_text=clean.strip(),
        corrupted_text=corrupted.strip(),
        target_text=target if target is not None else tokenizer.decode(inputs.target[1:], skip_special_tokens=True),
        direction=direction,
        source_ids=list(inputs.clean),
        corrupted_ids=list(inputs.corrupted),
        passes=passes,
        metric_steps=[int(step) for step in scorer.steps],
    )


def _check_options(sites: Sequence[str], method: str, batch_size: int) -> tuple[str, ...]:
    if isinstance(sites, str):
        sites = (sites,)
    unknown = [site for site in sites if site not in SITES]
    if unknown or not sites:
        raise ValueError(f"Unknown patching site(s) {unknown or list(sites)}: choose from {', '.join(SITES)}.")
    if method not in METHODS:
        raise ValueError(f"Unknown patching method {method!r}: choose from {', '.join(METHODS)}.")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a whole number >= 1, got {batch_size!r}.")
    return tuple(site for site in SITES if site in sites)


def _logits(model: Any, ids: dict[str, torch.Tensor], source: str, copies: int = 1, encoded: Any = None) -> Any:
    decoder_ids = ids["target"].expand(copies, -1)
    if encoded is not None:
        hidden = encoded.expand(copies, -1, -1)
        encoder_outputs = BaseModelOutput(last_hidden_state=hidden)
        return model(encoder_outputs=encoder_outputs, decoder_input_ids=decoder_ids, use_cache=False).logits
    return model(input_ids=ids[source].expand(copies, -1), decoder_input_ids=decoder_ids, use_cache=False).logits


def _clean_run(model: Any, ids: dict, sites: dict[str, Site], metric: Metric) -> tuple[dict, float]:
    """The clean run's activations at every site, ``{site: (layers, positions, ...) tensor}``, and its metric."""
    stores: dict[str, dict[int, torch.Tensor]] = {site: {} for site in sites}
    with torch.no_grad(), ExitStack() as stack:
        for site, where in sites.items():
            stack.enter_context(capture(where, stores[site]))
        value = float(metric(_logits(model, ids, "clean"))[0])
    return {site: torch.stack([store[i] for i in range(len(store))]) for site, store in stores.items()}, value


def _effects(changes: np.ndarray, clean: float, corrupted: float) -> np.ndarray:
    """`changes` (patched - corrupted metric, per cell) over clean - corrupted; NaN when that is 0."""
    denominator = clean - corrupted
    if denominator == 0 or not math.isfinite(denominator):
        return np.full(changes.shape, np.nan, dtype=np.float32)
    return (changes / denominator).astype(np.float32)


# --- exhaustive --------------------------------------------------------------------------------------------------


def _cells(site: str, where: Site, clean: torch.Tensor) -> list[tuple[int, int]]:
    layers = len(where.modules)
    width = where.heads[0] if where.heads is not None else clean.shape[1]
    return [(layer, index) for layer in range(layers) for index in range(width)]


def _patch_edit(where: Site, clean: torch.Tensor, chunk: list[tuple[int, int]]) -> Any:
    """An `hooked` edit that patches row b of the batch at cell chunk[b]."""
    by_layer: dict[int, tuple[list[int], list[int]]] = {}
    for row, (layer, index) in enumerate(chunk):
        rows, indices = by_layer.setdefault(layer, ([], []))
        rows.append(row)
        indices.append(index)

    def edit(layer: int, activation: torch.Tensor) -> torch.Tensor | None:
        if layer not in by_layer:
            return None
        rows, indices = (torch.tensor(v, device=activation.device) for v in by_layer[layer])
        patched = activation.clone()
        source = clean[layer].to(activation.dtype)
        if where.heads is None:  # (batch, positions, d): one position of one row
            patched[rows, indices] = source[indices]
        else:  # (batch, positions, heads, size): one head of one row, every position
            patched[rows, :, indices] = source[:, indices].transpose(0, 1)
        return patched

    return edit


def _exhaustive(
    model: Any,
    ids: dict[str, torch.Tensor],
    chosen: tuple[str, ...],
    metric: Metric,
    progress: Callable[[int, int], None] | None,
    batch_size: int,
) -> tuple[dict[str, np.ndarray], float, float, int]:
    sites = find_sites(model, chosen)
    clean_acts, clean_value = _clean_run(model, ids, sites, metric)
    cells = {site: _cells(site, sites[site], clean_acts[site]) for site in chosen}
    total = sum(len(c) for c in cells.values())
    done = 0
    if progress is not None:
        progress(0, total)
    effects = {}
    with torch.no_grad():
        corrupted_value = float(metric(_logits(model, ids, "corrupted"))[0])
        encoded = None
        if any(site in _DECODER_SIDE for site in chosen):
            encoded = model.get_encoder()(input_ids=ids["corrupted"]).last_hidden_state
        for site in chosen:
            values = np.empty(len(cells[site]), dtype=np.float64)
            for start in range(0, len(cells[site]), batch_size):
                chunk = cells[site][start : start + batch_size]
                with hooked(sites[site], _patch_edit(sites[site], clean_acts[site], chunk)):
                    reuse = encoded if site in _DECODER_SIDE else None
                    logits = _logits(model, ids, "corrupted", len(chunk), reuse)
                values[start : start + len(chunk)] = metric(logits).double().cpu().numpy()
                done += len(chunk)
                if progress is not None:
                    progress(done, total)
            layers = len(sites[site].modules)
            effects[site] = _effects(values.reshape(layers, -1) - corrupted_value, clean_value, corrupted_value)
    return effects, clean_value, corrupted_value, total + 2


# --- attribution -------------------------------------------------------------------------------------------------


def _attribution(
    model: Any,
    ids: dict[str, torch.Tensor],
    chosen: tuple[str, ...],
    metric: Metric,
    progress: Callable[[int, int], None] | None,
    batch_size: int,
) -> tuple[dict[str, np.ndarray], float, float, int]:
    sites = find_sites(model, chosen)
    if progress is not None:
        progress(0, 2)
    clean_acts, clean_value = _clean_run(model, ids, sites, metric)
    if progress is not None:
        progress(1, 2)
    # A zero that requires grad is added to every activation: its gradient is d metric / d activation, the graph
    # of the model is left whole (so every site's gradient counts every path) and no parameter gets a .grad.
    zeros: dict[str, dict[int, torch.Tensor]] = {site: {} for site in chosen}
    corrupted_acts: dict[str, dict[int, torch.Tensor]] = {site: {} for site in chosen}

    def adder(site: str) -> Any:
        def edit(layer: int, activation: torch.Tensor) -> torch.Tensor:
            corrupted_acts[site][layer] = activation.detach()[0]
            zero = torch.zeros_like(activation, requires_grad=True)
            zeros[site][layer] = zero
            return activation + zero

        return edit

    with torch.enable_grad(), ExitStack() as stack:
        for site in chosen:
            stack.enter_context(hooked(sites[site], adder(site)))
        value = metric(_logits(model, ids, "corrupted"))[0]
        leaves = [zeros[site][layer] for site in chosen for layer in range(len(sites[site].modules))]
        gradients = iter(torch.autograd.grad(value, leaves, allow_unused=True))
    corrupted_value = float(value.detach())
    effects = {}
    for site in chosen:
        rows = []
        for layer in range(len(sites[site].modules)):
            gradient = next(gradients)
            difference = (clean_acts[site][layer] - corrupted_acts[site][layer]).double()
            grad = torch.zeros_like(difference) if gradient is None else gradient[0].double()
            product = difference * grad
            # positions: sum over the model dimension; heads: over positions and the head's dimensions
            rows.append(product.sum(-1) if sites[site].heads is None else product.sum((0, 2)))
        first_order = torch.stack(rows).cpu().numpy()
        effects[site] = _effects(first_order, clean_value, corrupted_value)
    if progress is not None:
        progress(2, 2)
    return effects, clean_value, corrupted_value, 3
