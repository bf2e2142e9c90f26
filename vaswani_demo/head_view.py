"""The "Inside one head" view: the lecture's softmax(q·K/√d_k) V for one head and one word of the last translation.

The view's controls choose an attention (encoder, decoder or cross), a layer, a head and the query word (a row of
buttons, one per piece of the query side: a click on a word draws it); a switch drops the ÷√d_k. Each draw computes
that one head at that one position (`vaswani_inspect.head_computation`, teacher-forced on the record's translation,
on the PyTorch model that serves the record's direction, also where CTranslate2 chose the translation) and draws it
with the toolkit's figure (`vaswani_inspect.head_plots.plot_head_computation`); the sentence above the figure says
what the query sees and the entropy of the weights with and without the scaling (`HeadComputation.with_scale`:
the same scores, no second pass). For the decoder's self-attention a second figure draws its causal mask.

The computation puts forward hooks on the model: it runs in the runner's copy of the model
(`ModelRunner.inspecting`), so that a translation served at the same time is never read by them.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr
import numpy as np

from vaswani_inspect.head_computation import HeadComputation, head_computation
from vaswani_inspect.head_plots import plot_head_computation
from vaswani_inspect.record import KINDS

from .answers import request_language
from .components import download_buttons, figure
from .lecture_drawing import plot_causal_mask, plot_concatenation, shown_pieces
from .settings import STATE_TTL_SECONDS
from .texts import DEFAULT_LANGUAGE, Named, decimal, message

__all__ = [
    "UNSCALED",
    "HeadLayout",
    "HeadView",
    "drawn_key",
    "head_controls_for",
    "head_handler",
    "head_of_record",
    "head_outputs",
    "head_section",
    "head_summary",
    "head_view",
    "wire_head",
]

logger = logging.getLogger(__name__)

#: The factor the switch multiplies the scores by instead of the model's: no ÷√d_k.
UNSCALED = 1.0


@dataclass
class HeadLayout:
    """The view's components."""

    kind: gr.Radio
    layer: gr.Dropdown
    head: gr.Dropdown
    query: gr.Radio
    unscaled: gr.Checkbox
    summary: gr.Markdown
    computation: gr.Plot
    concatenation: gr.Plot
    mask: gr.Plot
    mask_box: gr.Column
    drawn: gr.State  # `drawn_key` of the record drawn
    tab: gr.Tab | None = None  # opening it draws the view for a new record


def head_section(
    i18n: gr.I18n, downloads: dict[str, tuple[gr.Button, gr.Button]], tab: gr.Tab | None = None
) -> HeadLayout:
    """Add the view's components to the current ``gr.Blocks`` (inside its `tab`); their download buttons go into
    `downloads`. The layer, head and word choices are the record's, set after each translation."""
    gr.Markdown(i18n("head.intro"), elem_classes=["vaswani-hide-in-presentation"])
    with gr.Row(equal_height=False):
        kind = gr.Radio(
            [(i18n(f"choice.kind.{value}"), value) for value in KINDS],
            value="encoder",
            label=i18n("head.kind.label"),
            elem_id="head-kind",
            scale=3,
        )
        # Layer and head 0 until a translation says how many the served model has (`head_outputs`).
        layer = gr.Dropdown(
            [(i18n("choice.layer.0"), "0")], value="0", label=i18n("head.layer.label"), elem_id="head-layer", scale=1
        )
        head = gr.Dropdown(
            [(i18n("choice.head.0"), "0")], value="0", label=i18n("head.head.label"), elem_id="head-head", scale=1
        )
    query = gr.Radio([], value=None, label=i18n("head.query.label"), elem_id="head-query")
    unscaled = gr.Checkbox(False, label=i18n("head.unscaled.label"), elem_id="head-unscaled")
    summary = gr.Markdown(i18n("head.empty"), elem_id="head-summary")
    computation = figure(i18n("head.figure"), "head-computation", show_label=False)
    downloads["head-computation"] = download_buttons(i18n, "head-computation")
    concatenation = figure(i18n("head.concat"), "head-concat", show_label=False)
    downloads["head-concat"] = download_buttons(i18n, "head-concat")
    with gr.Column(visible=False) as mask_box:  # shown for the decoder's self-attention
        mask = figure(i18n("head.mask"), "head-mask", show_label=False)
        downloads["head-mask"] = download_buttons(i18n, "head-mask")
    drawn = gr.State(None, time_to_live=STATE_TTL_SECONDS)
    return HeadLayout(
        kind, layer, head, query, unscaled, summary, computation, concatenation, mask, mask_box, drawn, tab
    )


def head_of_record(
    backend: Any, record: Any, kind: str, layer: int, head: int, query: int, scale: float | None = None
) -> HeadComputation:
    """`head_computation` of one head at one query position of `record`'s translation (teacher-forced on it), on
    the model that serves its direction, in the runner's copy of that model."""
    served = backend.runner.served(record.direction)
    with backend.runner.inspecting(served) as model, served.encoding(record.direction):
        return head_computation(
            model,
            served.tokenizer,
            record.source_text,
            direction=record.direction,
            target=record.target_text,
            kind=kind,
            layer=layer,
            head=head,
            query=query,
            scale=scale,
        )


