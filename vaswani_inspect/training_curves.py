"""The training curves of a run: training loss and validation BLEU against the update step, as one figure."""

from __future__ import annotations

import json
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def plot_training_curves(trainer_state: str | Path, out_png: str | Path) -> Path:
    """Training loss and validation BLEU against the update step, from a checkpoint's `trainer_state.json`."""
    history = json.loads(Path(trainer_state).read_text())["log_history"]
    train = [(row["step"], row["loss"]) for row in history if "loss" in row]
    bleu = [(row["step"], row["eval_bleu"]) for row in history if "eval_bleu" in row]
    if not train:
        raise ValueError(f"{trainer_state} holds no training loss to plot.")
    figure = Figure(figsize=(7, 4), dpi=120)
    FigureCanvasAgg(figure)
    loss_axis = figure.subplots()
    steps, losses = zip(*train)
    loss_axis.plot(steps, losses, color="tab:blue", alpha=0.3, linewidth=0.8)
    # Length-grouped batches alternate between long and short sentences: a running mean shows the trend.
    window = min(8, len(losses))
    smoothed = [
        sum(losses[max(0, i - window + 1) : i + 1]) / len(losses[max(0, i - window + 1) : i + 1])
        for i in range(len(losses))
    ]
    loss_axis.plot(steps, smoothed, color="tab:blue", label="training loss (label-smoothed, running mean)")
    loss_axis.set_xlabel("update step")
    loss_axis.set_ylabel("training loss", color="tab:blue")
    if bleu:
        bleu_axis = loss_axis.twinx()
        bleu_axis.plot(*zip(*bleu), color="tab:red", marker="o", label="validation BLEU")
        bleu_axis.set_ylabel("validation BLEU", color="tab:red")
    figure.suptitle("Training of the shipped checkpoint")
    figure.tight_layout()
    figure.savefig(out_png)
    return Path(out_png)
