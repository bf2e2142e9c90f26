"""The page's parts for what causes a translation: the "What causes it?" tab (`causes_section`, `wire_causes`) and
the step-by-step view's "why this word and not that one" (`why_section`, `wire_why`); Gradio components and events
only, over the plain functions of `vaswani_demo.causes` (patching), `vaswani_demo.lenses` (the logit and decoder
lenses) and `vaswani_demo.contrast` (the contrast of two candidates).

The tab's first sentence is the session's last translation (filled in after each one, and editable), the second is
typed or comes with a course pair (`causes.COURSE_PAIRS` of the directions served, which also sets the direction).
One click patches (the gradient approximation by default; the exact method reports its progress), shows the
summary and the encoder's heatmap, then draws the other heatmaps from the result kept in the session while both
lenses of the first sentence are read, so that each view is on the page as soon as it is ready. Every
answer is in the request's language; what cannot be computed is said where the result would be.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from vaswani_inspect.patching import SITES

from .answers import request_language
from .causes import COURSE_PAIRS, PATCHING_METHODS, find_causes, site_figure
from .components import download_buttons, figure
from .contrast import step_foils, why_not
from .lenses import read_lenses
from .settings import STATE_TTL_SECONDS
from .steps_view import StepsLayout
from .texts import message, page_text

__all__ = [
    "CausesLayout",
    "WhyLayout",
    "causes_outputs",
    "causes_section",
    "figure_id",
    "foil_choices",
    "lens_outputs",
    "other_figures",
    "why_outputs",
    "why_section",
    "wire_causes",
    "wire_why",
]

#: The site drawn with the summary, and the others, drawn right after it.
FIRST_DRAWN = ("encoder",)
OTHER_SITES = tuple(site for site in SITES if site not in FIRST_DRAWN)


def figure_id(site: str) -> str:
    """The elem_id of the heatmap of patching `site` ("causes-cross-heads")."""
    return "causes-" + site.replace("_", "-")


@dataclass
class CausesLayout:
    """The "What causes it?" tab's components."""

    clean: gr.Textbox
    corrupted: gr.Textbox
    pairs: gr.Examples | None
    method: gr.Radio
    button: gr.Button
    summary: gr.Markdown
    #: the patching heatmaps, by site (`vaswani_inspect.patching.SITES`)
    figures: dict[str, gr.Plot]
    #: the session's last `PatchingResult`, which the heatmaps after the first are drawn from
    result_state: gr.State
    lens: gr.Plot
    lens_note: gr.Markdown
    decoder_lens: gr.Markdown


@dataclass
class WhyLayout:
    """The step-by-step view's "why this word and not that one" components."""

    foil: gr.Dropdown
    button: gr.Button
    summary: gr.Markdown
    figure: gr.Plot


