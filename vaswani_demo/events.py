"""What the demo's components do, in the shapes Gradio wants: tuples in the order of the output components,
`gr.Warning` on the page and `gr.Error` for an API client. The demo's parts (the input rules `checks`, the model's
`runner`, `drawing` and the session's `files`) know nothing of components; this module calls each of them in turn.

A translation (`translate_outputs`) checks every value (`vaswani_demo.checks.translation_request`), runs the model
once (`ModelRunner.run`), reads the word pairs (`vaswani_demo.drawing.word_pairs`) and answers with the translation,
the status, the pairs and the record; three events that follow it draw the alignment section (heatmap, lines,
pairs and the source-vs-prefix bar, by the chosen explanation method: `vaswani_demo.explaining`) and the bertviz
view from that record and offer its file, so that the translation waits for none of them (what the previous
sentence left is cleared in the browser when a translation starts). The explanation method, layer, head, shift,
skip-punctuation, unit, view and attention-kind controls redraw from the session's record (and its explanations)
without translating again; the ablation button translates the record's sentence again with the ticked heads off
(`ablation_outputs`).

The API has four named endpoints: ``/translate`` (the translate button), then ``/alignment``, ``/view`` and
``/record``, which work from the last translation of the caller's session (a `gradio_client.Client` keeps one). These
three hang on a button that is never shown, so that they can refuse a call without a translation with a clear error
while the page's own redraws, before any translation, quietly draw nothing. Gradio documents each endpoint from the
signature and docstring of its function. They take the values as sent (``preprocess=False``): the demo checks
every one and answers a bad one with its own sentence, not Gradio's generic error. The other events are private.

Every handler answers in the language of its request (`request_language`: the ``Accept-Language`` header, which a
browser sets from its language settings); the page's own texts are translated in the browser by Gradio's i18n.

Long because every event of the page is wired here, next to the handler that answers it, so that the order of
output components and the order of returned values can be read side by side.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr

# The module, not its functions: each call looks its function up, so that a test can replace one.
import vaswani_demo.drawing as drawing

from .answers import request_language, warn_on_page
from .backend import DemoBackend
from .causes_view import wire_causes, wire_why
from .checks import alignment_options, translation_request, view_options
from .components import FIGURE_NAMES
from .contexts_view import wire_contexts
from .explaining import explanation_handlers
from .head_view import wire_head
from .layout import DemoLayout
from .page_script import (
    CURRENT_LANGUAGE_JS,
    CURRENT_PRESENTATION_JS,
    SET_PRESENTATION_JS,
    SWITCH_LANGUAGE_JS,
    download_js,
)
from .positions_view import wire_positions
from .runner import AblationResult, TranslationResult
from .self_attention import wire_self_attention
from .settings import MODEL_ALIGNER
from .steps_view import wire_steps
from .texts import DEFAULT_LANGUAGE, Refusal, message

__all__ = [
    "ablation_handler",
    "ablation_outputs",
    "after_translation_endpoints",
    "head_controls",
    "alignment_outputs",
    "page_load_handler",
    "record_output",
    "redraw_handlers",
    "request_language",
    "translate_handler",
    "translate_outputs",
    "view_output",
    "wire_events",
    "wire_page_controls",
]

logger = logging.getLogger(__name__)


def translate_outputs(
    backend: DemoBackend,
    text: Any,
    direction: Any,
    num_beams: Any = None,
    max_new_tokens: Any = None,
    layer: Any = None,
    head: Any = None,
    *,
    language: str = DEFAULT_LANGUAGE,
) -> tuple[TranslationResult, tuple[Any, ...]]:
    """Everything ``/translate`` returns: (result, (translation, status, word pairs, record)), every sentence in
    `language`. Every value is checked before the model runs; the pairs are read with the model's shift,
    punctuation skipped (`vaswani_demo.drawing.word_pairs` defaults). Nothing is drawn or written: `alignment_outputs`,
    `view_output` and `record_output` work from the record afterwards, so that the translation waits for none of
    them."""
    try:
        request = translation_request(
            backend.choices, backend.runner.routes, text, direction, num_beams, max_new_tokens, layer, head
        )
    except Refusal as refusal:
        result = TranslationResult(status=refusal.told(language))
    else:
        result = backend.runner.run(request, language=language)
    if not result.ok:
        return result, ("", result.status, [], None)
    record = result.record
    try:
        pairs = drawing.word_pairs(record, layer, head)
    except Exception as error:  # noqa: BLE001 - a problem with the pairs must not hide the translation
        logger.exception("The demo could not read the alignment of %r", text)
        status = f"{result.status} {message(language, 'failed.attention', error=type(error).__name__)}"
        return result, (result.translation, status, [], record)
    return result, (result.translation, result.status, pairs, record)


def alignment_outputs(
    backend: DemoBackend,
    record: Any,
    layer: Any = None,
    head: Any = None,
    unit: Any = None,
    shift: Any = None,
    skip_punctuation: Any = None,
    *,
    language: str = DEFAULT_LANGUAGE,
) -> tuple[Any, Any, list[list[Any]]]:
    """Everything ``/alignment`` returns for the session's last translation: (heatmap, alignment lines, word pairs),
    titled in `language`.

    Raises:
        Refusal: no translation yet (`record` is None), or an option out of range or not among the choices.
    """
    if record is None:
        raise Refusal("api.first")
    options = alignment_options(backend.choices, layer, head, unit, shift, skip_punctuation)
    shift, skip = options["shift"], options["skip_punctuation"]
    figure, pairs = drawing.alignment(record, layer, head, options["unit"], shift, skip, language)
    return figure, drawing.alignment_links(record, layer, head, shift, skip, language), pairs


def view_output(record: Any, view: Any = None, kind: Any = None, *, language: str = DEFAULT_LANGUAGE) -> str:
    """What ``/view`` returns for the session's last translation: the bertviz page in an iframe
    (`vaswani_demo.drawing.view`).

    Raises:
        Refusal: no translation yet (`record` is None), or a view or kind not among the choices.
    """
    if record is None:
        raise Refusal("api.first")
    options = view_options(view, kind)
    return drawing.view(record, options["view"], options["kind"], language)


def record_output(backend: DemoBackend, record: Any, session: str | None = None) -> str | None:
    """What ``/record`` returns for the session's last translation: the path of its JSON file, the one file of
    `session` (`vaswani_demo.files.RecordFiles.save`; None once the backend is closed).

    Raises:
        Refusal: no translation yet (`record` is None).
    """
    if record is None:
        raise Refusal("api.first")
    return backend.files.save(record, session)


def translate_handler(backend: DemoBackend) -> Callable[..., tuple[Any, ...]]:
    """The ``/translate`` endpoint's function: a refused input also shows as a warning on the page."""

    def translate(
        text: str,
        direction: str,
        num_beams: float,
        max_new_tokens: float,
        layer: str,
        head: str,
        request: gr.Request | None = None,
    ) -> tuple[Any, ...]:
        """Translate a sentence and read which source word each target word attended to most.

        The figures and the attention record come from ``/alignment``, ``/view`` and ``/record``, called
        afterwards with the same client: they work from this translation.

        Args:
            text: the sentence to translate (at most 500 characters and the model's token limit).
            direction: "es-en" (Spanish to English) or "en-es" (English to Spanish), among those the page serves.
            num_beams: beam size, 1 (greedy) to 8.
            max_new_tokens: longest translation, in tokens.
            layer: decoder layer the word pairs are read from: "model" (the model's aligner), "mean" or "0", "1", ...
                (default: the model's alignment configuration).
            head: head of that layer: "mean" (all heads) or "0", "1", ..., or several averaged, "1,3" (default: the
                model's alignment configuration).

        Returns:
            translation: the translation ("" when the input was refused).
            status: timing and notes, or the sentence explaining why the input was refused (in Spanish when the
                request's Accept-Language prefers it).
            pairs: aligned words, rows of [target word, source word, attention weight], read with the model's shift,
                punctuation skipped.
        """
        language = request_language(request)
        result, outputs = translate_outputs(
            backend, text, direction, num_beams, max_new_tokens, layer, head, language=language
        )
        if not result.ok:
            warn_on_page(result.status)
        return outputs

    return translate


#: What a drawing function does when it cannot draw: (language, the error, message key of the failure, what to
#: return instead) -> the value returned, or raises. Called inside the ``except`` block.
Fallback = Callable[[str, Exception, str, Any], Any]


def _quietly_on_the_page(language: str, error: Exception, failed: str, empty: Any) -> Any:
    """The page's answer: nothing for no translation yet; a warning (and a traceback in the log), never an error
    dialog, for anything else."""
    if not (isinstance(error, Refusal) and error.key == "api.first"):
        logger.exception("The demo could not draw for the page")
        warn_on_page(message(language, failed, error=type(error).__name__))
    return empty


def _as_api_error(language: str, error: Exception, failed: str, empty: Any) -> Any:
    """An API client's answer: an error (`gr.Error`) with a refused call's sentence, or (logged) that drawing
    failed."""
    if isinstance(error, Refusal):
        raise gr.Error(error.told(language), print_exception=False) from None
    logger.exception("The demo could not draw for the API")
    raise gr.Error(message(language, failed, error=type(error).__name__), print_exception=False) from None


def _drawing_functions(
    backend: DemoBackend, fallback: Fallback
) -> tuple[Callable[..., tuple[Any, Any, Any]], Callable[..., str], Callable[..., str | None]]:
    """(heatmap, alignment lines and word pairs; bertviz view; record file) from the session's record, through
    `alignment_outputs`, `view_output` and `record_output`; what cannot be drawn goes to `fallback`. The docstrings
    document the API's endpoints."""

    def alignment(
        record: Any,
        layer: str,
        head: str,
        unit: str,
        shift: bool,
        skip_punctuation: bool,
        request: gr.Request | None = None,
    ) -> tuple[Any, Any, Any]:
        """Draw the cross-attention of the session's last translation (from ``/translate``, same client).

        Args:
            layer: decoder layer: "model" (the model's aligner), "mean" or "0", "1", ... (default: the model's
                alignment configuration).
            head: head of that layer: "mean" (all heads) or "0", "1", ..., or several averaged, "1,3" (default: the
                model's alignment configuration).
            unit: heatmap over "words" (alignment links boxed) or subword "tokens".
            shift: read each target word one step later, where it is the decoder's input (default: the model's).
            skip_punctuation: punctuation words get no link (default: true).

        Returns:
            heatmap: the cross-attention heatmap (a plot).
            links: the aligned words as lines between the two sentences (a plot).
            pairs: aligned words, rows of [target word, source word, attention weight].
        """
        language = request_language(request)
        try:
            return alignment_outputs(backend, record, layer, head, unit, shift, skip_punctuation, language=language)
        except Exception as error:  # noqa: BLE001 - the fallback tells it
            return fallback(language, error, "failed.alignment", (None, None, []))

    def view(record: Any, view: str, kind: str, request: gr.Request | None = None) -> str:
        """Draw the bertviz view of the session's last translation (from ``/translate``, same client).

        Args:
            view: bertviz "head" view or "model" view.
            kind: attention shown: "encoder", "decoder" or "cross".

        Returns:
            view: HTML, an iframe with the offline bertviz page in its srcdoc.
        """
        language = request_language(request)
        try:
            return view_output(record, view, kind, language=language)
        except Exception as error:  # noqa: BLE001 - the fallback tells it
            return fallback(language, error, "failed.view", drawing.placeholder(language))

    def record(record: Any, request: gr.Request | None = None) -> str | None:
        """The attention record of the session's last translation (from ``/translate``, same client).

        Returns:
            record: path of the attention record JSON (vaswani_inspect.AttentionRecord).
        """
        try:
            return record_output(backend, record, getattr(request, "session_hash", None))
        except Exception as error:  # noqa: BLE001 - the fallback tells it
            return fallback(request_language(request), error, "failed.record", None)

    return alignment, view, record


