"""What the lecture's views draw themselves: pieces as words, the decoder's causal mask, the heads through W_O.

`shown_pieces` writes a record's pieces as a student reads them: "▁the" is "the", a piece that continues a word
("ato" of "▁g", "ato") is "·ato", special tokens keep their names. For a `HeadComputation` (`vaswani_demo.head_view`),
in the page's language: `plot_causal_mask` draws the decoder's causal mask with the query's row, and
`plot_concatenation` the heads' outputs concatenated and this head's share of the output through W_O (the steps
the toolkit's figure stops before). Nothing here knows of
Gradio.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from .texts import DEFAULT_LANGUAGE, message

__all__ = ["plot_causal_mask", "plot_concatenation", "shown_pieces"]

#: The piece marker of a word start (sentencepiece's Metaspace).
_WORD_START = "▁"


def shown_pieces(pieces: Sequence[str]) -> list[str]:
    """Each piece as a word: without the word-start marker; "·" before a piece that continues the previous one;
    special tokens (``<s>``, ``</s>``, ``>>en<<``) as they are, a lone marker (a space) as "␣"."""
    shown = []
    for position, piece in enumerate(pieces):
        if piece == _WORD_START:
            shown.append("␣")
        elif _is_special(piece):
            shown.append(piece)
        elif piece.startswith(_WORD_START):
            shown.append(piece[len(_WORD_START) :])
        elif position and not _is_special(pieces[position - 1]):
            shown.append("·" + piece)
        else:
            shown.append(piece)
    return shown


def _is_special(piece: str) -> bool:
    return (piece.startswith("<") and piece.endswith(">")) or (piece.startswith(">>") and piece.endswith("<<"))


def _label(text: str) -> str:
    return text.replace("$", r"\$")  # "$" would start matplotlib mathtext


def plot_causal_mask(computation: Any, language: str = DEFAULT_LANGUAGE) -> Figure:
    """The decoder's causal mask over its input pieces: what each query row may see (dark), the row of
    `computation`'s query outlined, with its weights written in the cells it sees."""
    pieces = [_label(piece) for piece in shown_pieces(computation.key_tokens)]
    count = len(pieces)
    allowed = np.tril(np.ones((count, count)))
    size = max(2.6, 0.28 * count + 1.4)
    figure = Figure(figsize=(size + 0.6, size), layout="constrained")
    ax = figure.add_subplot()
    ax.imshow(allowed, cmap=ListedColormap(["#f4f4f4", "#9ecae1"]), vmin=0, vmax=1)
    row = computation.query_position
    ax.add_patch(_outline(row, count))
    for key, weight in enumerate(computation.weights):
        if computation.mask[key]:
            ax.text(key, row, f"{weight:.2f}", ha="center", va="center", fontsize=7)
    ax.set_xticks(range(count), pieces, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(count), pieces, fontsize=8)
    ax.set_xlabel(message(language, "head.mask.keys"), fontsize=9)
    ax.set_ylabel(message(language, "head.mask.queries"), fontsize=9)
    query = shown_pieces(computation.query_tokens)[row]
    ax.set_title(message(language, "head.mask.title", position=row, query=_label(query)), fontsize=9, wrap=True)
    return figure


def _outline(row: int, count: int) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((-0.5, row - 0.5), count, 1, fill=False, edgecolor="#d62728", linewidth=2)


def plot_concatenation(computation: Any, heads: int, language: str = DEFAULT_LANGUAGE) -> Figure:
    """The last step of the lecture: the heads' outputs side by side (this head's numbers, the others' places
    greyed: only this head is computed) and this head's share of the layer's output through W_O."""
    size = len(computation.output)
    limit = float(max(np.abs(computation.output).max(), 1e-9))
    figure = Figure(figsize=(9.0, 2.6), layout="constrained")
    top, bottom = figure.subplots(2, 1, height_ratios=[1, 1])
    concatenated = np.full((1, heads * size), np.nan)
    start = computation.head * size
    concatenated[0, start : start + size] = computation.output
    cmap = _heat_map()
    top.imshow(concatenated, cmap=cmap, vmin=-limit, vmax=limit, aspect="auto", interpolation="nearest")
    for head in range(heads):
        middle = head * size + size / 2 - 0.5
        shown = message(language, "head.concat.this" if head == computation.head else "head.concat.other", head=head)
        top.text(middle, 0, shown, ha="center", va="center", fontsize=8, color="#333333")
        if head:
            top.axvline(head * size - 0.5, color="white", linewidth=2)
    top.set_title(message(language, "head.concat.title", heads=heads, heads_last=heads - 1, size=size), fontsize=9)
    share = computation.head_output[None]
    share_limit = float(max(np.abs(share).max(), 1e-9))
    bottom.imshow(share, cmap=cmap, vmin=-share_limit, vmax=share_limit, aspect="auto", interpolation="nearest")
    bottom.set_title(
        message(language, "head.concat.output", head=computation.head, size=len(computation.head_output)), fontsize=9
    )
    for ax in (top, bottom):
        ax.set_xticks([])
        ax.set_yticks([])
    top.set_label("concatenated")
    bottom.set_label("head_output")
    return figure


def _heat_map() -> Any:
    from matplotlib import colormaps

    return colormaps["RdBu_r"].with_extremes(bad="#e6e6e6")  # grey: the heads not computed
