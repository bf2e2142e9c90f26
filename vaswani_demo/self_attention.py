"""The encoder's self-attention on the translate tab: how each source word looks at the others ("gato" and
"negro"), as a word heatmap of one encoder layer and head (or their mean), chosen with two controls like the
alignment figure's, and downloadable as PNG and SVG.

It is drawn from the session's record (`vaswani_inspect.plots.plot_heatmap`: pieces merged into words, the special
tokens left out and each row renormalised), titled in the request's language; it never runs the model. The layout
adds `self_attention_section` to the tab, `page_translations` adds `self_attention_translations`, and the events
draw it after each translation and when a control changes (`wire_self_attention`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from vaswani_inspect.plots import plot_heatmap

from .answers import request_language, warn_on_page
from .choices import DemoChoices
from .components import download_buttons, figure
from .figures import settings_text
from .settings import MEAN
from .texts import DEFAULT_LANGUAGE, message

__all__ = [
    "ENCODER_FIGURE",
    "SelfAttentionLayout",
    "encoder_heatmap",
    "encoder_options",
    "self_attention_section",
    "self_attention_translations",
    "wire_self_attention",
]

logger = logging.getLogger(__name__)

#: The figure's elem_id (its download buttons are ``ENCODER_FIGURE-png`` and ``-svg``).
ENCODER_FIGURE = "encoder-attention-plot"


@dataclass
class SelfAttentionLayout:
    """The section's components: the encoder layer and head controls and the heatmap."""

    layer: gr.Dropdown
    head: gr.Dropdown
    plot: gr.Plot


def encoder_options(choices: DemoChoices, language: str = DEFAULT_LANGUAGE) -> dict[str, list[tuple[str, str]]]:
    """``{"layer": [(label, value), ...], "head": [...]}`` of the section's controls, labels in `language`: the mean
    of all, then each encoder layer (each head) from 0."""
    layers, heads = choices.heads["encoder"]
    return {
        "layer": [(message(language, "layer.mean"), MEAN)]
        + [(message(language, "layer.one", layer=i), str(i)) for i in range(layers)],
        "head": [(message(language, "head.mean"), MEAN)]
        + [(message(language, "head.one", head=i), str(i)) for i in range(heads)],
    }


def self_attention_translations(choices: DemoChoices, language: str) -> dict[str, str]:
    """The controls' choice labels as page texts (``choice.encoder_layer.VALUE``, ``choice.encoder_head.VALUE``)."""
    return {
        f"choice.encoder_{control}.{value}": label
        for control, options in encoder_options(choices, language).items()
        for label, value in options
    }


def self_attention_section(
    choices: DemoChoices, i18n: gr.I18n, downloads: dict[str, tuple[gr.Button, gr.Button]]
) -> SelfAttentionLayout:
    """Add the section to the current ``gr.Blocks`` (the translate tab); its download buttons go into `downloads`.
    The controls start at the last encoder layer, every head averaged."""
    layers, _ = choices.heads["encoder"]
    values = {control: [value for _, value in options] for control, options in encoder_options(choices).items()}
    gr.Markdown(i18n("encoder.intro"), elem_id="encoder-intro")
    with gr.Row():
        layer = gr.Dropdown(
            [(i18n(f"choice.encoder_layer.{value}"), value) for value in values["layer"]],
            value=str(layers - 1),
            label=i18n("encoder.layer.label"),
            elem_id="encoder-layer",
        )
        head = gr.Dropdown(
            [(i18n(f"choice.encoder_head.{value}"), value) for value in values["head"]],
            value=MEAN,
            label=i18n("head.label"),
            elem_id="encoder-head",
        )
    plot = figure(i18n("encoder.label"), ENCODER_FIGURE, show_label=False)
    downloads[ENCODER_FIGURE] = download_buttons(i18n, ENCODER_FIGURE)
    return SelfAttentionLayout(layer=layer, head=head, plot=plot)


def _chosen(value: Any, count: int, default: int | str) -> int | str:
    """A control's value as `plot_heatmap` takes it: "mean", or an index below `count`; `default` for anything
    else (a value the controls do not offer)."""
    if value == MEAN:
        return MEAN
    try:
        index = int(value)
    except (TypeError, ValueError):
        return default
    return index if 0 <= index < count else default


def encoder_heatmap(record: Any, layer: Any = None, head: Any = None, language: str = DEFAULT_LANGUAGE) -> Any:
    """The encoder self-attention of `record` over its source words, for a layer choice ("0", "1", ... or "mean";
    default the last layer) and a head choice (default "mean"), titled and labelled in `language`; None for no
    record."""
    if record is None:
        return None
    layer = _chosen(layer, record.num_layers("encoder"), record.num_layers("encoder") - 1)
    head = _chosen(head, record.num_heads("encoder"), MEAN)
    shown = plot_heatmap(record, "encoder", layer, head, words=True, special_tokens="drop")
    settings = {"layer": layer, "heads": "all" if head == MEAN else [head], "shift": False}
    ax = shown.axes[0]
    described = settings_text(settings, language, with_shift=False)
    ax.set_title(message(language, "figure.encoder", settings=described), fontsize=10, wrap=True)
    ax.set_xlabel(message(language, "figure.encoder.keys"), fontsize=9)
    ax.set_ylabel(message(language, "figure.encoder.queries"), fontsize=9)
    return shown


def wire_self_attention(
    section: SelfAttentionLayout, record_state: gr.State, redraw_events: dict[str, Any]
) -> Callable[[Any], None]:
    """Redraw the heatmap when a control changes; returns the function that, given a translation event, draws it
    once the translation has finished. A figure that cannot be drawn is a warning on the page, never an error."""

    def draw(record: Any, layer: Any, head: Any, request: gr.Request | None = None) -> Any:
        language = request_language(request)
        try:
            return encoder_heatmap(record, layer, head, language)
        except Exception as error:  # noqa: BLE001 - the translation stands; the page says what failed
            logger.exception("The demo could not draw the encoder self-attention")
            warn_on_page(message(language, "failed.attention", error=type(error).__name__))
            return None

    inputs = [record_state, section.layer, section.head]
    for control in (section.layer, section.head):
        control.change(draw, inputs=inputs, outputs=[section.plot], **redraw_events)

    def after(translation: Any) -> None:
        translation.then(draw, inputs=inputs, outputs=[section.plot], **redraw_events)

    return after