def redraw_handlers(
    backend: DemoBackend,
) -> tuple[Callable[..., tuple[Any, Any, Any]], Callable[..., str], Callable[..., str | None]]:
    """The page's (heatmap, alignment lines and word pairs; bertviz view; record file) from a record, after a
    translation and when a control changes: nothing for no record; an error becomes a warning on the page (and a
    traceback in the log), never an error dialog. (The page itself draws its alignment section through
    `vaswani_demo.explaining`, by the chosen explanation method; the first function draws the attention alone.)"""
    return _drawing_functions(backend, _quietly_on_the_page)


def after_translation_endpoints(
    backend: DemoBackend,
) -> tuple[Callable[..., tuple[Any, Any, Any]], Callable[..., str], Callable[..., str | None]]:
    """The functions of the ``/alignment``, ``/view`` and ``/record`` endpoints: a call before any translation in its
    session, or with a bad value, is an error (`gr.Error`) with the demo's sentence."""
    return _drawing_functions(backend, _as_api_error)


def ablation_outputs(
    backend: DemoBackend,
    record: Any,
    encoder_heads: Sequence[str] | None = None,
    decoder_heads: Sequence[str] | None = None,
    cross_heads: Sequence[str] | None = None,
    layer: Any = None,
    head: Any = None,
    shift: bool | None = None,
    skip_punctuation: bool = True,
    *,
    language: str = DEFAULT_LANGUAGE,
) -> tuple[AblationResult, tuple[Any, ...]]:
    """What the ablation panel shows: (result, (status, translation with all heads, its alignment lines, translation
    with the heads off, its alignment lines)); the lines follow the alignment section's layer, head, shift and
    punctuation choices, the status is in `language`."""
    chosen = {"encoder": encoder_heads, "decoder": decoder_heads, "cross": cross_heads}
    result = backend.runner.ablate(record, chosen, language=language)
    original = record.target_text if record is not None else ""
    try:
        original_links = drawing.alignment_links(record, layer, head, shift, skip_punctuation, language)
        links = None
        if result.ok:
            links = drawing.alignment_links(result.record, layer, head, shift, skip_punctuation, language)
    except Exception as error:  # noqa: BLE001 - a drawing problem must not hide the translations
        logger.exception("The demo could not draw the alignment with heads off")
        failed = message(language, "failed.alignment", error=type(error).__name__)
        return result, (f"{result.status} {failed}", original, None, result.translation, None)
    return result, (result.status, original, original_links, result.translation, links)


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
        result, outputs = ablation_outputs(
            backend,
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
            warn_on_page(result.status)
        return outputs

    return ablate


def page_load_handler() -> Callable[..., Any]:
    """When a page opens: the word table's column names in its language (Gradio's i18n translates labels, not a
    table's column names). They hold for the page's session; an API client gets the English ones."""

    def load(request: gr.Request | None = None) -> Any:
        headers = drawing.pair_headers(request_language(request))
        # The headers prop names the columns of later values; the value shows them now.
        return gr.Dataframe(value={"headers": headers, "data": []}, headers=headers)

    return load


def head_controls() -> Callable[..., tuple[Any, Any]]:
    """The layer control's function for the head and shift controls: off (and the head's note says why) for the
    model's aligner, which reads its own heads and shift; on for any other layer."""

    def update(layer: Any, request: gr.Request | None = None) -> tuple[Any, Any]:
        free = layer != MODEL_ALIGNER
        note = message(request_language(request), "head.free" if free else "head.fixed")
        return gr.update(interactive=free, info=note), gr.update(interactive=free)

    return update


def wire_page_controls(app: gr.Blocks, ui: DemoLayout) -> None:
    """The language switch (reloads the page in the chosen language), the presentation mode and the figures'
    download buttons: all in the browser (`vaswani_demo.page_script`)."""
    browser_only: dict[str, Any] = dict(api_visibility="private", queue=False)
    app.load(None, js=CURRENT_LANGUAGE_JS, outputs=[ui.language], **browser_only)
    app.load(None, js=CURRENT_PRESENTATION_JS, outputs=[ui.present], **browser_only)
    ui.language.input(None, inputs=[ui.language], outputs=[ui.language], js=SWITCH_LANGUAGE_JS, **browser_only)
    ui.present.input(None, inputs=[ui.present], outputs=[ui.present], js=SET_PRESENTATION_JS, **browser_only)
    for elem_id, (png, svg) in ui.downloads.items():
        png.click(None, js=download_js(elem_id, FIGURE_NAMES[elem_id], "png"), **browser_only)
        svg.click(None, js=download_js(elem_id, FIGURE_NAMES[elem_id], "svg"), **browser_only)


#: Clears what the previous sentence left (heatmap, lines, view, record file, source-share bar, encoder heatmap) in
#: the browser as a translation starts, without a server round trip: it would otherwise stand next to the new
#: translation until its own is drawn.
_CLEAR_JS = "() => [null, null, '', null, null, null]"


def wire_events(app: gr.Blocks, ui: DemoLayout, backend: DemoBackend, *, concurrency_limit: int) -> None:
    """Attach the events to `app` and the components of `ui` (inside the same ``gr.Blocks`` context).

    The translate events and the ablation button share one queue slot pool (``concurrency_id="model"``,
    `concurrency_limit` at a time); the drawing events share another, so that drawing never waits behind
    translations.
    """
    inputs = [ui.text, ui.direction, ui.num_beams, ui.max_new_tokens, ui.layer, ui.head]
    outputs = [ui.translation, ui.status, ui.pairs, ui.record_state]
    model_events: dict[str, Any] = dict(
        fn=translate_handler(backend),
        inputs=inputs,
        outputs=outputs,
        preprocess=False,  # the demo checks the raw values itself (vaswani_demo.checks)
        concurrency_id="model",
        concurrency_limit=concurrency_limit,
    )
    # The page draws its alignment section by the chosen method (`explanation_handlers`); the attention-only drawing
    # of `redraw_handlers` is what /alignment answers with, through `after_translation_endpoints`.
    _, redraw_view, offer_record = redraw_handlers(backend)
    explained_alignment, describe_method = explanation_handlers(backend)
    redraw_events: dict[str, Any] = dict(
        api_visibility="private", concurrency_id="redraw", concurrency_limit=concurrency_limit, show_progress="minimal"
    )
    alignment_inputs = [ui.record_state, ui.layer, ui.head, ui.unit, ui.shift, ui.skip_punctuation]
    alignment_shown = [ui.plot, ui.links, ui.pairs]
    explained_inputs = [ui.record_state, ui.explanations_state, ui.method, *alignment_inputs[1:]]
    explained_shown = [*alignment_shown, ui.share_plot, ui.explanations_state]
    view_inputs = [ui.record_state, ui.view, ui.kind]
    stale = [ui.plot, ui.links, ui.views, ui.record_file, ui.share_plot, ui.self_attention.plot]
    clear: dict[str, Any] = dict(fn=None, js=_CLEAR_JS, outputs=stale, api_visibility="private", queue=False)

    trace_steps = wire_steps(ui.steps, backend, ui.record_state, redraw_events)
    wire_why(ui.why, ui.steps, backend, ui.record_state, redraw_events)
    first_sentence = wire_causes(ui.causes, backend, ui.record_state, ui.direction, concurrency_limit=concurrency_limit)
    draw_head = wire_head(ui.one_head, backend, ui.record_state, redraw_events)
    wire_positions(ui.positions, backend, ui.record_state, redraw_events)
    translating = dict(api_visibility="private", concurrency_id="model", concurrency_limit=concurrency_limit)
    wire_contexts(ui.contexts, backend, translating)
    draw_self_attention = wire_self_attention(ui.self_attention, ui.record_state, redraw_events)

    def after(translation: Any) -> None:
        """Once `translation` (an event) has finished: draw its figures, trace its decoding step by step and offer
        its record, side by side."""
        translation.then(explained_alignment, inputs=explained_inputs, outputs=explained_shown, **redraw_events)
        trace_steps(translation)
        first_sentence(translation)
        draw_head(translation)
        draw_self_attention(translation)
        translation.then(redraw_view, inputs=view_inputs, outputs=[ui.views], **redraw_events)
        translation.then(offer_record, inputs=[ui.record_state], outputs=[ui.record_file], **redraw_events)

    ui.button.click(**clear)
    translated = ui.button.click(api_name="translate", **model_events)
    # The API's other endpoints before any page drawing: Gradio names a private event after its function, and the
    # page's drawing functions are named like these three, which must keep their names.
    alignment_endpoint, view_endpoint, record_endpoint = after_translation_endpoints(backend)
    api_events: dict[str, Any] = dict(preprocess=False, concurrency_id="redraw", concurrency_limit=concurrency_limit)
    trigger = ui.api_trigger.click
    trigger(alignment_endpoint, inputs=alignment_inputs, outputs=alignment_shown, api_name="alignment", **api_events)
    trigger(view_endpoint, inputs=view_inputs, outputs=[ui.views], api_name="view", **api_events)
    trigger(record_endpoint, inputs=[ui.record_state], outputs=[ui.record_file], api_name="record", **api_events)
    after(translated)
    ui.text.submit(**clear)
    after(ui.text.submit(api_visibility="private", **model_events))
    for examples in (ui.examples, ui.failures):
        if examples is not None:
            example_loaded = examples.load_input_event.then(**clear)
            after(example_loaded.then(api_visibility="private", **model_events))

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

    for control in (ui.method, ui.layer, ui.head, ui.unit, ui.shift, ui.skip_punctuation):
        control.change(explained_alignment, inputs=explained_inputs, outputs=explained_shown, **redraw_events)
    ui.method.change(describe_method, inputs=[ui.method], outputs=[ui.method_note], api_visibility="private")
    for control in (ui.view, ui.kind):
        control.change(redraw_view, inputs=view_inputs, outputs=[ui.views], **redraw_events)
    # The model's aligner reads its own heads and shift: those controls are off, and say why, while it is chosen.
    heads_shown = [ui.head, ui.shift]
    ui.layer.change(head_controls(), inputs=[ui.layer], outputs=heads_shown, api_visibility="private", queue=False)
    wire_page_controls(app, ui)
    app.load(page_load_handler(), outputs=[ui.pairs], api_visibility="private", queue=False)
