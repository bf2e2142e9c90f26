"""The ids a patching run feeds the model (both sources and the decoder inputs, made as `vaswani_inspect.extract`
makes them) and the metric it reads off the logits (`Metric`: the target's summed log-probability, or a
`Contrast`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import torch

from hf_vaswani.directions import Direction, target_language_settings

from ..architectures import position_limit
from ..extract import (
    _decoder_start_id,
    _device,
    _direction,
    _encode,
    _eos_id,
    _generate,
    _generate_settings,
    _source_ids,
    _strip_leading_specials,
    _target_ids,
)
from ..pieces import piece_labels
from .result import Contrast

__all__ = ["Metric", "PatchInputs", "build_metric", "prepare_inputs"]


class PatchInputs(NamedTuple):
    clean: list[int]
    corrupted: list[int]
    target: list[int]
    direction: Direction | None


class Metric(NamedTuple):
    """sum_k log p(plus_k) [- log p(minus_k)] at decoder positions steps_k, over a batch of logits."""

    steps: torch.Tensor
    plus: torch.Tensor
    minus: torch.Tensor | None
    description: str

    def __call__(self, logits: torch.Tensor) -> torch.Tensor:
        log_probs = torch.log_softmax(logits[:, self.steps].double(), dim=-1)  # differences of large sums
        rows = torch.arange(len(self.steps), device=logits.device)
        value = log_probs[:, rows, self.plus]
        if self.minus is not None:
            value = value - log_probs[:, rows, self.minus]
        return value.sum(dim=-1)


def prepare_inputs(
    model: Any, tokenizer: Any, clean: str, corrupted: str, direction: str | None, target: str | None
) -> PatchInputs:
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
    return PatchInputs(clean_ids, corrupted_ids, target_ids, how)


def _forced_prefix(model: Any, inputs: PatchInputs) -> int:
    """How many decoder inputs are given, not predicted: the start token and the direction's language code."""
    return 1 + (len(inputs.direction.target_start) if inputs.direction is not None else 0)


def build_metric(model: Any, tokenizer: Any, inputs: PatchInputs, metric: Contrast | tuple | None) -> Metric:
    device = _device(model)
    target = inputs.target
    if len(target) < 2:
        raise ValueError("The target has no token to predict after the decoder start token.")
    if metric is None:
        first = min(_forced_prefix(model, inputs), len(target) - 1)
        steps = torch.arange(first - 1, len(target) - 1, device=device)
        plus = torch.tensor(target[first:], dtype=torch.long, device=device)
        return Metric(steps, plus, None, "sum of log p(target tokens)")
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
    return Metric(
        torch.tensor([step], device=device),
        torch.tensor([answer[differ]], dtype=torch.long, device=device),
        torch.tensor([foil[differ]], dtype=torch.long, device=device),
        metric.describe(),
    )


def _contrast_ids(model: Any, tokenizer: Any, value: str | Sequence[int], inputs: PatchInputs) -> list[int]:
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
