"""The "step by step" view: the decoder of the session's last translation, one step at a time.

After each translation the page traces its decoding (`vaswani_inspect.steps.trace_decoding`, with the decoding
settings of the translation) and keeps the trace in the session (`StepsLayout.trace_state`): moving the step
slider, or the previous / next buttons, redraws the step's three figures from it without running the model; the beam
tree, the slowest figure, is drawn once per translation, after the first step's figures. The figures are the
toolkit's (`vaswani_inspect.step_plots`), labelled in the page's language; only the step shown is drawn.

The trace is of what the model decoded: for a translation that kept numbers and names through placeholders
(`hf_vaswani.placeholders`), the sentence with its placeholders, and a note says so; where the trace does not end
in the translation shown, a note says why (CTranslate2 chose it, or the guard gave the placeholders up).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from hf_vaswani.placeholders import Protected, find_spans, protect, restore, vocabulary_of
from vaswani_inspect.pieces import METASPACE
from vaswani_inspect.step_plots import plot_beam_tree, plot_candidates, plot_prefix, plot_source_attention
from vaswani_inspect.steps import trace_decoding

from .answers import request_language
from .components import download_buttons, figure
from .settings import STATE_TTL_SECONDS
from .texts import DEFAULT_LANGUAGE, message

__all__ = [
    "StepsLayout",
    "decoded_source",
    "shown_piece",
    "step_outputs",
    "step_summary",
    "steps_section",
    "trace_handlers",
    "trace_note",
    "trace_of_record",
    "traced_outputs",
    "tree_output",
    "wire_steps",
]

logger = logging.getLogger(__name__)

#: The figures of one step, in the order the step events return them.
STEP_FIGURES = ("steps-candidates", "steps-attention", "steps-target")


@dataclass
class StepsLayout:
    """The step-by-step view's components."""

    slider: gr.Slider
    previous: gr.Button
    next: gr.Button
    where: gr.Textbox
    candidates: gr.Plot
    attention: gr.Plot
    target: gr.Plot
    tree: gr.Plot
    trace_state: gr.State


def steps_section(i18n: gr.I18n, downloads: dict[str, tuple[gr.Button, gr.Button]]) -> StepsLayout:
    """Add the view's components to the current ``gr.Blocks`` (inside its tab); their download buttons go into
    `downloads`."""
    gr.Markdown(i18n("steps.intro"), elem_classes=["vaswani-hide-in-presentation"])
    with gr.Row(equal_height=True):
        previous = gr.Button(i18n("steps.previous"), size="sm", interactive=False, elem_id="steps-previous")
        slider = gr.Slider(
            1, 2, value=1, step=1, label=i18n("steps.slider"), interactive=False, elem_id="steps-slider", scale=4
        )
        following = gr.Button(i18n("steps.next"), size="sm", interactive=False, elem_id="steps-next")
    where = gr.Textbox(
        label=i18n("steps.status"),
        placeholder=i18n("steps.empty"),  # before any translation: what to do
        interactive=False,
        lines=2,  # a phone wraps the sentence: all of it shows
        max_lines=4,
        elem_id="steps-where",
    )
    shown: dict[str, gr.Plot] = {}
    with gr.Row(equal_height=False):
        for elem_id in ("steps-target", "steps-candidates"):
            with gr.Column(scale=1):
                shown[elem_id] = figure(i18n(elem_id.replace("-", ".")), elem_id, show_label=False)
                downloads[elem_id] = download_buttons(i18n, elem_id)
    shown["steps-attention"] = figure(i18n("steps.attention"), "steps-attention", show_label=False)
    downloads["steps-attention"] = download_buttons(i18n, "steps-attention")
    tree = figure(i18n("steps.tree"), "steps-tree", show_label=False)
    downloads["steps-tree"] = download_buttons(i18n, "steps-tree")
    return StepsLayout(
        slider=slider,
        previous=previous,
        next=following,
        where=where,
        candidates=shown["steps-candidates"],
        attention=shown["steps-attention"],
        target=shown["steps-target"],
        tree=tree,
        trace_state=gr.State(None, time_to_live=STATE_TTL_SECONDS),
    )


