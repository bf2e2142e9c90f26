"""The learning rate of the paper (sec. 5.3, eq. 3):
``lrate = d_model^-0.5 * min(step_num^-0.5, step_num * warmup_steps^-1.5)``.

`transformers`' ``inverse_sqrt`` schedule with ``timescale = warmup`` and peak ``d_model^-0.5 * warmup^-0.5`` is
exactly this function of the step (see the tests), but `Trainer` steps the scheduler AFTER each update, so update
k would run with the value for step k - 1 and the first update with a learning rate of 0. `paper_lr_lambda`
shifts by one so that update k (k = 1, 2, ...) uses step_num = k, as in the paper.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["paper_learning_rate", "paper_lr_lambda", "paper_peak_learning_rate", "peak_learning_rate"]


def paper_learning_rate(step_num: int, d_model: int, warmup_steps: int, scale: float = 1.0) -> float:
    """Eq. 3 of the paper: ``d_model^-0.5 * min(step_num^-0.5, step_num * warmup_steps^-1.5)``, step_num >= 1."""
    if step_num < 1:
        raise ValueError(f"step_num starts at 1, got {step_num}.")
    return scale * d_model**-0.5 * min(step_num**-0.5, step_num * warmup_steps**-1.5)


def paper_peak_learning_rate(d_model: int, warmup_steps: int, scale: float = 1.0) -> float:
    """The largest value of eq. 3, reached at step_num = warmup_steps: ``d_model^-0.5 * warmup_steps^-0.5``."""
    return scale * d_model**-0.5 * warmup_steps**-0.5


def paper_lr_lambda(scheduler_step: int, *, warmup_steps: int) -> float:
    """Multiplier of the peak learning rate for `LambdaLR` so that the k-th optimizer update uses eq. 3 at
    step_num = k. `LambdaLR` evaluates the lambda at 0 before the first update and `Trainer` steps it after
    each update, so the value used by update k is lambda(k - 1)."""
    warmup_steps = max(1, int(warmup_steps))
    step_num = scheduler_step + 1
    return min(step_num**-0.5 * warmup_steps**0.5, step_num / warmup_steps)


def peak_learning_rate(config: Mapping[str, Any], d_model: int) -> float:
    """The peak learning rate of a run configuration: ``training.learning_rate`` when set, else the paper's
    ``d_model^-0.5 * warmup_steps^-0.5`` times ``training.lr_scale``."""
    training = config["training"]
    if training["learning_rate"] is not None:
        return float(training["learning_rate"])
    return paper_peak_learning_rate(d_model, max(1, int(training["warmup_steps"])), float(training["lr_scale"]))
