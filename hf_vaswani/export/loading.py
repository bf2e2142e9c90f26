"""What every export starts from: a float32 model in eval mode, its tokenizer, and the folder it came from; and how
every export writes its folder (`export_plan`)."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, NamedTuple

import torch

from ..model_checks import check_model, reports_silenced
from ..model_folder import check_json_files, check_model_folder, with_decoding_settings
from ..modeling_vaswani import VaswaniForConditionalGeneration

__all__ = ["ExportError", "ExportSource", "export_plan", "load_for_export", "source_folder"]


class ExportError(ValueError):
    """A model that cannot be exported exactly to the target engine; the message names the reason."""


class ExportSource(NamedTuple):
    """A model to export: float32 copy in eval mode on the CPU, its tokenizer (None when the source has none),
    and the local folder it was loaded from (None for a model given in memory)."""

    model: VaswaniForConditionalGeneration
    tokenizer: Any | None
    folder: Path | None


def load_for_export(
    model: str | os.PathLike[str] | VaswaniForConditionalGeneration, tokenizer: Any = None
) -> ExportSource:
    """Load `model` (a folder, a Hub id, or a model in memory) for an export, in float32 on the CPU, eval mode.

    The float32 copy is what the exports compute with: a bfloat16 checkpoint becomes float32 exactly, and an
    export that quantizes (CTranslate2 int8) does so from these values. A model given in memory is copied, never
    modified. `tokenizer` overrides the one found next to the weights.

    Raises:
        ExportError: the folder holds a model that is not a `VaswaniForConditionalGeneration`.
        BrokenModelError: the model is broken (`hf_vaswani.model_checks`: missing or non-finite weights, token ids
            outside the vocabulary, another model's tokenizer).
        FileNotFoundError: a local path without a config.json.
    """
    if isinstance(model, VaswaniForConditionalGeneration):
        return ExportSource(copy.deepcopy(model).to("cpu", torch.float32).eval(), tokenizer, None)
    if isinstance(model, torch.nn.Module):
        raise ExportError(f"Only a VaswaniForConditionalGeneration can be exported, got a {type(model).__name__}.")

    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    import hf_vaswani  # noqa: F401  (registers the "vaswani" model type with the Auto classes)

    from ..paths import looks_like_local_path

    name = str(model)
    folder = None
    if looks_like_local_path(name):
        folder = Path(name).expanduser()
        if not (folder / "config.json").is_file():
            raise FileNotFoundError(f"No model folder with a config.json at {name!r}.")
        check_model_folder(folder)  # its settings, before anything is built from them (10**9 positions: a TB)
        name = str(folder)
    loaded, loading_info = _from_pretrained(AutoModelForSeq2SeqLM, name)
    if not isinstance(loaded, VaswaniForConditionalGeneration):
        raise ExportError(
            f"{name!r} holds a {type(loaded).__name__}, not a VaswaniForConditionalGeneration: only hf_vaswani "
            "models are exported."
        )
    if tokenizer is None:
        if folder is not None:
            check_json_files(folder)  # a damaged tokenizer file is an error, not a folder without a tokenizer
        try:
            tokenizer = AutoTokenizer.from_pretrained(name)
        except (OSError, ValueError):
            tokenizer = None  # a folder of weights alone: the exports that need a vocabulary say so
    check_model(loaded, tokenizer, loading_info=loading_info, source=name)  # never export a broken model
    with_decoding_settings(loaded, folder, source=name)  # an export decodes as `translate` does
    return ExportSource(loaded.to("cpu").eval(), tokenizer, folder)


def source_folder(model: str | os.PathLike[str] | torch.nn.Module) -> Path | None:
    """The local folder `model` names (None for a Hub id or a model in memory), as `load_for_export` reads it."""
    from ..paths import looks_like_local_path

    if isinstance(model, torch.nn.Module) or not looks_like_local_path(str(model)):
        return None
    return Path(str(model)).expanduser()


def export_plan(
    model: str | os.PathLike[str] | torch.nn.Module, out_dir: str | os.PathLike[str], what: str, overwrite: bool
) -> tuple[Any, Path]:
    """The `hf_vaswani.outputs.OutputPlan` of an export into `out_dir`, checked (before anything is loaded), and the
    path to stage: the folder is written into a temporary sibling and renamed into place once the export is
    complete and checked. It must not be the source folder nor hold it, and a non-empty one is replaced (whole)
    only with `overwrite`.

    Raises:
        ValueError, OSError: the folder cannot be written as planned (the message names it).
    """
    from ..outputs import OutputPlan

    plan = OutputPlan(inputs=[source_folder(model)])
    out = plan.folder(out_dir, what, overwrite=overwrite)
    plan.check()
    return plan, out


def _from_pretrained(auto_class: Any, name: str) -> tuple[Any, dict[str, Any]]:
    """`from_pretrained` in float32 and its loading report, its errors on a damaged or foreign folder as one line
    naming the folder."""
    from pickle import UnpicklingError

    from safetensors import SafetensorError

    from ..inference import describe_load_error

    try:
        with reports_silenced():  # check_model says what the report would
            return auto_class.from_pretrained(name, dtype=torch.float32, output_loading_info=True)
    except (SafetensorError, UnpicklingError, RuntimeError, KeyError, OSError) as error:
        raise ValueError(f"Cannot load the model at {name!r}: {describe_load_error(error)}") from error
