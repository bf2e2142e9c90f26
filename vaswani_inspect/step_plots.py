"""Pictures of a decoding trace (`vaswani_inspect.steps.DecodingTrace`), with matplotlib on an Agg canvas.

* `plot_step(trace, index)`: one step of the decoder, in three panels: the candidates for the next token (the top-k
  probabilities, the chosen token highlighted), where the new position looks in the source (the aligner's reading,
  over source words), and the output so far as the decoder sees it (each earlier token shaded by the new position's
  self-attention, the future greyed out: the decoder may not look ahead).
* `plot_candidates`, `plot_source_attention`, `plot_prefix`: each of those panels as a small figure of its own
  (the demo's "step by step" view shows them side by side), laid out by hand rather than by matplotlib's
  constrained layout, so that one is drawn and saved in a few tens of milliseconds.
* `write_steps(trace, folder)`: the trace as ``steps.json`` and every figure, SVG and PNG (``hf-vaswani inspect
  --steps``).
* `plot_beam_tree(trace)`: the search tree, left to right by step: each hypothesis a box with its token and
  cumulative log-probability; hypotheses beam search dropped in grey, finished ones with a thick border, the
  winner's path highlighted; optionally one step (`current`) shaded.

Every label and title is in `language` ("en" or "es"), in words a student knows. Fonts stay large so that a figure
scaled down to a phone's width (about 380 pixels) can still be read, and each panel is laid out so that no word
falls outside it (a long bar holds its note, a long caption is wrapped).

Long because the words of every figure, in both languages, are here next to the figures they label.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .plots import new_figure
from .steps import BeamNode, DecodingStep, DecodingTrace

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "LANGUAGES",
    "plot_beam_tree",
    "plot_candidates",
    "plot_prefix",
    "plot_source_attention",
    "plot_step",
    "write_steps",
]

#: The languages figures are labelled in.
LANGUAGES = ("en", "es")

_TEXTS = {
    "en": {
        "step": "Step {n}",
        "candidates": "Step {n}: candidates for the next word",
        "chosen": "chosen",
        "probability": "probability",
        "source": "Where it looks in the source",
        "source_note": "the model's aligner: {reading}",
        "source_mean": "mean of every layer and head",
        "layer": "layer {n}",
        "all_layers": "all layers",
        "head": "head {n}",
        "all_heads": "all heads",
        "shifted": "shifted",
        "target": "What it sees of its output",
        "target_note": "darker = more attention; grey = the future, hidden",
        "new": "?",
        "ended": "The translation had already ended at this step.",
        "tree": "Beam search: {beams} hypotheses kept per step",
        "greedy": "Greedy search: one hypothesis",
        "tree_axis": "step",
        "legend_winner": "the translation",
        "legend_kept": "kept",
        "legend_pruned": "dropped",
        "legend_finished": "finished (</s>)",
        "score": "log-prob {value}",
        "hypothesis": "hypothesis {n} of {count}",
    },
    "es": {
        "step": "Paso {n}",
        "candidates": "Paso {n}: candidatos para la palabra siguiente",
        "chosen": "elegida",
        "probability": "probabilidad",
        "source": "Dónde mira en el original",
        "source_note": "el alineador del modelo: {reading}",
        "source_mean": "media de todas las capas y cabezas",
        "layer": "capa {n}",
        "all_layers": "todas las capas",
        "head": "cabeza {n}",
        "all_heads": "todas las cabezas",
        "shifted": "desplazada",
        "target": "Qué ve de su traducción",
        "target_note": "más oscuro = más atención; gris = el futuro, oculto",
        "new": "?",
        "ended": "La traducción ya había terminado en este paso.",
        "tree": "Búsqueda en haz: {beams} hipótesis por paso",
        "greedy": "Búsqueda voraz: una sola hipótesis",
        "tree_axis": "paso",
        "legend_winner": "la traducción",
        "legend_kept": "sigue",
        "legend_pruned": "descartada",
        "legend_finished": "terminada (</s>)",
        "score": "log-prob {value}",
        "hypothesis": "hipótesis {n} de {count}",
    },
}
_CHOSEN = "#d95f02"  # orange: the chosen token and the winner's path
_OTHER = "#7570b3"  # violet: the other candidates, kept hypotheses
_GREY = "#bdbdbd"
_FONT = 14
#: A candidate's bar longer than this (of the axis, which ends at 1.18) holds its note inside.
_INSIDE_BAR = 0.55


def _texts(language: str) -> dict[str, str]:
    if language not in _TEXTS:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {language!r}.")
    return _TEXTS[language]


def _shown(piece: str) -> str:
    """A piece as a reader sees it: the word-start mark left out, "$" escaped (it would start mathtext)."""
    text = piece.replace("▁", "").replace("$", r"\$")
    return text if text.strip() else piece


def _step_of(trace: DecodingTrace, index: int) -> DecodingStep:
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(trace.steps):
        raise ValueError(f"step index must be in [0, {len(trace.steps)}), got {index!r}.")
    return trace.steps[index]


def _hypothesis_of(step: DecodingStep, hypothesis: int | None) -> int:
    if hypothesis is None:
        return step.chosen_hypothesis if step.chosen_hypothesis is not None else 0
    if not 0 <= hypothesis < len(step.hypotheses):
        raise ValueError(f"hypothesis must be in [0, {len(step.hypotheses)}) at step {step.index}, got {hypothesis}.")
    return hypothesis


def plot_step(trace: DecodingTrace, index: int, *, language: str = "en", hypothesis: int | None = None) -> Figure:
    """One step of the decoder (module docstring) for one live hypothesis: the winner's prefix by default.

    Raises:
        ValueError: an unknown language, a step or hypothesis the trace does not have.
    """
    texts = _texts(language)
    step = _step_of(trace, index)
    row = _hypothesis_of(step, hypothesis)
    figure = new_figure(7.0, 9.0)
    top, middle, bottom = figure.subplots(3, 1, height_ratios=[1.2, 1.0, 0.7])
    _draw_candidates(top, step, row, texts)
    _draw_source(middle, trace, step, row, texts)
    _draw_prefix(bottom, trace, step, row, texts)
    if trace.num_beams > 1:
        figure.suptitle(texts["hypothesis"].format(n=row + 1, count=len(step.hypotheses)), fontsize=_FONT - 2)
    return figure


def _panel_figure(width: float, height: float, margins: dict[str, float]) -> Figure:
    """A one-axes figure of `width` x `height` inches with fixed margins (in inches): no layout engine, whose
    passes cost more than drawing these small panels."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height))
    FigureCanvasAgg(figure)
    figure.subplots_adjust(
        left=margins["left"] / width,
        right=1 - margins["right"] / width,
        bottom=margins["bottom"] / height,
        top=1 - margins["top"] / height,
    )
    figure.add_subplot()
    return figure


def _label_inches(labels: list[str], size: float) -> float:
    """About how wide the longest of `labels` is in inches at font `size` (points): room for tick labels."""
    return max((len(label) for label in labels), default=1) * size * 0.62 / 72


def plot_candidates(trace: DecodingTrace, index: int, *, language: str = "en", hypothesis: int | None = None) -> Figure:
    """The first panel of `plot_step` alone: the candidates for the next token at step `index`, chosen one in
    orange.

    Raises:
        ValueError: an unknown language, a step or hypothesis the trace does not have.
    """
    texts = _texts(language)
    step = _step_of(trace, index)
    row = _hypothesis_of(step, hypothesis)
    labels = [_shown(c.piece) for c in step.candidates[row]]
    left = _label_inches(labels, _FONT) + 0.25
    # The title starts at the axes' left edge: the axes are at least as wide as it.
    title = 0.9 * _label_inches([texts["candidates"].format(n=step.index + 1)], _FONT + 1)
    height = 0.42 * len(labels) + 1.0
    width = left + max(4.6, title + 0.3)
    figure = _panel_figure(width, height, {"left": left, "right": 0.15, "bottom": 0.45, "top": 0.45})
    _draw_candidates(figure.axes[0], step, row, texts)
    return figure


def plot_source_attention(
    trace: DecodingTrace, index: int, *, language: str = "en", hypothesis: int | None = None
) -> Figure:
    """The second panel of `plot_step` alone: where the position of step `index` looks in the source.

    Raises:
        ValueError: an unknown language, a step or hypothesis the trace does not have.
    """
    texts = _texts(language)
    step = _step_of(trace, index)
    row = _hypothesis_of(step, hypothesis)
    labels, _ = _source_weights(trace, step, row)
    width = max(5.0, 0.75 * len(labels) + 1.0)
    lines = len(_wrapped(_source_note(trace, step, row, texts), width - 0.3))
    # Labels turned 30 degrees, then the note's lines.
    below = 0.5 * _label_inches([_shown(label) for label in labels], _FONT) + 0.55 + 0.2 * lines
    figure = _panel_figure(width, 2.6 + below, {"left": 0.3, "right": 0.2, "bottom": below, "top": 0.45})
    _draw_source(figure.axes[0], trace, step, row, texts, width - 0.3)
    return figure


def plot_prefix(trace: DecodingTrace, index: int, *, language: str = "en", hypothesis: int | None = None) -> Figure:
    """The third panel of `plot_step` alone: the output as the position of step `index` sees it, the future
    greyed.

    Raises:
        ValueError: an unknown language, a step or hypothesis the trace does not have.
    """
    texts = _texts(language)
    step = _step_of(trace, index)
    row = _hypothesis_of(step, hypothesis)
    boxes = max(len(trace.target_pieces), len(step.prefixes[row]) + 1)  # the prefix, the new one, the future
    width = max(5.0, 0.85 * max(boxes, 4) + 0.4)
    figure = _panel_figure(width, 1.9, {"left": 0.2, "right": 0.2, "bottom": 0.45, "top": 0.45})
    _draw_prefix(figure.axes[0], trace, step, row, texts)
    return figure


def _draw_candidates(ax: Any, step: DecodingStep, row: int, texts: dict[str, str]) -> None:
    candidates = step.candidates[row]
    chosen_id = step.chosen.token_id if step.chosen is not None and row == step.chosen_hypothesis else None
    labels = [_shown(c.piece) for c in candidates][::-1]
    values = [c.probability for c in candidates][::-1]
    colours = [_CHOSEN if c.token_id == chosen_id else _OTHER for c in candidates][::-1]
    bars = ax.barh(range(len(values)), values, color=colours)
    ax.set_yticks(range(len(values)), labels, fontsize=_FONT)
    ax.set_xlim(0, 1.18)
    ax.set_xticks([0, 0.5, 1], ["0", "50%", "100%"], fontsize=_FONT - 2)
    for bar, value, colour in zip(bars, values, colours):
        note = f"{value:.0%}" + (f"  ← {texts['chosen']}" if colour == _CHOSEN else "")
        middle = bar.get_y() + bar.get_height() / 2
        if value > _INSIDE_BAR:  # a long bar holds its note: beside it, the note would run past the figure
            ax.text(value - 0.02, middle, note, va="center", ha="right", fontsize=_FONT - 1, color="white")
        else:
            ax.text(value + 0.02, middle, note, va="center", fontsize=_FONT - 1)
    ax.set_title(texts["candidates"].format(n=step.index + 1), fontsize=_FONT + 1, loc="left")
    ax.spines[["top", "right"]].set_visible(False)


def _source_weights(trace: DecodingTrace, step: DecodingStep, row: int) -> tuple[list[str], np.ndarray]:
    """(labels, weights) of where the new position looks: the aligner over source words for the chosen token, else
    (another hypothesis, or after the end) the mean over layers and heads of that hypothesis's row over pieces."""
    if row == step.chosen_hypothesis and step.cross_attention.get("aligner_words") is not None:
        return list(trace.source_words), np.asarray(step.cross_attention["aligner_words"], dtype=float)
    weights = np.asarray(step.cross_attention["layers"][row], dtype=float).mean(axis=(0, 1))
    return list(trace.source_pieces), weights


