"""Static attention pictures with matplotlib (Agg canvas; no pyplot, no display needed).

Rows are queries and columns keys. For decoder and cross-attention the rows are labelled with the decoder input
token: the row of token t is the attention used to predict token t + 1 (`vaswani_inspect.record`).
`plot_alignment` instead labels rows with the target word they produce, and `plot_alignment_links` draws the
"el gato negro -> the black cat" picture: the two sentences in two rows, a line for each aligned pair.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .alignment.config import alignment_settings, describe_alignment
from .alignment.links import DEFAULT_THRESHOLD, Method, align, alignment_matrix, source_words, target_words
from .record import AttentionRecord, check_kind
from .words import SpecialTokens, to_words

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn, so that importing vaswani_inspect does not need it
    from matplotlib.figure import Figure

#: Matrices up to this many rows and columns get their weights written in the cells.
ANNOTATE_MAX = 12
_TITLES = {"encoder": "encoder self-attention", "decoder": "decoder self-attention", "cross": "cross-attention"}


def _label(token: str) -> str:
    # "$" would start matplotlib mathtext.
    return token.replace("$", r"\$")


def _labels(tokens: Sequence[str], words: bool) -> list[str]:
    return [_label(t.replace("▁", "") if words else t) for t in tokens]


def new_figure(width: float, height: float) -> Figure:
    """An empty figure of `width` x `height` inches on an Agg canvas, laid out with constrained layout."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _draw(ax, matrix: np.ndarray, rows: list[str], columns: list[str], annotate: bool, vmax: float = 1.0):  # noqa: ANN001, ANN202
    image = ax.imshow(matrix, cmap="viridis", vmin=0.0, vmax=vmax, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(columns)), columns, rotation=60, ha="right", rotation_mode="anchor", fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    if annotate:
        for i in range(matrix.shape[0]):
            for j in range(matrix.shape[1]):
                value = matrix[i, j]
                ax.text(
                    j,
                    i,
                    f"{value:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="black" if value > 0.6 * vmax else "white",
                )
    return image


def _prepare(record: AttentionRecord, words: bool, special_tokens: SpecialTokens) -> AttentionRecord:
    if not isinstance(record, AttentionRecord):
        raise TypeError(f"Expected an AttentionRecord, got {type(record).__name__}.")
    return to_words(record, special_tokens=special_tokens) if words and record.level != "word" else record


def plot_heatmap(
    record: AttentionRecord,
    kind: str = "cross",
    layer: int | str = "mean",
    head: int | str = "mean",
    *,
    words: bool = False,
    special_tokens: SpecialTokens = "keep",
    annotate: bool | None = None,
) -> Figure:
    """One attention matrix as a heatmap with tokens (or words) on both axes.

    Args:
        record: the record. kind: `"encoder"`, `"decoder"` or `"cross"`.
        layer: layer index or `"mean"` over layers. head: head index or `"mean"` over heads.
        words: merge pieces into words first (`to_words`, sum-to / mean-from) with `special_tokens`.
        annotate: write the weights in the cells (default: when both sides have at most `ANNOTATE_MAX` tokens).
    """
    check_kind(kind)
    shown = _prepare(record, words, special_tokens)
    matrix = shown.select(kind, layer, head)
    rows = _labels(shown.query_tokens(kind), words)
    columns = _labels(shown.key_tokens(kind), words)
    if annotate is None:
        annotate = max(matrix.shape) <= ANNOTATE_MAX
    figure = new_figure(max(4.0, 0.45 * len(columns) + 2.5), max(3.0, 0.4 * len(rows) + 2.0))
    ax = figure.add_subplot()
    image = _draw(ax, matrix, rows, columns, annotate)
    figure.colorbar(image, ax=ax, shrink=0.8)
    layer_text = "mean of layers" if layer == "mean" else f"layer {shown.layer_index(kind, layer)}"
    head_text = "mean of heads" if head == "mean" else f"head {shown.head_index(kind, head)}"
    ax.set_title(f"{_TITLES[kind]}, {layer_text}, {head_text}", fontsize=10)
    ax.set_xlabel("keys (source)" if kind != "decoder" else "keys (decoder input)", fontsize=9)
    ax.set_ylabel("queries (source)" if kind == "encoder" else "queries (decoder input)", fontsize=9)
    return figure


