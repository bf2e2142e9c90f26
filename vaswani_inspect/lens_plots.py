"""The logit lens as a picture (`plot_logit_lens`): a layer x position grid, each cell the word that decoder layer
would write at that position, colored by its probability, with the probability of the translation's own word
under it.

Rows are the layers, the embeddings at the bottom and the model's own output at the top; columns the target
positions, labelled below with the decoder input each reads and above with the word the translation has next
(`vaswani_inspect.lens`: position t reads ``target_tokens[t]`` and predicts ``target_tokens[t + 1]``). A word the
translation has there is drawn in bold. Pieces are shown as a reader sees them, without the word-start mark "▁"
(`step_plots`' piece display).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .lens import LogitLens
from .plots import new_figure
from .step_plots import LANGUAGES
from .step_plots import _shown as shown_piece

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["WORD_GID", "drawn_words", "plot_logit_lens"]

#: The matplotlib gid of each cell's word (what a test or a caller reads the drawn words by).
WORD_GID = "lens-word"

_TEXTS = {
    "en": {
        "title": "Logit lens: the word each decoder layer would write",
        "layer": "decoder layer",
        "reads": "decoder input",
        "next": "the translation's next word",
        "embeddings": "embeddings",
        "colour": "probability of the layer's top word",
        "note": "small number: the probability the layer gives the translation's word",
    },
    "es": {
        "title": "Lente de logits: la palabra que escribiría cada capa del decoder",
        "layer": "capa del decoder",
        "reads": "entrada del decoder",
        "next": "la siguiente palabra de la traducción",
        "embeddings": "embeddings",
        "colour": "probabilidad de la palabra más probable de la capa",
        "note": "número pequeño: la probabilidad que la capa da a la palabra de la traducción",
    },
}


def _texts(language: str) -> dict[str, str]:
    if language not in _TEXTS:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {language!r}.")
    return _TEXTS[language]


def plot_logit_lens(lens: LogitLens, *, language: str = "en") -> Figure:
    """The layer x position grid of `lens` (module docstring), its texts in `language` ("en" or "es").

    Each cell holds two texts: the top word (gid `WORD_GID`, its piece as `lens.top_tokens[layer][position][0]`
    shows without "▁") and, under it, the translation's word's probability (`lens.target_probs`)."""
    texts = _texts(language)
    layers, positions = lens.target_probs.shape
    top = lens.top_probs[:, :, 0]
    figure = new_figure(max(6.0, 0.95 * positions + 2.5), max(3.0, 0.55 * layers + 2.0))
    ax = figure.add_subplot()
    image = ax.imshow(top, cmap="viridis", vmin=0.0, vmax=1.0, origin="lower", aspect="auto", interpolation="nearest")
    targets = lens.target_ids[1:]
    for layer in range(layers):
        for position in range(positions):
            colour = "black" if top[layer, position] > 0.6 else "white"
            hit = int(lens.top_ids[layer, position, 0]) == targets[position]
            ax.text(
                position,
                layer + 0.12,
                shown_piece(lens.top_tokens[layer][position][0]),
                ha="center",
                va="center",
                fontsize=8,
                color=colour,
                fontweight="bold" if hit else "normal",
                gid=WORD_GID,
            )
            ax.text(
                position,
                layer - 0.25,
                f"{lens.target_probs[layer, position]:.2f}",
                ha="center",
                va="center",
                fontsize=6,
                color=colour,
            )
    names = [texts["embeddings"] if name == "embeddings" else name for name in lens.layers]
    ax.set_yticks(range(layers), names, fontsize=8)
    ax.set_ylabel(texts["layer"])
    ax.set_xticks(range(positions), [shown_piece(t) for t in lens.target_tokens[:-1]], fontsize=8, rotation=45)
    ax.set_xlabel(f"{texts['reads']}    ({texts['note']})", fontsize=8)
    above = ax.secondary_xaxis("top")
    above.set_xticks(range(positions), [shown_piece(t) for t in lens.target_tokens[1:]], fontsize=8, rotation=45)
    above.set_xlabel(texts["next"], fontsize=8)
    ax.set_title(texts["title"], fontsize=10)
    figure.colorbar(image, ax=ax, label=texts["colour"], shrink=0.9)
    ax.set_xlim(-0.5, positions - 0.5)
    return figure


def drawn_words(figure: Figure) -> np.ndarray:
    """The words `plot_logit_lens` drew, as a (layers, positions) array of strings, read from the figure."""
    ax = figure.axes[0]
    cells = [text for text in ax.texts if text.get_gid() == WORD_GID]
    layers = len(ax.get_yticks())
    return np.array([text.get_text() for text in cells], dtype=object).reshape(layers, -1)