def causes_section(
    directions: tuple[str, ...],
    i18n: gr.I18n,
    downloads: dict[str, tuple[gr.Button, gr.Button]],
    direction: gr.Radio,
) -> CausesLayout:
    """Add the tab's components to the current ``gr.Blocks`` (inside its tab): the course pairs of `directions`
    fill both sentences and `direction` (the translate tab's switch); the figures' download buttons go into
    `downloads`."""
    gr.Markdown(i18n("causes.intro"), elem_classes=["vaswani-hide-in-presentation"])
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            clean = gr.Textbox(
                label=i18n("causes.clean.label"),
                placeholder=i18n("causes.clean.placeholder"),
                lines=1,
                elem_id="causes-clean",
            )
            corrupted = gr.Textbox(
                label=i18n("causes.corrupted.label"),
                placeholder=i18n("causes.corrupted.placeholder"),
                lines=1,
                elem_id="causes-corrupted",
            )
            method = gr.Radio(
                [(i18n(f"causes.method.{name}"), name) for name in PATCHING_METHODS],
                value=PATCHING_METHODS[0],
                label=i18n("causes.method.label"),
                elem_id="causes-method",
            )
            button = gr.Button(i18n("causes.button"), variant="primary", elem_id="causes-button")
        with gr.Column(scale=2):
            served = [list(pair) for pair in COURSE_PAIRS if pair[2] in directions]
            pairs = None
            if served:
                pairs = gr.Examples(
                    served,
                    inputs=[clean, corrupted, direction],
                    label=i18n("causes.pairs.label"),
                    cache_examples=False,
                    example_labels=[f"{a} / {b}  ({d.replace('-', '→')})" for a, b, d in served],
                    elem_id="causes-pairs",
                )
    summary = gr.Markdown(i18n("causes.empty"), elem_id="causes-summary")
    shown: dict[str, gr.Plot] = {}

    def site_figure(site: str) -> None:
        elem_id = figure_id(site)
        shown[site] = figure(i18n(f"causes.{site}.label"), elem_id, show_label=False)
        downloads[elem_id] = download_buttons(i18n, elem_id)

    site_figure("encoder")
    # The heads side by side (cross-attention first: where the decoder reads the source), then the decoder.
    with gr.Row(equal_height=False):
        for site in ("cross_heads", "encoder_heads", "decoder_heads"):
            with gr.Column(scale=1, min_width=300):
                site_figure(site)
    site_figure("decoder")
    gr.Markdown(i18n("causes.lens.intro"), elem_classes=["vaswani-hide-in-presentation"])
    lens_note = gr.Markdown(i18n("lens.none"), elem_id="causes-lens-note")
    lens = figure(i18n("causes.lens.label"), "causes-lens", show_label=False)
    downloads["causes-lens"] = download_buttons(i18n, "causes-lens")
    decoder_lens = gr.Markdown(i18n("causes.decoder_lens.label"), elem_id="causes-decoder-lens")
    return CausesLayout(
        clean=clean,
        corrupted=corrupted,
        pairs=pairs,
        method=method,
        button=button,
        summary=summary,
        figures={site: shown[site] for site in SITES},
        result_state=gr.State(None, time_to_live=STATE_TTL_SECONDS),
        lens=lens,
        lens_note=lens_note,
        decoder_lens=decoder_lens,
    )


def why_section(i18n: gr.I18n, downloads: dict[str, tuple[gr.Button, gr.Button]]) -> WhyLayout:
    """Add "why this word and not that one" to the current ``gr.Blocks`` (inside the step-by-step tab)."""
    gr.Markdown(i18n("why.intro"), elem_classes=["vaswani-hide-in-presentation"])
    with gr.Row(equal_height=True):
        foil = gr.Dropdown([], value=None, label=i18n("why.foil.label"), elem_id="why-foil", scale=3)
        button = gr.Button(i18n("why.button"), elem_id="why-button", scale=1)
    summary = gr.Markdown(i18n("why.none"), elem_id="why-summary")
    shown = figure(i18n("why.figure.label"), "steps-why", show_label=False)
    downloads["steps-why"] = download_buttons(i18n, "steps-why")
    return WhyLayout(foil=foil, button=button, summary=summary, figure=shown)


def _markdown(text: str) -> str:
    """`text` for a ``gr.Markdown``: special tokens (``</s>``, ``>>en<<``) shown, not read as HTML."""
    return html.escape(text, quote=False)


def causes_outputs(
    backend: Any,
    clean: Any,
    corrupted: Any,
    direction: Any,
    method: Any = None,
    *,
    progress: Callable[[int, int], None] | None = None,
    language: str = "en",
) -> tuple[Any, ...]:
    """What the patching event shows: (summary, the encoder heatmap, the result). The other heatmaps follow
    (`other_figures`), so that the first is on the page as soon as the patching is done."""
    answer = find_causes(
        backend, clean, corrupted, direction, method, progress=progress, drawn=FIRST_DRAWN, language=language
    )
    return _markdown(answer.status), answer.figures.get(FIRST_DRAWN[0]), answer.result


def other_figures(result: Any, *, language: str = "en") -> tuple[Any, ...]:
    """The heatmaps of `result`'s other sites (`OTHER_SITES` order; None without a result)."""
    return tuple(None if result is None else site_figure(result, site, language) for site in OTHER_SITES)


def lens_outputs(backend: Any, clean: Any, direction: Any, *, language: str = "en") -> tuple[Any, ...]:
    """What the lens event shows: (logit lens grid, its sentence, the decoder lens table under its title)."""
    answer = read_lenses(backend, clean, direction, language=language)
    table = f"**{page_text(language, 'causes.decoder_lens.label')}**\n\n{_markdown(answer.table)}"
    return answer.figure, _markdown(answer.note), table