def plot_layer_grid(
    record: AttentionRecord,
    kind: str = "cross",
    layer: int = 0,
    *,
    words: bool = False,
    special_tokens: SpecialTokens = "keep",
    columns: int = 4,
) -> Figure:
    """Every head of one layer, side by side, on the same 0..1 colour scale."""
    check_kind(kind)
    shown = _prepare(record, words, special_tokens)
    index = shown.layer_index(kind, layer)
    heads = shown.num_heads(kind)
    query_labels = _labels(shown.query_tokens(kind), words)
    key_labels = _labels(shown.key_tokens(kind), words)
    ncols = max(1, min(columns, heads))
    nrows = math.ceil(heads / ncols)
    cell_w = max(2.5, 0.3 * len(key_labels) + 1.2)
    cell_h = max(2.2, 0.28 * len(query_labels) + 1.2)
    figure = new_figure(cell_w * ncols + 1.0, cell_h * nrows + 0.6)
    axes = figure.subplots(nrows, ncols, squeeze=False)
    image = None
    for h in range(nrows * ncols):
        ax = axes[h // ncols][h % ncols]
        if h >= heads:
            ax.set_axis_off()
            continue
        image = _draw(ax, shown.attention(kind)[index, h], query_labels, key_labels, annotate=False)
        ax.set_title(f"head {h}", fontsize=9)
    figure.suptitle(f"{_TITLES[kind]}, layer {index}: all {heads} heads", fontsize=11)
    if image is not None:
        figure.colorbar(image, ax=axes, shrink=0.6)
    return figure


def plot_alignment(
    record: AttentionRecord,
    layer: int | str | None = None,
    heads: int | str | Sequence[int] | None = None,
    *,
    shift: bool | None = None,
    skip_punctuation: bool = False,
    show_links: bool = True,
    average_with: Sequence[dict[str, Any]] | None = None,
) -> Figure:
    """Word-level cross-attention with each row labelled by the target word it produces, alignment links boxed.

    The matrix is `alignment_matrix` (special tokens left out, rows renormalised) and the boxes the
    `align(..., method="argmax")` links, with the same arguments; `layer`, `heads`, `shift` and `average_with` left
    at None come from the record's model (`vaswani_inspect.alignment_settings`).
    """
    settings = alignment_settings(record, layer, heads, shift, average_with)
    chosen = _chosen(settings)
    matrix = alignment_matrix(record, **chosen, skip_punctuation=skip_punctuation)
    rows, columns = [_label(w) for w in target_words(record)], [_label(w) for w in source_words(record)]
    figure = new_figure(max(4.0, 0.6 * len(columns) + 2.5), max(3.0, 0.45 * len(rows) + 2.0))
    ax = figure.add_subplot()
    image = _draw(ax, matrix, rows, columns, annotate=max(matrix.shape) <= ANNOTATE_MAX)
    if show_links:
        for i, j in align(record, **chosen, method="argmax", skip_punctuation=skip_punctuation):
            ax.add_patch(_box(i, j))
    figure.colorbar(image, ax=ax, shrink=0.8)
    ax.set_title(f"cross-attention alignment, {describe_alignment(settings)}", fontsize=10)
    ax.set_xlabel("source words", fontsize=9)
    ax.set_ylabel("target words", fontsize=9)
    return figure


def _chosen(settings: dict[str, Any]) -> dict[str, Any]:
    """`alignment_settings`' result as explicit arguments of `alignment_matrix` and `align` (no averaged readings:
    an empty list, so that the model's are not added)."""
    return {**settings, "average_with": settings.get("average_with", [])}


#: Horizontal room between two words of `plot_alignment_links`, in characters.
_WORD_GAP = 2.0


def plot_alignment_links(
    record: AttentionRecord,
    layer: int | str | None = None,
    heads: int | str | Sequence[int] | None = None,
    *,
    shift: bool | None = None,
    skip_punctuation: bool = False,
    method: Method = "argmax",
    threshold: float = DEFAULT_THRESHOLD,
    average_with: Sequence[dict[str, Any]] | None = None,
) -> Figure:
    """The course's picture of an alignment: the source words in a row above the target words, and a line for
    each aligned pair (`align` with the same arguments), darker and thicker for a larger attention weight.

    Words that get no link (a punctuation mark glued into another word's piece, or skipped punctuation) are grey.
    `layer`, `heads`, `shift` and `average_with` left at None come from the record's model
    (`vaswani_inspect.alignment_settings`).
    """
    settings = alignment_settings(record, layer, heads, shift, average_with)
    chosen = _chosen(settings)
    matrix = alignment_matrix(record, **chosen, skip_punctuation=skip_punctuation)
    pairs = align(record, **chosen, method=method, threshold=threshold, skip_punctuation=skip_punctuation)
    title = f"aligned words, {describe_alignment(settings)}"
    return plot_word_links(source_words(record), target_words(record), matrix, pairs, title)


def plot_word_links(
    sources: Sequence[str],
    targets: Sequence[str],
    matrix: np.ndarray,
    links: Sequence[tuple[int, int]],
    title: str = "",
    color: str = "tab:blue",
) -> Figure:
    """`plot_alignment_links`' picture for any word-level matrix (target words x source words, e.g. an
    `Attribution`'s): the source words above the target words, a line per link `(source word, target word)`,
    darker and thicker for a larger `matrix` weight; words without a link grey."""
    width = max(_row_width(sources), _row_width(targets))
    source_x, target_x = _row_positions(sources, width), _row_positions(targets, width)
    figure = new_figure(min(24.0, max(4.0, 0.13 * width + 1.5)), 2.6)
    ax = figure.add_subplot()
    for i, j in links:
        weight = float(matrix[j, i])
        ax.plot(
            [source_x[i], target_x[j]],
            [0.78, 0.22],
            color=color,
            linewidth=0.8 + 2.5 * weight,
            alpha=0.3 + 0.7 * weight,
            solid_capstyle="round",
        )
    linked_sources, linked_targets = {i for i, _ in links}, {j for _, j in links}
    for words, xs, y, linked, side in (
        (sources, source_x, 0.85, linked_sources, "bottom"),
        (targets, target_x, 0.15, linked_targets, "top"),
    ):
        for k, (word, x) in enumerate(zip(words, xs)):
            ax.text(x, y, _label(word), ha="center", va=side, fontsize=11, color="black" if k in linked else "0.6")
    ax.set_xlim(-1.0, width + 1.0)
    ax.set_ylim(0.0, 1.0)
    ax.set_axis_off()
    ax.set_title(title, fontsize=10)
    return figure


def _row_width(words: Sequence[str]) -> float:
    return sum(max(len(word), 1) + _WORD_GAP for word in words)


def _row_positions(words: Sequence[str], width: float) -> list[float]:
    """The centre of each word of a row, the row centred in `width` (in characters)."""
    x = (width - _row_width(words)) / 2.0
    centres = []
    for word in words:
        size = max(len(word), 1) + _WORD_GAP
        centres.append(x + size / 2.0)
        x += size
    return centres


def _box(i: int, j: int):  # noqa: ANN202
    from matplotlib.patches import Rectangle

    return Rectangle((i - 0.5, j - 0.5), 1.0, 1.0, fill=False, edgecolor="red", linewidth=2.0)


def plot_attribution(attribution: Any, matrix: np.ndarray | None = None) -> Figure:
    """An `Attribution`'s word-level matrix (`vaswani_inspect.attribution`) drawn as the alignment heatmap is:
    target words down, source words across, its own colour scale (0 to the largest cell). `matrix` draws another
    matrix of the same words instead (e.g. one with punctuation left out)."""
    matrix = attribution.matrix if matrix is None else np.asarray(matrix)
    rows, columns = [_label(w) for w in attribution.target_words], [_label(w) for w in attribution.source_words]
    figure = new_figure(max(4.0, 0.55 * len(columns) + 2.5), max(3.0, 0.45 * len(rows) + 1.8))
    ax = figure.add_subplot(1, 1, 1)
    annotate = max(matrix.shape) <= ANNOTATE_MAX
    image = _draw(ax, matrix, rows, columns, annotate, vmax=max(1e-9, float(matrix.max(initial=0.0))))
    figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    ax.set_title(f"{attribution.method}: source words per target word", fontsize=9)
    return figure


def plot_source_share(attribution: Any) -> Figure:
    """A bar per target word of an `Attribution` that measures it (`source_share` not None): the share from the
    source (below) and from the target prefix (above)."""
    if attribution.source_share is None:
        raise ValueError(f"The {attribution.method!r} attribution does not measure a source share.")
    share = np.nan_to_num(attribution.source_share, nan=0.0)
    words = [_label(w) for w in attribution.target_words]
    figure = new_figure(max(4.0, 0.5 * len(words) + 2.0), 3.2)
    ax = figure.add_subplot(1, 1, 1)
    positions = np.arange(len(words))
    ax.bar(positions, share, color="tab:blue", label="source")
    ax.bar(positions, 1.0 - share, bottom=share, color="tab:orange", alpha=0.6, label="target prefix")
    ax.axhline(0.5, color="black", linewidth=0.6, linestyle=":")
    ax.set_xticks(positions, words, rotation=60, ha="right", rotation_mode="anchor", fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("share")
    ax.set_title(f"{attribution.method}: where each target word comes from", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    return figure


def save_figure(figure: Figure, path: str | Path, dpi: int = 150) -> Path:
    """Save as PNG or SVG (chosen by the file suffix) and return the path."""
    path = Path(path)
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in ("png", "svg"):
        raise ValueError(f"Save figures as .png or .svg, got {path.name!r}.")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format=suffix, dpi=dpi)
    return path


__all__ = [
    "ANNOTATE_MAX",
    "new_figure",
    "plot_alignment",
    "plot_alignment_links",
    "plot_attribution",
    "plot_heatmap",
    "plot_layer_grid",
    "plot_source_share",
    "plot_word_links",
    "save_figure",
]
