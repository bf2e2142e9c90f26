"""What the label-smoothed loss kernel (`hf_vaswani.kernels_vaswani`) buys: ablation against autograd, side by side.

    python benchmarks/bench_loss.py --threads 1

Contenders, interleaved in one process (one thread: process CPU time of each call):

* ``ours``: `label_smoothed_cross_entropy` (sec. 5.4, eps_ls 0.1): on the CPU an `autograd.Function` whose forward
  writes the gradient with respect to the logits chunk by chunk while each chunk is in cache;
* ``torch_cross_entropy``: `F.cross_entropy(logits, labels, label_smoothing=0.1, ignore_index=-100)` over the
  same tokens, differentiated by autograd (what a plain transcription would write).

Two measurements: the loss alone (forward + backward on (64, 16, 8000) logits, a quarter of the labels ignored)
in float32 and bfloat16 logits, and the whole training step of `bench_vs_marian.py` (64 x (16 + 16) tokens,
forward with labels, backward, fused AdamW; sdpa attention in fp32, eager in bf16, as CPU training runs) with the
model's loss switched. The model looks its kernels up in `hf_vaswani.modeling_vaswani`, so that is where the
switch goes. Each ratio is contender / ours (> 1: ours is faster), the median of the per-round ratios.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import torch
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_common import (  # noqa: E402
    ablation_cpu_times,
    benchmark_arguments,
    loadavg,
    machine_info,
    paired_ratio,
    save_and_print,
    training_step_ablation,
)

from hf_vaswani import modeling_vaswani  # noqa: E402

CONTENDERS = ("ours", "torch_cross_entropy")
_OURS = modeling_vaswani.label_smoothed_cross_entropy


def _torch_cross_entropy(
    logits: torch.Tensor, labels: torch.Tensor, smoothing: float, num_items_in_batch: Any = None
) -> torch.Tensor:
    labels = labels.reshape(-1)
    total = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(),
        labels,
        ignore_index=-100,
        label_smoothing=smoothing,
        reduction="sum",
    )
    count = (labels != -100).sum() if num_items_in_batch is None else num_items_in_batch
    return total / count


def _use(contender: str) -> None:
    replacement = _torch_cross_entropy if contender == "torch_cross_entropy" else _OURS
    modeling_vaswani.label_smoothed_cross_entropy = replacement


def measure_loss(dtype: torch.dtype, repeats: int, rows: int, vocab: int) -> dict[str, Any]:
    generator = torch.Generator().manual_seed(0)
    logits = (torch.randn(rows // 16, 16, vocab, generator=generator) * 3).to(dtype)
    labels = torch.randint(4, vocab, (rows // 16, 16), generator=generator)
    labels[:, 12:] = -100

    def call(contender: str) -> None:
        leaf = logits.detach().requires_grad_(True)
        modeling_vaswani.label_smoothed_cross_entropy(leaf, labels, 0.1).backward()

    times = ablation_cpu_times(CONTENDERS, _use, call, repeats)
    return {
        "what": "loss",
        "dtype": str(dtype).replace("torch.", ""),
        "cpu_seconds": {name: statistics.median(times[name]) for name in CONTENDERS},
        "ratio": paired_ratio(times["torch_cross_entropy"], times["ours"]),
    }


def measure_step(size: str, precision: str, repeats: int, batch_size: int) -> dict[str, Any]:
    row = training_step_ablation(size, precision, CONTENDERS, _use, repeats, batch_size)
    return {**row, "what": f"training step, {size}", "dtype": precision, "ratio": row["ratios"]["torch_cross_entropy"]}


def format_table(payload: dict[str, Any]) -> str:
    settings = payload["settings"]
    lines = [
        f"Process CPU time (median of {settings['repeats']} interleaved rounds); loss alone on "
        f"({settings['rows'] // 16}, 16, {settings['vocab']}) logits; training step on {settings['batch']} x "
        "(16 + 16) tokens; ratio = F.cross_entropy / ours (median of per-round ratios)",
        "",
        "| measured | dtype | ours ms | F.cross_entropy ms | ratio | load before → after |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for row in payload["rows"]:
        cpu = row["cpu_seconds"]
        lines.append(
            f"| {row['what']} | {row['dtype']} | {cpu['ours'] * 1e3:.1f} | {cpu['torch_cross_entropy'] * 1e3:.1f} | "
            f"{row['ratio']:.2f} | {row['loadavg_before'][0]:.1f} → {row['loadavg_after'][0]:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args = benchmark_arguments(parser, "loss", "small dims only, 3 rounds, 16 sentences", argv)
    settings = {
        "repeats": 3 if args.quick else 9,
        "batch": 16 if args.quick else 64,
        "rows": 1024,
        "vocab": 8000,
        "sizes": ["small"] if args.quick else ["small", "base"],
    }
    payload: dict[str, Any] = {"benchmark": "loss", "machine": machine_info(), "settings": settings, "rows": []}
    jobs = [("loss", dtype) for dtype in (torch.float32, torch.bfloat16)]
    jobs += [(size, precision) for size in settings["sizes"] for precision in ("fp32", "bf16")]
    for what, kind in jobs:
        print(f"{what}, {kind} ... (load {loadavg()})", flush=True)
        before = loadavg()
        if what == "loss":
            row = measure_loss(kind, settings["repeats"], settings["rows"], settings["vocab"])
        else:
            row = measure_step(what, kind, settings["repeats"], settings["batch"])
        payload["rows"].append({**row, "loadavg_before": before, "loadavg_after": loadavg()})
    save_and_print(args.json, payload, format_table(payload))
    return payload


if __name__ == "__main__":
    main()
