"""The head-importance report (`write_importance_report`): `report.json` (every number), `index.md` (the findings
and a table of every head) and figures: per attention kind a layer x head heatmap of each measure
(`plot_importance`), and the pruning curves (`plot_pruning_curves`)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..plots import new_figure, save_figure
from ..record import KINDS
from ..report import check_image_format, write_report_folder
from .result import MEASURES, HeadImportance, HeadScore

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["importance_markdown", "plot_importance", "plot_pruning_curves", "write_importance_report"]

_TITLES = {"encoder": "encoder self-attention", "decoder": "decoder self-attention", "cross": "cross-attention"}
#: The panels of `plot_importance`: HeadScore field -> (title, diverging colour scale around 0).
_PANELS = {
    "bleu_drop": ("BLEU drop, head off", True),
    "chrf_drop": ("chrF drop, head off", True),
    "log_likelihood_drop": ("log-likelihood drop, head off", True),
    "gradient": ("gradient estimate |dL/dmask|", False),
    "confidence": ("confidence (mean max weight)", False),
}
_TAG_LETTERS = {"positional": "P", "special-token": "S", "broad": "B", "other": ""}


def _grid(scores: list[HeadScore], kind: str, name: str) -> np.ndarray:
    chosen = [s for s in scores if s.kind == kind]
    layers = 1 + max(s.layer for s in chosen)
    heads = 1 + max(s.head for s in chosen)
    grid = np.full((layers, heads), np.nan)
    for s in chosen:
        grid[s.layer, s.head] = getattr(s, name)
    return grid


def plot_importance(result: HeadImportance, kind: str) -> Figure:
    """One row of layer x head heatmaps for `kind`: the BLEU, chrF and log-likelihood drops with the head off, the
    gradient estimate and the confidence. Cells carry the value and the head's category letter (P positional,
    S special-token, B broad); a box marks an alignment head."""
    from matplotlib.patches import Rectangle

    chosen = [s for s in result.heads if s.kind == kind]
    layers, heads = 1 + max(s.layer for s in chosen), 1 + max(s.head for s in chosen)
    figure = new_figure(3.1 * len(_PANELS) + 0.5, 0.55 * layers + 2.2)
    axes = figure.subplots(1, len(_PANELS), squeeze=False)[0]
    for ax, (name, (title, diverging)) in zip(axes, _PANELS.items()):
        grid = _grid(result.heads, kind, name)
        finite = grid[np.isfinite(grid)]
        if diverging:
            limit = float(np.abs(finite).max()) if finite.size and np.abs(finite).max() > 0 else 1.0
            image = ax.imshow(grid, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
        else:
            image = ax.imshow(grid, cmap="viridis", aspect="auto")
        for s in chosen:
            value = getattr(s, name)
            letter = _TAG_LETTERS.get(s.tag, "")
            text = (f"{value:.2g}\n{letter}" if letter else f"{value:.2g}") if math.isfinite(value) else ""
            ax.text(s.head, s.layer, text, ha="center", va="center", fontsize=7, color="black")
            if s.alignment:
                ax.add_patch(Rectangle((s.head - 0.5, s.layer - 0.5), 1, 1, fill=False, edgecolor="red", lw=2))
        ax.set_xticks(range(heads), [str(h) for h in range(heads)], fontsize=8)
        ax.set_yticks(range(layers), [str(layer) for layer in range(layers)], fontsize=8)
        ax.set_xlabel("head", fontsize=8)
        ax.set_ylabel("layer", fontsize=8)
        ax.set_title(title, fontsize=9)
        figure.colorbar(image, ax=ax, shrink=0.8)
    figure.suptitle(f"{_TITLES[kind]}: what each head does for the output", fontsize=11)
    return figure


def plot_pruning_curves(result: HeadImportance) -> Figure:
    """BLEU against the share of heads switched off, least important first, one line per curve (Michel et al.
    Fig. 1), with the baseline less one BLEU point dashed."""
    figure = new_figure(6.4, 4.2)
    ax = figure.add_subplot()
    for curve, points in result.curves.items():
        total = max(point.removed for point in points) or 1
        ax.plot(
            [100 * p.removed / total for p in points],
            [p.bleu for p in points],
            marker="o",
            markersize=3,
            label=f"{curve} ({total} heads)",
        )
    baseline = result.baseline["bleu"]
    ax.axhline(baseline - 1.0, color="grey", linestyle="--", linewidth=1, label="baseline - 1 BLEU")
    ax.set_xlabel(f"heads switched off (%), in order of importance ({result.settings.get('prune_by')})")
    ax.set_ylabel("BLEU")
    ax.set_title("Pruning heads, least important first", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return figure


def _number(value: float, digits: int = 2) -> str:
    return "" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def importance_markdown(result: HeadImportance, figures: dict[str, str] | None = None) -> str:
    """The report as Markdown: settings, findings, every head, correlations, pruning, groups, figures."""
    summary = result.summary()
    settings = result.settings
    lines = [
        "# Head importance",
        "",
        f"Model `{settings.get('model') or 'unnamed'}`, {settings['direction']}, {settings['pairs']} sentence pairs, "
        f"beam size {settings['num_beams']}. Baseline: BLEU {_number(result.baseline['bleu'])}, chrF "
        f"{_number(result.baseline['chrf'])}, reference log-likelihood {_number(result.baseline['log_likelihood'])} "
        "(mean per sentence).",
        "",
        *_findings(result, summary),
        "## Every head",
        "",
        "Drops are baseline minus the score with that head alone switched off (positive: the head helped). "
        "Gradient: Michel et al.'s estimate, mean |dL/dmask| per sentence; confidence: mean max attention weight "
        "(Voita et al.); category from `vaswani_inspect.head_statistics`.",
        "",
        "| head | category | confidence | gradient | BLEU drop | chrF drop | log-lik. drop | alignment head |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for s in result.heads:
        category = f"{s.tag} ({s.focus})" if s.focus and s.tag == "positional" else s.tag
        lines.append(
            f"| {s.label} | {category} | {_number(s.confidence)} | {_number(s.gradient, 3)} | {_number(s.bleu_drop)} "
            f"| {_number(s.chrf_drop)} | {_number(s.log_likelihood_drop, 3)} | {'yes' if s.alignment else ''} |"
        )
    lines += ["", *_correlation_lines(result), *_curve_lines(result), *_group_lines(result)]
    for name, path in (figures or {}).items():
        lines += [f"![{name}]({path})", ""]
    lines += [
        "## How to read this",
        "",
        "Attention is not explanation: a head's weights (its category, its confidence) show where it reads from; the",
        "drops show what the output loses without it, on these sentences, with every other head in place. A head",
        "that matters little alone can matter with others gone (the pruning curves and groups). A few changed",
        "translations move BLEU by half a point: read drops under a point as no drop.",
        "",
    ]
    return "\n".join(lines)


def _findings(result: HeadImportance, summary: dict) -> list[str]:
    lines = ["## Findings", ""]
    for curve, count in summary["prunable_heads"].items():
        total = max(point.removed for point in result.curves[curve])
        lines.append(f"* {curve}: {count} of {total} heads can be switched off before BLEU drops more than a point.")
    positional = summary["positional"]
    if positional["heads"]:
        group = next((g for g in result.groups if g.name == "positional heads"), None)
        together = f"; all {len(positional['heads'])} off together: {_number(group.bleu_drop)}" if group else ""
        lines.append(
            f"* Positional heads ({', '.join(positional['heads'])}): mean BLEU drop alone "
            f"{_number(positional['mean_bleu_drop'])}, other heads {_number(positional['mean_bleu_drop_other_heads'])}"
            f"{together}."
        )
    else:
        lines.append("* No head is tagged positional.")
    alignment = summary["alignment"]
    if alignment["heads"]:
        drops = ", ".join(
            f"{label} {_number(drop)} (rank {rank} of {len(result.heads)})"
            for label, drop, rank in zip(alignment["heads"], alignment["bleu_drop"], alignment["rank_by_bleu_drop"])
        )
        lines.append(
            f"* Alignment head(s) (`config.alignment` = {json.dumps(alignment['config'])}): BLEU drop {drops}."
        )
    else:
        lines.append("* The model has no alignment head (`config.alignment` is None).")
    lines.append(f"* Most important by BLEU drop: {', '.join(summary['top_by_bleu_drop'])}.")
    lines.append(f"* Most important by the gradient estimate: {', '.join(summary['top_by_gradient'])}.")
    for estimate in ("gradient", "confidence"):
        rho = summary[f"spearman_{estimate}_vs_drop"]
        lines.append(
            f"* Spearman correlation of the {estimate} with the drops (all heads): "
            + ", ".join(f"{measure} {_number(rho.get(measure))}" for measure in MEASURES)
            + "."
        )
    return [*lines, ""]


def _correlation_lines(result: HeadImportance) -> list[str]:
    lines = ["## Estimates vs. ablation (Spearman)", ""]
    lines += ["Rank correlation of each estimate with the measured drops: 1, the estimate orders heads as switching"]
    lines += ["them off does.", "", "| estimate | heads | " + " | ".join(f"{m} drop" for m in MEASURES) + " |"]
    lines.append("|---|---|" + "---:|" * len(MEASURES))
    for estimate, groups in result.correlations.items():
        for group, values in groups.items():
            lines.append(f"| {estimate} | {group} | " + " | ".join(_number(values.get(m)) for m in MEASURES) + " |")
    return [*lines, ""]


def _curve_lines(result: HeadImportance) -> list[str]:
    if not result.curves:
        return []
    lines = ["## Pruning curves", "", "| curve | heads off: BLEU |", "|---|---|"]
    for curve, points in result.curves.items():
        lines.append(f"| {curve} | " + ", ".join(f"{p.removed}: {_number(p.bleu, 1)}" for p in points) + " |")
    lines += ["", "Order (least important first):", ""]
    for curve, points in result.curves.items():
        lines.append(f"* {curve}: {', '.join(points[-1].heads)}")
    return [*lines, ""]


def _group_lines(result: HeadImportance) -> list[str]:
    if not result.groups:
        return []
    lines = ["## Groups switched off together", "", "| group | heads | BLEU drop | chrF drop | log-lik. drop |"]
    lines.append("|---|---:|---:|---:|---:|")
    for g in result.groups:
        lines.append(
            f"| {g.name} | {len(g.heads)} | {_number(g.bleu_drop)} | {_number(g.chrf_drop)} | "
            f"{_number(g.log_likelihood_drop, 3)} |"
        )
    return [*lines, ""]


def write_importance_report(
    result: HeadImportance,
    out_dir: str | Path,
    *,
    image_format: str = "png",
    dpi: int = 110,
    overwrite: bool = False,
) -> dict[str, Path]:
    """Write `report.json`, `index.md`, `importance_{kind}.{fmt}` per kind and `pruning.{fmt}` (when there are
    curves) into the folder `out_dir`. Returns {name: path}.

    The folder is written whole (`hf_vaswani.outputs`): into a temporary sibling, renamed into place once every file
    is written. It must not exist or be empty; with `overwrite`, an existing folder is replaced, none of its files
    kept.
    """
    check_image_format(image_format)
    return write_report_folder(out_dir, lambda folder: _write_files(result, folder, image_format, dpi), overwrite)


def _write_files(result: HeadImportance, out: Path, image_format: str, dpi: int) -> dict[str, Path]:
    """Every file of the report, into the (empty) folder `out`."""
    written: dict[str, Path] = {}
    for kind in KINDS:
        if any(s.kind == kind for s in result.heads):
            path = out / f"importance_{kind}.{image_format}"
            written[f"importance_{kind}"] = save_figure(plot_importance(result, kind), path, dpi=dpi)
    if result.curves:
        written["pruning"] = save_figure(plot_pruning_curves(result), out / f"pruning.{image_format}", dpi=dpi)
    written["json"] = out / "report.json"
    written["json"].write_text(json.dumps(result.to_dict(), indent=1, ensure_ascii=False), encoding="utf-8")
    figures = {name: path.name for name, path in written.items() if name != "json"}
    written["index"] = out / "index.md"
    written["index"].write_text(importance_markdown(result, figures), encoding="utf-8")
    return written
