"""The checkpoints of a run directory: which ``checkpoint-N`` folders are complete, and publishing a folder
atomically (written under ``tmp-NAME``, then renamed into place in one step: `hf_vaswani.outputs.publish_dir`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import warnings
import zipfile
from pathlib import Path

from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from ..outputs import STAGING_PREFIX as OUTPUTS_STAGING_PREFIX
from ..outputs import publish_dir
from .weights import safetensors_problem, shard_paths

__all__ = [
    "STAGING_PREFIX",
    "TRAINING_ARGS_JSON",
    "IncompleteCheckpointWarning",
    "checkpoint_problem",
    "checkpoint_step",
    "find_checkpoints",
    "last_checkpoint",
    "publish_dir",
    "remove_staging_dirs",
]

#: A checkpoint is written into ``tmp-checkpoint-N`` and renamed to ``checkpoint-N`` once complete (the prefix of
#: every temporary sibling `hf_vaswani.outputs` writes).
STAGING_PREFIX = OUTPUTS_STAGING_PREFIX
#: The training arguments, as JSON (instead of Trainer's pickled ``training_args.bin``).
TRAINING_ARGS_JSON = "training_args.json"


class IncompleteCheckpointWarning(UserWarning):
    """A ``checkpoint-N`` folder is incomplete (a save was interrupted) and is skipped."""


def checkpoint_step(path: Path) -> int:
    """N for a folder named ``checkpoint-N``, else -1."""
    match = re.fullmatch(r"checkpoint-(\d+)", path.name)
    return int(match.group(1)) if match else -1


def _weights_problem(folder: Path) -> str | None:
    try:
        weights = shard_paths(folder)
    except (OSError, ValueError) as error:
        return str(error)
    for path in weights:
        if not path.is_file():
            return f"{path.name} is missing"
        problem = safetensors_problem(path)
        if problem:
            return problem
    return None


def checkpoint_problem(folder: str | os.PathLike[str]) -> str | None:
    """Why `folder` is not a complete Trainer checkpoint, or None when it is complete.

    Checked: the model weights (``model.safetensors``, or a sharded index and all its shards) are readable and
    not truncated; ``trainer_state.json`` (which Trainer writes last) is valid JSON and, for a ``checkpoint-N``
    folder, records step N; every ``*.pt`` / ``*.pth`` file is a complete archive. This catches checkpoints
    cut short by a crash in the middle of a save by a version without atomic saves (`VaswaniTrainer` renames a
    checkpoint into place only once it is complete).
    """
    folder = Path(folder)
    if not folder.is_dir():
        return "not a folder"
    problem = _weights_problem(folder)
    if problem:
        return problem
    state_path = folder / "trainer_state.json"
    if not state_path.is_file():
        return "trainer_state.json is missing"
    try:
        with open(state_path, encoding="utf-8") as handle:
            state = json.load(handle)
    except (OSError, ValueError) as error:
        return f"trainer_state.json is unreadable ({error})"
    step = checkpoint_step(folder)
    # A trainer state that is not an object is not what an interrupted save leaves: it is damage that resuming
    # reports by name (hf_vaswani.training.resume), not a checkpoint to skip.
    if step >= 0 and isinstance(state, dict) and state.get("global_step") != step:
        return f"trainer_state.json records step {state.get('global_step')}, not {step}"
    for path in sorted([*folder.glob("*.pt"), *folder.glob("*.pth")]):
        if not zipfile.is_zipfile(path):
            return f"{path.name} is truncated or not a torch archive"
    return None


def find_checkpoints(output_dir: str | os.PathLike[str], *, warn: bool = False) -> list[Path]:
    """The complete ``checkpoint-N`` folders of `output_dir` (see `checkpoint_problem`), in increasing N.

    Incomplete ones are left out, with an `IncompleteCheckpointWarning` when `warn`.
    """
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        return []
    found = []
    for path in sorted(
        (p for p in output_dir.iterdir() if p.is_dir() and checkpoint_step(p) >= 0), key=checkpoint_step
    ):
        problem = checkpoint_problem(path)
        if problem is None:
            found.append(path)
        elif warn:
            warnings.warn(
                f"skipping the incomplete checkpoint {path} ({problem}); an interrupted save leaves this.",
                IncompleteCheckpointWarning,
                stacklevel=2,
            )
    return found


def last_checkpoint(output_dir: str | os.PathLike[str], *, warn: bool = True) -> Path | None:
    """The complete checkpoint of `output_dir` with the highest step, or None; newer incomplete checkpoints are
    skipped (with an `IncompleteCheckpointWarning` when `warn`)."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        return None
    complete = find_checkpoints(output_dir)
    newest = checkpoint_step(complete[-1]) if complete else -1
    if warn:
        for path in output_dir.iterdir():
            if path.is_dir() and checkpoint_step(path) > newest:
                problem = checkpoint_problem(path)
                warnings.warn(
                    f"skipping the incomplete checkpoint {path.name} ({problem}): "
                    + (f"resuming from {complete[-1].name} instead." if complete else "no complete checkpoint."),
                    IncompleteCheckpointWarning,
                    stacklevel=2,
                )
    return complete[-1] if complete else None


#: The temporary folders of a run directory that a killed save leaves: checkpoints, and the averaged model.
_STAGING_PREFIXES = (f"{STAGING_PREFIX}{PREFIX_CHECKPOINT_DIR}-", f"{STAGING_PREFIX}averaged.")


def remove_staging_dirs(output_dir: Path) -> None:
    """Delete the ``tmp-checkpoint-N`` and ``tmp-averaged.*`` folders that killed saves left behind."""
    if not output_dir.is_dir():
        return
    for path in output_dir.iterdir():
        if path.is_dir() and path.name.startswith(_STAGING_PREFIXES):
            print(f"hf-vaswani train: removing {path}, left by an interrupted save", file=sys.stderr)
            shutil.rmtree(path, ignore_errors=True)
