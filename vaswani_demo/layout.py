"""The demo page: Gradio components only, top to bottom; what they do is wired in `vaswani_demo.events`.

`build_layout(backend)` must be called inside a ``gr.Blocks`` context; the ``elem_id`` of each component is what the
browser test and the page style (`settings.APP_CSS`) select.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from .backend import DemoBackend
from .embed import PLACEHOLDER_VIEW
from .settings import (
    DIRECTION_CHOICES,
    EXAMPLES,
    KIND_CHOICES,
    KIND_NAMES,
    MAX_BEAMS,
    MAX_CHARS,
    STATE_TTL_SECONDS,
    UNIT_CHOICES,
    VIEW_CHOICES,
)

__all__ = ["PAGE_TITLE", "DemoLayout", "build_layout"]

PAGE_TITLE = "Attention Is All You Need: translate and inspect"


@dataclass
class DemoLayout:
    """The components the events read and write."""

    # translation inputs
    text: gr.Textbox
    direction: gr.Radio
    num_beams: gr.Slider
    max_new_tokens: gr.Slider
    button: gr.Button
    examples: gr.Examples
    # translation outputs
    translation: gr.Textbox
    status: gr.Textbox
    record_file: gr.File
    # cross-attention heatmap, aligned words as lines, and word pairs
    layer: gr.Dropdown
    head: gr.Dropdown
    shift: gr.Checkbox
    skip_punctuation: gr.Checkbox
    unit: gr.Radio
    plot: gr.Plot
    links: gr.Plot
    pairs: gr.Dataframe
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
    # the record of the session's last translation, which every redraw reads
    record_state: gr.State


def build_layout(backend: DemoBackend) -> DemoLayout:
    """Add the demo's components to the current ``gr.Blocks`` and return them."""
    gr.Markdown(
        f"# {PAGE_TITLE}\n"
        "A Transformer (Vaswani et al., 2017) written from scratch as a Hugging Face transformers model, "
        "trained on Tatoeba Spanish ↔ English sentence pairs. Translate a sentence, then look at what its "
        f"attention heads did. Model: `{backend.model_name}`. Limits: {MAX_CHARS} characters and "
        f"{backend.max_tokens} tokens per input."
    )
    with gr.Row(equal_height=False):
        with gr.Column(scale=1):
            inputs = _translation_inputs(backend)
        with gr.Column(scale=1):
            outputs = _translation_outputs()
    examples = gr.Examples(
        [list(example) for example in EXAMPLES],
        inputs=[inputs["text"], inputs["direction"]],
        label="Examples (click one to translate it)",
        cache_examples=False,
        example_labels=[f"{t}  ({'es→en' if d == 'es-en' else 'en→es'})" for t, d in EXAMPLES],
    )
    alignment = _alignment_section(backend)
    ablation = _ablation_section(backend)
    bertviz = _bertviz_section()
    record_state = gr.State(None, time_to_live=STATE_TTL_SECONDS)
    return DemoLayout(
        **inputs, examples=examples, **outputs, **alignment, **ablation, **bertviz, record_state=record_state
    )


def _translation_inputs(backend: DemoBackend) -> dict[str, gr.components.Component]:
    text = gr.Textbox(
        label="Text to translate",
        placeholder="Escribe una frase… / Type a sentence…",
        lines=2,
        max_lines=6,
        elem_id="source-text",
    )
    direction = gr.Radio(DIRECTION_CHOICES, value="es-en", label="Direction", elem_id="direction")
    with gr.Accordion("Decoding options", open=False):
        num_beams = gr.Slider(1, MAX_BEAMS, value=backend.default_beams, step=1, label="Beam size (1 = greedy)")
        max_new_tokens = gr.Slider(
            1,
            backend.max_new_tokens_limit,
            value=backend.default_max_new_tokens,
            step=1,
            label="Maximum length of the translation (tokens)",
        )
    button = gr.Button("Translate", variant="primary", elem_id="translate-button")
    return dict(text=text, direction=direction, num_beams=num_beams, max_new_tokens=max_new_tokens, button=button)


def _translation_outputs() -> dict[str, gr.components.Component]:
    translation = gr.Textbox(label="Translation", interactive=False, lines=2, buttons=["copy"], elem_id="translation")
    status = gr.Textbox(label="Status", interactive=False, lines=2, elem_id="status")
    record_file = gr.File(label="Attention record (JSON)", interactive=False, elem_id="record-file")
    return dict(translation=translation, status=status, record_file=record_file)


