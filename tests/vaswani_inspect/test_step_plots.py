"""The step-by-step figures (`vaswani_inspect.step_plots`) keep every word inside the picture: no label, note or
caption is cut at the figure's edges, in either language, at any step (the shipped checkpoint's aligner averages
two readings: the longest caption)."""

from __future__ import annotations

import pytest

from vaswani_inspect.step_plots import plot_beam_tree, plot_candidates, plot_prefix, plot_source_attention
from vaswani_inspect.steps import trace_decoding


@pytest.fixture(scope="module")
def trace(shipped):
    model, tokenizer = shipped
    return trace_decoding(model, tokenizer, "El gato negro come.", "es-en", num_beams=4)


def _cut_texts(figure) -> list[str]:
    """The texts of `figure` that reach past its edges (a pixel of slack), once drawn: its drawn artists' box
    (`get_tightbbox`) must lie inside the figure; the texts outside are named."""
    from matplotlib.text import Text

    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    drawn, width, height = figure.get_tightbbox(renderer), figure.get_figwidth(), figure.get_figheight()
    slack = 1 / figure.dpi
    if drawn.x0 >= -slack and drawn.y0 >= -slack and drawn.x1 <= width + slack and drawn.y1 <= height + slack:
        return []
    cut = []
    for text in figure.findobj(Text):
        box = text.get_window_extent(renderer)
        if text.get_text().strip() and (box.x0 < -1 or box.y0 < -1 or box.x1 > figure.bbox.width + 1):
            cut.append(text.get_text())
    return cut or [f"drawn {drawn.bounds} outside {width} x {height}"]


@pytest.mark.slow
def test_no_step_figure_cuts_its_words(trace):
    for language in ("en", "es"):
        for index in range(len(trace.steps)):
            for draw in (plot_candidates, plot_source_attention, plot_prefix):
                figure = draw(trace, index, language=language)
                assert _cut_texts(figure) == [], (draw.__name__, language, index)
                assert figure.get_figheight() <= 5  # still a small panel
        assert _cut_texts(plot_beam_tree(trace, language=language)) == [], language
