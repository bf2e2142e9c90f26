"""The checkpoints of a run directory: which ``checkpoint-N`` folders are complete, and publishing a folder
atomically (written under ``tmp-NAME``, then renamed into place in one step)."""

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

from .weights import safetensors_problem

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

#: A checkpoint is written into ``tmp-checkpoint-N`` and renamed to ``checkpoint-N`` once complete.
STAGING_PREFIX = "tmp-"
#: The training arguments, as JSON (instead of Trainer's pickled ``training_args.bin``).
TRAINING_ARGS_JSON = "training_args.json"


class IncompleteCheckpointWarning(UserWarning):
    """A ``checkpoint-N`` folder is incomplete (a save was interrupted) and is skipped."""


def checkpoint_step(path: Path) -> int:
    """N for a folder named ``checkpoint-N``, else -1."""
    match = re.fullmatch(r"checkpoint-(\d+)", path.name)
    return int(match.group(1)) if match else -1


def _weights_problem(folder: Path) -> str | None:
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            with open(index, encoding="utf-8") as handle:
                shards = sorted(set(json.load(handle)["weight_map"].values()))
        except (OSError, ValueError, KeyError) as error:
            return f"{index.name} is unreadable ({error})"
        weights = [folder / shard for shard in shards]
    else:
        weights = [folder / "model.safetensors"]
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
    if step >= 0 and state.get("global_step") != step:
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


def remove_staging_dirs(output_dir: Path) -> None:
    """Delete the ``tmp-checkpoint-N`` folders that killed saves left behind."""
    if not output_dir.is_dir():
        return
    for path in output_dir.iterdir():
        if path.is_dir() and path.name.startswith(f"{STAGING_PREFIX}{PREFIX_CHECKPOINT_DIR}-"):
            print(f"hf-vaswani train: removing {path}, left by an interrupted checkpoint save", file=sys.stderr)
            shutil.rmtree(path, ignore_errors=True)


def _fsync_tree(folder: Path) -> None:
    """Flush the files of `folder` (recursively) and the folder itself to disk."""
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
    for directory in [folder, *sorted(p for p in folder.rglob("*") if p.is_dir())]:
        try:
            descriptor = os.open(directory, os.O_RDONLY)
        except OSError:  # some platforms cannot open a directory
            continue
        try:
            os.fsync(descriptor)
        except OSError:
            pass
        finally:
            os.close(descriptor)


def publish_dir(staged: Path, final: Path) -> None:
    """Move the completely written folder `staged` to `final` in one rename, replacing an existing `final`.

    Readers see either the old `final` (or none) or the complete new one, never a partial folder.
    """
    _fsync_tree(staged)
    if final.exists():
        # os.replace cannot replace a non-empty folder: move the old one aside first, then delete it.
        old = staged.parent / f"{final.name}.old"
        if old.exists():
            shutil.rmtree(old)
        os.replace(final, old)
        os.replace(staged, final)
        shutil.rmtree(old)
    else:
        os.replace(staged, final)
    try:
        descriptor = os.open(final.parent, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
    except OSError:
        pass
