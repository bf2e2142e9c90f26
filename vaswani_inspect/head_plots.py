"""The figure of one head's computation (`vaswani_inspect.head_computation.HeadComputation`), with matplotlib.

`plot_head_computation(computation)` draws the lecture's steps left to right, one row per key:

* on top, the vector x the projections read at the query position (d_model numbers as a heat strip), and the
  query q = W_Q x + b (d_k numbers) above the keys it meets;
* each key k_j as a small heat strip; the dot products q·k_j as bars; the scores times the scale (÷√d_k, or T5's 1)
  plus any bias (T5's relative position bias) as bars; the keys the mask hides greyed out ("masked");
* the softmax weights as bars, with their percentages, and each value v_j as a heat strip;
* at the bottom, the weighted sum of the values (the head's output, d_k numbers) and the weights' entropy.

Every label is in `language` ("en" or "es"); pieces are shown as words, without the "▁" mark. Each axes is named
(``axes.get_label()``: "hidden", "query", "keys", "scores", "logits", "weights", "values", "output") so that the
drawn numbers can be read back.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .head_computation import HeadComputation
from .plots import new_figure
from .step_plots import LANGUAGES, _shown

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["LANGUAGES", "plot_head_computation"]

_TEXTS = {
    "en": {
        "encoder": "encoder self-attention",
        "decoder": "decoder self-attention (causal)",
        "cross": "cross-attention (encoder-decoder)",
        "title": "{kind}, layer {layer}, head {head}: query “{token}” (position {position})",
        "hidden": "x: the vector the projections read ({size} numbers)",
        "query": "q = W_Q x + b",
        "keys": "k_j = W_K x_j + b",
        "scores": "q · k_j",
        "divided": "÷ √d_k = ÷ {root}",
        "scaled": "× {scale}",
        "bias": " + position bias",
        "weights": "softmax",
        "values": "v_j = W_V x_j + b",
        "output": "output = Σ_j weight_j v_j",
        "masked": "masked",
        "entropy": "entropy {entropy:.2f} nats (at most {most:.2f}); d_k = {size}",
    },
    "es": {
        "encoder": "autoatención del codificador",
        "decoder": "autoatención del decodificador (causal)",
        "cross": "atención codificador-decodificador",
        "title": "{kind}, capa {layer}, cabeza {head}: consulta «{token}» (posición {position})",
        "hidden": "x: el vector que leen las proyecciones ({size} números)",
        "query": "q = W_Q x + b",
        "keys": "k_j = W_K x_j + b",
        "scores": "q · k_j",
        "divided": "÷ √d_k = ÷ {root}",
        "scaled": "× {scale}",
        "bias": " + sesgo de posición",
        "weights": "softmax",
        "values": "v_j = W_V x_j + b",
        "output": "salida = Σ_j peso_j v_j",
        "masked": "oculta",
        "entropy": "entropía {entropy:.2f} nats (como mucho {most:.2f}); d_k = {size}",
    },
}
_BAR = "#1b9e77"
_WEIGHT = "#d95f02"
_MASKED = "#e0e0e0"
_FONT = 11


def _texts(language: str) -> dict[str, str]:
    if language not in _TEXTS:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {language!r}.")
    return _TEXTS[language]


def _scale_text(computation: HeadComputation, texts: dict[str, str]) -> str:
    size = len(computation.query)
    if math.isclose(computation.scale, size**-0.5, rel_tol=1e-6):
        text = texts["divided"].format(root=f"{math.sqrt(size):.3g}")
    else:
        text = texts["scaled"].format(scale=f"{computation.scale:.3g}")
    return text + (texts["bias"] if computation.bias.any() else "")


def plot_head_computation(computation: HeadComputation, *, language: str = "en") -> Figure:
    """The steps of one head's attention at one query (module docstring), labelled in `language`.

    Raises:
        ValueError: an unknown language.
    """
    texts = _texts(language)
    keys = [_shown(token) for token in computation.key_tokens]
    count = len(keys)
    figure = new_figure(13.0, 2.6 + 0.42 * count)
    grid = figure.add_gridspec(
        3, 5, height_ratios=[1.0, max(count, 1) * 0.9, 0.8], width_ratios=[2.2, 1.3, 1.3, 1.5, 2.2]
    )
    token = _shown(computation.query_tokens[computation.query_position])
    figure.suptitle(
        texts["title"].format(
            kind=texts[computation.kind],
            layer=computation.layer,
            head=computation.head,
            token=token,
            position=computation.query_position,
        ),
        fontsize=_FONT + 2,
    )
    limit = float(
        max(np.abs(computation.keys).max(), np.abs(computation.values).max(), np.abs(computation.query).max())
    )
    _strip(figure.add_subplot(grid[0, 0]), computation.query[None], "query", texts["query"], limit)
    hidden_limit = float(np.abs(computation.hidden).max())
    _strip(
        figure.add_subplot(grid[0, 1:]),
        computation.hidden[None],
        "hidden",
        texts["hidden"].format(size=computation.hidden.size),
        hidden_limit,
    )
    key_axes = figure.add_subplot(grid[1, 0])
    _strip(key_axes, computation.keys, "keys", texts["keys"], limit)
    key_axes.set_yticks(range(count), keys, fontsize=_FONT)
    _bars(
        figure.add_subplot(grid[1, 1]),
        computation.scores,
        np.ones_like(computation.mask),
        "scores",
        texts["scores"],
        texts,
    )
    logits = np.where(computation.mask, computation.scores * computation.scale + computation.bias, 0.0)
    _bars(figure.add_subplot(grid[1, 2]), logits, computation.mask, "logits", _scale_text(computation, texts), texts)
    weights_axes = figure.add_subplot(grid[1, 3])
    _bars(
        weights_axes,
        computation.weights,
        computation.mask,
        "weights",
        texts["weights"],
        texts,
        color=_WEIGHT,
        numbers=False,
    )
    for row, weight in enumerate(computation.weights):
        if computation.mask[row]:
            weights_axes.text(weight, row, f" {100 * weight:.0f}%", va="center", fontsize=_FONT - 1)
    weights_axes.set_xlim(0, 1.25)
    _strip(figure.add_subplot(grid[1, 4]), computation.values, "values", texts["values"], limit)
    _strip(figure.add_subplot(grid[2, 4]), computation.output[None], "output", texts["output"], limit)
    note = figure.add_subplot(grid[2, :4])
    note.axis("off")
    seen = int(computation.mask.sum())
    note.text(
        0.0,
        0.5,
        texts["entropy"].format(entropy=computation.entropy, most=math.log(max(seen, 1)), size=len(computation.query)),
        fontsize=_FONT,
        va="center",
    )
    return figure


def _strip(ax: Any, matrix: np.ndarray, name: str, title: str, limit: float) -> None:
    """A heat strip of `matrix` (rows × numbers), blue negative and red positive, no number ticks."""
    limit = limit if limit > 0 else 1.0
    ax.imshow(matrix, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto", interpolation="nearest")
    ax.set_label(name)
    ax.set_title(title, fontsize=_FONT)
    ax.set_xticks([])
    ax.set_yticks([])


def _bars(
    ax: Any,
    values: np.ndarray,
    mask: np.ndarray,
    name: str,
    title: str,
    texts: dict[str, str],
    color: str = _BAR,
    numbers: bool = True,
) -> None:
    """One horizontal bar per key (0 for a masked key, whose row is greyed and says so), the first key on top."""
    rows = np.arange(len(values))
    ax.barh(rows, np.where(mask, values, 0.0), color=color, height=0.7)
    ax.margins(x=0.3)  # room for the numbers written at the bars' ends
    if numbers:
        for row in rows[mask]:
            ax.text(
                values[row],
                row,
                f" {values[row]:.2f} ",
                va="center",
                ha="left" if values[row] >= 0 else "right",
                fontsize=_FONT - 3,
            )
    for row in rows[~mask]:
        ax.axhspan(row - 0.5, row + 0.5, color=_MASKED, zorder=0)
        ax.text(
            0.5, row, texts["masked"], transform=ax.get_yaxis_transform(), ha="center", va="center", fontsize=_FONT - 2
        )
    ax.set_ylim(len(values) - 0.5, -0.5)
    ax.axvline(0.0, color="black", linewidth=0.6)
    ax.set_label(name)
    ax.set_title(title, fontsize=_FONT)
    ax.set_yticks([])
    ax.tick_params(axis="x", labelsize=_FONT - 3)
