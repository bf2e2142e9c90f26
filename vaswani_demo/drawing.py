"""What the demo draws from an attention record, as plain functions of the record: the cross-attention heatmap with
its aligned word pairs (`alignment`), the pairs alone (`word_pairs`), the aligned words as lines between the two
sentences (`alignment_links`) and the registered views of `vaswani_inspect.views` (bertviz's) in a sandboxed iframe
(`view`). None of them runs the model.

The layer, head and shift choices are the controls' values ("0", "mean", "1,3", "model"; left at None, the model's
configuration that the record carries, or for a model without a trained aligner the demo's starting reading,
`vaswani_demo.readings`), checked against the record's own layers and heads; titles and axis labels are in the
`language` given (`vaswani_demo.figures`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from matplotlib.patches import Rectangle

from vaswani_inspect.alignment.config import alignment_settings
from vaswani_inspect.alignment.links import align, alignment_matrix, source_words, target_words, word_lists
from vaswani_inspect.plots import ANNOTATE_MAX, new_figure, plot_alignment_links, plot_heatmap
from vaswani_inspect.record import KINDS

from .checks import head_choice, layer_choice
from .embed import DRAWING_NOTES, iframe_html, localised_view, placeholder_html, view_entry, view_height
from .figures import label_figure
from .readings import filled_reading
from .settings import MEAN, MODEL_ALIGNER
from .texts import DEFAULT_LANGUAGE, Named, message, page_text

__all__ = [
    "alignment",
    "alignment_links",
    "pair_headers",
    "placeholder",
    "shown_words",
    "view",
    "word_heatmap",
    "word_pairs",
]


def alignment(
    record: Any,
    layer: Any = None,
    head: Any = None,
    unit: str = "words",
    shift: bool | None = None,
    skip_punctuation: bool = True,
    language: str = DEFAULT_LANGUAGE,
) -> tuple[Any, list]:
    """(matplotlib Figure of the cross-attention, aligned word pairs) for a layer choice ("0", "1", ..., "mean", or
    "model": the model's aligner, whatever the head and shift), a head choice ("0", "1,3" or "mean") and `shift`;
    left at None, each is the model's configuration (the record's `alignment`). The figure's title and axes are in
    `language`.

    The pairs are rows ``[target word, source word, weight]``: each target word with the source word its
    cross-attention gives the most weight (`vaswani_inspect.alignment.links.align`, argmax); punctuation words get
    no pair with `skip_punctuation`. Nothing is drawn for `record=None`.
    """
    if record is None:
        return None, []
    settings = _settings(record, layer, head, shift)
    pairs = _pairs(record, settings, skip_punctuation)
    if unit == "words" and pairs is not None:
        figure = word_heatmap(record, settings, skip_punctuation)
        return label_figure(figure, "figure.alignment", settings, language), pairs
    # Token-level heatmaps show one reading: the first of an averaged configuration.
    first = {key: value for key, value in settings.items() if key != "average_with"}
    return label_figure(_token_heatmap(record, first), "figure.tokens", first, language), pairs or []


def word_heatmap(record: Any, settings: dict[str, Any], skip_punctuation: bool = True) -> Any:
    """The word-level cross-attention of `settings` (`alignment_settings`) as a heatmap, each target word's most
    attended source word boxed; with `skip_punctuation` the punctuation words have no row or column at all (they
    would be rows and columns of zeros)."""
    chosen = {**settings, "average_with": settings.get("average_with", [])}
    matrix = alignment_matrix(record, **chosen, skip_punctuation=skip_punctuation)
    links = align(record, **chosen, method="argmax", skip_punctuation=skip_punctuation)
    sources, targets = word_lists(record)
    columns = shown_words(sources.punctuation(), skip_punctuation)
    rows = shown_words(targets.punctuation(), skip_punctuation)
    shown = matrix[np.ix_(rows, columns)]
    row_of, column_of = {j: n for n, j in enumerate(rows)}, {i: n for n, i in enumerate(columns)}
    figure = new_figure(max(4.0, 0.6 * len(columns) + 2.5), max(3.0, 0.45 * len(rows) + 2.2))
    ax = figure.add_subplot()
    image = ax.imshow(shown, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(columns)), [_label(sources.words[i]) for i in columns], rotation=60, ha="right",
                  rotation_mode="anchor", fontsize=10)  # fmt: skip
    ax.set_yticks(range(len(rows)), [_label(targets.words[j]) for j in rows], fontsize=10)
    if max(shown.shape) <= ANNOTATE_MAX:
        for y, x in np.ndindex(*shown.shape):
            value = shown[y, x]
            colour = "black" if value > 0.6 else "white"
            ax.text(x, y, f"{value:.2f}", ha="center", va="center", fontsize=8, color=colour)
    for i, j in links:
        if i in column_of and j in row_of:
            ax.add_patch(Rectangle((column_of[i] - 0.5, row_of[j] - 0.5), 1.0, 1.0, fill=False, edgecolor="red",
                                   linewidth=2.0))  # fmt: skip
    figure.colorbar(image, ax=ax, shrink=0.8)
    return figure


def shown_words(punctuation: list[bool], skip_punctuation: bool) -> list[int]:
    """The indices of the words a figure shows: every word, or with `skip_punctuation` all but punctuation (all of
    them if every word is punctuation, so that the figure is never empty)."""
    kept = [index for index, mark in enumerate(punctuation) if not (skip_punctuation and mark)]
    return kept or list(range(len(punctuation)))


def _label(word: str) -> str:
    # "$" would start matplotlib mathtext.
    return word.replace("$", r"\$")


def word_pairs(
    record: Any, layer: Any = None, head: Any = None, shift: bool | None = None, skip_punctuation: bool = True
) -> list[list[Any]]:
    """The aligned word pairs of `alignment` without its figure (no pairs for `record=None` or a side without
    words)."""
    if record is None:
        return []
    return _pairs(record, _settings(record, layer, head, shift), skip_punctuation) or []


def alignment_links(
    record: Any,
    layer: Any = None,
    head: Any = None,
    shift: bool | None = None,
    skip_punctuation: bool = True,
    language: str = DEFAULT_LANGUAGE,
) -> Any:
    """The aligned words as lines between the two sentences (`vaswani_inspect.plots.plot_alignment_links`), for the
    same choices as `alignment`, titled in `language`; None for no record or a side without words."""
    if record is None or not source_words(record) or not target_words(record):
        return None
    settings = _settings(record, layer, head, shift)
    figure = plot_alignment_links(record, **settings, skip_punctuation=skip_punctuation)
    return label_figure(figure, "figure.links", settings, language)


def view(record: Any, view: str = "head", kind: str = "encoder", language: str = DEFAULT_LANGUAGE) -> str:
    """The view `view` (a name of `vaswani_inspect.views.VIEW_REGISTRY`, else the head view) of one attention kind,
    as a sandboxed iframe titled in `language` (the `placeholder` for None)."""
    if record is None:
        return placeholder(language)
    kind = kind if kind in KINDS else "encoder"
    entry = view_entry(view)
    title = message(language, "view.title", view=Named("view", entry.name, lower=True), kind=Named("kind", kind))
    page = localised_view(entry.render(record, kind), language)
    waiting = DRAWING_NOTES.get(language, DRAWING_NOTES["en"])
    return iframe_html(page, height=view_height(record, entry.name, kind), title=title, waiting=waiting)


def placeholder(language: str = DEFAULT_LANGUAGE) -> str:
    """What the view area shows before the first translation (and when a view cannot be drawn), in `language`."""
    return placeholder_html(page_text(language, "placeholder"))


def pair_headers(language: str = DEFAULT_LANGUAGE) -> list[str]:
    """The column names of the aligned word pairs (rows of `alignment`), in `language`."""
    return [message(language, key) for key in ("pairs.target", "pairs.source", "pairs.weight")]


def _settings(record: Any, layer: Any, head: Any, shift: bool | None) -> dict[str, Any]:
    """`vaswani_inspect.alignment.config.alignment_settings` for the controls' choices: the model's configuration
    (averaged readings included) for the "model" layer choice, else the one reading chosen; for a record of a model
    without a trained aligner, what is not chosen is the demo's starting reading (`readings.filled_reading`)."""
    layers = record.num_layers("cross")
    chosen_layer = layer_choice(layer, layers)
    chosen_heads = head_choice(head, record.num_heads("cross"))
    if record.alignment is None:
        return alignment_settings(record, *filled_reading(layers, chosen_layer, chosen_heads, shift), [])
    if chosen_layer == MODEL_ALIGNER or (chosen_layer is None and chosen_heads is None and shift is None):
        return alignment_settings(record)
    return alignment_settings(record, chosen_layer, chosen_heads, shift, [])


def _pairs(record: Any, settings: dict[str, Any], skip_punctuation: bool) -> list[list[Any]] | None:
    """Rows ``[target word, source word, weight]`` in target order; None when one side has no words (e.g. an empty
    translation)."""
    try:
        matrix = alignment_matrix(record, **settings, skip_punctuation=skip_punctuation)
        links = align(record, **settings, skip_punctuation=skip_punctuation)
    except ValueError:
        return None
    sources, targets = source_words(record), target_words(record)
    return [
        [targets[j], sources[i], round(float(matrix[j, i]), 3)]
        for i, j in sorted(links, key=lambda link: (link[1], link[0]))
    ]


def _token_heatmap(record: Any, settings: dict[str, Any]) -> Any:
    """The subword-level cross-attention of the chosen layer and heads (several heads: their mean)."""
    heads = settings["heads"]
    if heads == "all":
        return plot_heatmap(record, "cross", settings["layer"], MEAN)
    if len(heads) == 1:
        return plot_heatmap(record, "cross", settings["layer"], heads[0])
    chosen = replace(record, decoder=record.decoder[:, heads], cross=record.cross[:, heads])
    return plot_heatmap(chosen, "cross", settings["layer"], MEAN)
