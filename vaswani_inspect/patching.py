"""Activation patching: where in the network (which layer, source position or head) the information lives that makes
the model write its translation.

Two sources that differ in a word (the *clean* "Me senté en el banco de la plaza." and the *corrupted* "Me senté en
el sofá de la plaza.") are run with the same teacher-forced decoder inputs: the clean translation (or a given
target). A *metric* reads the output: by default the summed log-probability of the target's tokens; with a
`Contrast`, log p(answer) - log p(foil) at the step where the two differ ("bank" against "bench"). Patching a site
runs the corrupted source with the activation at that site replaced by the clean run's; its *effect* is

    (patched - corrupted) / (clean - corrupted)

so 0 means the site carries none of the difference and 1 that it restores the clean output on its own. When the
two sources give the same metric (clean - corrupted is 0) every effect is NaN.

Sites (`SITES`), each an array of effects:

* ``"encoder"``: each encoder layer's output at each source position, (encoder layers, source tokens);
* ``"decoder"``: each decoder layer's output at each decoder input position, (decoder layers, target tokens);
* ``"encoder_heads"``, ``"decoder_heads"``, ``"cross_heads"``: one head's output (its slice of the output
  projection's input, at every position), (layers, heads).

Methods (`METHODS`): ``"exhaustive"`` runs one patched pass per cell (batched: the patched runs are a batch of
copies of the corrupted input); ``"attribution"`` is the first-order approximation (attribution patching): for
each cell, (clean - corrupted activation) . d metric / d activation at the corrupted run, summed over the cell's
dimensions and divided by (clean - corrupted); one forward and backward pass on the corrupted source and one
forward pass on the clean one, whatever the number of cells.

Layers and attention modules are found by `vaswani_inspect.architectures`, so this works on every architecture it
knows (ours, Marian, M2M100/NLLB, mBART, BART, T5); positions are those of `AttentionRecord` (the sources with their
direction tokens, the decoder inputs starting with the decoder start token), as `vaswani_inspect.extract` makes
them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from transformers.modeling_outputs import BaseModelOutput

from hf_vaswani.directions import Direction, target_language_settings

from .architectures import attention_modules, head_size, layer_stacks, position_limit, projections
from .extract import (
    _decoder_start_id,
    _device,
    _direction,
    _encode,
    _eos_id,
    _eval_mode,
    _generate,
    _generate_settings,
    _source_ids,
    _strip_leading_specials,
    _target_ids,
)
from .pieces import piece_labels

__all__ = ["METHODS", "SITES", "Contrast", "PatchingResult", "patch_activations"]

#: The sites that can be patched, in the order results list them.
SITES = ("encoder", "decoder", "encoder_heads", "decoder_heads", "cross_heads")
#: How effects are computed: one patched run per cell, or the gradient approximation.
METHODS = ("exhaustive", "attribution")
#: The attention kind (`vaswani_inspect.record.KINDS`) of each head site.
_HEAD_KINDS = {"encoder_heads": "encoder", "decoder_heads": "decoder", "cross_heads": "cross"}
#: Sites whose patch leaves the encoder untouched: their runs reuse the corrupted encoder output.
_DECODER_SIDE = ("decoder", "decoder_heads", "cross_heads")


@dataclass(frozen=True)
class Contrast:
    """The metric log p(answer) - log p(foil) at the one decoder step where the two part ("why this and not that").

    `answer` and `foil` are texts in the target language (a word, ``Contrast("bank", "bench")``, or a whole
    translation) or lists of token ids. The answer's tokens must occur in the target (the teacher-forced
    translation); the step is where the answer's and the foil's tokens first differ, at that place of the target.
    A plain ``(answer, foil)`` tuple passed as ``metric=`` is read as a `Contrast`.
    """

    answer: str | Sequence[int]
    foil: str | Sequence[int]

    def describe(self) -> str:
        """``"log p('bank') - log p('bench')"``: how results name the metric."""
        return f"log p({_shown(self.answer)}) - log p({_shown(self.foil)})"


def _shown(value: str | Sequence[int]) -> str:
    return repr(value) if isinstance(value, str) else repr(list(value))


@dataclass
class PatchingResult:
    """What `patch_activations` found.

    Attributes:
        effects: ``{site: float32 array}``, (layers, positions) for ``"encoder"``/``"decoder"``, (layers, heads) for
            the head sites; (patched - corrupted) / (clean - corrupted), NaN where clean - corrupted is 0.
        clean_metric, corrupted_metric: the metric on the clean and on the corrupted source.
        source_tokens, corrupted_tokens: the labels of both sources' pieces (as `AttentionRecord.source_tokens`).
        target_tokens, target_ids: the teacher-forced decoder inputs (decoder start token, then the translation).
        method: ``"exhaustive"`` or ``"attribution"``; sites: the sites computed, in `SITES` order.
        metric: what the metric is, in words (``"sum of log p(target tokens)"``, or a `Contrast`'s description).
        source_text, corrupted_text, target_text, direction: the inputs as given (target_text: the translation).
        source_ids, corrupted_ids: the token ids the encoder read.
        passes: model runs made, a batched run counting one per copy (backward passes included for attribution).
        metric_steps: the decoder positions whose predictions the metric reads.
    """

    effects: dict[str, np.ndarray]
    clean_metric: float
    corrupted_metric: float
    source_tokens: list[str]
    corrupted_tokens: list[str]
    target_tokens: list[str]
    target_ids: list[int]
    method: str
    sites: tuple[str, ...]
    metric: str
    source_text: str = ""
    corrupted_text: str = ""
    target_text: str = ""
    direction: str | None = None
    source_ids: list[int] = field(default_factory=list)
    corrupted_ids: list[int] = field(default_factory=list)
    passes: int = 0
    metric_steps: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The result as JSON-ready data (arrays as nested lists, NaN as None)."""
        data = asdict(self)
        data["sites"] = list(self.sites)
        data["effects"] = {site: _json_array(values) for site, values in self.effects.items()}
        for name in ("clean_metric", "corrupted_metric"):
            data[name] = None if math.isnan(data[name]) else data[name]
        return data

    def to_json(self, path: str | Path | None = None) -> str:
        """The result as JSON text (`as_dict`), also written to `path` when given."""
        text = json.dumps(self.as_dict(), ensure_ascii=False, indent=1)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text

    def position_tokens(self, site: str) -> list[str]:
        """The labels of a position site's columns: the source pieces for ``"encoder"`` (``"banco→sofá"`` where the
        sources differ), the decoder inputs for ``"decoder"``."""
        if site == "encoder":
            return [
                clean if clean == corrupted else f"{clean}→{corrupted}"
                for clean, corrupted in zip(self.source_tokens, self.corrupted_tokens)
            ]
        if site == "decoder":
            return list(self.target_tokens)
        raise ValueError(f"{site!r} is not a position site: 'encoder' or 'decoder'.")


def _json_array(values: np.ndarray) -> list:
    return [[None if math.isnan(v) else float(v) for v in row] for row in np.asarray(values, dtype=np.float64)]


class _Inputs(NamedTuple):
    clean: list[int]
    corrupted: list[int]
    target: list[int]
    direction: Direction | None


class _Metric(NamedTuple):
    """sum_k log p(plus_k) [- log p(minus_k)] at decoder positions steps_k, over a batch of logits."""

    steps: torch.Tensor
    plus: torch.Tensor
    minus: torch.Tensor | None
    description: str

    def __call__(self, logits: torch.Tensor) -> torch.Tensor:
        log_probs = torch.log_softmax(logits[:, self.steps].float(), dim=-1)
        rows = torch.arange(len(self.steps), device=logits.device)
        value = log_probs[:, rows, self.plus]
        if self.minus is not None:
            value = value - log_probs[:, rows, self.minus]
        return value.sum(dim=-1)


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
        inputs = _prepare(model, tokenizer, clean, corrupted, direction, target)
        scorer = _metric(model, tokenizer, inputs, metric)
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


def _prepare(
    model: Any, tokenizer: Any, clean: str, corrupted: str, direction: str | None, target: str | None
) -> _Inputs:
    """The ids of both sources and of the decoder inputs, made as `extract` makes them."""
    how = _direction(model, tokenizer, direction)
    limit = position_limit(model.config)
    clean_ids, corrupted_ids = _source_ids(model, tokenizer, [clean, corrupted], how, limit, False)
    tokens = f"clean {piece_labels(tokenizer, clean_ids)}, corrupted {piece_labels(tokenizer, corrupted_ids)}"
    if len(clean_ids) != len(corrupted_ids):
        raise ValueError(
            f"The sources must have the same number of tokens for their positions to match, but the clean one has "
            f"{len(clean_ids)} and the corrupted one {len(corrupted_ids)}: {tokens}."
        )
    if clean_ids == corrupted_ids:
        raise ValueError(f"The clean and corrupted sources give the same tokens: {tokens}. Change a word.")
    with torch.inference_mode():
        if target is None:
            settings = _generate_settings(model, None, [clean_ids], limit, how)
            (target_ids,) = _generate(model, tokenizer, [clean_ids], settings)
        else:
            (target_ids,) = _target_ids(model, tokenizer, [target], how, limit, False)
    return _Inputs(clean_ids, corrupted_ids, target_ids, how)


def _forced_prefix(model: Any, inputs: _Inputs) -> int:
    """How many decoder inputs are given, not predicted: the start token and the direction's language code."""
    return 1 + (len(inputs.direction.target_start) if inputs.direction is not None else 0)


def _metric(model: Any, tokenizer: Any, inputs: _Inputs, metric: Contrast | tuple | None) -> _Metric:
    device = _device(model)
    target = inputs.target
    if len(target) < 2:
        raise ValueError("The target has no token to predict after the decoder start token.")
    if metric is None:
        first = min(_forced_prefix(model, inputs), len(target) - 1)
        steps = torch.arange(first - 1, len(target) - 1, device=device)
        plus = torch.tensor(target[first:], dtype=torch.long, device=device)
        return _Metric(steps, plus, None, "sum of log p(target tokens)")
    if isinstance(metric, tuple) and len(metric) == 2:
        metric = Contrast(*metric)
    if not isinstance(metric, Contrast):
        raise ValueError(f"metric must be None, a Contrast or an (answer, foil) pair, got {metric!r}.")
    answer, foil = (_contrast_ids(model, tokenizer, value, inputs) for value in (metric.answer, metric.foil))
    differ = next((k for k, (a, f) in enumerate(zip(answer, foil)) if a != f), None)
    labels = f"answer {piece_labels(tokenizer, answer)}, foil {piece_labels(tokenizer, foil)}"
    if differ is None:
        raise ValueError(f"The answer and the foil must differ in a token where both have one: {labels}.")
    where = next(
        (i for i in range(1, len(target) - len(answer) + 1) if target[i : i + len(answer)] == answer),
        None,
    )
    if where is None:
        raise ValueError(
            f"The contrast's answer must occur in the target, which is {piece_labels(tokenizer, target)}: {labels}."
        )
    step = where + differ - 1  # the decoder position that predicts the token where the two part
    return _Metric(
        torch.tensor([step], device=device),
        torch.tensor([answer[differ]], dtype=torch.long, device=device),
        torch.tensor([foil[differ]], dtype=torch.long, device=device),
        metric.describe(),
    )


def _contrast_ids(model: Any, tokenizer: Any, value: str | Sequence[int], inputs: _Inputs) -> list[int]:
    """The tokens of an answer or foil as they appear inside a translation: no start token, code or `</s>`."""
    if not isinstance(value, str):
        ids = [int(i) for i in value]
    else:
        if not value.strip():
            raise ValueError("A contrast's answer and foil must not be empty.")
        start = [_decoder_start_id(model), *(inputs.direction.target_start if inputs.direction is not None else [])]
        with target_language_settings(tokenizer, inputs.direction):
            ids = _strip_leading_specials(tokenizer, _encode(tokenizer, value.strip(), "contrast", target=True), start)
        eos = _eos_id(tokenizer, model)
        while ids and ids[-1] == eos:
            ids = ids[:-1]
    if not ids:
        raise ValueError(f"The contrast text {value!r} has no tokens.")
    return ids


# --- hooks -------------------------------------------------------------------------------------------------------


def _hidden(output: Any) -> torch.Tensor:
    return output[0] if isinstance(output, tuple) else output


def _replaced(output: Any, hidden: torch.Tensor) -> Any:
    return (hidden, *output[1:]) if isinstance(output, tuple) else hidden


class _Site(NamedTuple):
    """Where a site's activations are: per layer, the module and whether it is an output (layer) or an input
    (output projection) hook, with the heads' split for head sites."""

    modules: list[torch.nn.Module]
    heads: tuple[int, int] | None  # (heads, head size) for head sites


def _sites(model: Any, chosen: Sequence[str]) -> dict[str, _Site]:
    found = {}
    stacks = layer_stacks(model) if {"encoder", "decoder"} & set(chosen) else {}
    modules = attention_modules(model) if set(_HEAD_KINDS) & set(chosen) else {}
    for site in chosen:
        if site in stacks:
            found[site] = _Site(stacks[site], None)
        else:
            group = modules[_HEAD_KINDS[site]]
            found[site] = _Site([projections(model, m).output for m in group], head_size(model, group[0]))
    return found


@contextmanager
def _hooked(site: _Site, edit: Callable[[int, torch.Tensor], torch.Tensor | None]) -> Iterator[None]:
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


def _capture(site: _Site, store: dict[int, torch.Tensor]) -> Any:
    def edit(layer: int, activation: torch.Tensor) -> None:
        store[layer] = activation.detach()[0]

    return _hooked(site, edit)


def _logits(model: Any, ids: dict[str, torch.Tensor], source: str, copies: int = 1, encoded: Any = None) -> Any:
    decoder_ids = ids["target"].expand(copies, -1)
    if encoded is not None:
        hidden = encoded.expand(copies, -1, -1)
        encoder_outputs = BaseModelOutput(last_hidden_state=hidden)
        return model(encoder_outputs=encoder_outputs, decoder_input_ids=decoder_ids, use_cache=False).logits
    return model(input_ids=ids[source].expand(copies, -1), decoder_input_ids=decoder_ids, use_cache=False).logits


def _clean_run(model: Any, ids: dict, sites: dict[str, _Site], metric: _Metric) -> tuple[dict, float]:
    """The clean run's activations at every site, ``{site: (layers, positions, ...) tensor}``, and its metric."""
    stores: dict[str, dict[int, torch.Tensor]] = {site: {} for site in sites}
    with torch.no_grad(), ExitStack() as stack:
        for site, where in sites.items():
            stack.enter_context(_capture(where, stores[site]))
        value = float(metric(_logits(model, ids, "clean"))[0])
    return {site: torch.stack([store[i] for i in range(len(store))]) for site, store in stores.items()}, value


def _effects(changes: np.ndarray, clean: float, corrupted: float) -> np.ndarray:
    """`changes` (patched - corrupted metric, per cell) over clean - corrupted; NaN when that is 0."""
    denominator = clean - corrupted
    if denominator == 0 or not math.isfinite(denominator):
        return np.full(changes.shape, np.nan, dtype=np.float32)
    return (changes / denominator).astype(np.float32)


# --- exhaustive --------------------------------------------------------------------------------------------------


def _cells(site: str, where: _Site, clean: torch.Tensor) -> list[tuple[int, int]]:
    layers = len(where.modules)
    width = where.heads[0] if where.heads is not None else clean.shape[1]
    return [(layer, index) for layer in range(layers) for index in range(width)]


def _patch_edit(where: _Site, clean: torch.Tensor, chunk: list[tuple[int, int]]) -> Any:
    """An `_hooked` edit that patches row b of the batch at cell chunk[b]."""
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
    metric: _Metric,
    progress: Callable[[int, int], None] | None,
    batch_size: int,
) -> tuple[dict[str, np.ndarray], float, float, int]:
    sites = _sites(model, chosen)
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
                with _hooked(sites[site], _patch_edit(sites[site], clean_acts[site], chunk)):
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
    metric: _Metric,
    progress: Callable[[int, int], None] | None,
    batch_size: int,
) -> tuple[dict[str, np.ndarray], float, float, int]:
    sites = _sites(model, chosen)
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
            stack.enter_context(_hooked(sites[site], adder(site)))
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
