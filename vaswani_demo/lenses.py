"""What the "What causes it?" tab reads layer by layer, without Gradio: the logit lens (`vaswani_inspect.logit_lens`,
the word each decoder layer would write at each position) as the toolkit's layer x position grid of words
(`vaswani_inspect.lens_plots.plot_logit_lens`), with the layer from which each word of the translation is the
lens's first choice (`LogitLens.first_top_layer`); and the decoder lens (`vaswani_inspect.decoder_lens`, the
translation from each encoder layer) as a table.

Rows are named as the lens names them: the embeddings, then each layer's output counted from 1; pieces are shown
as words (no "▁"). Both run in the copy of the model that serves the direction (`ModelRunner.borrowed_copy`),
like the patching, so any architecture the toolkit looks inside works.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from vaswani_inspect.lens import decoder_lens, logit_lens
from vaswani_inspect.lens_plots import plot_logit_lens

from .causes import word_of
from .checks import text_notes
from .texts import DEFAULT_LANGUAGE, Refusal, decimal, message

__all__ = [
    "LensAnswer",
    "layer_name",
    "lens_note",
    "read_lenses",
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
    """The name of row `index` of a lens, as `vaswani_inspect.lens` names it (0: the embeddings, i: the output of
    layer i, counted from 1)."""
    return message(language, "lens.embeddings") if index == 0 else str(index)


def longest(lens: Any) -> int:
    """The decoder lens's length limit for a sentence whose translation `lens` read: twice the translation's
    pieces and a few more (an earlier layer's translation far longer than the model's is no reading of it, and
    a layer that never ends its sentence would otherwise run to the model's limit)."""
    return 2 * len(lens.target_ids) + 4


def lens_note(lens: Any, language: str = DEFAULT_LANGUAGE) -> str:
    """The sentence under the grid: from which layer on each word of the translation is the lens's first choice."""
    words = []
    for column in range(len(lens.target_ids) - 1):
        row = lens.first_top_layer(column)
        word = word_of(lens.target_tokens[column + 1])
        where = "–" if row is None else layer_name(row, language)
        words.append(f"“{word}” {where}")
    return message(language, "lens.from", words=", ".join(words))


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
        note,
        plot_logit_lens(lens, language=language),
        translations_table(decoded, language),
        lens,
        decoded,
        done - started,
        timings,
    )
