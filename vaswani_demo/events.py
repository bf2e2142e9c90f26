"""What the demo's components do: the translate events run the model once (`DemoBackend.translate_outputs`), the
layer, head, unit, view and attention-kind controls redraw from the session's record without running it again.

The translate button is the one named API endpoint, ``/translate``; Gradio documents it from the signature and
docstring of the function `translate_handler` returns. The other events are private.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import gradio as gr

from .backend import DemoBackend
from .embed import PLACEHOLDER_VIEW
from .layout import DemoLayout

__all__ = ["redraw_handlers", "translate_handler", "wire_events"]

logger = logging.getLogger(__name__)


def translate_handler(backend: DemoBackend) -> Callable[..., tuple[Any, ...]]:
    """The ``/translate`` endpoint's function: a refused input also shows as a warning on the page."""

    def translate(
        text: str,
        direction: str,
        num_beams: float,
        max_new_tokens: float,
        layer: str,
        head: str,
        unit: str,
        view: str,
        kind: str,
    ) -> tuple[Any, ...]:
        """Translate a sentence and show what the attention heads did.

        Args:
            text: the sentence to translate (at most 500 characters and the model's token limit).
            direction: "es-en" (Spanish to English) or "en-es" (English to Spanish).
            num_beams: beam size, 1 (greedy) to 8.
            max_new_tokens: longest translation, in tokens.
            layer: decoder layer of the cross-attention heatmap and word pairs: "mean" or "0", "1", ...
            head: head of that layer: "mean" or "0", "1", ...
            unit: heatmap over "words" (alignment links boxed) or subword "tokens".
            view: bertviz "head" view or "model" view.
            kind: attention shown by bertviz: "encoder", "decoder" or "cross".

        Returns:
            translation: the translation ("" when the input was refused).
            status: timing and notes, or the sentence explaining why the input was refused.
            alignment: the cross-attention heatmap (a plot).
            pairs: aligned words, rows of [target word, source word, attention weight].
            view: HTML, an iframe with the offline bertviz page in its srcdoc.
            record: path of the attention record JSON (vaswani_inspect.AttentionRecord).
        """
        result, outputs = backend.translate_outputs(
            text, direction, num_beams, max_new_tokens, layer, head, unit, view, kind
        )
        if not result.ok:
            gr.Warning(result.status)
        return outputs

    return translate


def redraw_handlers(backend: DemoBackend) -> tuple[Callable[..., tuple[Any, list]], Callable[..., str]]:
    """(redraw the heatmap and word pairs, redraw the bertviz view) from a record; a drawing error becomes a
    warning on the page (and a traceback in the log), never an error dialog."""

    def redraw_alignment(record: Any, layer: str, head: str, unit: str) -> tuple[Any, list]:
        try:
            return backend.alignment(record, layer, head, unit)
        except Exception as error:  # noqa: BLE001
            logger.exception("The demo could not redraw the alignment")
            gr.Warning(f"The alignment could not be drawn ({type(error).__name__}).")
            return None, []

    def redraw_view(record: Any, view: str, kind: str) -> str:
        try:
            return backend.view(record, view, kind)
        except Exception as error:  # noqa: BLE001
            logger.exception("The demo could not draw the bertviz view")
            gr.Warning(f"The view could not be drawn ({type(error).__name__}).")
            return PLACEHOLDER_VIEW

    return redraw_alignment, redraw_view


def wire_events(ui: DemoLayout, backend: DemoBackend, *, concurrency_limit: int) -> None:
    """Attach the events to the components of `ui` (inside the same ``gr.Blocks`` context).

    The translate events share one queue slot pool (``concurrency_id="model"``, `concurrency_limit` at a time);
    the redraws share another, so that redrawing never waits behind translations.
    """
    inputs = [ui.text, ui.direction, ui.num_beams, ui.max_new_tokens, ui.layer, ui.head, ui.unit, ui.view, ui.kind]
    outputs = [ui.translation, ui.status, ui.plot, ui.pairs, ui.views, ui.record_file, ui.record_state]
    model_events: dict[str, Any] = dict(
        fn=translate_handler(backend),
        inputs=inputs,
        outputs=outputs,
        concurrency_id="model",
        concurrency_limit=concurrency_limit,
    )
    ui.button.click(api_name="translate", **model_events)
    ui.text.submit(api_visibility="private", **model_events)
    ui.examples.load_input_event.then(api_visibility="private", **model_events)

    redraw_alignment, redraw_view = redraw_handlers(backend)
    redraw_events: dict[str, Any] = dict(api_visibility="private", concurrency_id="redraw", show_progress="minimal")
    alignment_inputs = [ui.record_state, ui.layer, ui.head, ui.unit]
    for control in (ui.layer, ui.head, ui.unit):
        control.change(redraw_alignment, inputs=alignment_inputs, outputs=[ui.plot, ui.pairs], **redraw_events)
    view_inputs = [ui.record_state, ui.view, ui.kind]
    for control in (ui.view, ui.kind):
        control.change(redraw_view, inputs=view_inputs, outputs=[ui.views], **redraw_events)
