"""The alignment configuration: which decoder layer, heads and shift alignments are read from, how a call's choices
and the model's configuration combine (`alignment_settings`), and the model's own configuration, `config.alignment`,
checked where it is read (`model_alignment`) and written (`write_alignment_config`).

A configuration is ``{"layer": 2, "heads": [1], "shift": False}`` (`layer` a decoder layer or ``"mean"``, `heads` a
list of heads or ``"all"``, `shift` as in `vaswani_inspect.alignment.alignment_matrix`), optionally with
``"average_with"``: a non-empty list of more such readings whose word-level matrices are averaged with the first
one's. The model stores it as `VaswaniConfig.alignment`, written by guided-alignment training or by
``hf-vaswani align-eval --write-config``; every record extracted from the model carries a copy
(`AttentionRecord.alignment`).

Left out (None), the layer, heads, shift and averaged readings of a call come from the record's model, else from
`DEFAULT_ALIGNMENT`: the mean over all layers and heads, not shifted. A call that chooses a layer, heads or shift
reads that one configuration alone (unless it also passes `average_with`).

The model's aligner can also be an attribution method (`vaswani_inspect.attribution`): ``{"method": M}``,
optionally with ``"threshold"`` (links are then every cell of the row-normalised matrix at least that high) and
with the attention reading above kept beside it (what records carry and the attention-based methods read).
`model_alignment` returns the attention reading alone, `model_aligner` the method; ``align-eval --method M
--write-config`` writes it when the method beats the model's aligner.

The model's configuration file is copied next to checkpoints for ``trust_remote_code`` users, who never read
alignments: it keeps the field and leaves checking its content to this module.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..record import AttentionRecord

Layer = int | str
Heads = int | str | Sequence[int]
#: How alignments are read when neither the call nor the record's model says: every layer and head, not shifted.
DEFAULT_ALIGNMENT: dict[str, Any] = {"layer": "mean", "heads": "all", "shift": False}

_READING_KEYS = {"layer", "heads", "shift"}


def alignment_settings(
    record: AttentionRecord,
    layer: Layer | None = None,
    heads: Heads | None = None,
    shift: bool | None = None,
    average_with: Sequence[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The configuration ``{"layer", "heads", "shift"}`` (with ``"average_with"``, the readings averaged with it,
    when there are any) that `align(record, layer, heads, shift=shift, average_with=average_with)` uses: each
    argument given, else the record's model configuration (`record.alignment`), else `DEFAULT_ALIGNMENT`. The
    model's averaged readings are used only when none of the four is given. A single head index becomes a one-head
    list."""
    configured = record.alignment or DEFAULT_ALIGNMENT
    settings = _reading(
        configured["layer"] if layer is None else layer,
        configured["heads"] if heads is None else heads,
        configured["shift"] if shift is None else shift,
    )
    if average_with is None and layer is None and heads is None and shift is None:
        average_with = configured.get("average_with")
    if average_with:
        settings["average_with"] = [_reading(r["layer"], r["heads"], r["shift"]) for r in average_with]
    return settings


def _reading(layer: Layer, heads: Heads, shift: bool) -> dict[str, Any]:
    if isinstance(heads, (int, np.integer)) and not isinstance(heads, bool):
        heads = [int(heads)]
    elif not isinstance(heads, str):
        heads = [int(h) for h in heads]
    return {"layer": layer, "heads": heads, "shift": bool(shift)}


def describe_alignment(settings: dict[str, Any]) -> str:
    """A short text for a configuration: "layer 2, head 1, shifted", "mean of layers, all heads", and for averaged
    readings "layer 1, head 0 + layer 0, head 1, shifted"."""
    readings = [settings, *settings.get("average_with", [])]
    return " + ".join(_describe_reading(reading) for reading in readings)