def _alignment_section(backend: DemoBackend) -> dict[str, gr.components.Component]:
    gr.Markdown(
        "## Cross-attention: which source words each target word looked at\n"
        "Rows are target words (the attention that *produced* each word, or with *shift* the step where the word "
        "is the decoder input), columns source words; red boxes and lines mark each target word's most attended "
        "source word. The controls start at the model's own alignment configuration. Attention is not an "
        "explanation: a head's weights show where it read from, not why the model chose its words; a head trained "
        "to follow a statistical aligner is an aligner."
    )
    defaults = backend.default_choices()
    with gr.Row():
        layer = gr.Dropdown(backend.layer_choices(), value=defaults["layer"], label="Decoder layer", elem_id="layer")
        head = gr.Dropdown(backend.head_choices(), value=defaults["head"], label="Head", elem_id="head")
        with gr.Column(min_width=200):
            shift = gr.Checkbox(
                defaults["shift"], label="Shift (read each word where it is the decoder input)", elem_id="shift"
            )
            skip_punctuation = gr.Checkbox(True, label="Skip punctuation", elem_id="skip-punctuation")
        unit = gr.Radio(UNIT_CHOICES, value="words", label="Heatmap of", elem_id="unit")
    with gr.Row(equal_height=False):
        plot = gr.Plot(
            label="Cross-attention heatmap", show_label=False, format="png", scale=1, elem_id="alignment-plot"
        )
        with gr.Column(scale=1):
            links = gr.Plot(label="Alignment lines", show_label=False, format="png", elem_id="alignment-links")
            pairs = gr.Dataframe(
                headers=["target word", "source word", "weight"],
                datatype=["str", "str", "number"],
                label="Aligned words",
                interactive=False,
                elem_id="alignment-pairs",
            )
    return dict(
        layer=layer,
        head=head,
        shift=shift,
        skip_punctuation=skip_punctuation,
        unit=unit,
        plot=plot,
        links=links,
        pairs=pairs,
    )


def _ablation_section(backend: DemoBackend) -> dict[str, gr.components.Component]:
    gr.Markdown(
        "## Switch heads off: what does a head do for the translation?\n"
        "Attention weights show where a head reads from, not what it does for the output. Tick heads (layer L, "
        "head H, from 0) and translate the last sentence again with them switched off: their output is zeroed "
        "before the layer's output projection (Michel et al. 2019). The translation and its alignment lines (read "
        "with the choices above) appear next to the ones with every head on. `hf-vaswani head-importance` "
        "measures every head this way on a test set."
    )
    with gr.Row():
        groups = {
            f"ablate_{kind}": gr.CheckboxGroup(
                backend.head_labels(kind), value=[], label=KIND_NAMES[kind], elem_id=f"ablate-{kind}"
            )
            for kind in ("encoder", "decoder", "cross")
        }
    button = gr.Button("Translate with these heads off", elem_id="ablate-button")
    status = gr.Textbox(label="Heads off", interactive=False, lines=2, elem_id="ablation-status")
    with gr.Row(equal_height=False):
        with gr.Column(scale=1):
            original = gr.Textbox(label="Translation, every head on", interactive=False, elem_id="ablation-original")
            original_links = gr.Plot(
                label="Alignment, every head on", show_label=False, format="png", elem_id="ablation-original-links"
            )
        with gr.Column(scale=1):
            ablated = gr.Textbox(
                label="Translation, the ticked heads off", interactive=False, elem_id="ablation-translation"
            )
            ablated_links = gr.Plot(
                label="Alignment, the ticked heads off", show_label=False, format="png", elem_id="ablation-links"
            )
    return dict(
        **groups,
        ablate_button=button,
        ablation_status=status,
        original_translation=original,
        original_links=original_links,
        ablated_translation=ablated,
        ablated_links=ablated_links,
    )


def _bertviz_section() -> dict[str, gr.components.Component]:
    gr.Markdown(
        "## Inside the heads (bertviz)\n"
        "Head view: lines from each token to the tokens it attends to (hover a token; double-click a head "
        "colour to show it alone). Model view: every layer × head at once (click a thumbnail to enlarge). "
        "Decoder rows are labelled with the decoder *input* token: the row of token t predicts token t + 1."
    )
    with gr.Row():
        view = gr.Radio(VIEW_CHOICES, value="head", label="bertviz view", elem_id="view")
        kind = gr.Radio(KIND_CHOICES, value="encoder", label="Attention", elem_id="kind")
    views = gr.HTML(PLACEHOLDER_VIEW, label="bertviz view", js_on_load=None, elem_id="bertviz")
    return dict(view=view, kind=kind, views=views)
