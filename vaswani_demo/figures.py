"""The words on the demo's figures, in the language of the request.

`vaswani_inspect` draws the heatmaps and the alignment lines with English titles and axis labels; `label_figure`
writes the demo's own (`vaswani_demo.texts.MESSAGES`, ``figure.*``) over them, naming the layer, heads and shift
that were drawn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .settings import MEAN
from .texts import message

__all__ = ["AXES", "label_figure", "settings_text"]

#: The (x, y) axis labels of each figure the demo draws (None: a figure without axes).
AXES: dict[str, tuple[str, str] | None] = {
    "figure.alignment": ("figure.source_words", "figure.target_words"),
    "figure.tokens": ("figure.keys", "figure.queries"),
    "figure.links": None,
}


def settings_text(settings: Mapping[str, Any], language: str, *, with_shift: bool = True) -> str:
    """A configuration (`vaswani_inspect.alignment_settings`) in words: "layer 2, head 1, shifted", "mean of
    layers, all heads", "layer 1, head 0 + layer 0, head 1, shifted" (or in Spanish); `with_shift=False` for a
    figure that does not shift."""
    readings = [settings, *settings.get("average_with", [])]
    return " + ".join(_reading_text(reading, language, with_shift) for reading in readings)


def _reading_text(settings: Mapping[str, Any], language: str, with_shift: bool) -> str:
    layer = settings["layer"]
    if layer == MEAN:
        parts = [message(language, "figure.layers.mean")]
    else:
        parts = [message(language, "figure.layer", layer=layer)]
    heads = settings["heads"]
    if heads == "all":
        parts.append(message(language, "figure.heads.all"))
    elif len(heads) == 1:
        parts.append(message(language, "figure.head", head=heads[0]))
    else:
        parts.append(message(language, "figure.heads", heads=", ".join(str(head) for head in heads)))
    if with_shift and settings["shift"]:
        parts.append(message(language, "figure.shifted"))
    return ", ".join(parts)


def label_figure(figure: Any, key: str, settings: Mapping[str, Any], language: str) -> Any:
    """Title `figure` (a one-axes matplotlib figure) with message `key` ("figure.alignment", "figure.tokens",
    "figure.links") for `settings`, and label its axes (`AXES`), in `language`; returns the figure."""
    if figure is None or not figure.axes:
        return figure
    ax = figure.axes[0]
    described = settings_text(settings, language, with_shift=key != "figure.tokens")
    ax.set_title(message(language, key, settings=described), fontsize=10, wrap=True)
    axes = AXES[key]
    if axes is not None:
        ax.set_xlabel(message(language, axes[0]), fontsize=9)
        ax.set_ylabel(message(language, axes[1]), fontsize=9)
    return figure