def _describe_reading(settings: dict[str, Any]) -> str:
    layer = "mean of layers" if settings["layer"] == "mean" else f"layer {settings['layer']}"
    heads = settings["heads"]
    if heads == "all":
        head_text = "all heads"
    else:
        head_text = f"head{'s' if len(heads) > 1 else ''} {', '.join(str(h) for h in heads)}"
    return f"{layer}, {head_text}{', shifted' if settings['shift'] else ''}"


# ----------------------------------------------------------------------------------------------------------------
# The model's configuration: config.alignment
# ----------------------------------------------------------------------------------------------------------------


def check_model_alignment(alignment: Any, layers: int, heads: int) -> None:
    """Refuse an alignment configuration a model with `layers` decoder layers of `heads` cross-attention heads
    cannot hold (None is fine: the model has none).

    Raises:
        ValueError: ``"VaswaniConfig.alignment must be None or ..."``, saying what is wrong.
    """
    if alignment is None:
        return
    if isinstance(alignment, dict) and "method" in alignment:
        _check_aligner(alignment)
        alignment = attention_reading(alignment)
        if alignment is None:
            return
    problem = None
    if not isinstance(alignment, dict) or set(alignment) - {"average_with"} != _READING_KEYS:
        problem = "a dict with the keys layer, heads and shift (and optionally average_with)"
    else:
        extra = alignment.get("average_with", [])
        if "average_with" in alignment and (not isinstance(extra, list) or not extra):
            problem = "average_with a non-empty list of readings"
        readings = [alignment, *(extra if isinstance(extra, list) else [])]
        for reading in readings:
            if problem:
                break
            if reading is not alignment and (not isinstance(reading, dict) or set(reading) != _READING_KEYS):
                problem = "average_with readings with the keys layer, heads and shift"
            else:
                problem = _reading_problem(reading, layers, heads)
    if problem:
        raise ValueError(f"VaswaniConfig.alignment must be None or {problem}, got {alignment!r}.")


def _reading_problem(reading: dict[str, Any], layers: int, heads: int) -> str | None:
    if reading["layer"] != "mean" and reading["layer"] not in range(layers):
        return f"layer 'mean' or a decoder layer in [0, {layers})"
    if reading["heads"] != "all" and (
        not isinstance(reading["heads"], list) or not reading["heads"] or not set(reading["heads"]) <= set(range(heads))
    ):
        return f"heads 'all' or a non-empty list of heads in [0, {heads})"
    if not isinstance(reading["shift"], bool):
        return "shift true or false"
    return None


def model_alignment(config: Any) -> dict[str, Any] | None:
    """The alignment configuration a model's `config` holds (`config.alignment`; None when it has none, as models
    other than Vaswani ones), checked against its decoder layers and heads.

    Raises:
        ValueError: a configuration the model cannot hold (`check_model_alignment`).
    """
    alignment = getattr(config, "alignment", None)
    if alignment is not None:
        layers = int(getattr(config, "decoder_layers", 0) or 0)
        heads = int(getattr(config, "decoder_attention_heads", 0) or 0)
        check_model_alignment(alignment, layers, heads)
    return attention_reading(alignment)


# An aligner that is an attribution method: {"method": M} (optionally "threshold", and the attention reading the
# attention-based methods read, as before). The attention reading alone stays the format records carry.
_ALIGNER_KEYS = {"method", "threshold"}


def attention_reading(alignment: dict[str, Any] | None) -> dict[str, Any] | None:
    """The attention reading of a configuration (``{"layer", "heads", "shift"}``, with ``"average_with"``) without
    its aligner method: what records carry and `align` reads; None when the configuration names a method only."""
    if alignment is None or not isinstance(alignment, dict) or "method" not in alignment:
        return alignment
    reading = {key: value for key, value in alignment.items() if key not in _ALIGNER_KEYS}
    return reading or None


#: The attribution methods an aligner can name: `vaswani_inspect.attribution.METHODS`, read from the registry when
#: asked (`__getattr__`: the attribution package reads this module, so this one imports it only then).
ALIGNER_METHODS: tuple[str, ...]


