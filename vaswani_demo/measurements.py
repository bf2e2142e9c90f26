"""How faithful each explanation method measured on the demo's model, in one sentence per method.

A model folder may carry ``explanations.json`` (`vaswani_demo.settings.MEASUREMENTS_FILE`, written by
``benchmarks/bench_explanations.py``): ``"measured"`` says on what (``test_pairs`` per direction, the ``ks``
removed), ``"methods"`` maps each method to its ``aer`` per direction, ``comprehensiveness`` (nats, higher is more
faithful), ``sufficiency`` (nats, lower is more faithful) and ``ms_per_sentence``; ``"random"`` is the random
ranking's baseline. `read_measurements` reads it once, when the demo is built; `faithfulness_sentence` tells one
method's numbers in the page's language. Everything is read by key: a missing number leaves its part of the
sentence out and keys this module does not know are ignored, so that a file regenerated with more pairs or more
fields keeps working. Nothing here knows of Gradio.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .settings import MEASUREMENTS_FILE
from .texts import Named, decimal, message

__all__ = ["faithfulness_sentence", "model_folder", "read_measurements"]

logger = logging.getLogger(__name__)


def model_folder(model: Any) -> Path | None:
    """The local folder `model` was loaded from (its ``name_or_path``), or None (a Hub id, a model built in
    memory)."""
    name = str(getattr(model, "name_or_path", "") or "")
    folder = Path(name).expanduser() if name else None
    return folder if folder is not None and folder.is_dir() else None


def read_measurements(folder: str | Path | None) -> dict[str, Any] | None:
    """The contents of `folder`'s ``explanations.json``, or None when there is none. A file that cannot be read
    as a JSON object is logged and taken for none: the demo serves without it."""
    if folder is None or not (Path(folder) / MEASUREMENTS_FILE).is_file():
        return None
    path = Path(folder) / MEASUREMENTS_FILE
    try:
        measured = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        logger.warning("The demo ignores %s: %s", path, error)
        return None
    if not isinstance(measured, dict):
        logger.warning("The demo ignores %s: not a JSON object.", path)
        return None
    return measured


def _number(value: Any) -> float | None:
    """`value` when it is a finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _entry(measured: Mapping[str, Any] | None, name: str) -> Mapping[str, Any]:
    methods = measured.get("methods") if isinstance(measured, Mapping) else None
    entry = methods.get(name) if isinstance(methods, Mapping) else None
    return entry if isinstance(entry, Mapping) else {}


def _aer_text(entry: Mapping[str, Any], language: str, *, with_directions: bool) -> str | None:
    """ "0.21 es-en / 0.26 en-es" (or "0.11 / 0.11" without the directions); None without AER."""
    aer = entry.get("aer")
    if not isinstance(aer, Mapping):
        return None
    values = [(str(direction), _number(value)) for direction, value in aer.items()]
    shown = [f"{decimal(language, value)} {direction}" if with_directions else decimal(language, value)
             for direction, value in values if value is not None]  # fmt: skip
    return " / ".join(shown) or None


def _ks_text(measured: Mapping[str, Any]) -> str:
    """The numbers of source words removed, "1–3" (or "1, 2, 5"); "" when the file does not say."""
    about = measured.get("measured")
    ks = about.get("ks") if isinstance(about, Mapping) else None
    if not isinstance(ks, list) or not ks or not all(isinstance(k, int) and not isinstance(k, bool) for k in ks):
        return ""
    ks = sorted(set(ks))
    if len(ks) > 1 and ks == list(range(ks[0], ks[-1] + 1)):
        return f"{ks[0]}–{ks[-1]}"
    return ", ".join(str(k) for k in ks)


def _deletion_parts(measured: Mapping[str, Any], entry: Mapping[str, Any], language: str) -> list[str]:
    """The comprehensiveness and sufficiency parts of the sentence, each with the random ranking's number."""
    random = _entry(measured, "random")
    ks = _ks_text(measured)
    parts = []
    for name in ("comprehensiveness", "sufficiency"):
        value = _number(entry.get(name))
        if value is None:
            continue
        baseline = _number(random.get(name))
        random_text = "" if baseline is None else decimal(language, baseline)
        fields = {
            "value": decimal(language, value),
            "random": message(language, "measured.random", value=random_text) if random_text else "",
        }
        if name == "comprehensiveness":
            fields["ks"] = message(language, "measured.ks", ks=ks) if ks else ""
        parts.append(message(language, f"measured.{name}", **fields))
    return parts


def _ablation_part(measured: Mapping[str, Any], entry: Mapping[str, Any], language: str) -> list[str]:
    """The agreement-with-head-ablation part (share of target words whose top source word is where the heads that
    matter look), with the random ranking's share; nothing for a file without it."""
    value = _number(entry.get("ablation_agreement"))
    if value is None:
        return []
    baseline = _number(_entry(measured, "random").get("ablation_agreement"))
    random_text = "" if baseline is None else f"{100 * baseline:.0f} %"
    fields = {
        "value": f"{100 * value:.0f} %",
        "random": message(language, "measured.random", value=random_text) if random_text else "",
    }
    return [message(language, "measured.ablation", **fields)]


def faithfulness_sentence(measured: Mapping[str, Any] | None, method: str, language: str) -> str:
    """One sentence, in `language`, saying how faithful `method` measured on the model whose measurements
    (`read_measurements`) are `measured`: deletion scores and agreement with head ablation against random words,
    AER read as an aligner (next to the model's attention), time per sentence; or that it was not measured (no
    file, or a file without it)."""
    named = Named("method", method)
    if measured is None:
        return message(language, "measured.none", method=named, file=MEASUREMENTS_FILE)
    entry = _entry(measured, method)
    parts = _deletion_parts(measured, entry, language) + _ablation_part(measured, entry, language)
    aer = _aer_text(entry, language, with_directions=True)
    if aer is not None:
        attention = _aer_text(_entry(measured, "attention"), language, with_directions=False)
        compared = ""
        if method != "attention" and attention is not None:
            compared = message(language, "measured.attention_aer", values=attention)
        parts.append(message(language, "measured.aer", values=aer, attention=compared))
    ms = _number(entry.get("ms_per_sentence"))
    if ms is not None:
        parts.append(message(language, "measured.ms", ms=f"{ms:.0f}"))
    if not parts:
        return message(language, "measured.unlisted", method=named, file=MEASUREMENTS_FILE)
    about = measured.get("measured")
    pairs = _number(about.get("test_pairs")) if isinstance(about, Mapping) else None
    if pairs is None:
        opening = message(language, "measured.on.unknown")
    else:
        opening = message(language, "measured.on", pairs=int(pairs))
    if method == "attention":
        opening += message(language, "measured.aligner")
    return f"{opening}: {'; '.join(parts)}."