@dataclass(frozen=True)
class HeadView:
    """What the view shows for one choice: the controls' choices and values, the sentence, the figures."""

    layers: list[tuple[str, str]]
    heads: list[tuple[str, str]]
    queries: list[tuple[str, str]]
    kind: str
    layer: int
    head: int
    query: int
    summary: str
    computation: Any = None  # the figure
    concatenation: Any = None  # the heads through W_O
    mask: Any = None  # the causal mask figure (decoder self-attention only)
    shown: HeadComputation | None = None  # the computation drawn (with or without the scaling)
    scaled: HeadComputation | None = None  # the model's own


def head_controls_for(backend: Any, record: Any, kind: str) -> tuple[int, int, list[str]]:
    """(layers, heads per layer, query pieces shown as words) of `kind` in `record`'s model and sentence."""
    from vaswani_inspect.architectures import head_counts

    layers, heads = head_counts(backend.runner.served(record.direction).model)[kind]
    pieces = record.source_tokens if kind == "encoder" else record.target_tokens
    return layers, heads, shown_pieces(pieces)


def _first_word(record: Any, kind: str) -> int:
    """The query a kind starts at: the first piece that is no special token (the first output piece for the
    decoder's kinds: row 0 is the start token)."""
    pieces = record.source_tokens if kind == "encoder" else record.target_tokens
    special = set(record.special_tokens or [])
    return next((i for i, piece in enumerate(pieces) if piece not in special), 0)


def _index(value: Any, count: int, default: int = 0) -> int:
    """A control's value as an index in range(count) (`default` for none or one out of range)."""
    try:
        index = int(value)
    except (TypeError, ValueError):
        return default
    return index if 0 <= index < count else default


def head_view(
    backend: Any,
    record: Any,
    kind: Any = "encoder",
    layer: Any = 0,
    head: Any = 0,
    query: Any = None,
    unscaled: bool = False,
    *,
    language: str = DEFAULT_LANGUAGE,
) -> HeadView:
    """What the view shows for `record` and the controls' values (each clamped to what the model and sentence have;
    no query: the first word). Raises what `head_computation` raises."""
    kind = kind if kind in KINDS else "encoder"
    layers, heads, words = head_controls_for(backend, record, kind)
    layer, head = _index(layer, layers), _index(head, heads)
    query = _index(query, len(words), _first_word(record, kind))
    try:
        scaled = head_of_record(backend, record, kind, layer, head, query)
    except ValueError:
        # A translation whose text gives other pieces than the model wrote (a rare round trip of decode and
        # encode): its own first piece.
        query = 1 if kind != "encoder" else 0
        scaled = head_of_record(backend, record, kind, layer, head, query)
    shown = scaled.with_scale(UNSCALED) if unscaled else scaled
    queries = [(word, str(position)) for position, word in enumerate(shown_pieces(scaled.query_tokens))]
    mask = plot_causal_mask(shown, language) if kind == "decoder" else None
    return HeadView(
        layers=[(message(language, "layer.one", layer=i), str(i)) for i in range(layers)],
        heads=[(message(language, "head.one", head=i), str(i)) for i in range(heads)],
        queries=queries,
        kind=kind,
        layer=layer,
        head=head,
        query=query,
        summary=head_summary(scaled, unscaled, language),
        computation=plot_head_computation(shown, language=language),
        concatenation=plot_concatenation(shown, heads, language),
        mask=mask,
        shown=shown,
        scaled=scaled,
    )


def head_summary(scaled: HeadComputation, unscaled: bool, language: str = DEFAULT_LANGUAGE) -> str:
    """The sentences above the figure (Markdown): which head and query, d_k and the scaling, how many keys the
    query sees, and the entropy of the weights with the model's scaling and without it."""
    pieces = shown_pieces(scaled.query_tokens)
    d_k = int(scaled.query.shape[0])
    keys = len(scaled.key_tokens)
    has_scale = not math.isclose(scaled.model_scale, UNSCALED)
    scale = decimal(language, scaled.model_scale, 3)
    scaling = message(language, "head.scaled" if has_scale else "head.unscaled_scale", scale=scale, d_k=d_k)
    lines = [
        message(
            language,
            "head.summary",
            kind=Named("kind", scaled.kind),
            layer=scaled.layer,
            head=scaled.head,
            query=pieces[scaled.query_position],
            position=scaled.query_position,
            keys=keys,
            d_k=d_k,
            scaling=scaling,
            seen=int(np.count_nonzero(scaled.mask)),
        )
    ]
    with_scale = scaled.entropy
    if not has_scale:
        lines.append(message(language, "head.no_scale", scaled=decimal(language, with_scale)))
        return "\n\n".join(lines)
    without = scaled.with_scale(UNSCALED)
    without_scale = without.entropy
    if without_scale < with_scale:
        # e^H: how many equally weighted keys would have the same entropy.
        keys_with, keys_without = (decimal(language, math.exp(entropy), 1) for entropy in (with_scale, without_scale))
        verdict = message(language, "head.saturates", scaled_keys=keys_with, unscaled_keys=keys_without)
    else:
        verdict = message(language, "head.flatter")
    lines.append(
        message(
            language,
            "head.entropy",
            scaled=decimal(language, with_scale),
            unscaled=decimal(language, without_scale),
            top_scaled=decimal(language, float(scaled.weights.max())),
            top_unscaled=decimal(language, float(without.weights.max())),
            verdict=verdict,
        )
    )
    lines.append(message(language, "head.shown_unscaled" if unscaled else "head.shown_scaled"))
    return "\n\n".join(lines)