def __getattr__(name: str) -> tuple[str, ...]:
    if name == "ALIGNER_METHODS":
        return _aligner_methods()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _aligner_methods() -> tuple[str, ...]:
    from ..attribution.registry import method_names

    return method_names()


def _check_aligner(alignment: dict[str, Any]) -> None:
    method, threshold = alignment["method"], alignment.get("threshold")
    methods = _aligner_methods()
    if method not in methods:
        raise ValueError(
            f"VaswaniConfig.alignment must name an attribution method among {', '.join(methods)}, got {method!r}."
        )
    number = isinstance(threshold, (int, float)) and not isinstance(threshold, bool)
    if "threshold" in alignment and not (number and 0 < threshold <= 1):
        raise ValueError(f"VaswaniConfig.alignment's threshold must be above 0 and at most 1, got {threshold!r}.")


def model_aligner(config: Any) -> dict[str, Any] | None:
    """The attribution method a model aligns with, ``{"method": M}`` (with ``"threshold"`` when links are read by
    one), when its ``config.alignment`` names one (``hf-vaswani align-eval --method M --write-config``); None when
    it holds an attention reading only, or nothing (the aligner is then the attention reading,
    `model_alignment`). `vaswani_inspect.attribution.evaluation.model_links` applies it.

    Raises:
        ValueError: an unknown method or a threshold outside (0, 1].
    """
    alignment = getattr(config, "alignment", None)
    if not isinstance(alignment, dict) or "method" not in alignment:
        return None
    model_alignment(config)
    return {key: alignment[key] for key in ("method", "threshold") if key in alignment}


def read_model_config(model_dir: str | Path) -> tuple[Path, dict[str, Any]]:
    """(MODEL_DIR/config.json, its content), checked to be a Vaswani model's config: what `write_alignment_config`
    changes, readable before any work is done.

    Raises:
        FileNotFoundError: no config.json in `model_dir`.
        ValueError: not UTF-8 JSON, or not a Vaswani model's config.
    """
    from hf_vaswani.configuration_vaswani import VaswaniConfig

    path = Path(model_dir) / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"No model config at {path}.")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not valid UTF-8 JSON: {error}.") from None
    if not isinstance(data, dict) or data.get("model_type") != VaswaniConfig.model_type:
        found = data.get("model_type") if isinstance(data, dict) else None
        raise ValueError(f"{path} is the config of a {found!r} model, not a {VaswaniConfig.model_type!r} one.")
    return path, data


def write_alignment_config(model_dir: str | Path, alignment: dict[str, Any]) -> Path:
    """Store `alignment` (e.g. `AlignmentSearch.best`) as the ``alignment`` field of MODEL_DIR/config.json, the other
    fields untouched, so that the model carries it (`VaswaniConfig.alignment`, `AttentionRecord.alignment`); returns
    the file. The file is replaced in one step (`hf_vaswani.outputs.write_text`): never left half-written.

    Raises:
        FileNotFoundError: no config.json in `model_dir`.
        ValueError: not a Vaswani model's config, or a layer or head the model does not have.
    """
    from hf_vaswani.configuration_vaswani import VaswaniConfig
    from hf_vaswani.outputs import write_text

    path, data = read_model_config(model_dir)
    config = VaswaniConfig.from_dict({**data, "alignment": alignment})  # the rest of the config must hold too
    check_model_alignment(alignment, config.decoder_layers, config.decoder_attention_heads)
    data["alignment"] = alignment
    write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


__all__ = [
    "DEFAULT_ALIGNMENT",
    "Heads",
    "Layer",
    "alignment_settings",
    "attention_reading",
    "check_model_alignment",
    "describe_alignment",
    "model_aligner",
    "model_alignment",
    "read_model_config",
    "write_alignment_config",
]
