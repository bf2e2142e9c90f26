"""The CTranslate2 export cache: each model exported once per weight type and kept in the user cache.

The export lives in ``$HF_VASWANI_CACHE/ctranslate2`` (default ``~/.cache/hf_vaswani/ctranslate2``), in a folder
named after a hash of the model's weights, config and tokenizer files (``3f2a...-ctranslate2-int8/``), so that it is
made again when they change. The model folder is only read. Each export's stamp records the size and SHA-256 of
every file it wrote; an entry whose files no longer match is made again, with a `CTranslate2CacheWarning`. A cache
that cannot be written is a `CTranslate2CacheError`. Our models are exported by `hf_vaswani.export.ctranslate2`,
Marian (OPUS-MT) models by CTranslate2's own `TransformersConverter`; any other model type is refused with one
sentence (`ctranslate2_model_type`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..paths import default_model_path, looks_like_local_path

__all__ = [
    "CTRANSLATE2_MODEL_TYPES",
    "STAMP",
    "CTranslate2CacheError",
    "CTranslate2CacheWarning",
    "ctranslate2_model_type",
    "ensure_ctranslate2_export",
    "user_cache_dir",
]

#: Files whose content decides whether a cached export is still the model's.
FINGERPRINTED = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
#: A Marian folder's tokenizer files, fingerprinted as well (its tokenizer is SentencePiece, not tokenizer.json).
MARIAN_FINGERPRINTED = ("vocab.json", "source.spm", "target.spm")
#: The ``model_type`` values CTranslate2 translates here: ours (our own exporter) and Marian (CTranslate2's).
CTRANSLATE2_MODEL_TYPES = ("vaswani", "marian")
#: Written into each cached export: what it was made from.
STAMP = "hf_vaswani_export.json"
#: Changes when the export itself changes, so that older cached exports are made again.
EXPORT_VERSION = 1


class CTranslate2CacheError(OSError):
    """The CTranslate2 export cannot be written into the cache (a read-only or full disk, no permission).

    Attributes:
        problem: what went wrong, without the advice the message adds (for a caller that falls back).
    """

    problem: str = ""


class CTranslate2CacheWarning(UserWarning):
    """A cached CTranslate2 export was damaged (a file missing, cut short or changed) and is made again, or the
    cache cannot be written and PyTorch translates instead."""


def ensure_ctranslate2_export(
    model: str | os.PathLike[str] | None = None,
    quantization: str = "int8",
    *,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """The CTranslate2 export of `model` in `quantization`, made now unless an up-to-date one is cached.

    Args:
        model: a model folder or Hub id; `None` is the shipped checkpoint.
        quantization: one of `hf_vaswani.export.ctranslate2.QUANTIZATIONS` (``"int8"``, ``"float32"``, ...).
        cache_dir: where to keep the export (``cache_dir/ctranslate2-<quantization>``); default: the user cache,
            keyed by the model's files (`user_cache_dir`).

    Returns:
        The CTranslate2 model folder. A cached one is checked first against the sizes and SHA-256 its stamp
        recorded at export time; a damaged one is made again, with a `CTranslate2CacheWarning`.

    Raises:
        CTranslate2CacheError: the export has to be made and cannot be written into the cache.
    """
    from ..export.ctranslate2 import QUANTIZATIONS

    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization must be one of {', '.join(QUANTIZATIONS)}, got {quantization!r}.")
    folder = local_model_folder(model)
    model_type = ctranslate2_model_type(folder)
    fingerprint = _fingerprint(folder, quantization, model_type)
    target = _export_folder(folder, quantization, fingerprint, cache_dir)
    damage = _entry_damage(target, fingerprint)
    if damage is None:
        return target
    exporter = _export_marian if model_type == "marian" else _export_vaswani
    try:
        _export_into(folder, target, quantization, fingerprint, exporter)
    except OSError as error:
        raise _cache_error(target, error, damage) from error
    if damage != _OUTDATED:
        warnings.warn(
            f"the cached CTranslate2 export {str(target)!r} was damaged ({damage}): made it again",
            CTranslate2CacheWarning,
            stacklevel=2,
        )
    return target


def ctranslate2_model_type(folder: str | os.PathLike[str]) -> str:
    """The ``model_type`` of a model folder's config.json, one of `CTRANSLATE2_MODEL_TYPES`.

    Raises:
        ValueError: the folder holds another model type (or no readable config): one sentence saying which
            models CTranslate2 translates here and that PyTorch translates the others.
    """
    try:
        model_type = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        model_type = None
    if model_type not in CTRANSLATE2_MODEL_TYPES:
        raise ValueError(
            f"CTranslate2 translates hf_vaswani and Marian (OPUS-MT) models here; {str(folder)!r} holds a "
            f"{model_type or 'model of unknown type'} model: translate it with PyTorch (backend 'torch')."
        )
    return model_type


def local_model_folder(model: str | os.PathLike[str] | None) -> Path:
    name = str(model) if model is not None else default_model_path()
    if model is None or looks_like_local_path(name):
        folder = Path(name).expanduser()
        if not (folder / "config.json").is_file():
            raise FileNotFoundError(f"No model folder with a config.json at {name!r}.")
        return folder
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(name))


def _weight_files(folder: Path) -> list[Path]:
    files = sorted(folder.glob("*.safetensors")) or sorted(folder.glob("pytorch_model*.bin"))
    if not files:
        raise FileNotFoundError(f"No weights (*.safetensors or pytorch_model*.bin) in {str(folder)!r}.")
    return files


def _fingerprint(folder: Path, quantization: str, model_type: str = "vaswani") -> str:
    """A hash of what the export is made from: the weights, config and tokenizer files, and the export settings."""
    import ctranslate2

    # Our exports keep the hash they always had; another model type adds its name (another converter made it).
    kind = "" if model_type == "vaswani" else f"{model_type}|"
    digest = hashlib.sha256(f"{kind}{EXPORT_VERSION}|{quantization}|{ctranslate2.__version__}".encode())
    names = FINGERPRINTED + (MARIAN_FINGERPRINTED if model_type == "marian" else ())
    files = _weight_files(folder) + [folder / name for name in names if (folder / name).is_file()]
    for path in files:
        digest.update(path.name.encode() + b"\0")
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _export_folder(folder: Path, quantization: str, fingerprint: str, cache_dir: str | os.PathLike[str] | None) -> Path:
    name = f"ctranslate2-{quantization}"
    if cache_dir is not None:
        return Path(cache_dir) / name
    return user_cache_dir() / f"{fingerprint[:16]}-{name}"


def user_cache_dir() -> Path:
    """Where the CTranslate2 exports are kept: ``$HF_VASWANI_CACHE/ctranslate2`` (default ``~/.cache/hf_vaswani``)."""
    return Path(os.environ.get("HF_VASWANI_CACHE", Path.home() / ".cache" / "hf_vaswani")).expanduser() / "ctranslate2"


def _stamp(target: Path) -> dict[str, Any]:
    try:
        stamp = json.loads((target / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return stamp if isinstance(stamp, dict) else {}


#: What `_entry_damage` says of an entry that is absent, made from other files or by an earlier version (whose
#: stamp records no files): made again without a warning.
_OUTDATED = "absent or made from other files"


def _file_record(path: Path) -> dict[str, Any]:
    """The size and SHA-256 of a file, as a stamp records them."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return {"size": path.stat().st_size, "sha256": digest.hexdigest()}


