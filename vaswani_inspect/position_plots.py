"""Pictures of positions and contexts (`vaswani_inspect.positions`, `vaswani_inspect.contexts`), with matplotlib on
an Agg canvas.

* `plot_positional_encoding(encoding)`: a sinusoidal or learned table as a heatmap (positions down, dimensions
  across) beside the position-to-position cosine similarity of its rows; for T5's relative positions, what each
  head adds to the scores, per query and key position.
* `plot_order_blindness(result)`: per encoder layer, how far each token's vector moves when the sentence is
  shuffled, with the model's positions and without them (only float error: attention alone is order-blind).
* `plot_contexts(comparison)`: the similarity of the word's vectors in the two sentences per encoder layer, and the
  word's self-attention row in each sentence.

Every label and title is in `language` ("en" or "es", as in `vaswani_inspect.step_plots`); pieces are shown as the
text they spell, without the "▁" word-start mark.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .contexts import ContextComparison
from .plots import new_figure
from .positions import OrderBlindness, PositionalEncoding
from .step_plots import LANGUAGES
from .words import word_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_contexts", "plot_order_blindness", "plot_positional_encoding"]

_TEXTS = {
    "en": {
        "sinusoidal": "Sinusoidal positional encoding",
        "learned": "Learned positional embeddings",
        "table": "{title}: the vector added at each position",
        "dimension": "dimension",
        "position": "position",
        "similarity": "Cosine similarity between positions",
        "relative": "Relative positions: what each head adds to the scores",
        "head": "head {n}",
        "query": "query position",
        "key": "key position",
        "order": "Shuffled sentence: how far each token's vector moves",
        "order_note": "shuffled: {tokens}",
        "with": "with positions",
        "without": "without positions",
        "largest": "{label} (largest: {value:.0e})",
        "distance": "cosine distance (mean over tokens)",
        "input": "input",
        "layer": "layer {n}",
        "contexts": "“{word}” in two sentences: similarity of its vectors",
        "cosine": "cosine similarity",
        "attention": "“{word}” attends to ({layer})",
        "all_layers": "mean of layers and heads",
        "one_layer": "layer {n}, mean of heads",
        "weight": "attention",
    },
    "es": {
        "sinusoidal": "Codificación posicional sinusoidal",
        "learned": "Embeddings posicionales aprendidos",
        "table": "{title}: el vector que se suma en cada posición",
        "dimension": "dimensión",
        "position": "posición",
        "similarity": "Similitud coseno entre posiciones",
        "relative": "Posiciones relativas: lo que cada cabeza suma a las puntuaciones",
        "head": "cabeza {n}",
        "query": "posición de la consulta",
        "key": "posición de la clave",
        "order": "Frase desordenada: cuánto se mueve el vector de cada token",
        "order_note": "desordenada: {tokens}",
        "with": "con posiciones",
        "without": "sin posiciones",
        "largest": "{label} (máxima: {value:.0e})",
        "distance": "distancia coseno (media de los tokens)",
        "input": "entrada",
        "layer": "capa {n}",
        "contexts": "«{word}» en dos frases: similitud de sus vectores",
        "cosine": "similitud coseno",
        "attention": "«{word}» atiende a ({layer})",
        "all_layers": "media de capas y cabezas",
        "one_layer": "capa {n}, media de cabezas",
        "weight": "atención",
    },
}
_FONT = 12
_FIRST, _SECOND = "#1b9e77", "#d95f02"


def _texts(language: str) -> dict[str, str]:
    if language not in _TEXTS:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {language!r}.")
    return _TEXTS[language]


def _shown(token: str) -> str:
    """A piece or word unit as a reader sees it: without "▁", "$" escaped (it would start mathtext)."""
    text = word_text([token], [0]) or token
    return text.replace("$", r"\$")


def _layer_labels(count: int, texts: dict[str, str]) -> list[str]:
    return [texts["input"], *(texts["layer"].format(n=i) for i in range(1, count))]


def plot_positional_encoding(encoding: PositionalEncoding, *, language: str = "en") -> Figure:
    """The positional encoding (`vaswani_inspect.positions.positional_encoding`): for a table, its heatmap and the
    cosine similarity of its rows; for relative positions, one heatmap per head of the bias on the scores.

    Raises:
        ValueError: an unknown language.
    """
    texts = _texts(language)
    if encoding.kind == "relative":
        return _plot_bias(encoding, texts)
    figure = new_figure(12.0, 5.0)
    table_ax, similarity_ax = figure.subplots(1, 2, width_ratios=[1.4, 1.0])
    limit = max(1e-9, float(np.abs(encoding.table).max()))
    image = table_ax.imshow(
        encoding.table, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto", interpolation="nearest"
    )
    figure.colorbar(image, ax=table_ax, shrink=0.8)
    table_ax.set_title(texts["table"].format(title=texts[encoding.kind]), fontsize=_FONT, loc="left")
    table_ax.set_xlabel(texts["dimension"], fontsize=_FONT - 1)
    table_ax.set_ylabel(texts["position"], fontsize=_FONT - 1)
    image = similarity_ax.imshow(encoding.similarity, cmap="viridis", vmin=-1.0, vmax=1.0, interpolation="nearest")
    figure.colorbar(image, ax=similarity_ax, shrink=0.8)
    similarity_ax.set_title(texts["similarity"], fontsize=_FONT, loc="left")
    similarity_ax.set_xlabel(texts["position"], fontsize=_FONT - 1)
    similarity_ax.set_ylabel(texts["position"], fontsize=_FONT - 1)
    return figure


def _plot_bias(encoding: PositionalEncoding, texts: dict[str, str]) -> Figure:
    heads = encoding.bias.shape[0]
    columns = min(4, heads)
    rows = math.ceil(heads / columns)
    figure = new_figure(3.2 * columns + 1.0, 3.0 * rows + 0.8)
    axes = figure.subplots(rows, columns, squeeze=False)
    limit = max(1e-9, float(np.abs(encoding.bias).max()))
    image = None
    for h in range(rows * columns):
        ax = axes[h // columns][h % columns]
        if h >= heads:
            ax.set_axis_off()
            continue
        image = ax.imshow(encoding.bias[h], cmap="RdBu_r", vmin=-limit, vmax=limit, interpolation="nearest")
        ax.set_title(texts["head"].format(n=h), fontsize=_FONT - 1)
        ax.set_xlabel(texts["key"], fontsize=_FONT - 3)
        ax.set_ylabel(texts["query"], fontsize=_FONT - 3)
    figure.suptitle(texts["relative"], fontsize=_FONT)
    if image is not None:
        figure.colorbar(image, ax=axes, shrink=0.6)
    return figure


def plot_order_blindness(result: OrderBlindness, *, language: str = "en") -> Figure:
    """Per encoder layer, the mean cosine distance between each token's vector in the shuffled sentence and in the
    sentence, with and without positions (`vaswani_inspect.positions.order_blindness`).

    Raises:
        ValueError: an unknown language.
    """
    texts = _texts(language)
    figure = new_figure(7.0, 4.2)
    ax = figure.add_subplot()
    steps = np.arange(len(result.with_positions))
    ax.plot(steps, result.with_positions, marker="o", color=_SECOND, label=texts["with"])
    # The curve without positions lies on the axis: the legend says how small its largest distance is.
    largest = float(np.max(result.without_positions_max))
    without = texts["largest"].format(label=texts["without"], value=largest)
    ax.plot(steps, result.without_positions, marker="s", color=_FIRST, label=without)
    ax.set_xticks(steps, _layer_labels(len(steps), texts), fontsize=_FONT - 1)
    ax.set_ylabel(texts["distance"], fontsize=_FONT - 1)
    ax.set_ylim(bottom=0.0, top=max(1e-3, 1.15 * float(np.max(result.with_positions))))
    ax.legend(fontsize=_FONT - 1)
    ax.set_title(texts["order"], fontsize=_FONT, loc="left")
    shuffled = result.shuffled_source.replace("$", r"\$")
    ax.text(0.0, -0.22, texts["order_note"].format(tokens=shuffled), transform=ax.transAxes, fontsize=_FONT - 2)
    ax.spines[["top", "right"]].set_visible(False)
    return figure


def plot_contexts(comparison: ContextComparison, *, language: str = "en", layer: int | str = "mean") -> Figure:
    """The word in two sentences (`vaswani_inspect.contexts.compare_contexts`): the cosine similarity of its vectors
    per encoder layer, then its self-attention row in each sentence (`layer`: an encoder layer, or "mean" of the
    layers; always the mean of the heads), the word's own bar darker.

    Raises:
        ValueError: an unknown language, or a layer the encoder does not have.
    """
    texts = _texts(language)
    layers = comparison.first.self_attention.shape[0]
    if layer != "mean" and (not isinstance(layer, int) or isinstance(layer, bool) or not -layers <= layer < layers):
        raise ValueError(f"layer must be 'mean' or an encoder layer in [0, {layers}), got {layer!r}.")
    figure = new_figure(max(7.0, 0.7 * _widest(comparison) + 2.0), 9.0)
    top, *bars = figure.subplots(3, 1, height_ratios=[1.1, 1.0, 1.0])
    steps = np.arange(len(comparison.similarity))
    top.plot(steps, comparison.similarity, marker="o", color="#7570b3")
    top.set_xticks(steps, _layer_labels(len(steps), texts), fontsize=_FONT - 1)
    top.set_ylabel(texts["cosine"], fontsize=_FONT - 1)
    top.set_ylim(min(0.0, float(np.min(comparison.similarity))) - 0.05, 1.05)
    top.set_title(texts["contexts"].format(word=comparison.word), fontsize=_FONT, loc="left")
    top.spines[["top", "right"]].set_visible(False)
    which = texts["all_layers"] if layer == "mean" else texts["one_layer"].format(n=layer % layers)
    for ax, side, colour in zip(bars, comparison.sides, (_FIRST, _SECOND)):
        row = side.self_attention.mean(axis=0) if layer == "mean" else side.self_attention[layer]
        colours = [colour if i == side.unit else "#bdbdbd" for i in range(len(row))]
        ax.bar(np.arange(len(row)), row, color=colours)
        ax.set_xticks(np.arange(len(row)), [_shown(u) for u in side.source_units], fontsize=_FONT - 1)
        ax.set_ylim(0.0, 1.0)
        ax.set_ylabel(texts["weight"], fontsize=_FONT - 1)
        heading = texts["attention"].format(word=comparison.word, layer=which)
        ax.set_title(f"{heading}: {side.sentence} → {side.translation}", fontsize=_FONT - 1, loc="left")
        ax.spines[["top", "right"]].set_visible(False)
    return figure


def _widest(comparison: ContextComparison) -> int:
    units: Sequence[str] = max((side.source_units for side in comparison.sides), key=len)
    return len(units)
