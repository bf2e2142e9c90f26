"""The figures of the comparison report (matplotlib, Agg canvas): the head-to-head distance heatmap, the MDS map of
all heads (Clark et al. 2019, Fig. 6), per-head statistics side by side and head categories. matplotlib is imported
when a figure is drawn."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..heads import HeadStats
from ..plots import new_figure
from .comparison import HeadComparison

__all__ = ["STATISTICS", "plot_distance_heatmap", "plot_head_statistics", "plot_mds", "plot_tag_counts"]

#: Statistics drawn side by side in `plot_head_statistics` (fields of `vaswani_inspect.heads.HeadStats`).
STATISTICS: tuple[str, ...] = ("special", "previous", "same", "next", "punctuation", "normalized_entropy")


def plot_distance_heatmap(comparison: HeadComparison) -> Any:
    """Our heads (rows) x BERT heads (columns), mean JS divergence; a white dot marks each row's nearest head."""
    (la, ha), (lb, hb) = comparison.shapes
    figure = new_figure(min(4 + 0.09 * lb * hb, 22), 2 + 0.28 * la * ha)
    ax = figure.add_subplot()
    image = ax.imshow(comparison.distance, cmap="magma_r", aspect="auto", interpolation="nearest", vmin=0.0)
    nearest = np.nanargmin(np.where(np.isnan(comparison.distance), np.inf, comparison.distance), axis=1)
    ax.scatter(nearest, range(len(nearest)), s=14, c="white", edgecolors="black", linewidths=0.5, zorder=3)
    ax.set_yticks(range(la * ha), comparison.labels_a, fontsize=7)
    ax.set_xticks([layer * hb + (hb - 1) / 2 for layer in range(lb)], [f"L{layer}" for layer in range(lb)], fontsize=8)
    for layer in range(1, lb):
        ax.axvline(layer * hb - 0.5, color="white", linewidth=0.6)
    for layer in range(1, la):
        ax.axhline(layer * ha - 0.5, color="white", linewidth=0.6)
    ax.set_xlabel(f"{comparison.names[1]} heads ({comparison.model_names[1]}; layer blocks of {hb} heads)")
    ax.set_ylabel(f"{comparison.names[0]} heads ({comparison.kinds[0]})")
    ax.set_title(f"{comparison.kind}: mean Jensen-Shannon divergence between heads (bits; lower = more alike)")
    figure.colorbar(image, ax=ax, shrink=0.9, label="mean JS divergence")
    return figure


def plot_mds(comparison: HeadComparison) -> Any:
    """Clark et al. Fig. 6: every head of both models placed by MDS on the distance matrix; circles = ours (blue
    shades by layer), triangles = BERT (orange shades by layer); grey lines join each of our heads to its nearest
    BERT head."""
    import matplotlib

    (la, ha), (lb, hb) = comparison.shapes
    na = la * ha
    xy = comparison.mds
    figure = new_figure(8.5, 7)
    ax = figure.add_subplot()
    nearest = comparison.nearest(top=1)
    for i, entry in enumerate(nearest):
        j = na + entry["nearest_layer"] * hb + entry["nearest_index"]
        ax.plot([xy[i, 0], xy[j, 0]], [xy[i, 1], xy[j, 1]], color="0.7", linewidth=0.6, zorder=1)
    blues, oranges = matplotlib.colormaps["Blues"], matplotlib.colormaps["Oranges"]
    layers_a = np.repeat(np.arange(la), ha)
    layers_b = np.repeat(np.arange(lb), hb)
    shade = lambda layers, count: 0.35 + 0.65 * layers / max(count - 1, 1)  # noqa: E731
    ax.scatter(
        xy[na:, 0],
        xy[na:, 1],
        c=oranges(shade(layers_b, lb)),
        marker="^",
        s=28,
        edgecolors="0.3",
        linewidths=0.3,
        zorder=2,
        label=f"{comparison.names[1]} ({comparison.model_names[1]})",
    )
    ax.scatter(
        xy[:na, 0],
        xy[:na, 1],
        c=blues(shade(layers_a, la)),
        marker="o",
        s=48,
        edgecolors="black",
        linewidths=0.6,
        zorder=3,
        label=f"{comparison.names[0]} ({comparison.kinds[0]})",
    )
    if na <= 64:
        for i, label in enumerate(comparison.labels_a):
            ax.annotate(label, xy[i], fontsize=6, xytext=(3, 3), textcoords="offset points", zorder=4)
    ax.legend(loc="best", fontsize=8)
    for cmap, count, name in ((blues, la, comparison.names[0]), (oranges, lb, comparison.names[1])):
        mappable = matplotlib.cm.ScalarMappable(
            norm=matplotlib.colors.Normalize(-0.5, count - 0.5),
            cmap=matplotlib.colors.ListedColormap([cmap(shade(np.array(layer), count)) for layer in range(count)]),
        )
        bar = figure.colorbar(mappable, ax=ax, shrink=0.6, pad=0.01)
        bar.set_label(f"{name} layer")
        bar.set_ticks(range(count))
    ax.set_title(
        f"{comparison.kind}: heads of both models, MDS on mean JS divergence (stress-1 {comparison.mds_stress:.2f})"
    )
    ax.set_xticks([])
    ax.set_yticks([])
    return figure


