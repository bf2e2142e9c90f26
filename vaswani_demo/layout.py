"""The demo page: Gradio components only, top to bottom; what they do is wired in `vaswani_demo.events`.

Every text of the page is a key of the app's `gr.I18n` object (`page_i18n`): the browser shows it in its own
language, Spanish or English (`vaswani_demo.texts`). What the controls offer and start at is the models'
`vaswani_demo.choices.DemoChoices`, read once before the page is built: the direction switch offers the directions
served (one direction: fixed, and its label says which), the course examples are those of these directions, a note
under the title says which model and backend serve each direction, and one in the alignment section says when the
models have no trained aligner. `build_layout(choices, i18n)` must be called
inside a ``gr.Blocks`` context; the ``elem_id`` of each component is what the browser tests and the page style
(`settings.APP_CSS`) select.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gradio as gr
from gradio.i18n import I18nData

from vaswani_inspect.attribution import METHODS
from vaswani_inspect.record import KINDS
from vaswani_inspect.views import view_names

from .causes_view import CausesLayout, WhyLayout, causes_section, why_section
from .choices import DemoChoices
from .components import FIGURE_NAMES, download_buttons, figure
from .contexts_view import ContextsLayout, contexts_section
from .drawing import pair_headers
from .embed import placeholder_html
from .explaining import method_note
from .figures import settings_text
from .head_view import HeadLayout, head_section
from .models import architecture_name
from .positions_view import PositionsLayout, positions_section
from .self_attention import SelfAttentionLayout, self_attention_section, self_attention_translations
from .settings import (
    DIRECTIONS,
    EXAMPLES,
    FAILURE_EXAMPLES,
    MAX_CHARS,
    MODEL_ALIGNER,
    STATE_TTL_SECONDS,
    UNITS,
    VIEWS,
)
from .steps_view import StepsLayout, steps_section
from .texts import DEFAULT_LANGUAGE, LANGUAGES, Named, message, page_texts
from .texts import choices as fixed_choices

__all__ = [
    "FIGURE_NAMES",
    "DemoLayout",
    "aligner_note",
    "build_layout",
    "download_buttons",
    "figure",
    "page_i18n",
    "page_translations",
    "served_note",
]

#: The controls whose choices `page_translations` names, with the values they offer.
_CHOICE_CONTROLS = {"direction": DIRECTIONS, "kind": KINDS, "view": VIEWS, "unit": UNITS, "method": METHODS}


def page_translations(choices: DemoChoices) -> dict[str, dict[str, str]]:
    """Every text of the page, by language and key: `vaswani_demo.texts.PAGE` filled with the models' names and
    limits (``intro``: ours, or another model's), the labels of the controls' choices (``choice.CONTROL.VALUE``,
    the layer and head choices included), the note under the explanation method selector for the method it starts
    at (``method.note``), and the notes on who serves each direction (``served.note``), on a one-direction page's
    switch (``direction.fixed``) and on models without a trained aligner (``aligner.note``)."""
    fields = {"model": choices.model_name, "max_chars": MAX_CHARS, "max_tokens": choices.max_tokens}
    translations = page_texts(fields)
    for language in LANGUAGES:
        named = translations[language]
        if not choices.ours:  # another model's page: its introduction, and a legend without our language tokens
            named["intro"] = named["intro.other"]
            named["legend"] = named["legend.other"]
        for control in _CHOICE_CONTROLS:
            named.update({f"choice.{control}.{value}": label for label, value in fixed_choices(language, control)})
        named.update({f"choice.layer.{value}": label for label, value in choices.layer_options[language]})
        named.update({f"choice.head.{value}": label for label, value in choices.head_options[language]})
        named.update(self_attention_translations(choices, language))
        # The aligner's reading in full under the layer control, whose box may be too narrow for its label.
        named["layer.aligner"] = message(
            language, "layer.aligner", settings=settings_text(choices.alignment_config, language)
        )
        named["method.note"] = method_note(choices, choices.default_method, language)
        named["served.note"] = served_note(choices, language)
        # Spanish writes language names in lower case inside a sentence.
        only = Named("direction", choices.directions[0], lower=language == "es")
        named["direction.fixed"] = message(language, "direction.only", direction=only)
        named["aligner.note"] = aligner_note(choices, language)
    return translations


def served_note(choices: DemoChoices, language: str = DEFAULT_LANGUAGE) -> str:
    """Which model serves each direction, of which architecture, translated by which backend (Markdown, a line
    per model), in `language`."""
    lines = []
    for name in dict.fromkeys(serving.model_name for serving in choices.serving.values()):
        directions = [d for d, serving in choices.serving.items() if serving.model_name == name]
        serving = choices.serving[directions[0]]
        lines.append(
            "- "
            + message(
                language,
                "served.line",
                directions=", ".join(Named("direction", d).told(language) for d in directions),
                model=name,
                architecture=architecture_name(serving.architecture),
                backend=message(language, f"served.{serving.backend}"),
            )
        )
    return "\n".join(lines)


def aligner_note(choices: DemoChoices, language: str = DEFAULT_LANGUAGE) -> str:
    """Where the alignment controls start when the models have no trained aligner, and why, in `language` (""
    when they have one)."""
    if choices.aligner == "trained":
        return ""
    several = len({serving.model_name for serving in choices.serving.values()}) > 1
    which = "aligner.some" if choices.aligner == "some" else "aligner.several" if several else "aligner.one"
    layer = choices.alignment_config["layer"]
    return message(language, "aligner.start", which=message(language, which), layer=layer)


def page_i18n(choices: DemoChoices) -> gr.I18n:
    """The app's `gr.I18n`: `page_translations` for Gradio to show in the browser's language."""
    return gr.I18n(**page_translations(choices))


def _choices(i18n: gr.I18n, control: str, values: list[str] | tuple[str, ...]) -> list[tuple[I18nData, str]]:
    """(translated label, value) pairs of a control, for Gradio."""
    return [(i18n(f"choice.{control}.{value}"), value) for value in values]


@dataclass
class DemoLayout:
    """The components the events read and write."""

    # the page's language switch and presentation mode
    language: gr.Radio
    present: gr.Checkbox
    # translation inputs
    text: gr.Textbox
    direction: gr.Radio
    num_beams: gr.Slider
    max_new_tokens: gr.Slider
    button: gr.Button
    examples: gr.Examples
    failures: gr.Examples | None
    # translation outputs
    translation: gr.Textbox
    status: gr.Textbox
    share_plot: gr.Plot
    record_file: gr.File
    # the explanation method, the note under it (what it reads, how faithful it measured)
    method: gr.Radio
    method_note: gr.Markdown
    # cross-attention (or the method's) heatmap, aligned words as lines, and word pairs
    layer: gr.Dropdown
    head: gr.Dropdown
    shift: gr.Checkbox
    skip_punctuation: gr.Checkbox
    unit: gr.Radio
    plot: gr.Plot
    links: gr.Plot
    pairs: gr.Dataframe
    # the encoder's self-attention over the source words, its layer and head
    self_attention: SelfAttentionLayout
    # the decoder step by step: the step shown, its figures, the beam tree, and the session's decoding trace
    steps: StepsLayout
    # why this word and not that one (in the step-by-step tab), and the "What causes it?" tab
    why: WhyLayout
    causes: CausesLayout
    # switching heads off: one checkbox group per attention kind, and the translations with and without them
    ablate_encoder: gr.CheckboxGroup
    ablate_decoder: gr.CheckboxGroup
    ablate_cross: gr.CheckboxGroup
    ablate_button: gr.Button
    ablation_status: gr.Textbox
    original_translation: gr.Textbox
    original_links: gr.Plot
    ablated_translation: gr.Textbox
    ablated_links: gr.Plot
    # bertviz
    view: gr.Radio
    kind: gr.Radio
    views: gr.HTML
    # the record of the session's last translation, which every redraw reads, and its explanations by method
    record_state: gr.State
    explanations_state: gr.State
    # never shown: what the API's /alignment and /view endpoints hang on (the page draws through its own events)
    api_trigger: gr.Button
    # each figure's download buttons, by the figure's elem_id: (PNG button, SVG button)
    downloads: dict[str, tuple[gr.Button, gr.Button]] = field(default_factory=dict)
    # the lecture's views: one head's computation, the positional encoding, one word in two sentences
    one_head: HeadLayout | None = None
    positions: PositionsLayout | None = None
    contexts: ContextsLayout | None = None


def build_layout(choices: DemoChoices, i18n: gr.I18n) -> DemoLayout:
    """Add the demo's components to the current ``gr.Blocks``, their texts keys of `i18n`, and return them.

    The translate tab shows, top to bottom, the sentence and its translation, the alignment figures (the course's
    picture first), the special tokens' legend and the explanation method; the figure options, the technical
    prose and the rest are folded. The step-by-step view (with "why this word and not that one"), one head's
    computation ("Inside one head"), the positions and contexts, the ablation panel, what causes the translation
    (patching and the lenses, `vaswani_demo.causes_view`) and bertviz have a tab each."""
    downloads: dict[str, tuple[gr.Button, gr.Button]] = {}
    with gr.Row(elem_id="page-controls"):
        with gr.Column(scale=4):
            gr.Markdown(i18n("intro"))
        with gr.Column(scale=1, min_width=200):
            language = gr.Radio(
                [(i18n(f"language.{code}"), code) for code in ("es", "en")],
                value=None,
                label=i18n("language.label"),
                elem_id="language",
            )
            present = gr.Checkbox(False, label=i18n("present.label"), elem_id="present")
    gr.Markdown(i18n("served.note"), elem_id="served", elem_classes=["vaswani-hide-in-presentation"])
    with gr.Tabs(elem_id="tabs"):
        with gr.Tab(i18n("tab.translate"), id="translate", elem_id="tab-translate"):
            # On a phone the left column dissolves (`page_script.PAGE_CSS`): the translation comes right after the
            # button, the examples after the translation.
            with gr.Row(equal_height=False, elem_id="translate-row"):
                with gr.Column(scale=1, elem_id="translate-left"):
                    inputs = _translation_inputs(choices, i18n)
                    with gr.Column(elem_id="examples-block"):
                        examples, failures = _examples(choices, i18n, inputs)
                with gr.Column(scale=1, elem_id="translate-right"):
                    outputs = _translation_outputs(i18n)
                    # The course's picture of the alignment, next to the sentence it aligns.
                    links = figure(i18n("links.label"), "alignment-links", show_label=False)
                    downloads["alignment-links"] = download_buttons(i18n, "alignment-links")
            alignment = _alignment_section(choices, i18n, downloads)
            self_attention = self_attention_section(choices, i18n, downloads)
            with gr.Accordion(i18n("more.label"), open=False, elem_classes=["vaswani-hide-in-presentation"]):
                share_plot = figure(i18n("share.label"), "source-share")
                downloads["source-share"] = download_buttons(i18n, "source-share")
                record_file = gr.File(label=i18n("record.label"), interactive=False, elem_id="record-file")
        with gr.Tab(i18n("tab.steps"), id="steps", elem_id="tab-steps"):
            steps = steps_section(i18n, downloads)
            why = why_section(i18n, downloads)
        with gr.Tab(i18n("tab.head"), id="head", elem_id="tab-head") as head_tab:
            one_head = head_section(i18n, downloads, head_tab)
        with gr.Tab(i18n("tab.positions"), id="positions", elem_id="tab-positions"):
            positions = positions_section(i18n, downloads)
            contexts = contexts_section(choices.directions, i18n, downloads)
        with gr.Tab(i18n("tab.ablation"), id="ablation", elem_id="tab-ablation"):
            ablation = _ablation_section(choices, i18n, downloads)
        with gr.Tab(i18n("tab.causes"), id="causes", elem_id="tab-causes"):
            causes = causes_section(choices.directions, i18n, downloads, inputs["direction"])
        with gr.Tab(i18n("tab.bertviz"), id="bertviz-tab", elem_id="tab-bertviz"):
            bertviz = _bertviz_section(i18n)
    record_state = gr.State(None, time_to_live=STATE_TTL_SECONDS)
    explanations_state = gr.State(None, time_to_live=STATE_TTL_SECONDS)
    api_trigger = gr.Button(visible=False, elem_id="api-trigger")
    return DemoLayout(
        language=language,
        present=present,
        **inputs,
        examples=examples,
        failures=failures,
        **outputs,
        share_plot=share_plot,
        record_file=record_file,
        **alignment,
        links=links,
        self_attention=self_attention,
        steps=steps,
        why=why,
        causes=causes,
        **ablation,
        **bertviz,
        record_state=record_state,
        explanations_state=explanations_state,
        api_trigger=api_trigger,
        downloads=downloads,
        one_head=one_head,
        positions=positions,
        contexts=contexts,
    )


def _examples(choices: DemoChoices, i18n: gr.I18n, inputs: dict[str, Any]) -> tuple[gr.Examples, gr.Examples | None]:
    """The course examples of the directions served, and the failures to discuss of those the shipped checkpoint
    serves (they quote its translations); each label is the sentence and its direction code, the same in both
    languages."""

    def examples(
        rows: tuple[tuple[str, str], ...], label: I18nData, elem_id: str, directions: tuple[str, ...]
    ) -> gr.Examples | None:
        served = [row for row in rows if row[1] in directions]
        if not served:
            return None
        return gr.Examples(
            [list(row) for row in served],
            inputs=[inputs["text"], inputs["direction"]],
            label=label,
            cache_examples=False,
            example_labels=[f"{text}  ({direction.replace('-', '→')})" for text, direction in served],
            elem_id=elem_id,
        )

    course = examples(EXAMPLES, i18n("examples.label"), "course-examples", choices.directions)
    with gr.Group(elem_classes=["vaswani-hide-in-presentation"]):
        failures = examples(FAILURE_EXAMPLES, i18n("failures.label"), "failure-examples", choices.shipped_directions)
        if failures is not None:
            gr.Markdown(i18n("failures.note"), elem_id="failures-note")
    return course, failures


def _translation_inputs(choices: DemoChoices, i18n: gr.I18n) -> dict[str, gr.components.Component]:
    # One line to start with: Enter translates (Gradio submits a one-line box on Enter), Shift+Enter adds a line.
    text = gr.Textbox(
        label=i18n("text.label"),
        placeholder=i18n("text.placeholder"),
        lines=1,
        max_lines=6,
        elem_id="source-text",
    )
    fixed = len(choices.directions) == 1  # one direction served: shown, and said, but not a choice
    direction = gr.Radio(
        _choices(i18n, "direction", choices.directions),
        value=choices.directions[0],
        label=i18n("direction.fixed" if fixed else "direction.label"),
        interactive=not fixed,
        elem_id="direction",
    )
    button = gr.Button(i18n("translate.button"), variant="primary", elem_id="translate-button")
    with gr.Accordion(i18n("decoding.label"), open=False, elem_classes=["vaswani-hide-in-presentation"]):
        num_beams = gr.Slider(
            1, choices.max_beams, value=choices.default_beams, step=1, label=i18n("beams.label"), elem_id="num-beams"
        )
        max_new_tokens = gr.Slider(
            1,
            choices.max_new_tokens_limit,
            value=choices.default_max_new_tokens,
            step=1,
            label=i18n("new_tokens.label"),
            elem_id="max-new-tokens",
        )
    return dict(text=text, direction=direction, num_beams=num_beams, max_new_tokens=max_new_tokens, button=button)


def _translation_outputs(i18n: gr.I18n) -> dict[str, gr.components.Component]:
    translation = gr.Textbox(
        label=i18n("translation.label"), interactive=False, lines=2, buttons=["copy"], elem_id="translation"
    )
    status = gr.Textbox(label=i18n("status.label"), interactive=False, lines=2, elem_id="status")
    return dict(translation=translation, status=status)


def _alignment_section(
    choices: DemoChoices, i18n: gr.I18n, downloads: dict[str, tuple[gr.Button, gr.Button]]
) -> dict[str, gr.components.Component]:
    with gr.Row(equal_height=False):
        with gr.Column(scale=1):
            plot = figure(i18n("plot.label"), "alignment-plot", show_label=False)
            downloads["alignment-plot"] = download_buttons(i18n, "alignment-plot")
        with gr.Column(scale=1):
            gr.Markdown(i18n("legend"), elem_id="token-legend")
            with gr.Group(elem_classes=["vaswani-hide-in-presentation"]):
                method = gr.Radio(
                    _choices(i18n, "method", choices.methods),
                    value=choices.default_method,
                    label=i18n("method.label"),
                    elem_id="method",
                )
                gr.Markdown(i18n("methods.missing"), visible=bool(choices.missing_methods), elem_id="methods-missing")
            controls = _alignment_controls(choices, i18n)
    return dict(method=method, plot=plot, **controls)


def _alignment_controls(choices: DemoChoices, i18n: gr.I18n) -> dict[str, gr.components.Component]:
    """The folded part of the alignment section: the reading's controls and word pairs, then the prose."""
    defaults = choices.defaults
    layers = [value for _, value in choices.layer_options[DEFAULT_LANGUAGE]]
    heads = [value for _, value in choices.head_options[DEFAULT_LANGUAGE]]
    aligner = defaults["layer"] == MODEL_ALIGNER  # the model's aligner reads its own heads: nothing to choose
    with gr.Accordion(i18n("options.label"), open=False, elem_classes=["vaswani-hide-in-presentation"]):
        with gr.Row():
            layer = gr.Dropdown(
                _choices(i18n, "layer", layers),
                value=defaults["layer"],
                label=i18n("layer.label"),
                info=i18n("layer.aligner") if MODEL_ALIGNER in layers else None,
                elem_id="layer",
            )
            head = gr.Dropdown(
                _choices(i18n, "head", heads),
                value=defaults["head"],
                label=i18n("head.label"),
                info=i18n("head.fixed" if aligner else "head.free"),
                interactive=not aligner,
                elem_id="head",
            )
            with gr.Column(min_width=200):
                shift = gr.Checkbox(
                    defaults["shift"], label=i18n("shift.label"), interactive=not aligner, elem_id="shift"
                )
                skip_punctuation = gr.Checkbox(True, label=i18n("skip_punctuation.label"), elem_id="skip-punctuation")
            unit = gr.Radio(_choices(i18n, "unit", UNITS), value="words", label=i18n("unit.label"), elem_id="unit")
        # Gradio's i18n does not translate column names: the page's load event sets them in its language.
        pairs = gr.Dataframe(
            headers=pair_headers(),
            datatype=["str", "str", "number"],
            label=i18n("pairs.label"),
            interactive=False,
            elem_id="alignment-pairs",
        )
    with gr.Accordion(i18n("about.label"), open=False, elem_classes=["vaswani-hide-in-presentation"]):
        gr.Markdown(i18n("alignment.intro"))
        gr.Markdown(i18n("aligner.note"), visible=choices.aligner != "trained", elem_id="aligner-note")
        note = gr.Markdown(i18n("method.note"), elem_id="method-note")
    return dict(
        method_note=note,
        layer=layer,
        head=head,
        shift=shift,
        skip_punctuation=skip_punctuation,
        unit=unit,
        pairs=pairs,
    )


def _ablation_section(
    choices: DemoChoices, i18n: gr.I18n, downloads: dict[str, tuple[gr.Button, gr.Button]]
) -> dict[str, gr.components.Component]:
    gr.Markdown(i18n("ablation.intro"))
    with gr.Row():
        groups = {
            f"ablate_{kind}": gr.CheckboxGroup(
                list(choices.ablation_labels[kind]),
                value=[],
                label=i18n(f"ablate.{kind}.label"),
                elem_id=f"ablate-{kind}",
            )
            for kind in KINDS
        }
    button = gr.Button(i18n("ablate.button"), elem_id="ablate-button")
    status = gr.Textbox(label=i18n("ablation_status.label"), interactive=False, lines=2, elem_id="ablation-status")
    with gr.Row(equal_height=False):
        with gr.Column(scale=1):
            original = gr.Textbox(label=i18n("ablation_original.label"), interactive=False, elem_id="ablation-original")
            original_links = figure(i18n("ablation_original_links.label"), "ablation-original-links", show_label=False)
            downloads["ablation-original-links"] = download_buttons(i18n, "ablation-original-links")
        with gr.Column(scale=1):
            ablated = gr.Textbox(
                label=i18n("ablation_translation.label"), interactive=False, elem_id="ablation-translation"
            )
            ablated_links = figure(i18n("ablation_links.label"), "ablation-links", show_label=False)
            downloads["ablation-links"] = download_buttons(i18n, "ablation-links")
    return dict(
        **groups,
        ablate_button=button,
        ablation_status=status,
        original_translation=original,
        original_links=original_links,
        ablated_translation=ablated,
        ablated_links=ablated_links,
    )


def _bertviz_section(i18n: gr.I18n) -> dict[str, gr.components.Component]:
    gr.Markdown(i18n("bertviz.intro"))
    with gr.Row():
        view = gr.Radio(_choices(i18n, "view", view_names()), value="head", label=i18n("view.label"), elem_id="view")
        kind = gr.Radio(_choices(i18n, "kind", KINDS), value="encoder", label=i18n("kind.label"), elem_id="kind")
    views = gr.HTML(
        placeholder_html(i18n("placeholder")), label=i18n("views.label"), js_on_load=None, elem_id="bertviz"
    )
    return dict(view=view, kind=kind, views=views)