def foil_choices(trace: Any, step: Any) -> Any:
    """The candidate dropdown for `step` of `trace`: the step's other candidates, the most probable chosen."""
    offered = step_foils(trace, step)
    return gr.update(choices=offered, value=offered[0][1] if offered else None)


def why_outputs(backend: Any, record: Any, trace: Any, step: Any, foil: Any, *, language: str = "en") -> tuple:
    """What the contrast shows: (sentence, bar figure)."""
    answer = why_not(backend, record, trace, step, foil, language=language)
    return _markdown(answer.summary), answer.figure


def wire_causes(
    causes: CausesLayout,
    backend: Any,
    record_state: gr.State,
    direction: gr.Radio,
    *,
    concurrency_limit: int,
) -> Callable[[Any], None]:
    """Attach the tab's events; returns the function that, given a translation event, puts its sentence in the
    first box once it has finished. Patching and the lenses run the model's copy: they wait in the model's queue
    slot pool (``concurrency_id="model"``), like the ablations."""
    model_events: dict[str, Any] = dict(
        api_visibility="private", concurrency_id="model", concurrency_limit=concurrency_limit
    )

    def patch(
        clean: str,
        corrupted: str,
        chosen_direction: str,
        method: str,
        request: gr.Request | None = None,
        progress: gr.Progress = gr.Progress(),  # noqa: B008 - Gradio's way of asking for a progress bar
    ) -> tuple[Any, ...]:
        language = request_language(request)
        described = message(language, "causes.progress")

        def report(done: int, total: int) -> None:
            progress((done, total), desc=described)

        exact = method == "exhaustive"
        return causes_outputs(
            backend, clean, corrupted, chosen_direction, method, progress=report if exact else None, language=language
        )

    def lenses(clean: str, chosen_direction: str, request: gr.Request | None = None) -> tuple[Any, ...]:
        return lens_outputs(backend, clean, chosen_direction, language=request_language(request))

    def draw_others(result: Any, request: gr.Request | None = None) -> tuple[Any, ...]:
        return other_figures(result, language=request_language(request))

    shown = [causes.summary, causes.figures[FIRST_DRAWN[0]], causes.result_state]
    inputs = [causes.clean, causes.corrupted, direction, causes.method]
    patched = causes.button.click(patch, inputs=inputs, outputs=shown, show_progress="full", **model_events)
    others = [causes.figures[site] for site in OTHER_SITES]
    drawing: dict[str, Any] = dict(api_visibility="private", concurrency_id="causes-drawing", show_progress="minimal")
    patched.then(draw_others, inputs=[causes.result_state], outputs=others, **drawing)
    lens_shown = [causes.lens, causes.lens_note, causes.decoder_lens]
    # The lenses read the first sentence alone: they start with the patching (the copies' lock takes them in turn),
    # not after the heatmaps, so that the grid is not drawn behind four figures.
    causes.button.click(
        lenses, inputs=[causes.clean, direction], outputs=lens_shown, show_progress="minimal", **model_events
    )

    def first_sentence(record: Any) -> Any:
        return record.source_text if record is not None else gr.update()

    def after(translation: Any) -> None:
        translation.then(first_sentence, inputs=[record_state], outputs=[causes.clean], api_visibility="private")

    return after


def wire_why(
    why: WhyLayout, steps: StepsLayout, backend: Any, record_state: gr.State, redraw_events: dict[str, Any]
) -> None:
    """Attach "why this word and not that one": the candidates follow the step shown (and a new trace); the button
    contrasts the chosen one, in the steps' queue slot pool."""
    redraw_events = {**redraw_events, "concurrency_id": "steps"}

    def offer(trace: Any, step: Any) -> Any:
        return foil_choices(trace, step)

    for changed in (steps.slider.change, steps.trace_state.change):
        changed(offer, inputs=[steps.trace_state, steps.slider], outputs=[why.foil], api_visibility="private")

    def contrast(record: Any, trace: Any, step: Any, foil: Any, request: gr.Request | None = None) -> tuple:
        return why_outputs(backend, record, trace, step, foil, language=request_language(request))

    inputs = [record_state, steps.trace_state, steps.slider, why.foil]
    why.button.click(contrast, inputs=inputs, outputs=[why.summary, why.figure], **redraw_events)