def _stat_grid(stats: Sequence[HeadStats], name: str, layers: int, heads: int) -> np.ndarray:
    grid = np.full((layers, heads), np.nan)
    for s in stats:
        grid[s.layer, s.head] = getattr(s, name)
    return grid


def plot_head_statistics(comparison: HeadComparison) -> Any:
    """Clark et al. statistics per head, ours (left) and BERT (right), one row per statistic (layers x heads)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    (la, ha), (lb, hb) = comparison.shapes
    figure = Figure(figsize=(11, 1.9 * len(STATISTICS) + 0.8))
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(STATISTICS), 2, squeeze=False, gridspec_kw={"width_ratios": [max(ha, 4), hb]})
    figure.subplots_adjust(left=0.05, right=0.9, top=0.94, bottom=0.04, hspace=0.75, wspace=0.12)
    image = None
    for row, name in enumerate(STATISTICS):
        for column, (stats, layers, heads, model) in enumerate(
            ((comparison.stats_a, la, ha, comparison.names[0]), (comparison.stats_b, lb, hb, comparison.names[1]))
        ):
            ax = axes[row, column]
            values = _stat_grid(stats, name, layers, heads)
            image = ax.imshow(values, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
            ax.set_title(f"{model}: {name}", fontsize=9)
            ax.set_xticks(range(heads), [str(h) for h in range(heads)], fontsize=6)
            ax.set_yticks(range(layers), [str(layer) for layer in range(layers)], fontsize=6)
            ax.set_xlabel("head", fontsize=7, labelpad=1)
            ax.set_ylabel("layer", fontsize=7)
            if heads * layers <= 32:
                for (i, j), value in np.ndenumerate(values):
                    if not np.isnan(value):
                        color = "white" if value < 0.5 else "black"
                        ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=6, color=color)
    figure.colorbar(image, cax=figure.add_axes((0.92, 0.3, 0.015, 0.4)))
    figure.suptitle(f"{comparison.kind}: per-head statistics (word level, special slots kept; 0-based layers)")
    return figure


def plot_tag_counts(comparison: HeadComparison) -> Any:
    """Share of heads per tag (heads.tag_head), ours vs BERT."""
    counts = comparison.tag_counts()
    tags = sorted({t for c in counts.values() for t in c})
    figure = new_figure(7, 3.2)
    ax = figure.add_subplot()
    width = 0.4
    for k, (name, total) in enumerate(zip(comparison.names, (len(comparison.stats_a), len(comparison.stats_b)))):
        shares = [counts[name].get(t, 0) / total for t in tags]
        ax.bar(np.arange(len(tags)) + (k - 0.5) * width, shares, width, label=f"{name} ({total} heads)")
    ax.set_xticks(range(len(tags)), tags, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("share of heads")
    ax.set_title(f"{comparison.kind}: head categories (vaswani_inspect.heads.tag_head)")
    ax.legend(fontsize=8)
    return figure