def decoded_source(backend: Any, record: Any) -> tuple[str, Protected | None]:
    """(the text the model decoded for `record`'s translation, the `Protected` it is): the sentence with its
    numbers and names behind placeholders for a translation that kept them (``generate_kwargs["keep_spans"]``),
    else the sentence itself (and None)."""
    source = record.source_text
    if not (record.generate_kwargs or {}).get("keep_spans"):
        return source, None
    tokenizer = backend.runner.served(record.direction).tokenizer
    protected = protect(source, find_spans(source, vocabulary_of(tokenizer)))
    return (protected.text, protected) if protected.spans else (source, None)


def trace_of_record(backend: Any, record: Any, source: str | None = None) -> Any:
    """The decoding trace of `record`'s translation: of `source` (default: what the model decoded,
    `decoded_source`) in its direction with its decoding settings, on the model that serves that direction (its
    PyTorch model, also where CTranslate2 chose the translation)."""
    served = backend.runner.served(record.direction)
    settings = dict(record.generate_kwargs or {})
    if source is None:
        source, _ = decoded_source(backend, record)
    with served.encoding(record.direction):
        return trace_decoding(
            served.model,
            served.tokenizer,
            source,
            record.direction,
            num_beams=settings.get("num_beams"),
            max_new_tokens=settings.get("max_new_tokens"),
        )


def trace_note(record: Any, trace: Any, protected: Protected | None, language: str = DEFAULT_LANGUAGE) -> str:
    """What to say of `trace` next to `record`'s translation: that it decodes the sentence behind placeholders
    (`protected`), and why it does not end in the translation shown where it does not; "" when it is the
    translation."""
    fields = {"traced": trace.text}
    if protected is not None:
        restored = restore(trace.text, protected)
        fields["decoded"] = protected.text
        if not restored.ok:
            return message(language, "steps.guard_gave_up", **fields)
        if restored.text == record.target_text:
            return message(language, "steps.placeholders", **fields)
    elif trace.text == record.target_text:
        return ""
    chooser = "ctranslate2" if (record.generate_kwargs or {}).get("backend") == "ctranslate2" else "generate"
    return message(language, f"steps.differs.{chooser}", **fields)


def step_summary(trace: Any, index: int, language: str = DEFAULT_LANGUAGE) -> str:
    """One sentence for step `index` (from 0): which piece the translation took there (as a word: `shown_piece`),
    and its probability."""
    step = trace.steps[index]
    chosen = step.chosen
    if chosen is None:  # the winner had already ended: its last step
        chosen = trace.steps[index - 1].chosen if index else None
    probability = f"{chosen.probability:.2f}" if chosen is not None else "-"
    if language == "es":
        probability = probability.replace(".", ",")
    fields = {"step": index + 1, "steps": len(trace.steps), "probability": probability}
    if chosen is None or chosen.piece in ("</s>", "<eos>"):
        return message(language, "steps.where.end", **fields)
    return message(language, "steps.where", piece=f"“{shown_piece(chosen.piece)}”", **fields)


def shown_piece(piece: str) -> str:
    """A piece as a student reads it: the word-start mark left out ("▁the" is "the"); a piece that is nothing but
    the mark stays as it is."""
    text = piece.replace(METASPACE, "")
    return text if text.strip() else piece


def step_outputs(trace: Any, step: Any, language: str = DEFAULT_LANGUAGE) -> tuple[Any, ...]:
    """(sentence, candidates, attention, translation so far) of `step` (from 1, clamped to the trace's steps)."""
    if trace is None or not trace.steps:
        return message(language, "steps.none"), None, None, None
    index = min(max(int(step or 1), 1), len(trace.steps)) - 1
    figures = [draw(trace, index, language=language) for draw in (plot_candidates, plot_source_attention, plot_prefix)]
    return step_summary(trace, index, language), *figures