def _entry_damage(target: Path, fingerprint: str) -> str | None:
    """None when `target` is a complete export made from the files `fingerprint` hashes: its stamp matches and
    every file the stamp records is there with its size and SHA-256. Else what is wrong (`_OUTDATED` when the
    entry is absent or was made from other files, which is no damage)."""
    if not target.is_dir():
        return _OUTDATED
    stamp = _stamp(target)
    if not stamp:
        return f"{STAMP} is missing or unreadable"
    if stamp.get("fingerprint") != fingerprint:
        return _OUTDATED
    files = stamp.get("files")
    if not isinstance(files, dict) or not files:
        return _OUTDATED  # made by an earlier version, which recorded no files: made again like an outdated one
    for name, record in sorted(files.items()):
        path = target / name
        if not path.is_file():
            return f"{name} is missing"
        if not isinstance(record, dict) or not isinstance(record.get("size"), int):
            return f"{STAMP} records no size for {name}"
        size = path.stat().st_size
        if size != record["size"]:
            return f"{name} has {size:,} bytes, the export wrote {record['size']:,}"
        if _file_record(path)["sha256"] != record.get("sha256"):
            return f"{name} is not the file the export wrote (its SHA-256 differs)"
    return None


def _cache_error(target: Path, error: OSError, damage: str) -> CTranslate2CacheError:
    """`error`, met while writing the export `target`, as one sentence naming the cache and what to do."""
    reason = error.strerror or str(error)
    what = (
        f"the cached export {str(target)!r} is damaged ({damage}) and cannot be made again"
        if damage != _OUTDATED
        else f"cannot write the CTranslate2 export into the cache {str(target.parent)!r}"
    )
    problem = f"{what[:1].upper()}{what[1:]} ({reason})"
    cache_error = CTranslate2CacheError(
        error.errno,
        f"{problem}: set HF_VASWANI_CACHE to a writable folder with free space, or translate with PyTorch "
        "(--backend torch).",
    )
    cache_error.problem = problem
    return cache_error


def _export_vaswani(folder: Path, staging: Path, quantization: str) -> None:
    from ..export.ctranslate2 import export_ctranslate2

    export_ctranslate2(folder, staging, quantization=quantization, force=True)


def _export_marian(folder: Path, staging: Path, quantization: str) -> None:
    """CTranslate2's own converter: it drops the ``<pad>`` transformers appends to OPUS-MT vocabularies (the last
    id, so the other ids are unchanged) and starts the decoder from a zero embedding, as Marian does."""
    from ctranslate2.converters import TransformersConverter

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Recommended: pip install sacremoses")
        TransformersConverter(str(folder)).convert(str(staging), quantization=quantization, force=True)


def _export_into(
    folder: Path, target: Path, quantization: str, fingerprint: str, exporter: Callable[[Path, Path, str], None]
) -> None:
    """Export into a fresh folder beside `target`, then swap it in: a reader never sees half an export."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        exporter(folder, staging, quantization)
        # What every later use checks the entry against (`_entry_damage`).
        files = {path.name: _file_record(path) for path in sorted(staging.iterdir()) if path.is_file()}
        stamp = {
            "fingerprint": fingerprint,
            "quantization": quantization,
            "source": str(folder.resolve()),
            "files": files,
        }
        (staging / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
        if target.exists():
            old = target.with_name(f".{target.name}-old-{os.getpid()}")
            target.rename(old)
            shutil.rmtree(old, ignore_errors=True)
        try:
            staging.rename(target)
        except OSError:
            if _stamp(target).get("fingerprint") != fingerprint:  # another process was not exporting the same
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
