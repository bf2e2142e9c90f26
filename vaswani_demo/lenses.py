"""What the "What causes it?" tab reads layer by layer, without Gradio: the logit lens (`vaswani_inspect.logit_lens`,
the word each decoder layer would write at each position) as a layer x position grid of words, with the layer from
which each word of the translation is the lens's first choice; and the decoder lens (`vaswani_inspect.decoder_lens`,
the translation from each encoder layer) as a table.

Rows are named as the tab's patching heatmaps name layers, from 0 (the output of the first layer), below them the
embeddings; pieces are shown as words (no "▁"). Both run in the copy of the model that serves the direction
(`ModelRunner.borrowed_copy`), like the patching, so any architecture the toolkit looks inside works.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vaswani_inspect.lens import decoder_lens, logit_lens
from vaswani_inspect.plots import new_figure

from .causes import word_of
from .checks import text_notes
from .texts import DEFAULT_LANGUAGE, Refusal, decimal, message

__all__ = [
    "LensAnswer",
    "layer_name",
    "lens_figure",
    "lens_note",
    "read_lenses",
    "settled_layers",
    "translations_table",
]

logger = logging.getLogger(__name__)


@dataclass
class LensAnswer:
    """What the tab's lens section shows: the logit lens grid (`figure`), a sentence on it (`note`, Markdown), the
    decoder lens table (`table`, Markdown), the lenses themselves (None when refused or failed) and how long they
    took."""

    note: str
    figure: Any = None
    table: str = ""
    lens: Any = None
    decoder: Any = None
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)


def layer_name(index: int, language: str = DEFAULT_LANGUAGE) -> str:
    """The name of row `index` of a lens (0: the embeddings, i: the output of layer i - 1, counted from 0)."""
    return message(language, "lens.embeddings") if index == 0 else str(index - 1)


def settled_layers(lens: Any) -> list[int | None]:
    """For each position, the first lens row from which on the translation's own next piece is the lens's first
    choice at every later row (the last row is the model's: its first choice, with greedy search); None where it
    is not the first choice at the last row (beam search chose another)."""
    chosen = np.asarray(lens.top_ids)[:, :, 0] == np.asarray(lens.target_ids[1:])[None, :]
    found: list[int | None] = []
    for column in range(chosen.shape[1]):
        rows = chosen[:, column]
        if not rows[-1]:
            found.append(None)
            continue
        start = len(rows) - 1
        while start > 0 and rows[start - 1]:
            start -= 1
        found.append(start)
    return found


def longest(lens: Any) -> int:
    """The decoder lens's length limit for a sentence whose translation `lens` read: twice the translation's
    pieces and a few more (an earlier layer's translation far longer than the model's is no reading of it, and
    a layer that never ends its sentence would otherwise run to the model's limit)."""
    return 2 * len(lens.target_ids) + 4


def lens_note(lens: Any, language: str = DEFAULT_LANGUAGE) -> str:
    """The sentence under the grid: from which layer on each word of the translation is the lens's first choice."""
    words = []
    for column, row in enumerate(settled_layers(lens)):
        word = word_of(lens.target_tokens[column + 1])
        where = "–" if row is None else layer_name(row, language)
        words.append(f"“{word}” {where}")
    return message(language, "lens.from", words=", ".join(words))


def lens_figure(lens: Any, language: str = DEFAULT_LANGUAGE) -> Any:
    """The logit lens as a grid: a row per decoder layer (the embeddings at the bottom, the model's own output at
    the top), a column per position named by the word the translation writes there; each cell the layer's first
    choice as a word, shaded by its probability, framed where it is the translation's word."""
    from matplotlib.patches import Rectangle

    probabilities = np.asarray(lens.top_probs)[:, :, 0]
    rows, columns = probabilities.shape
    figure = new_figure(max(5.0, 0.95 * columns + 1.6), 1.3 + 0.55 * rows)
    ax = figure.add_subplot()
    image = ax.imshow(probabilities, cmap="Greens", vmin=0.0, vmax=1.0, aspect="auto", origin="lower")
    expected = np.asarray(lens.target_ids[1:])
    for row in range(rows):
        for column in range(columns):
            value = probabilities[row, column]
            colour = "white" if value > 0.6 else "black"
            word = word_of(lens.top_tokens[row][column][0])
            ax.text(column, row, word, ha="center", va="center", fontsize=8, color=colour)
            if int(lens.top_ids[row, column, 0]) == int(expected[column]):
                ax.add_patch(Rectangle((column - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="tab:orange", lw=1.5))
    targets = [word_of(token) for token in lens.target_tokens[1:]]
    ax.set_xticks(range(columns), targets, rotation=45, ha="right", rotation_mode="anchor", fontsize=9)
    ax.set_yticks(range(rows), [layer_name(row, language) for row in range(rows)], fontsize=9)
    figure.colorbar(image, ax=ax, shrink=0.9, pad=0.01)
    ax.set_title(message(language, "lens.title"), fontsize=10, wrap=True)
    ax.set_xlabel(message(language, "lens.axis.position"), fontsize=9)
    ax.set_ylabel(message(language, "lens.axis.layer"), fontsize=9)
    return figure


def translations_table(decoded: Any, language: str = DEFAULT_LANGUAGE) -> str:
    """The decoder lens as a Markdown table: each encoder layer (the embeddings first) and the translation the
    decoder writes from it."""
    lines = [
        f"| {message(language, 'decoder_lens.layer')} | {message(language, 'decoder_lens.translation')} |",
        "| --- | --- |",
    ]
    for row, translation in enumerate(decoded.translations):
        shown = translation.replace("|", "\\|") or "∅"
        lines.append(f"| {layer_name(row, language)} | {shown} |")
    return "\n".join(lines)


def read_lenses(backend: Any, source: Any, direction: Any, *, language: str = DEFAULT_LANGUAGE) -> LensAnswer:
    """Both lenses of `source` in `direction` on the model that serves it, drawn and said in `language`. Never
    raises: an empty or refused sentence, or a failure, gives an answer whose note says why."""
    if not isinstance(source, str) or not source.strip():
        return LensAnswer(message(language, "lens.none"))
    started = time.perf_counter()
    try:
        text_notes(backend.runner.routes, source, direction, backend.choices.max_tokens)
        with backend.runner.borrowed_copy(direction) as (served, model), served.encoding(direction):
            lens = logit_lens(model, served.tokenizer, source, direction=direction)
            read = time.perf_counter()
            decoded = decoder_lens(model, served.tokenizer, source, direction=direction, max_new_tokens=longest(lens))
    except Refusal as refusal:
        return LensAnswer(refusal.told(language))
    except Exception as error:  # noqa: BLE001 - the user gets a sentence, the log gets the traceback
        logger.exception("The demo could not read the lenses of %r", source)
        return LensAnswer(message(language, "lens.failed", error=type(error).__name__))
    done = time.perf_counter()
    timings = {"logit_lens": read - started, "decoder_lens": done - read}
    note = lens_note(lens, language) + " " + message(language, "causes.took", seconds=decimal(language, done - started))
    return LensAnswer(
        note, lens_figure(lens, language), translations_table(decoded, language), lens, decoded, done - started, timings
    )
