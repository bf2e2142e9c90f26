"""Checkpoint averaging (sec. 6.1 of the paper: "averaging the last 5 checkpoints")."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import torch

from ..outputs import OutputPlan
from .checkpoints import TRAINING_ARGS_JSON
from .weights import read_state_dict, resolve_dtype, save_state_dict, set_config_dtype

__all__ = ["average_checkpoints"]

#: Files of the last checkpoint that the averaged folder does not get: trainer state and its own weights.
_NOT_COPIED = {
    "optimizer.pt",
    "scheduler.pt",
    "trainer_state.json",
    "training_args.bin",
    TRAINING_ARGS_JSON,
    "model.safetensors",
    "averaged_from.json",
}


def _check_folders(folders: Sequence[Path], out_dir: Path) -> None:
    if not folders:
        raise ValueError("average_checkpoints needs at least one checkpoint.")
    if len({f.resolve() for f in folders}) != len(folders):
        raise ValueError("The same checkpoint is listed twice: it would count double in the average.")
    target = out_dir.resolve()
    if any(target == f.resolve() for f in folders):
        raise ValueError(f"The output folder {str(out_dir)!r} is one of the checkpoints: choose another one.")
    config = folders[-1] / "config.json"
    if config.is_file():  # copied into the average: a damaged one is named here, before any work
        try:
            json.loads(config.read_text(encoding="utf-8"))
        except ValueError as error:  # not UTF-8, or not JSON
            raise ValueError(f"{config}: not a valid config.json ({error}).") from None


def _mean_state_dict(folders: Sequence[Path], dtype: torch.dtype | None) -> dict[str, torch.Tensor]:
    """The mean of the floating-point tensors of `folders`, computed in float32 and cast to `dtype` (default:
    each tensor's own dtype); tensors that are not floating point must be equal everywhere and are copied."""
    total: dict[str, torch.Tensor] = {}
    reference: dict[str, torch.Tensor] = {}
    for index, folder in enumerate(folders):
        state = read_state_dict(folder)
        if index == 0:
            reference = state
            total = {k: v.to(torch.float32).clone() if v.is_floating_point() else v for k, v in state.items()}
            continue
        if set(state) != set(reference):
            missing = sorted(set(reference) ^ set(state))[:5]
            raise ValueError(f"{folder} does not have the same tensors as {folders[0]} (differences: {missing}).")
        for key, value in state.items():
            if value.shape != reference[key].shape:
                raise ValueError(
                    f"{key}: shape {tuple(value.shape)} in {folder}, {tuple(reference[key].shape)} in {folders[0]}."
                )
            if value.is_floating_point():
                total[key] += value.to(torch.float32)
            elif not torch.equal(value, reference[key]):
                raise ValueError(f"{key} is not floating point and differs between {folders[0]} and {folder}.")
    averaged = {}
    for key, value in total.items():
        if value.is_floating_point():
            value = (value / len(folders)).to(dtype or reference[key].dtype)
        averaged[key] = value.contiguous()
    return averaged


def _copy_model_files(checkpoint: Path, out_dir: Path) -> None:
    """Copy the config, generation config, tokenizer files and modeling code of `checkpoint` to `out_dir`."""
    for item in checkpoint.iterdir():
        if (
            item.is_file()
            and item.name not in _NOT_COPIED
            and not item.name.startswith(("rng_state", "model-", "model.safetensors"))
            and item.suffix in (".json", ".py", ".txt", ".model", ".md")
        ):
            shutil.copy2(item, out_dir / item.name)


def average_checkpoints(
    paths: Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    dtype: str | torch.dtype | None = None,
    *,
    overwrite: bool = False,
    inputs: Sequence[str | os.PathLike[str]] = (),
) -> Path:
    """Average the weights of several checkpoints of one model (sec. 6.1) into a loadable model folder.

    The safetensors weights are averaged in float32; tensors that are not floating point (integer buffers)
    must be equal in all checkpoints and are copied. `out_dir` gets ``model.safetensors``, the config and
    generation config, the tokenizer files and the modeling code of the LAST checkpoint (no optimizer or
    trainer state). With `dtype` (``"bfloat16"``/``"float16"``) the average is cast for shipping.

    The folder is written as a whole (`hf_vaswani.outputs`): into a temporary sibling, renamed into place once
    complete, so a failure part-way leaves an existing `out_dir` as it was. An existing non-empty `out_dir` is
    refused unless `overwrite`, which replaces it whole. `inputs` are more paths the caller reads (a run
    directory): `out_dir` may not be one of them or hold one.

    Raises:
        ValueError: on fewer than one path, checkpoints with different tensor names or shapes, or an output
            that is one of the inputs.
        OSError: `out_dir` cannot be written (checked before anything is read), or is not empty.
    """
    folders = [Path(p) for p in paths]
    out_dir = Path(out_dir)
    _check_folders(folders, out_dir)
    plan = OutputPlan(inputs=[*folders, *inputs])
    target = plan.folder(out_dir, "output folder", overwrite=overwrite)
    plan.check()
    target_dtype = resolve_dtype(dtype)
    averaged = _mean_state_dict(folders, target_dtype)
    with plan.writing() as staged:
        folder = staged(target)
        _copy_model_files(folders[-1], folder)
        save_state_dict(averaged, folder / "model.safetensors")
        if target_dtype is not None:
            set_config_dtype(folder, target_dtype)
        with open(folder / "averaged_from.json", "w", encoding="utf-8") as handle:
            json.dump({"checkpoints": [str(f) for f in folders]}, handle, indent=2)
    return out_dir