def traced_outputs(backend: Any, record: Any, language: str = DEFAULT_LANGUAGE) -> tuple[Any, ...]:
    """Everything the view shows after a translation: (trace, slider, previous, next, sentence, the step's three
    figures), at step 1; an empty view for no record, and a sentence if the trace fails. The tree follows
    (`tree_output`)."""
    idle = gr.update(interactive=False)

    def empty(sentence: str) -> tuple[Any, ...]:
        return None, gr.update(value=1, interactive=False), idle, idle, sentence, None, None, None

    if record is None:
        return empty(message(language, "steps.none"))
    try:
        source, protected = decoded_source(backend, record)
        trace = trace_of_record(backend, record, source)
    except Exception as error:  # noqa: BLE001 - the translation stands; the view says what went wrong
        logger.exception("The demo could not trace the decoding of %r", record.source_text)
        return empty(message(language, "steps.failed", error=type(error).__name__))
    count = len(trace.steps)
    where, *figures = step_outputs(trace, 1, language)
    note = trace_note(record, trace, protected, language)
    where = f"{where} {note}" if note else where
    slider = gr.update(minimum=1, maximum=max(count, 2), value=1, interactive=count > 1)
    return trace, slider, idle, gr.update(interactive=count > 1), where, *figures


def tree_output(trace: Any, language: str = DEFAULT_LANGUAGE) -> Any:
    """The beam search tree of `trace` (None without a trace)."""
    if trace is None or not trace.steps:
        return None
    return plot_beam_tree(trace, language=language)


def trace_handlers(backend: Any) -> tuple[Callable[..., tuple[Any, ...]], Callable[..., tuple[Any, ...]]]:
    """The page's (after a translation: trace and draw; when the step changes: redraw the step) functions."""

    def trace(record: Any, request: gr.Request | None = None) -> tuple[Any, ...]:
        return traced_outputs(backend, record, request_language(request))

    def show_step(trace: Any, step: Any, request: gr.Request | None = None) -> tuple[Any, ...]:
        language = request_language(request)
        count = len(trace.steps) if trace is not None else 0
        index = min(max(int(step or 1), 1), max(count, 1))
        outputs = step_outputs(trace, index, language)
        previous, following = gr.update(interactive=index > 1), gr.update(interactive=index < count)
        return (*outputs, previous, following, index)

    return trace, show_step


def wire_steps(
    steps: StepsLayout, backend: Any, record_state: gr.State, redraw_events: dict[str, Any]
) -> Callable[[Any], None]:
    """Attach the view's step events; returns the function that, given a translation event, traces its decoding
    once it has finished. The steps have a queue slot pool of their own (``concurrency_id="steps"``), so that they
    are drawn while the alignment section is, not after it."""
    redraw_events = {**redraw_events, "concurrency_id": "steps"}
    trace, show_step = trace_handlers(backend)

    def tree(trace: Any, request: gr.Request | None = None) -> Any:
        return tree_output(trace, request_language(request))

    traced = [steps.trace_state, steps.slider, steps.previous, steps.next, steps.where]
    traced += [steps.candidates, steps.attention, steps.target]
    step_shown = [steps.where, steps.candidates, steps.attention, steps.target]
    step_shown += [steps.previous, steps.next, steps.slider]
    step_inputs = [steps.trace_state, steps.slider]
    steps.slider.release(show_step, inputs=step_inputs, outputs=step_shown, **redraw_events)
    # The buttons move the slider in the browser, then the step is drawn (and the slider kept within the steps).
    for button, move in ((steps.previous, "Math.max(1, step - 1)"), (steps.next, "step + 1")):
        moved = button.click(None, inputs=[steps.slider], outputs=[steps.slider], js=f"(step) => {move}")
        moved.then(show_step, inputs=step_inputs, outputs=step_shown, **redraw_events)

    def after(translation: Any) -> None:
        traced_event = translation.then(trace, inputs=[record_state], outputs=traced, **redraw_events)
        # The tree is the whole search: drawn once per translation, after the first step is on the page.
        traced_event.then(tree, inputs=[steps.trace_state], outputs=[steps.tree], **redraw_events)

    return after
