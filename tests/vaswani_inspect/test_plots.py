"""The static matplotlib views of a record (`vaswani_inspect.plots`): heatmaps, layer grids, alignment pictures, and
saving them as PNG or SVG."""

from dataclasses import replace

import pytest
from matplotlib.figure import Figure

from vaswani_inspect import (
    align,
    plot_alignment,
    plot_alignment_links,
    plot_heatmap,
    plot_layer_grid,
    source_words,
    target_words,
)
from vaswani_inspect.plots import save_figure


def test_heatmap_has_tokens_on_both_axes(record, tmp_path):
    figure = plot_heatmap(record, "cross", 1, 2)
    assert isinstance(figure, Figure)
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == record.source_tokens
    assert [t.get_text() for t in ax.get_yticklabels()] == record.target_tokens
    assert "layer 1, head 2" in ax.get_title()
    words = plot_heatmap(record, "encoder", "mean", "mean", words=True, special_tokens="drop").axes[0]
    assert [t.get_text() for t in words.get_xticklabels()] == ["el", "gato", "negro"]
    png = save_figure(figure, tmp_path / "cross.png")
    assert png.read_bytes().startswith(b"\x89PNG")
    svg = save_figure(plot_layer_grid(record, "decoder", 0), tmp_path / "grid.svg")
    assert "<svg" in svg.read_text()
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        save_figure(figure, tmp_path / "cross.pdf")


def test_layer_grid_and_alignment_picture(record):
    grid = plot_layer_grid(record, "cross", -1)
    assert sum(1 for ax in grid.axes if ax.get_title().startswith("head")) == 4
    picture = plot_alignment(record)
    ax = picture.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == source_words(record) == ["el", "gato", "negro"]
    assert [t.get_text() for t in ax.get_yticklabels()] == target_words(record) == ["the", "black", "cat"]
    assert len(ax.patches) == 3  # one argmax link per target word


def test_alignment_links_picture_draws_a_line_per_pair(record):
    figure = plot_alignment_links(record)
    ax = figure.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["el", "gato", "negro", "the", "black", "cat"]  # source row, then target row
    source_y = {t.get_position()[1] for t in ax.texts[:3]}
    target_y = {t.get_position()[1] for t in ax.texts[3:]}
    assert len(source_y) == len(target_y) == 1 and source_y.pop() > target_y.pop()  # source above target
    assert len(ax.lines) == len(align(record)) == 3
    assert "mean of layers, all heads" in ax.get_title()
    one_head = plot_alignment_links(record, 1, [2], shift=True).axes[0]
    assert "layer 1, head 2, shifted" in one_head.get_title()
    ends = sorted((line.get_xdata()[0], line.get_xdata()[1]) for line in one_head.lines)
    x_of = {t.get_text(): t.get_position()[0] for t in ax.texts}
    pairs = align(record, 1, [2], shift=True)
    words_src, words_tgt = source_words(record), target_words(record)
    assert ends == sorted((x_of[words_src[i]], x_of[words_tgt[j]]) for i, j in pairs)


def test_dollar_tokens_do_not_break_matplotlib(record, tmp_path):
    tokens = list(record.source_tokens)
    tokens[1] = "$x"
    figure = plot_heatmap(replace(record, source_tokens=tokens))
    assert [t.get_text() for t in figure.axes[0].get_xticklabels()][1] == r"\$x"
    save_figure(figure, tmp_path / "dollar.png")


def test_bad_plot_arguments(record):
    with pytest.raises(ValueError, match="layer 4 does not exist"):
        plot_heatmap(record, "cross", 4, 0)
    with pytest.raises(ValueError, match="head 4 does not exist"):
        plot_heatmap(record, "encoder", 0, 4)
    with pytest.raises(ValueError, match="Unknown attention kind"):
        plot_layer_grid(record, "both", 0)
    with pytest.raises(ValueError, match="integer index or 'mean'"):
        plot_heatmap(record, "cross", "last", 0)
