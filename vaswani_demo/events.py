"""What the demo's components do: the translate events run the model once (`DemoBackend.translate_outputs`), then
draw the aligned words as lines; the layer, head, shift, skip-punctuation, unit, view and attention-kind controls
redraw from the session's record without running it again; the ablation button translates the record's sentence
again with the ticked heads off (`DemoBackend.ablation_outputs`).

The translate button is the one named API endpoint, ``/translate``; Gradio documents it from the signature and
docstring of the function `translate_handler` returns. It takes the values as sent (``preprocess=False``): the
backend checks every one and answers a bad one with its own sentence, not Gradio's generic error. The other events
are private.

Every handler answers in the language of its request (`request_language`: the ``Accept-Language`` header, which a
browser sets from its language settings); the page's own texts are translated in the browser by Gradio's i18n.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Callable
from typing import Any

import gradio as gr

from .backend import DemoBackend
from .layout import DemoLayout
from .texts import DEFAULT_LANGUAGE, language_from_header, message

__all__ = [
    "ablation_handler",
    "after_translate_handler",
    "page_load_handler",
    "redraw_handlers",
    "request_language",
    "translate_handler",
    "wire_events",
]

logger = logging.getLogger(__name__)


def request_language(request: gr.Request | None) -> str:
    """The language to answer `request` in: Spanish or English, from its ``Accept-Language`` header (English
    without a request or header, as for most API clients)."""
    if request is None:
        return DEFAULT_LANGUAGE
    return language_from_header(request.headers.get("accept-language"))


def _warn(text: str) -> None:
    """Show `text` as a warning on the page; escaped, since Gradio renders a warning's message as HTML (and the
    demo's messages name ``<unk>`` and characters the user typed)."""
    gr.Warning(html.escape(text, quote=False))


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
        request: gr.Request | None = None,
    ) -> tuple[Any, ...]:
        """Translate a sentence and show what the attention heads did.

        Args:
            text: the sentence to translate (at most 500 characters and the model's token limit).
            direction: "es-en" (Spanish to English) or "en-es" (English to Spanish).
            num_beams: beam size, 1 (greedy) to 8.
            max_new_tokens: longest translation, in tokens.
            layer: decoder layer of the cross-attention heatmap and word pairs: "mean" or "0", "1", ... (default:
                the model's alignment configuration).
            head: head of that layer: "mean" (all heads) or "0", "1", ..., or several averaged, "1,3" (default: the
                model's alignment configuration).
            unit: heatmap over "words" (alignment links boxed) or subword "tokens".
            view: bertviz "head" view or "model" view.
            kind: attention shown by bertviz: "encoder", "decoder" or "cross".

        Returns:
            translation: the translation ("" when the input was refused).
            status: timing and notes, or the sentence explaining why the input was refused (in Spanish when the
                request's Accept-Language prefers it).
            alignment: the cross-attention heatmap (a plot), read with the model's shift, punctuation skipped.
            pairs: aligned words, rows of [target word, source word, attention weight].
            view: HTML, an iframe with the offline bertviz page in its srcdoc.
            record: path of the attention record JSON (vaswani_inspect.AttentionRecord).
        """
        language = request_language(request)
        result, outputs = backend.translate_outputs(
            text, direction, num_beams, max_new_tokens, layer, head, unit, view, kind, language=language
        )
        if not result.ok:
            _warn(result.status)
        return outputs

    return translate


def redraw_handlers(backend: DemoBackend) -> tuple[Callable[..., tuple[Any, Any, Any]], Callable[..., str]]:
    """(redraw the heatmap, the alignment lines and the word pairs, redraw the bertviz view) from a record; a drawing
    error becomes a warning on the page (and a traceback in the log), never an error dialog."""

    def redraw_alignment(
        record: Any,
        layer: str,
        head: str,
        unit: str,
        shift: bool,
        skip_punctuation: bool,
        request: gr.Request | None = None,
    ) -> tuple[Any, Any, Any]:
        language = request_language(request)
        try:
            figure, pairs = backend.alignment(record, layer, head, unit, shift, skip_punctuation, language)
            links = backend.alignment_links(record, layer, head, shift, skip_punctuation, language)
            return figure, links, pairs
        except Exception as error:  # noqa: BLE001
            logger.exception("The demo could not redraw the alignment")
            _warn(message(language, "failed.alignment", error=type(error).__name__))
            return None, None, []

    def redraw_view(record: Any, view: str, kind: str, request: gr.Request | None = None) -> str:
        language = request_language(request)
        try:
            return backend.view(record, view, kind, language)
        except Exception as error:  # noqa: BLE001
            logger.exception("The demo could not draw the bertviz view")
            _warn(message(language, "failed.view", error=type(error).__name__))
            return backend.placeholder(language)

    return redraw_alignment, redraw_view


