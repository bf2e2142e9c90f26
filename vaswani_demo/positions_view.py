"""The positions view: the model's positional encoding, and the last translated sentence shuffled.

One button draws both: the encoding of the model that serves the last translation's direction (the page's first
model before any translation), read from its own positional module (`vaswani_inspect.positions.positional_encoding`:
the sinusoidal or learned table and how similar its positions are, or T5's relative bias on the scores), and what
the encoder does with the last translated sentence shuffled, with and without its positions
(`vaswani_inspect.positions.order_blindness`). The figures are the toolkit's (`vaswani_inspect.position_plots`),
labelled in the page's language. Both put hooks on the model, so they run in the runner's copy of it
(`ModelRunner.inspecting`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import gradio as gr

from vaswani_inspect.position_plots import plot_order_blindness, plot_positional_encoding
from vaswani_inspect.positions import order_blindness, positional_encoding

from .answers import request_language
from .components import download_buttons, figure
from .texts import DEFAULT_LANGUAGE, message

__all__ = ["PositionsLayout", "positions_outputs", "positions_section", "wire_positions"]

logger = logging.getLogger(__name__)


@dataclass
class PositionsLayout:
    """The view's components."""

    button: gr.Button
    summary: gr.Markdown
    table: gr.Plot
    order: gr.Plot


def positions_section(i18n: gr.I18n, downloads: dict[str, tuple[gr.Button, gr.Button]]) -> PositionsLayout:
    """Add the view's components to the current ``gr.Blocks``; their download buttons go into `downloads`."""
    gr.Markdown(i18n("positions.intro"), elem_classes=["vaswani-hide-in-presentation"])
    button = gr.Button(i18n("positions.button"), elem_id="positions-button")
    summary = gr.Markdown(i18n("positions.empty"), elem_id="positions-summary")
    # One under the other: the table is wide (a column per dimension).
    table = figure(i18n("positions.table"), "positions-table", show_label=False)
    downloads["positions-table"] = download_buttons(i18n, "positions-table")
    order = figure(i18n("positions.order"), "positions-order", show_label=False)
    downloads["positions-order"] = download_buttons(i18n, "positions-order")
    return PositionsLayout(button, summary, table, order)


def encoding_summary(encoding: Any, language: str = DEFAULT_LANGUAGE) -> str:
    """One sentence on the kind of the model's positional encoding and its size."""
    kind = encoding.kind
    if kind not in ("sinusoidal", "learned", "relative"):
        return message(language, "positions.summary.other", kind=kind)
    dimensions = 0 if encoding.table is None else int(encoding.table.shape[1])
    if kind == "sinusoidal":
        dimensions //= 2  # a sine and a cosine per frequency
    return message(language, f"positions.summary.{kind}", positions=len(encoding.positions), dimensions=dimensions)


def positions_outputs(backend: Any, record: Any, *, language: str = DEFAULT_LANGUAGE) -> tuple[Any, Any, Any]:
    """(summary, encoding figure, shuffled-sentence figure): the second None, and the summary says to translate,
    before any translation."""
    served = backend.runner.served(getattr(record, "direction", None))
    try:
        with backend.runner.inspecting(served) as model:
            encoding = positional_encoding(model)
            blindness = None
            if record is not None:
                with served.encoding(record.direction):
                    blindness = order_blindness(model, served.tokenizer, record.source_text, direction=record.direction)
    except Exception as error:  # noqa: BLE001 - the page says what went wrong, the log has the traceback
        logger.exception("The demo could not show the positional encoding")
        return message(language, "positions.failed", error=type(error).__name__), None, None
    summary = encoding_summary(encoding, language)
    if blindness is None:
        summary = f"{summary} {message(language, 'positions.none')}"
    else:
        summary = f"{summary} {message(language, 'positions.shuffled', shuffled=blindness.shuffled_source)}"
    table = plot_positional_encoding(encoding, language=language)
    order = plot_order_blindness(blindness, language=language) if blindness is not None else None
    return summary, table, order


def wire_positions(positions: PositionsLayout, backend: Any, record_state: gr.State, events: dict[str, Any]) -> None:
    """Attach the view's button."""

    def show(record: Any, request: gr.Request | None = None) -> tuple[Any, Any, Any]:
        return positions_outputs(backend, record, language=request_language(request))

    outputs = [positions.summary, positions.table, positions.order]
    positions.button.click(show, inputs=[record_state], outputs=outputs, **{**events, "concurrency_id": "head"})
