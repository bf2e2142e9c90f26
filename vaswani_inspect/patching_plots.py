"""Figures of a `PatchingResult` (`vaswani_inspect.patching`): one heatmap per site, layers down, positions or
heads across, each cell the share of the clean-minus-corrupted metric that patching it restores.

The colour scale is diverging and centred on 0 (red: the cell pushes toward the clean output, blue: away from it),
symmetric up to the largest absolute effect and at least to 1, so that 1 (the whole difference) is always the same
red. Positions are labelled with the pieces as words ("banco→sofá" where the two sources differ), heads ``H0``,
``H1``...; a NaN effect (the two sources give the same metric) is drawn grey.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .patching import SITES, PatchingResult
from .plots import ANNOTATE_MAX, new_figure, save_figure
from .step_plots import LANGUAGES, _shown

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn
    from matplotlib.figure import Figure

__all__ = ["plot_patching", "save_patching_figures"]

_TEXTS = {
    "en": {
        "encoder": "encoder layer outputs, per source position",
        "decoder": "decoder layer outputs, per target position",
        "encoder_heads": "encoder self-attention heads",
        "decoder_heads": "decoder self-attention heads",
        "cross_heads": "cross-attention heads",
        "title": "Patching ({method}): {what}",
        "layer": "layer",
        "source": "source token (clean→corrupted)",
        "target": "decoder input token",
        "head": "head",
        "effect": "effect: share of the difference restored",
        "exhaustive": "exhaustive",
        "attribution": "attribution",
    },
    "es": {
        "encoder": "salidas de las capas del codificador, por posición de la fuente",
        "decoder": "salidas de las capas del decodificador, por posición de la traducción",
        "encoder_heads": "cabezas de autoatención del codificador",
        "decoder_heads": "cabezas de autoatención del decodificador",
        "cross_heads": "cabezas de atención cruzada",
        "title": "Parcheo ({method}): {what}",
        "layer": "capa",
        "source": "pieza de la fuente (limpia→alterada)",
        "target": "pieza de entrada del decodificador",
        "head": "cabeza",
        "effect": "efecto: parte de la diferencia recuperada",
        "exhaustive": "exhaustivo",
        "attribution": "atribución",
    },
}


def _texts(language: str) -> dict[str, str]:
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {language!r}.")
    return _TEXTS[language]


def _columns(result: PatchingResult, site: str, texts: dict[str, str]) -> tuple[list[str], str]:
    if site in ("encoder", "decoder"):
        labels = ["→".join(_shown(part) for part in token.split("→")) for token in result.position_tokens(site)]
        return labels, texts["source" if site == "encoder" else "target"]
    return [f"H{head}" for head in range(result.effects[site].shape[1])], texts["head"]


def plot_patching(result: PatchingResult, site: str, *, language: str = "en") -> Figure:
    """The effects of one site of `result` as a layers x positions (or layers x heads) heatmap.

    Raises:
        ValueError: a site `result` has not computed, or an unknown language (``"en"`` or ``"es"``).
    """
    texts = _texts(language)
    if site not in result.effects:
        raise ValueError(f"The result has no {site!r} effects: it has {', '.join(result.effects) or 'none'}.")
    import matplotlib as mpl

    effects = np.asarray(result.effects[site], dtype=np.float64)
    columns, column_title = _columns(result, site, texts)
    rows = [f"L{layer}" for layer in range(effects.shape[0])]
    finite = effects[np.isfinite(effects)]
    limit = max(1.0, float(np.abs(finite).max(initial=0.0)))
    figure = new_figure(max(4.5, 0.5 * len(columns) + 2.8), max(2.6, 0.42 * len(rows) + 2.0))
    ax = figure.add_subplot(1, 1, 1)
    colours = mpl.colormaps["RdBu_r"].with_extremes(bad="#bdbdbd")
    image = ax.imshow(
        np.ma.masked_invalid(effects), cmap=colours, vmin=-limit, vmax=limit, aspect="auto", interpolation="nearest"
    )
    ax.set_xticks(range(len(columns)), columns, rotation=60, ha="right", rotation_mode="anchor", fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set_xlabel(column_title, fontsize=8)
    ax.set_ylabel(texts["layer"], fontsize=8)
    if max(effects.shape) <= ANNOTATE_MAX:
        for (i, j), value in np.ndenumerate(effects):
            if np.isfinite(value):
                shade = "white" if abs(value) > 0.6 * limit else "black"
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7, color=shade)
    figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04).set_label(texts["effect"], fontsize=8)
    method = texts.get(result.method, result.method)
    ax.set_title(texts["title"].format(method=method, what=texts[site]), fontsize=9)
    return figure


def save_patching_figures(
    result: PatchingResult, folder: str | Path, *, formats: tuple[str, ...] = ("png", "svg"), language: str = "en"
) -> list[Path]:
    """Write ``patching-SITE.FORMAT`` into `folder` for every site of `result` and format; returns the paths."""
    folder = Path(folder)
    paths = []
    for site in (site for site in SITES if site in result.effects):
        figure = plot_patching(result, site, language=language)
        paths += [save_figure(figure, folder / f"patching-{site}.{suffix}") for suffix in formats]
    return paths
