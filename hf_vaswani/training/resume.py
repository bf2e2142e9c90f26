"""What a resumed run reads from its checkpoint, checked before Trainer reads it.

`Trainer` trusts a checkpoint's files: a ``trainer_state.json`` that is not an object, a ``scheduler.pt`` or an
``rng_state.pth`` of another shape end in an AttributeError, a TypeError or a KeyError deep inside it, and a
checkpoint without ``optimizer.pt`` or ``scheduler.pt`` resumes silently with a fresh optimizer and a schedule
that starts again from its warmup. Here every file a resume reads is checked first, and a problem is a
`DamagedCheckpointError` that names the file and the checkpoint (`checkpoint_damage`: the files on their own,
before the data is prepared; `model_damage`: the weights and the optimizer state against the model built for
the run). `choose_checkpoint` goes back to the newest checkpoint without damage when asked to.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import TrainerState

__all__ = [
    "DamagedCheckpointError",
    "checkpoint_damage",
    "choose_checkpoint",
    "model_damage",
    "missing_optimizer",
    "tied_parameter_names",
]


class DamagedCheckpointError(ValueError):
    """A file of the checkpoint to resume from is missing, or not what the run wrote there."""


# --------------------------------------------------------------------------------------------- the files alone


def _load(path: Path) -> Any:
    from transformers.trainer_pt_utils import safe_globals

    with safe_globals():
        return torch.load(path, weights_only=True, map_location="cpu")


def _trainer_state_problem(path: Path) -> str | None:
    import json

    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return f"is unreadable ({error})"
    if not isinstance(state, dict):
        return f"is a JSON {type(state).__name__}, not an object of Trainer's state"
    fields = {field.name for field in dataclasses.fields(TrainerState)}
    unknown = sorted(set(state) - fields)
    if unknown:
        return f"has field(s) Trainer does not know: {unknown}"
    # The fields Trainer reads to resume: where it stopped, and the cadence it checks against the arguments.
    for name in ("global_step", "max_steps", "logging_steps", "eval_steps", "save_steps", "num_train_epochs"):
        value = state.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"lacks {name} (an integer >= 0)" if name not in state else f"has {name}={value!r}"
    epoch = state.get("epoch")
    if isinstance(epoch, bool) or not isinstance(epoch, (int, float)) or not math.isfinite(epoch) or epoch < 0:
        return "lacks epoch (a number >= 0)" if "epoch" not in state else f"has epoch={epoch!r}"
    history = state.get("log_history", [])
    if not isinstance(history, list) or not all(isinstance(entry, dict) for entry in history):
        return "has a log_history that is not a list of objects"
    callbacks = state.get("stateful_callbacks")
    if callbacks is not None and not isinstance(callbacks, dict):
        return "has stateful_callbacks that are not an object"
    return None


def _scheduler_problem(state: Any) -> str | None:
    if not isinstance(state, dict):
        return f"holds a {type(state).__name__}, not a learning-rate scheduler's state"
    last_epoch, base_lrs = state.get("last_epoch"), state.get("base_lrs")
    if isinstance(last_epoch, bool) or not isinstance(last_epoch, int):
        return "lacks last_epoch (the scheduler's step)"
    if not isinstance(base_lrs, list) or not base_lrs or not all(isinstance(lr, (int, float)) for lr in base_lrs):
        return "lacks base_lrs (the peak learning rates)"
    if not isinstance(state.get("lr_lambdas"), list) or len(state["lr_lambdas"]) != len(base_lrs):
        return "lacks lr_lambdas (one per parameter group): not the state of the run's LambdaLR schedule"
    return None


def _optimizer_structure_problem(state: Any) -> str | None:
    if not isinstance(state, dict) or not isinstance(state.get("state"), dict):
        return f"holds a {type(state).__name__} without an optimizer's state"
    groups = state.get("param_groups")
    if not isinstance(groups, list) or not groups:
        return "has no parameter groups"
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("params"), list):
            return "has a parameter group without its parameters"
    return None


def _restorable(states: Any, keys: Sequence[str]) -> str | None:
    """Why the RNG `states` cannot be set (tried, then the current states are put back), or None."""
    if not isinstance(states, dict):
        return f"holds a {type(states).__name__}, not a dict of RNG states"
    missing = [key for key in keys if key not in states]
    if missing:
        return f"lacks the {', '.join(missing)} RNG state(s)"
    saved = (random.getstate(), np.random.get_state(), torch.get_rng_state())
    try:
        if "python" in keys:
            random.setstate(states["python"])
        if "numpy" in keys:
            np.random.set_state(states["numpy"])
        torch.set_rng_state(states["cpu"])
        if "sampler" in states:
            torch.Generator().set_state(states["sampler"])
    except (TypeError, ValueError, RuntimeError, IndexError, KeyError) as error:
        return f"holds RNG states of the wrong type ({' '.join(str(error).split())[:120]})"
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])
        torch.set_rng_state(saved[2])
    return None


def _rng_name(stem: str, world_size: int, process_index: int) -> str:
    return f"{stem}.pth" if world_size <= 1 else f"{stem}_{process_index}.pth"


def missing_optimizer(checkpoint: Path) -> bool:
    """Whether `checkpoint` has no ``optimizer.pt`` (a resume would start Adam again from zero moments)."""
    return not (checkpoint / "optimizer.pt").is_file()


def checkpoint_damage(
    checkpoint: Path, world_size: int = 1, process_index: int = 0, fresh_optimizer: bool = False
) -> str | None:
    """Why resuming from `checkpoint` would fail or silently change the run, naming the file; None when its
    trainer state, scheduler, optimizer and RNG files are what a run writes. With `fresh_optimizer`, a missing
    ``optimizer.pt`` is accepted (the caller says that the optimizer restarts)."""
    problem = _trainer_state_problem(checkpoint / "trainer_state.json")
    if problem:
        return f"trainer_state.json {problem}"
    checks: list[tuple[str, Callable[[Any], str | None], bool]] = [
        ("scheduler.pt", _scheduler_problem, True),
        ("optimizer.pt", _optimizer_structure_problem, not fresh_optimizer),
        (
            _rng_name("rng_state", world_size, process_index),
            lambda s: _restorable(s, ("python", "numpy", "cpu")),
            False,
        ),
        (_rng_name("epoch_rng_state", world_size, process_index), lambda s: _epoch_problem(s), False),
    ]
    for name, check, required in checks:
        path = checkpoint / name
        if not path.is_file():
            if name == "optimizer.pt" and required:
                return (
                    "optimizer.pt is missing (resuming without it starts Adam again from zero moments, and the "
                    "losses depart from an unbroken run's; --fresh-optimizer resumes so knowingly)"
                )
            if required:
                return f"{name} is missing"
            continue
        try:
            state = _load(path)
        except Exception as error:  # noqa: BLE001 (a damaged archive raises many kinds; the message says which)
            return f"{name} is unreadable ({type(error).__name__}: {' '.join(str(error).split())[:120]})"
        problem = check(state)
        if problem:
            return f"{name} {problem}"
    return None


def _epoch_problem(state: Any) -> str | None:
    if not isinstance(state, dict) or isinstance(state.get("epoch"), bool) or not isinstance(state.get("epoch"), int):
        return f"holds a {type(state).__name__}, not the epoch-start RNG states (epoch, cpu)"
    return _restorable(state, ("cpu",))


# --------------------------------------------------------------------------------------------- against the model


def tied_parameter_names(model: torch.nn.Module) -> set[str]:
    """Names under which `model`'s state dict holds a tensor that another name already holds (tied weights),
    which a checkpoint stores once."""
    first: dict[int, str] = {}
    tied = set()
    for name, tensor in model.state_dict(keep_vars=True).items():
        key = id(tensor)
        if key in first:
            tied.add(name)
        else:
            first[key] = name
    return tied


def _weights_problem(checkpoint: Path, model: torch.nn.Module) -> str | None:
    from safetensors import SafetensorError, safe_open

    from .weights import shard_paths

    expected = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    tied = tied_parameter_names(model)
    found: dict[str, tuple[int, ...]] = {}
    try:
        for path in shard_paths(checkpoint):
            with safe_open(str(path), framework="pt") as handle:
                for name in handle.keys():
                    tensor = handle.get_tensor(name)
                    found[name] = tuple(tensor.shape)
                    if tensor.is_floating_point() and not torch.isfinite(tensor).all():
                        return f"{path.name} holds non-finite values (NaN or inf) in {name}"
    except (OSError, ValueError, SafetensorError) as error:
        return f"weights are unreadable ({error})"
    missing = sorted(set(expected) - set(found) - tied)
    unexpected = sorted(set(found) - set(expected))
    if missing or unexpected:
        what = [f"lacks {missing[:3]}" if missing else "", f"has unknown {unexpected[:3]}" if unexpected else ""]
        return f"model.safetensors does not match the model: it {' and '.join(w for w in what if w)}"
    for name, shape in found.items():
        if shape != expected[name]:
            return f"model.safetensors holds {name} of shape {list(shape)}, the model {list(expected[name])}"
    return None


def _optimizer_problem(state: dict[str, Any], parameters: list[torch.nn.Parameter]) -> str | None:
    ids = [i for group in state["param_groups"] for i in group["params"]]
    if len(ids) != len(parameters):
        return f"optimizer.pt holds the state of {len(ids)} parameters, the model has {len(parameters)}"
    for position, (index, parameter) in enumerate(zip(ids, parameters)):
        moments = state["state"].get(index, {})
        if not isinstance(moments, dict):
            return f"optimizer.pt holds a {type(moments).__name__} for parameter {position}"
        for key in ("exp_avg", "exp_avg_sq"):
            value = moments.get(key)
            if value is not None and (not isinstance(value, torch.Tensor) or value.shape != parameter.shape):
                shape = list(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
                return f"optimizer.pt holds {key} of shape {shape} for a parameter of shape {list(parameter.shape)}"
    return None


def model_damage(checkpoint: Path, model: torch.nn.Module, optimizer_parameters: list[Any] | None) -> str | None:
    """Why the weights of `checkpoint` (names, shapes, finite values) or its optimizer state (one Adam state
    per parameter of `optimizer_parameters`, in the optimizer's order, of the parameter's shape) do not fit
    `model`; None when they do."""
    problem = _weights_problem(checkpoint, model)
    if problem or optimizer_parameters is None or missing_optimizer(checkpoint):
        return problem
    return _optimizer_problem(_load(checkpoint / "optimizer.pt"), optimizer_parameters)


# --------------------------------------------------------------------------------------------- choosing


def choose_checkpoint(
    checkpoints: Sequence[Path], damage: Callable[[Path], str | None], go_back: bool, run_dir: Path
) -> tuple[Path, list[str]]:
    """The newest of `checkpoints` (in increasing step) that `damage` finds nothing wrong with, and a note for
    each newer one skipped. Without `go_back`, damage in the newest is a `DamagedCheckpointError` that offers
    the previous checkpoint (``--resume-from-previous``)."""
    notes = []
    for position in range(len(checkpoints) - 1, -1, -1):
        checkpoint = checkpoints[position]
        problem = damage(checkpoint)
        if problem is None:
            return checkpoint, notes
        previous = checkpoints[position - 1].name if position > 0 else None
        if not go_back:
            offer = (
                f"resume from the previous one, {previous}, with --resume-from-previous"
                if previous
                else "there is no earlier checkpoint to resume from"
            )
            raise DamagedCheckpointError(
                f"cannot resume from {checkpoint}: {problem}. Repair or remove {checkpoint.name}, or {offer}."
            )
        notes.append(f"{checkpoint.name}: {problem}")
    raise DamagedCheckpointError(
        f"no checkpoint of {run_dir} can be resumed from ({'; '.join(notes)}): choose another "
        "training.output_dir, or remove the damaged checkpoints to start again."
    )