def head_outputs(
    backend: Any,
    record: Any,
    kind: Any,
    layer: Any,
    head: Any,
    query: Any,
    unscaled: Any,
    *,
    language: str = DEFAULT_LANGUAGE,
    reset: bool = False,
) -> tuple[Any, ...]:
    """The view's (layer, head, query, summary, figure, heads through W_O, mask figure, its box) as Gradio updates;
    `reset`
    (a new record or attention kind) starts the query at the first word. No record: the empty view, and what to
    do."""
    if record is None:
        idle = gr.update(interactive=False)
        empty = gr.update(choices=[], value=None)
        return idle, idle, empty, message(language, "head.none"), None, None, None, gr.update(visible=False)
    try:
        view = head_view(
            backend, record, kind, layer, head, None if reset else query, bool(unscaled), language=language
        )
    except Exception as error:  # noqa: BLE001 - the translation stands; the view says what went wrong
        logger.exception("The demo could not compute a head of %r", record.source_text)
        failed = message(language, "head.failed", error=type(error).__name__)
        return gr.update(), gr.update(), gr.update(), failed, None, None, None, gr.update(visible=False)
    return (
        gr.update(choices=view.layers, value=str(view.layer), interactive=True),
        gr.update(choices=view.heads, value=str(view.head), interactive=True),
        gr.update(choices=view.queries, value=str(view.query)),
        view.summary,
        view.computation,
        view.concatenation,
        view.mask,
        gr.update(visible=view.mask is not None),
    )


def drawn_key(record: Any) -> str | None:
    """What names the record a view was drawn for (None: no record): a new translation is a new record."""
    return None if record is None else f"{id(record)}:{record.direction}:{record.source_text}:{record.target_text}"


def head_handler(backend: Any, *, reset: bool, skip_drawn: bool) -> Callable[..., tuple[Any, ...]]:
    """A page function of the view: `head_outputs` and the record's `drawn_key`, in the request's language;
    `reset` starts at the kind's first word (the tab opened, a kind chosen), `skip_drawn` leaves the page as it is
    when the view was drawn for this record already (the tab opened again)."""

    def handle(
        record: Any,
        kind: Any,
        layer: Any,
        head: Any,
        query: Any,
        unscaled: Any,
        drawn: Any = None,
        request: gr.Request = None,
    ) -> tuple[Any, ...]:
        key = drawn_key(record)
        if skip_drawn and key is not None and key == drawn:
            return tuple(gr.skip() for _ in range(9))
        language = request_language(request)
        outputs = head_outputs(backend, record, kind, layer, head, query, unscaled, language=language, reset=reset)
        return (*outputs, key)

    return handle


def wire_head(head: HeadLayout, backend: Any, record_state: gr.State, redraw_events: dict[str, Any]) -> Callable:
    """Attach the view's events; returns the function to call with each translation event. The view is computed
    when its tab is opened (`HeadLayout.tab`) for a record it was not drawn for, so that a translation costs nothing
    here while the tab is closed (the translate button is on another tab); the controls redraw on the user's input
    only (``.input``), not when a redraw sets them."""
    events = {**redraw_events, "concurrency_id": "head", "show_progress": "minimal"}
    inputs = [record_state, head.kind, head.layer, head.head, head.query, head.unscaled, head.drawn]
    outputs = [head.layer, head.head, head.query, head.summary]
    outputs += [head.computation, head.concatenation, head.mask, head.mask_box, head.drawn]
    wired = dict(inputs=inputs, outputs=outputs, **events)
    opened = head_handler(backend, reset=True, skip_drawn=True)
    if head.tab is not None:
        head.tab.select(opened, **wired)
    head.kind.input(head_handler(backend, reset=True, skip_drawn=False), **wired)
    for control in (head.layer, head.head, head.query, head.unscaled):
        control.input(head_handler(backend, reset=False, skip_drawn=False), **wired)

    def after(translation: Any) -> None:
        # A new record has a new `drawn_key`: the next opening of the tab draws it. Without a tab, draw it now.
        if head.tab is None:
            translation.then(opened, **wired)

    return after
