"""What the demo draws from an explanation method's `Attribution` (`vaswani_inspect.attribution`): its word
heatmap with the links boxed, the links as lines between the two sentences, the word pairs, and the
source-vs-prefix bar. The counterparts of `vaswani_demo.drawing`'s attention pictures, titled in the request's
language; none of them runs the model.

`shown_matrix` applies the punctuation choice as the attention pictures do (punctuation words' rows and columns
zeroed, the other columns renormalised), so that links, boxes, lines and pairs all come from the one matrix drawn.
The heatmap, the bar and the lines are `vaswani_inspect.plots`' figures (`plot_attribution`, `plot_source_share`,
`plot_word_links`: `hf-vaswani explain`'s and `plot_alignment_links`' pictures), titled here.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from vaswani_inspect.alignment.links import word_lists
from vaswani_inspect.attribution import attribution_links
from vaswani_inspect.plots import plot_attribution, plot_source_share, plot_word_links
from vaswani_inspect.words import renormalize_rows

from .drawing import shown_words
from .texts import Named, message

__all__ = ["attribution_heatmap", "attribution_lines", "attribution_pairs", "share_figure", "shown_matrix"]

#: The colour of the alignment links, as `vaswani_inspect.plots` draws them.
_LINK_COLOUR = "tab:blue"
_BOX_COLOUR = "red"


def shown_matrix(attribution: Any, skip_punctuation: bool) -> np.ndarray:
    """The attribution's word matrix as the page shows it: with `skip_punctuation`, punctuation words get zero
    rows and columns and each other row is renormalised over the other source words."""
    matrix = np.array(attribution.matrix, dtype=np.float64)
    if not skip_punctuation:
        return matrix
    source, target = word_lists(attribution.record)
    matrix[:, np.array(source.punctuation(), dtype=bool)] = 0.0
    matrix[np.array(target.punctuation(), dtype=bool), :] = 0.0
    return renormalize_rows(matrix)


def attribution_pairs(attribution: Any, matrix: np.ndarray) -> list[list[Any]]:
    """Rows ``[target word, source word, weight]`` of `matrix`'s links (argmax per target word), in target order,
    as `vaswani_demo.drawing.word_pairs` gives the attention's."""
    sources, targets = attribution.source_words, attribution.target_words
    links = sorted(attribution_links(matrix), key=lambda link: (link[1], link[0]))
    return [[targets[j], sources[i], round(float(matrix[j, i]), 3)] for i, j in links]


def attribution_heatmap(attribution: Any, matrix: np.ndarray, language: str, skip_punctuation: bool = False) -> Any:
    """`matrix` (target words x source words) as a heatmap, each target word's link boxed, titled in
    `language`; with `skip_punctuation` the punctuation words have no row or column at all, as in the attention's
    heatmap (`vaswani_demo.drawing.word_heatmap`)."""
    from matplotlib.patches import Rectangle

    source, target = word_lists(attribution.record)
    rows, columns = (
        shown_words(target.punctuation(), skip_punctuation),
        shown_words(source.punctuation(), skip_punctuation),
    )
    shown = matrix[np.ix_(rows, columns)]
    words = SimpleNamespace(
        method=attribution.method,
        source_words=[attribution.source_words[i] for i in columns],
        target_words=[attribution.target_words[j] for j in rows],
    )
    figure = plot_attribution(words, shown)
    ax = figure.axes[0]
    for i, j in attribution_links(shown):
        ax.add_patch(Rectangle((i - 0.5, j - 0.5), 1.0, 1.0, fill=False, edgecolor=_BOX_COLOUR, linewidth=2.0))
    title = message(language, "figure.attribution", method=Named("method", attribution.method))
    ax.set_title(title, fontsize=10, wrap=True)
    ax.set_xlabel(message(language, "figure.source_words"), fontsize=9)
    ax.set_ylabel(message(language, "figure.target_words"), fontsize=9)
    return figure


def attribution_lines(attribution: Any, matrix: np.ndarray, language: str) -> Any:
    """`matrix`'s links as lines between the two sentences, darker and thicker for a larger weight, titled in
    `language` (`plot_word_links`, the layout of the attention's lines). Words without a link are grey."""
    links = attribution_links(matrix)
    figure = plot_word_links(attribution.source_words, attribution.target_words, matrix, links, color=_LINK_COLOUR)
    ax = figure.axes[0]
    method = Named("method", attribution.method, lower=True)
    ax.set_title(message(language, "figure.attribution_links", method=method), fontsize=10, wrap=True)
    return figure


def share_figure(attribution: Any, chosen: str, language: str) -> Any:
    """A bar per target word: the share of it that `attribution`'s method says comes from the source (below) and
    from the target prefix (above), titled in `language`, saying so when `chosen` (the method the page shows)
    measures no share of its own."""
    figure = plot_source_share(attribution)
    ax = figure.axes[0]
    method = Named("method", attribution.method, lower=True)
    if chosen == attribution.method:
        title = message(language, "figure.share", method=method)
    else:
        title = message(language, "figure.share.instead", method=method)
    ax.set_title(title, fontsize=10, wrap=True)
    ax.set_ylabel(message(language, "figure.share.axis"), fontsize=9)
    # The legend again, in `language` and beside the bars rather than over the tallest ones.
    labels = [message(language, key) for key in ("figure.share.source", "figure.share.prefix")]
    ax.legend(ax.containers[:2], labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure
