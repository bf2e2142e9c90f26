"""The comparison report: `report.json` (every number), the figures, per-head statistics as CSV, and `index.md`, a
readable summary (`write_compare_report`)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..heads import head_statistics_table
from ..plots import save_figure
from ..report import check_image_format, write_report_folder
from .comparison import HeadComparison
from .plots import plot_distance_heatmap, plot_head_statistics, plot_mds, plot_tag_counts
from .result import CompareResult

__all__ = ["write_compare_report"]

#: The figures of each comparison: name (in file names and in the returned dict) -> (drawing function, caption).
_FIGURES = {
    "distance": (
        plot_distance_heatmap,
        "Distance heatmap: our heads (rows) x BERT heads (columns); dots mark the nearest.",
    ),
    "mds": (
        plot_mds,
        "MDS map of all heads (Clark et al. Fig. 6): near = similar attention. Circles: ours; "
        "triangles: BERT; darker = deeper layer; grey lines: nearest BERT head.",
    ),
    "head_stats": (plot_head_statistics, "Per-head statistics side by side (word level, special slots kept)."),
    "tags": (plot_tag_counts, "Head categories."),
}


def write_compare_report(
    result: CompareResult,
    out_dir: str | Path,
    *,
    image_format: str = "png",
    dpi: int = 110,
    overwrite: bool = False,
) -> dict[str, Path]:
    """Write `report.json` (every number), figures and `index.md` (a readable summary) into the folder `out_dir`.

    Per comparison `{kind}` ("encoder", "decoder"): `{kind}_distance.{fmt}` (heatmap), `{kind}_mds.{fmt}` (map),
    `{kind}_head_stats.{fmt}` (statistics side by side), `{kind}_tags.{fmt}`, and `{kind}_stats_ours.csv` /
    `{kind}_stats_bert.csv` (`vaswani_inspect.heads.head_statistics_table`). Returns {name: path}.

    The folder is written whole (`hf_vaswani.outputs`): into a temporary sibling, renamed into place once every file
    is written. It must not exist or be empty; with `overwrite`, an existing folder is replaced, none of its files
    kept.
    """
    check_image_format(image_format)
    return write_report_folder(out_dir, lambda folder: _write_files(result, folder, image_format, dpi), overwrite)


def _write_files(result: CompareResult, out: Path, image_format: str, dpi: int) -> dict[str, Path]:
    """Every file of the report, into the (empty) folder `out`."""
    written: dict[str, Path] = {}
    clock = time.perf_counter()
    for kind, comparison in result.comparisons.items():
        for name, (plot, _) in _FIGURES.items():
            written[f"{kind}_{name}"] = save_figure(plot(comparison), out / f"{kind}_{name}.{image_format}", dpi=dpi)
        for side, stats in zip(comparison.names, (comparison.stats_a, comparison.stats_b)):
            path = out / f"{kind}_stats_{side}.csv"
            path.write_text(head_statistics_table(stats, "csv"), encoding="utf-8")
            written[f"{kind}_stats_{side}"] = path
    result.timings["report"] = time.perf_counter() - clock
    written["json"] = out / "report.json"
    written["json"].write_text(json.dumps(result.to_dict(), indent=1, ensure_ascii=False, allow_nan=False), "utf-8")
    written["index"] = out / "index.md"
    written["index"].write_text(_markdown(result, written, out), encoding="utf-8")
    return written


def _markdown(result: CompareResult, written: dict[str, Path], out: Path) -> str:
    lines = _markdown_header(result)
    for kind, comparison in result.comparisons.items():
        lines += _markdown_comparison(kind, comparison)
        for name, (_, caption) in _FIGURES.items():
            path = written.get(f"{kind}_{name}")
            if path is not None:
                lines += [f"![{caption}]({path.relative_to(out).as_posix()})", "", f"*{caption}*", ""]
    lines += [
        "## How to read this",
        "",
        "Categories come from `vaswani_inspect.heads.tag_head`: *positional* (>= 50% of the weight on the previous,",
        "same or next word), *special-token* (>= 50% on the two special slots), *broad* (normalised entropy >= 0.8),",
        "else *other*. Layers and heads are numbered from 0. All numbers are in `report.json`.",
        "",
        "Attention is not explanation: a head that looks like a BERT head reads from the same places, which says",
        "nothing certain about what the model computes from them or why it translates as it does.",
        "",
    ]
    return "\n".join(lines)


def _markdown_header(result: CompareResult) -> list[str]:
    """The title, what was compared and how, and the notes of the run."""
    settings = result.settings
    lines = [
        "# Our Transformer's heads vs BERT's heads",
        "",
        "Clark et al. (2019), *What Does BERT Look At?*: do the heads of our small translation Transformer do the same",
        "kinds of things as a pretrained BERT's? Both models read the same English sentences; their attention is",
        "merged to the same words (to a word: sum over its pieces; from a word: mean) and compared head by head.",
        "",
        f"* our model: `{settings['model']}`; {settings.get('bert_family', 'BERT')}: `{settings['bert']}`",
        f"* sentences compared: {len(result.sentences)} of {settings['sentences_read']} read"
        + (f" ({len(result.skipped)} skipped, see `report.json`)" if result.skipped else ""),
        f"* special tokens in the distance: `{settings['specials']}` "
        + (
            "(the start/end slots are dropped and rows renormalised over the words)"
            if settings["specials"] == "drop"
            else "(start<->start, end<->end slots kept)"
        ),
        "* distance: Jensen-Shannon divergence (bits, 0 = same rows, 1 = disjoint), mean over word rows",
    ]
    return lines + [f"* note: {note}" for note in result.notes]


def _markdown_comparison(kind: str, comparison: HeadComparison) -> list[str]:
    """One comparison's section up to its figures: a summary, the head categories and a table of our heads."""
    summary = comparison.summary()
    title = (
        "Encoder (en->es, our encoder reads `>>es<< sentence </s>`) vs BERT"
        if kind == "encoder"
        else "Decoder self-attention (es->en, our decoder reads `<s> sentence </s>`) vs causally masked BERT"
    )
    lines = [
        "",
        f"## {title}",
        "",
        f"{comparison.sentences} sentences, {comparison.words} words, {comparison.rows} word rows compared. "
        f"For {summary['same_tag_as_nearest']} of our {summary['heads_a']} heads the nearest BERT head has the "
        "same category. Median distance from one of our heads to its nearest BERT head: "
        f"{_fmt(summary['a_to_nearest_b_median'])}; from a BERT head to its nearest other BERT head: "
        f"{_fmt(summary['b_to_nearest_b_median'])} (the scale of 'close' inside BERT).",
        "",
        "| category | ours | BERT |",
        "|---|---|---|",
    ]
    counts = comparison.tag_counts()
    ours, bert = (counts[name] for name in comparison.names)
    for tag in sorted({t for c in counts.values() for t in c}):
        lines.append(f"| {tag} | {ours.get(tag, 0)} | {bert.get(tag, 0)} |")
    lines += [
        "",
        "| our head | category | special | prev | next | entropy (norm.) | nearest BERT head | its category | JS |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for stats, entry in zip(comparison.stats_a, comparison.nearest()):
        lines.append(
            f"| {entry['head']} | {_tag(entry['tag'], entry['focus'])} | {stats.special:.2f} "
            f"| {stats.previous:.2f} | {stats.next:.2f} | {stats.normalized_entropy:.2f} | {entry['nearest']} | "
            f"{_tag(entry['nearest_tag'], entry['nearest_focus'])} | {entry['distance']:.3f} |"
        )
    return [*lines, ""]


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _tag(tag: str, focus: str) -> str:
    return f"{tag}/{focus}" if tag == "positional" and focus else tag
