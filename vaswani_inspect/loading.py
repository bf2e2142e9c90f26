"""Loading any supported translation model for inspection: ours through `hf_vaswani.inference.load_translator`,
the others (Marian/OPUS-MT, M2M100/NLLB, mBART, BART, T5...) with their Auto classes and eager attention.

A model of another architecture is checked as ours is, as far as the checks apply to it: a local folder's
config.json and generation_config.json before it is loaded (`hf_vaswani.model_folder.check_model_folder`), then
tensors missing or of the wrong shape, NaN or zeroed weights, special-token ids outside the vocabulary, decoding
settings `generate` cannot use, and another model's tokenizer (`hf_vaswani.model_checks.check_model`, the check of
our models); and its attention modules must be where `vaswani_inspect.architectures` looks
for them. Each problem is one `ValueError` naming the folder or Hub id.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["load_for_inspection", "load_model_and_tokenizer", "model_type_of"]


_UNREAD: Any = object()  # `load_for_inspection`'s model_type when the caller has not read it


def model_type_of(name: str) -> str | None:
    """The ``model_type`` a local folder's config.json names (None when it names none or is not JSON; the loader
    then says what is wrong). A Hub id is read through transformers' `AutoConfig` (from the cache offline)."""
    path = Path(name).expanduser()
    if path.is_dir():
        try:
            data = json.loads((path / "config.json").read_bytes())
        except (OSError, ValueError):
            return None
        return data.get("model_type") if isinstance(data, dict) else None
    from transformers import AutoConfig

    import hf_vaswani  # noqa: F401  (registers the "vaswani" model type)

    try:
        return getattr(AutoConfig.from_pretrained(name), "model_type", None)
    except (OSError, ValueError, KeyError):
        return None  # the loader says why


def load_for_inspection(
    name: str | os.PathLike[str], device: str | None = None, *, model_type: str | None = _UNREAD
) -> tuple[Any, Any]:
    """(model, tokenizer) of a model folder or Hub id, in eval mode on `device` (default cpu); ours through
    `load_translator`, any other with ``attn_implementation="eager"``, so that its attention weights can be read.
    `model_type`: what `model_type_of(name)` gave, for a caller that read it already (left out: read here).

    Raises:
        FileNotFoundError: a local folder without config.json.
        ValueError: the folder or Hub id cannot be loaded, its model is broken, or its architecture is not one the
            toolkit can look inside (the message says what was not found).
    """
    from hf_vaswani.inference import describe_load_error, load_translator, resolve_device
    from hf_vaswani.paths import looks_like_local_path

    text = str(name)
    local = looks_like_local_path(text)
    if local and not (Path(text).expanduser() / "config.json").is_file():
        raise FileNotFoundError(f"No model folder with a config.json at {text!r}.")
    if (model_type_of(text) if model_type is _UNREAD else model_type) == "vaswani":
        return load_translator(text, device=device or "cpu")
    target = resolve_device(device or "cpu")
    if local:
        from hf_vaswani.model_folder import check_model_folder

        text = str(Path(text).expanduser())
        check_model_folder(text)  # before anything is built from its files
    model, tokenizer, loading_info = _load_auto(text, describe_load_error)
    _check_foreign_model(model, tokenizer, loading_info, text)
    model.to(target).eval()
    return model, tokenizer


def _load_auto(name: str, describe: Any) -> tuple[Any, Any, dict]:
    from pickle import UnpicklingError

    from safetensors import SafetensorError
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from hf_vaswani.model_checks import reports_silenced

    try:
        tokenizer = AutoTokenizer.from_pretrained(name)
        with reports_silenced():
            # (ignore_mismatched_sizes: a tensor of another shape than the config says, as T5's q rows for another
            # num_heads, is named by check_model instead of a "see the report above" that the silenced report hides)
            model, loading_info = AutoModelForSeq2SeqLM.from_pretrained(
                name, attn_implementation="eager", output_loading_info=True, ignore_mismatched_sizes=True
            )
    except (SafetensorError, UnpicklingError, RuntimeError, KeyError, TypeError, ValueError, OSError) as error:
        raise ValueError(f"Cannot load the model at {name!r}: {describe(error)}") from error
    return model, tokenizer, loading_info


def _check_foreign_model(model: Any, tokenizer: Any, loading_info: dict, name: str) -> None:
    from hf_vaswani.model_checks import check_model

    from .architectures import UnsupportedModelError, architecture_of

    try:
        architecture_of(model)
    except UnsupportedModelError as error:
        raise ValueError(f"Cannot inspect the model at {name!r}: {error}") from None
    check_model(model, tokenizer, loading_info=loading_info, source=name)  # the checks of our models, as they apply


def load_model_and_tokenizer(path: str | Path | None = None, *, device: str | None = None) -> tuple[Any, Any]:
    """Load a model folder or Hub id (default: the shipped checkpoint, `hf_vaswani.paths.default_model_path()`) as
    (model, tokenizer), the model in eval mode on `device` (default cpu). Ours loads as ``hf-vaswani translate``
    loads it; any other architecture the toolkit knows (Marian/OPUS-MT, M2M100/NLLB, mBART, BART, T5) with eager
    attention, so that its attention weights can be read (`vaswani_inspect.loading`).

    A `Path`, and a name that is not of the form ``org/name`` (`hf_vaswani.paths.looks_like_local_path`), is a
    local folder, as for ``hf-vaswani translate --model``; the loading itself is
    `vaswani_inspect.loading.load_for_inspection`.

    Raises:
        FileNotFoundError: no such folder (or no `path` and the shipped checkpoint is not found).
        ValueError: the model or its tokenizer cannot be loaded from it (damaged or foreign files, unknown Hub id).
    """
    from hf_vaswani.paths import default_model_path, looks_like_local_path

    if path is None:
        path = default_model_path()
    elif not Path(path).expanduser().is_dir() and (isinstance(path, Path) or looks_like_local_path(str(path))):
        raise FileNotFoundError(f"No model checkpoint folder at {path}.")
    return load_for_inspection(path, device=device or "cpu")
