"""Components the page builds in several places: a figure (`figure`) with its download buttons
(`download_buttons`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr
from gradio.components.plot import PlotData
from gradio.i18n import I18nData

__all__ = ["FIGURE_NAMES", "download_buttons", "figure"]


#: The figures offered for download, by elem_id: the file name they are saved under.
FIGURE_NAMES = {
    "alignment-links": "alignment-lines",
    "alignment-plot": "alignment-heatmap",
    "source-share": "source-or-prefix",
    "steps-candidates": "step-candidates",
    "steps-attention": "step-attention",
    "steps-target": "step-translation-so-far",
    "steps-tree": "beam-tree",
    "ablation-original-links": "alignment-every-head-on",
    "ablation-links": "alignment-heads-off",
    "steps-why": "why-this-word",
    "causes-encoder": "patching-encoder-positions",
    "causes-decoder": "patching-decoder-positions",
    "causes-encoder-heads": "patching-encoder-heads",
    "causes-decoder-heads": "patching-decoder-heads",
    "causes-cross-heads": "patching-cross-attention-heads",
    "causes-lens": "logit-lens",
    "head-computation": "inside-one-head",
    "head-concat": "heads-through-output-projection",
    "head-mask": "causal-mask",
    "positions-table": "positional-encoding",
    "positions-order": "order-blindness",
    "contexts-figure": "one-word-two-contexts",
    "encoder-attention-plot": "encoder-self-attention",
}


def _svg_for_browsers(postprocess: Callable[[Any], PlotData | None]) -> Callable[[Any], PlotData | None]:
    """A ``gr.Plot`` postprocess that sends matplotlib figures as SVG images the browser shows: Gradio writes the
    data URL of an SVG plot as ``image/svg``, which browsers do not read as SVG; this writes ``image/svg+xml``."""

    def fixed(value: Any) -> PlotData | None:
        data = postprocess(value)
        if data is not None and data.type == "matplotlib" and data.plot.startswith(_GRADIO_SVG):
            data.plot = _SVG + data.plot[len(_GRADIO_SVG) :]
        return data

    return fixed


_GRADIO_SVG, _SVG = "data:image/svg;", "data:image/svg+xml;"


def figure(label: I18nData, elem_id: str, **kwargs: Any) -> gr.Plot:
    """A figure of the page (an SVG image, so that it downloads as SVG and PNG), with its download buttons under
    it (`FIGURE_NAMES`, wired by `vaswani_demo.events`)."""
    plot = gr.Plot(label=label, format="svg", elem_id=elem_id, elem_classes=["vaswani-figure"], **kwargs)
    # On the instance, not a subclass: Gradio would look for a browser component of the subclass's name.
    plot.postprocess = _svg_for_browsers(plot.postprocess)
    return plot


def download_buttons(i18n: gr.I18n, elem_id: str) -> tuple[gr.Button, gr.Button]:
    """The (PNG, SVG) download buttons of the figure `elem_id`, in a row."""
    with gr.Row(elem_classes=["vaswani-downloads"]):
        png = gr.Button(i18n("download.png"), size="sm", variant="secondary", elem_id=f"{elem_id}-png")
        svg = gr.Button(i18n("download.svg"), size="sm", variant="secondary", elem_id=f"{elem_id}-svg")
    return png, svg
