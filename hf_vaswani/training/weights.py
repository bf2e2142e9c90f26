"""The safetensors weights of a saved model folder: read them (sharded or not), check a file is complete, cast
them to another dtype for shipping."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

__all__ = [
    "DTYPES",
    "cast_saved_model",
    "read_state_dict",
    "resolve_dtype",
    "safetensors_problem",
    "save_state_dict",
    "set_config_dtype",
    "shard_paths",
]

#: The dtypes a saved model can be cast to (``training.save_dtype``, ``average-checkpoints --dtype``).
DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}


def resolve_dtype(name: str | torch.dtype | None) -> torch.dtype | None:
    """The `torch.dtype` named `name` (``"bfloat16"``, ``"bf16"``, ``"torch.float16"``, ...); None stays None."""
    if name is None or isinstance(name, torch.dtype):
        return name
    key = str(name).replace("torch.", "").lower()
    key = _ALIASES.get(key, key)
    if key not in DTYPES:
        raise ValueError(f"Unknown dtype {name!r}: choose one of {', '.join(DTYPES)}.")
    return DTYPES[key]


def safetensors_problem(path: Path) -> str | None:
    """Why the safetensors file at `path` is unreadable (truncated, bad header), or None. Reads the header only."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            raw = handle.read(8)
            if len(raw) < 8:
                return f"{path.name} is truncated"
            header_size = int.from_bytes(raw, "little")
            if header_size > size - 8:
                return f"{path.name} is truncated"
            header = json.loads(handle.read(header_size))
    except (OSError, ValueError) as error:
        return f"{path.name} is unreadable ({error})"
    ends = [entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"]
    if 8 + header_size + max(ends, default=0) > size:
        return f"{path.name} is truncated"
    return None


def _shard_name(index: Path, name: object) -> str:
    """A shard named in `index`, which must be a plain file name: a path (``../x``, ``/x``, ``a/b``) could make a
    reader open files outside the checkpoint folder."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise ValueError(f"{index}: the shard name {name!r} is not a file name in the checkpoint folder.")
    return name


def shard_paths(folder: Path) -> list[Path]:
    """The weight files of the model saved in `folder`: the shards its ``model.safetensors.index.json`` names
    (plain file names in `folder`, nothing outside it), or ``model.safetensors``.

    Raises:
        ValueError: the index is unreadable, or names a shard by a path instead of a file name.
        FileNotFoundError: there is neither an index nor ``model.safetensors``.
    """
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            with open(index, encoding="utf-8") as handle:
                weight_map = json.load(handle)["weight_map"]
            names = set(weight_map.values())
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"{index}: not a valid safetensors index ({error}).") from None
        return [folder / _shard_name(index, name) for name in sorted(names, key=str)]
    single = folder / "model.safetensors"
    if not single.is_file():
        raise FileNotFoundError(f"{str(folder)!r} has no model.safetensors (or sharded index): not a checkpoint.")
    return [single]


def _load_file(path: Path) -> dict[str, torch.Tensor]:
    from safetensors import SafetensorError

    try:
        return load_file(str(path))
    except SafetensorError as error:
        raise ValueError(f"{path}: not a readable safetensors file ({error}).") from None


def save_state_dict(state: dict[str, torch.Tensor], path: Path) -> None:
    """Write `state` to the safetensors file `path` (an error names the file)."""
    from safetensors import SafetensorError

    try:
        save_file(state, str(path), metadata={"format": "pt"})
    except SafetensorError as error:
        raise OSError(f"Cannot write {path}: {error}") from None


def read_state_dict(folder: Path) -> dict[str, torch.Tensor]:
    """All the tensors of the model saved in `folder` (``model.safetensors`` or the shards of its index).

    Raises:
        FileNotFoundError / NotADirectoryError: `folder` is missing, a file, or holds no weights.
        ValueError: the index or a weights file is unreadable or truncated.
    """
    if not folder.exists():
        raise FileNotFoundError(f"No such checkpoint folder: {str(folder)!r}")
    if not folder.is_dir():
        raise NotADirectoryError(f"{str(folder)!r} is a file, not a checkpoint folder.")
    state: dict[str, torch.Tensor] = {}
    for path in shard_paths(folder):
        if not path.is_file():
            raise FileNotFoundError(f"{str(folder)!r}: the shard {path.name} of its index is missing.")
        problem = safetensors_problem(path)
        if problem:
            raise ValueError(f"{str(folder)!r}: {problem}.")
        state.update(_load_file(path))
    return state


def set_config_dtype(folder: Path, dtype: torch.dtype) -> None:
    """Record `dtype` as the ``dtype`` of the ``config.json`` in `folder` (if there is one)."""
    config_path = folder / "config.json"
    if config_path.is_file():
        try:
            with open(config_path, encoding="utf-8") as handle:
                values = json.load(handle)
        except ValueError as error:  # not UTF-8, or not JSON
            raise ValueError(f"{config_path}: not a valid config.json ({error}).") from None
        values["dtype"] = str(dtype).replace("torch.", "")
        with open(config_path, "w", encoding="utf-8") as handle:
            json.dump(values, handle, indent=2, sort_keys=True)
            handle.write("\n")


def cast_saved_model(folder: Path, dtype: str | torch.dtype) -> None:
    """Store the floating-point weights saved in `folder` as `dtype` (in one ``model.safetensors``), a smaller
    download; config.json keeps ``"dtype": "float32"``, so that `from_pretrained` loads the model in float32 (the
    dtype to fine-tune in) unless it is given another ``dtype``."""
    target = resolve_dtype(dtype)
    state = read_state_dict(folder)
    cast = {k: (v.to(target) if v.is_floating_point() else v).contiguous() for k, v in state.items()}
    save_state_dict(cast, folder / "model.safetensors")
    set_config_dtype(folder, torch.float32)