def _source_note(trace: DecodingTrace, step: DecodingStep, row: int, texts: dict[str, str]) -> str:
    """What the source panel reads: the model's aligner (its readings in words), or the mean of every head."""
    if row == step.chosen_hypothesis and step.cross_attention.get("aligner_words") is not None:
        return texts["source_note"].format(reading=_reading_words(trace.settings.get("aligner") or {}, texts))
    return texts["source_mean"]


def _wrapped(text: str, inches: float, size: float = _FONT - 4) -> list[str]:
    """`text` in lines that fit `inches` at font `size` (points), broken between words."""
    import textwrap

    return textwrap.wrap(text, max(12, int(inches * 72 / (size * 0.55)))) or [text]


def _draw_source(
    ax: Any, trace: DecodingTrace, step: DecodingStep, row: int, texts: dict[str, str], inches: float | None = None
) -> None:
    labels, weights = _source_weights(trace, step, row)
    best = int(np.argmax(weights)) if len(weights) else -1
    colours = [_CHOSEN if i == best else _OTHER for i in range(len(weights))]
    ax.bar(range(len(weights)), weights, color=colours)
    ax.set_xticks(range(len(labels)), [_shown(label) for label in labels], fontsize=_FONT, rotation=30, ha="right")
    ax.set_ylim(0, max(1e-6, float(weights.max(initial=0.0))) * 1.2)
    ax.set_yticks([])
    for i, value in enumerate(weights):
        if value >= 0.05:
            ax.text(i, value, f"{value:.0%}", ha="center", va="bottom", fontsize=_FONT - 3)
    ax.set_title(texts["source"], fontsize=_FONT + 1, loc="left")
    note = _source_note(trace, step, row, texts)
    if inches is not None:  # a panel of its own: the note in lines as wide as the figure
        note = "\n".join(_wrapped(note, inches))
    ax.set_xlabel(note, fontsize=_FONT - 4, color="#555555")
    ax.spines[["top", "right", "left"]].set_visible(False)


def _reading_words(reading: dict[str, Any], texts: dict[str, str]) -> str:
    """A reading (`vaswani_inspect.alignment.config`) in the figure's language: "layer 1, head 0, shifted"."""
    parts = []
    for one in [reading, *reading.get("average_with", [])] if reading else []:
        layer = texts["all_layers"] if one["layer"] == "mean" else texts["layer"].format(n=one["layer"])
        heads = one["heads"]
        head = texts["all_heads"] if heads == "all" else texts["head"].format(n=", ".join(str(h) for h in heads))
        parts.append(f"{layer}, {head}" + (f", {texts['shifted']}" if one["shift"] else ""))
    return " + ".join(parts)


def _draw_prefix(ax: Any, trace: DecodingTrace, step: DecodingStep, row: int, texts: dict[str, str]) -> None:
    """The output as the new position sees it: its prefix shaded by self-attention (mean over layers and heads),
    the new position, then the rest of the final translation greyed out (masked)."""
    prefix = step.prefixes[row]
    weights = np.asarray(step.self_attention["layers"][row], dtype=float).mean(axis=(0, 1))
    on_winner = row == step.chosen_hypothesis
    future = trace.target_pieces[len(prefix) + 1 :] if on_winner else []
    boxes = [(p, float(w), "seen") for p, w in zip(prefix, weights)]
    boxes.append((step.chosen.piece if on_winner and step.chosen else texts["new"], 0.0, "new"))
    boxes += [(p, 0.0, "future") for p in future]
    import matplotlib

    shades = matplotlib.colormaps["Blues"]
    top = max(weights.max(initial=0.0), 1e-6)
    for i, (piece, weight, kind) in enumerate(boxes):
        if kind == "seen":
            face, edge, colour = (
                shades(0.15 + 0.8 * weight / top),
                "#333333",
                "white" if weight / top > 0.6 else "black",
            )
        elif kind == "new":
            face, edge, colour = "white", _CHOSEN, _CHOSEN
        else:
            face, edge, colour = "#eeeeee", _GREY, "#9e9e9e"
        ax.add_patch(
            matplotlib.patches.FancyBboxPatch(
                (i + 0.06, 0.1),
                0.88,
                0.8,
                boxstyle="round,pad=0.02",
                facecolor=face,
                edgecolor=edge,
                linewidth=2.5 if kind == "new" else 1.0,
                hatch="//" if kind == "future" else None,
            )
        )
        ax.text(i + 0.5, 0.5, _shown(piece), ha="center", va="center", fontsize=_FONT - 1, color=colour)
    ax.set_xlim(0, max(len(boxes), 4))
    ax.set_ylim(0, 1)
    ax.set_axis_off()
    ax.set_title(texts["target"], fontsize=_FONT + 1, loc="left")
    ax.text(0.0, -0.12, texts["target_note"], transform=ax.transAxes, fontsize=_FONT - 4, color="#555555")


