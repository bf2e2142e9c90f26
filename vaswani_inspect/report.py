"""`write_report`: every view of one `AttentionRecord` in a folder, with an index page."""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from hf_vaswani.outputs import OutputPlan

from .alignment import align, alignment_settings, describe_alignment, source_words, target_words, to_pharaoh
from .heads import attention_rollout, head_statistics, head_statistics_table
from .plots import plot_alignment, plot_alignment_links, plot_heatmap, plot_layer_grid, save_figure
from .record import KINDS, AttentionRecord
from .views import VIEW_REGISTRY, save_html


def write_report(
    record: AttentionRecord,
    out_dir: str | Path,
    *,
    image_format: str = "png",
    alignment_layer: int | str | None = None,
    alignment_heads: int | str | Sequence[int] | None = None,
    shift: bool | None = None,
    skip_punctuation: bool = False,
    dpi: int = 110,
    overwrite: bool = False,
) -> dict[str, Path]:
    """Write the inspection report of one record into the folder `out_dir` and return {name: path}.

    The folder is written whole (`hf_vaswani.outputs`): into a temporary sibling, renamed into place once every file
    is written. It must not exist or be empty; with `overwrite`, an existing folder is replaced, none of its files
    kept. Nothing is written when an argument is wrong or a file cannot be written.

    Files:
        `head_view.html`, `model_view.html`: offline bertviz views (encoder, decoder and cross-attention), one
            `{name}_view.html` for each view of `vaswani_inspect.views.VIEW_REGISTRY`;
        `heatmap_{kind}_layer{L}.{fmt}`: each layer's matrix averaged over heads, for the three kinds;
        `heads_{kind}_layer{L}.{fmt}`: every head of each layer (cross-attention only, the alignment heads);
        `heatmap_cross_words.{fmt}`: word-level cross-attention (mean of layers and heads);
        `alignment.{fmt}`, `alignment_links.{fmt}`, `alignment.pharaoh`, `alignment.txt`: the argmax word
            alignment (`align(record, alignment_layer, alignment_heads, shift=shift,
            skip_punctuation=skip_punctuation)`; left at None, layer, heads and shift are the record's model
            configuration) as a heatmap with the links boxed, as lines between the two sentences, in Pharaoh `i-j`
            form and as word pairs (empty, without the pictures, when the translation is empty);
        `rollout_encoder.{fmt}`: encoder attention rollout;
        `head_stats.csv`, `head_stats.md`: per-head statistics and tags;
        `record.json`: the record (`AttentionRecord.load` reads it back);
        `index.html`: links to all of the above.
    `dpi` applies to PNG images.
    """
    if not isinstance(record, AttentionRecord):
        raise TypeError(f"write_report() takes one AttentionRecord, got {type(record).__name__}.")
    check_image_format(image_format)
    settings = alignment_settings(record, alignment_layer, alignment_heads, shift)
    if settings["layer"] != "mean":  # a bad layer or head fails before anything is written
        record.layer_index("cross", settings["layer"])
    for head in [] if settings["heads"] == "all" else settings["heads"]:
        record.head_index("cross", head)
    return write_report_folder(
        out_dir, lambda folder: _write_files(record, folder, settings, image_format, skip_punctuation, dpi), overwrite
    )


def check_image_format(image_format: str) -> None:
    """Refuse an image format the reports do not write (png and svg)."""
    if image_format not in ("png", "svg"):
        raise ValueError(f"image_format must be 'png' or 'svg', got {image_format!r}.")


def write_report_folder(
    out_dir: str | Path, write_files: Callable[[Path], dict[str, Path]], overwrite: bool = False
) -> dict[str, Path]:
    """Write a report folder whole: `write_files(folder)` fills a temporary sibling of `out_dir` and returns
    {name: path}, which is renamed into place once it returns (`hf_vaswani.outputs.OutputPlan`). `out_dir` must not
    exist or be empty; with `overwrite` an existing folder is replaced. Returns {name: path under `out_dir`}."""
    plan = OutputPlan()
    final = plan.folder(out_dir, "report folder", overwrite=overwrite)
    plan.check()
    with plan.writing() as staged:
        folder = staged(final)
        written = write_files(folder)
    return {name: Path(out_dir) / path.relative_to(folder) for name, path in written.items()}


def _write_files(
    record: AttentionRecord,
    out: Path,
    settings: dict,
    image_format: str,
    skip_punctuation: bool,
    dpi: int,
) -> dict[str, Path]:
    """Every file of the report, into the (empty) folder `out`."""
    written: dict[str, Path] = {}

    for view in VIEW_REGISTRY.values():
        written[f"{view.name}_view"] = save_html(view.render(record), out / view.file_name)

    def figure(name: str, fig) -> None:  # noqa: ANN001
        written[name] = save_figure(fig, out / f"{name}.{image_format}", dpi=dpi)

    for kind in KINDS:
        for layer in range(record.num_layers(kind)):
            figure(f"heatmap_{kind}_layer{layer}", plot_heatmap(record, kind, layer, "mean"))
    for layer in range(record.num_layers("cross")):
        figure(f"heads_cross_layer{layer}", plot_layer_grid(record, "cross", layer))
    figure("heatmap_cross_words", plot_heatmap(record, "cross", "mean", "mean", words=True))
    src, tgt = source_words(record), target_words(record)
    if src and tgt:
        figure("alignment", plot_alignment(record, **settings, skip_punctuation=skip_punctuation))
        figure("alignment_links", plot_alignment_links(record, **settings, skip_punctuation=skip_punctuation))

    rollout = replace(record, encoder=attention_rollout(record)[None, None])
    figure("rollout_encoder", plot_heatmap(rollout, "encoder", 0, 0))

    pairs = align(record, **settings, skip_punctuation=skip_punctuation) if src and tgt else []
    written["pharaoh"] = _write(out / "alignment.pharaoh", to_pharaoh(pairs) + "\n")
    skipping = ", punctuation skipped" if skip_punctuation else ""
    lines = [f"# {describe_alignment(settings)}{skipping}, argmax; source_word_idx-target_word_idx"]
    if not (src and tgt):
        lines.append("# no alignment: the source or the translation has no words besides special tokens")
    lines += [f"{i}-{j}\t{src[i]}\t{tgt[j]}" for i, j in pairs]
    written["alignment_pairs"] = _write(out / "alignment.txt", "\n".join(lines) + "\n")

    stats = head_statistics(record)
    written["head_stats_csv"] = _write(out / "head_stats.csv", head_statistics_table(stats, "csv"))
    written["head_stats_md"] = _write(out / "head_stats.md", head_statistics_table(stats, "markdown"))
    written["record"] = record.save(out / "record.json")
    written["index"] = _write(out / "index.html", _index(record, written, out))
    return written


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _index(record: AttentionRecord, written: dict[str, Path], out: Path) -> str:
    items = "\n".join(
        f'<li><a href="{html.escape(path.relative_to(out).as_posix(), quote=True)}">{html.escape(name)}</a></li>'
        for name, path in written.items()
    )
    meta = json.dumps(
        {"model": record.model_name, "direction": record.direction, "generate": record.generate_kwargs},
        ensure_ascii=False,
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Attention report</title></head>\n'
        f"<body><h1>{html.escape(record.source_text)} \u2192 {html.escape(record.target_text)}</h1>\n"
        f"<p><code>{html.escape(meta)}</code></p>\n<ul>\n{items}\n</ul></body></html>\n"
    )


__all__ = ["write_report"]