def after_translate_handler(backend: DemoBackend) -> Callable[..., tuple[Any, Any, Any]]:
    """What follows a translation on the page: the alignment lines, and the heatmap and pairs again when the shift
    or skip-punctuation checkboxes differ from what ``/translate`` drew with (the model's shift, punctuation
    skipped); otherwise those two are left as they are (`gr.skip()`)."""
    redraw_alignment, _ = redraw_handlers(backend)

    def after_translate(
        record: Any,
        layer: str,
        head: str,
        unit: str,
        shift: bool,
        skip_punctuation: bool,
        request: gr.Request | None = None,
    ) -> tuple[Any, Any, Any]:
        if bool(shift) != backend.alignment_config["shift"] or not skip_punctuation:
            return redraw_alignment(record, layer, head, unit, shift, skip_punctuation, request)
        language = request_language(request)
        try:
            links = backend.alignment_links(record, layer, head, shift, skip_punctuation, language)
            return gr.skip(), links, gr.skip()
        except Exception as error:  # noqa: BLE001
            logger.exception("The demo could not draw the alignment lines")
            _warn(message(language, "failed.links", error=type(error).__name__))
            return gr.skip(), None, gr.skip()

    return after_translate


def ablation_handler(backend: DemoBackend) -> Callable[..., tuple[Any, ...]]:
    """The ablation button's function: a refused request (no translation yet, no head ticked) is also a warning."""

    def ablate(
        record: Any,
        encoder_heads: list[str],
        decoder_heads: list[str],
        cross_heads: list[str],
        layer: str,
        head: str,
        shift: bool,
        skip_punctuation: bool,
        request: gr.Request | None = None,
    ) -> tuple[Any, ...]:
        result, outputs = backend.ablation_outputs(
            record,
            encoder_heads,
            decoder_heads,
            cross_heads,
            layer,
            head,
            shift,
            skip_punctuation,
            language=request_language(request),
        )
        if not result.ok:
            _warn(result.status)
        return outputs

    return ablate


def page_load_handler(backend: DemoBackend) -> Callable[..., Any]:
    """When a page opens: the word table's column names in its language (Gradio's i18n translates labels, not a
    table's column names). They hold for the page's session; an API client gets the English ones."""

    def load(request: gr.Request | None = None) -> Any:
        headers = backend.pair_headers(request_language(request))
        # The headers prop names the columns of later values; the value shows them now.
        return gr.Dataframe(value={"headers": headers, "data": []}, headers=headers)

    return load


def wire_events(app: gr.Blocks, ui: DemoLayout, backend: DemoBackend, *, concurrency_limit: int) -> None:
    """Attach the events to `app` and the components of `ui` (inside the same ``gr.Blocks`` context).

    The translate events and the ablation button share one queue slot pool (``concurrency_id="model"``,
    `concurrency_limit` at a time); the redraws share another, so that redrawing never waits behind translations.
    """
    inputs = [ui.text, ui.direction, ui.num_beams, ui.max_new_tokens, ui.layer, ui.head, ui.unit, ui.view, ui.kind]
    outputs = [ui.translation, ui.status, ui.plot, ui.pairs, ui.views, ui.record_file, ui.record_state]
    model_events: dict[str, Any] = dict(
        fn=translate_handler(backend),
        inputs=inputs,
        outputs=outputs,
        preprocess=False,  # the backend checks the raw values itself (vaswani_demo.checks)
        concurrency_id="model",
        concurrency_limit=concurrency_limit,
    )
    redraw_alignment, redraw_view = redraw_handlers(backend)
    redraw_events: dict[str, Any] = dict(api_visibility="private", concurrency_id="redraw", show_progress="minimal")
    alignment_inputs = [ui.record_state, ui.layer, ui.head, ui.unit, ui.shift, ui.skip_punctuation]
    alignment_outputs = [ui.plot, ui.links, ui.pairs]
    after_events: dict[str, Any] = dict(
        fn=after_translate_handler(backend), inputs=alignment_inputs, outputs=alignment_outputs, **redraw_events
    )
    ui.button.click(api_name="translate", **model_events).then(**after_events)
    ui.text.submit(api_visibility="private", **model_events).then(**after_events)
    ui.examples.load_input_event.then(api_visibility="private", **model_events).then(**after_events)

    ablation_inputs = [ui.record_state, ui.ablate_encoder, ui.ablate_decoder, ui.ablate_cross]
    ablation_inputs += [ui.layer, ui.head, ui.shift, ui.skip_punctuation]
    ablation_outputs = [ui.ablation_status, ui.original_translation, ui.original_links]
    ablation_outputs += [ui.ablated_translation, ui.ablated_links]
    ui.ablate_button.click(  # runs the model (a copy of it): it waits in the translations' queue
        ablation_handler(backend),
        inputs=ablation_inputs,
        outputs=ablation_outputs,
        api_visibility="private",
        concurrency_id="model",
        concurrency_limit=concurrency_limit,
    )

    for control in (ui.layer, ui.head, ui.unit, ui.shift, ui.skip_punctuation):
        control.change(redraw_alignment, inputs=alignment_inputs, outputs=alignment_outputs, **redraw_events)
    view_inputs = [ui.record_state, ui.view, ui.kind]
    for control in (ui.view, ui.kind):
        control.change(redraw_view, inputs=view_inputs, outputs=[ui.views], **redraw_events)
    app.load(page_load_handler(backend), outputs=[ui.pairs], api_visibility="private", queue=False)
