"""What the CPU dropout kernel (`hf_vaswani.kernels_vaswani.dropout`) buys in a whole training step: ablation.

    python benchmarks/bench_dropout.py --threads 1

Contenders, interleaved in one process on the same model and batch (64 sentences x (16 + 16) tokens, vocab 8k,
the training step of `bench_vs_marian.py`: forward with labels, backward, fused AdamW; sdpa attention in fp32,
eager in bf16, as CPU training runs):

* ``ours``: the model as shipped, whose dropout (sec. 5.4, P_drop = 0.1) draws one 32-bit random number per two
  elements on the CPU;
* ``torch_dropout``: the same model with every dropout call replaced by `torch.nn.functional.dropout`.

The model looks its kernels up in `hf_vaswani.modeling_vaswani`, so that is where the replacement goes. Each ratio
is contender time / ours (> 1: the kernel helps), from the process CPU time of each step (one thread).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import torch
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_common import benchmark_arguments, run_training_step_ablations, save_and_print  # noqa: E402

from hf_vaswani import modeling_vaswani  # noqa: E402

CONTENDERS = ("ours", "torch_dropout")
_OURS = modeling_vaswani.dropout


def _torch_dropout(hidden_states: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    return F.dropout(hidden_states, p=p, training=training)


def _use(contender: str) -> None:
    modeling_vaswani.dropout = _torch_dropout if contender == "torch_dropout" else _OURS


def format_table(payload: dict[str, Any]) -> str:
    settings = payload["settings"]
    lines = [
        f"Training step (fwd + bwd + AdamW), {settings['batch']} sentences x (16 + 16) tokens, process CPU time "
        "(median of interleaved rounds); ratio = with `F.dropout` / ours",
        "",
        "| dims | precision | ours ms | with F.dropout ms | ratio | load before → after |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for row in payload["rows"]:
        cpu = row["cpu_seconds"]
        lines.append(
            f"| {row['size']} | {row['precision']} | {cpu['ours'] * 1e3:.0f} | {cpu['torch_dropout'] * 1e3:.0f} | "
            f"{row['ratios']['torch_dropout']:.2f} | "
            f"{row['loadavg_before'][0]:.1f} → {row['loadavg_after'][0]:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args = benchmark_arguments(parser, "dropout", "small dims, 2 rounds, 16 sentences (development)", argv)
    payload = run_training_step_ablations("dropout", CONTENDERS, _use, args)
    save_and_print(args.json, payload, format_table(payload))
    return payload


if __name__ == "__main__":
    main()