# ---------------------------------------------------------------------------------------------------- the tree


#: Vertical room of a dropped hypothesis in the tree and of one that went on (a box and its score): dropped ones
#: are small grey dots, so that the tree stays short enough to be read at a phone's width.
_PRUNED_ROOM = 0.4
_KEPT_ROOM = 1.8


def _tree_rows(trace: DecodingTrace) -> tuple[dict[int, float], float]:
    """(a vertical position for every node, the height of the tallest step). The nodes of one step are stacked,
    children in their parents' order and, under one parent, the more probable first (so that lines rarely cross)."""
    position: dict[int, float] = {0: 0.0}
    by_depth: dict[int, list[BeamNode]] = {}
    for node in trace.beams[1:]:
        by_depth.setdefault(node.step, []).append(node)
    tallest = _KEPT_ROOM
    for depth in sorted(by_depth):
        nodes = sorted(by_depth[depth], key=lambda n: (-position[n.parent], -n.cumulative_log_probability))
        rooms = [_PRUNED_ROOM if node.status == "pruned" else _KEPT_ROOM for node in nodes]
        total = sum(rooms)
        tallest = max(tallest, total)
        top = total / 2
        for node, room in zip(nodes, rooms):
            position[node.id] = top - room / 2
            top -= room
    return position, tallest


def plot_beam_tree(trace: DecodingTrace, *, language: str = "en", current: int | None = None) -> Figure:
    """The search tree (module docstring): steps left to right, hypotheses as boxes labelled with their token and
    cumulative log-probability; dropped hypotheses are small grey dots with their token in small print. With
    `current` (a step index, from 0, as `plot_step`'s), the hypotheses that step made are shaded.

    Raises:
        ValueError: an unknown language, a `current` step the trace does not have.
    """
    texts = _texts(language)
    if current is not None:
        _step_of(trace, current)
    position, tallest = _tree_rows(trace)
    on_path = {node.id for node in trace.path()}
    steps = max(node.step for node in trace.beams) + 2
    width, height = max(5.0, 1.05 * steps + 0.6), max(3.6, 0.42 * tallest + 2.2)
    # Fixed margins (inches): the title above; the step axis and a two-row legend below.
    figure = _panel_figure(width, height, {"left": 0.2, "right": 0.2, "bottom": 1.45, "top": 0.5})
    ax = figure.axes[0]
    if current is not None:  # step `current` makes the nodes of column current + 1
        ax.axvspan(current + 0.5, current + 1.5, color="#fff3e0", zorder=0)
    for node in trace.beams[1:]:
        parent = trace.beams[node.parent]
        winning = node.id in on_path
        ax.plot(
            [parent.step + 1, node.step + 1],
            [position[parent.id], position[node.id]],
            color=_CHOSEN if winning else (_GREY if node.status == "pruned" else _OTHER),
            linewidth=4.0 if winning else (0.8 if node.status == "pruned" else 1.6),
            zorder=1,
        )
    for node in trace.beams:
        _draw_node(ax, node, position[node.id], node.id in on_path)
    ax.set_xlim(-0.55, steps - 0.45)
    ax.set_ylim(-tallest / 2 - 0.3, tallest / 2 + 0.5)
    ticks = ["<s>"] + [str(s) for s in range(1, steps)]
    ax.set_xticks(range(steps), ticks, fontsize=_FONT)
    ax.set_xlabel(texts["tree_axis"], fontsize=_FONT)
    ax.set_yticks([])
    ax.spines[["top", "right", "left"]].set_visible(False)
    title = texts["tree"].format(beams=trace.num_beams) if trace.num_beams > 1 else texts["greedy"]
    ax.set_title(title, fontsize=_FONT + 2, loc="left")
    _legend(ax, texts)
    return figure


def _draw_node(ax: Any, node: BeamNode, y: float, winning: bool) -> None:
    x = node.step + 1
    if node.status == "pruned":
        ax.plot([x], [y], marker="o", markersize=5, color=_GREY, zorder=2)
        ax.text(x + 0.08, y, _shown(node.piece), ha="left", va="center", fontsize=8, color="#9e9e9e", zorder=2)
        return
    edge = _CHOSEN if winning else _OTHER
    face = "#fdebd8" if winning else "white"
    width = 3.5 if node.status == "finished" else (2.0 if winning else 1.2)
    label = "<s>" if node.parent is None else _shown(node.piece)
    ax.text(
        x,
        y,
        label,
        ha="center",
        va="center",
        fontsize=_FONT + 2,
        fontweight="bold" if winning else "normal",
        bbox={"boxstyle": "round,pad=0.25", "facecolor": face, "edgecolor": edge, "linewidth": width},
        zorder=3,
    )
    if node.parent is not None:
        ax.text(
            x,
            y - 0.4,
            f"{node.cumulative_log_probability:.2f}",
            ha="center",
            va="top",
            fontsize=_FONT - 2,
            color=edge,
            zorder=3,
        )


def _legend(ax: Any, texts: dict[str, str]) -> None:
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color=_CHOSEN, linewidth=3.5, label=texts["legend_winner"]),
        Line2D([], [], color=_OTHER, linewidth=1.2, label=texts["legend_kept"]),
        Line2D([], [], color=_GREY, linewidth=0.8, marker="o", markersize=5, label=texts["legend_pruned"]),
        Line2D(
            [],
            [],
            color="black",
            marker="s",
            markersize=11,
            markerfacecolor="white",
            markeredgewidth=3,
            linestyle="none",
            label=texts["legend_finished"],
        ),
    ]
    ax.legend(
        handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, fontsize=_FONT - 3, frameon=False
    )


def write_steps(trace: DecodingTrace, folder: str | Path, *, language: str = "en") -> dict[str, Path]:
    """Write a trace into `folder`: ``steps.json`` (`DecodingTrace.to_dict`), and under ``steps/`` the beam tree
    (``beam_tree.svg``/``.png``) and one figure per step (``step_01.svg``/``.png``...). Returns {name: path}.

    Raises:
        ValueError: an unknown language; a `folder` that is the current folder (``""``, ``"."``), a folder above
            it, the file system's root or the home folder (as every command refuses them:
            `hf_vaswani.outputs.OutputPlan`).
    """
    from hf_vaswani.outputs import OutputPlan

    _texts(language)
    OutputPlan().folder(folder, "trace folder")  # refuses the working folders before anything is written
    folder = Path(folder)
    figures_folder = folder / "steps"
    figures_folder.mkdir(parents=True, exist_ok=True)
    written = {"steps.json": folder / "steps.json"}
    written["steps.json"].write_text(json.dumps(trace.to_dict(), ensure_ascii=False) + "\n", encoding="utf-8")
    figures = [("beam_tree", plot_beam_tree(trace, language=language))]
    figures += [(f"step_{step.index + 1:02d}", None) for step in trace.steps]
    for name, figure in figures:
        if figure is None:  # drawn one at a time: a long trace holds one step figure in memory, not all
            figure = plot_step(trace, int(name.split("_")[1]) - 1, language=language)
        for extension in ("svg", "png"):
            path = figures_folder / f"{name}.{extension}"
            figure.savefig(path, dpi=110 if extension == "png" else None)
            written[f"steps/{name}.{extension}"] = path
    return written
