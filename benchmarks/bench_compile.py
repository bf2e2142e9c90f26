"""`torch.compile` vs eager for one CPU training step, ours and Marian, plus the graph breaks of each forward.

    python benchmarks/bench_compile.py            # small dims (d_model 256, 3+3 layers), fp32
    python benchmarks/bench_compile.py --quick    # tiny dims, 2 rounds (compiling still takes a while)

A step is `zero_grad` + forward with labels + backward + `AdamW(fused=True).step` (the optimizer stays eager) on
the same padded 64 x (16 + 16) batch as `bench_vs_marian.py`. Both models have the same weights and the attention
implementation CPU training uses in the precision (sdpa in fp32, eager in bf16). Ours is compiled with
`fullgraph=True` (a graph break is an error); Marian with the default `fullgraph=False`. Under compilation our
dropout and loss are `F.dropout` and `F.cross_entropy` (the kernels step aside for the compiler).
`torch._dynamo.explain` counts the graphs and graph breaks of each training forward. The compile time is the wall
time of the first compiled step (it includes Inductor's C++ compilation, which runs in worker processes: CPU time
of this process does not show it; with Inductor's on-disk cache warm from an earlier run it is mostly loading).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_common import (  # noqa: E402
    build_models,
    interleaved_times,
    loadavg,
    machine_info,
    make_batch,
    paired_ratio,
    save_and_print,
    training_attention,
    training_step,
)


def graph_breaks(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> dict[str, Any]:
    """Graphs and graph breaks of one training forward, from `torch._dynamo.explain`."""
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(model)(**batch)
    torch._dynamo.reset()
    return {
        "graphs": explanation.graph_count,
        "graph_breaks": explanation.graph_break_count,
        "reasons": sorted({str(reason.reason).splitlines()[0][:200] for reason in explanation.break_reasons}),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--size", default=None, help="small (default) or base; tiny with --quick")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    parser.add_argument("--repeats", type=int, default=None, help="interleaved rounds (default 7, quick 2)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--skip-marian", action="store_true", help="compile ours only (saves minutes)")
    parser.add_argument("--json", default="compile", help="results name: benchmarks/results/<name>.json")
    args = parser.parse_args(argv)
    args.size = args.size or ("tiny" if args.quick else "small")
    args.repeats = args.repeats or (2 if args.quick else 7)
    if args.threads:
        torch.set_num_threads(args.threads)
    bf16 = args.precision == "bf16"
    attention = training_attention(args.precision)
    names = ("ours",) if args.skip_marian else ("ours", "marian")
    built = build_models(args.size, tuple(f"{name}_{attention}" for name in names), args.vocab)
    models = {name.split("_")[0]: model for name, model in built.items()}
    batch = make_batch(64, 16, 16, args.vocab, seed=1)
    settings = {**vars(args), "attention": attention}
    payload: dict[str, Any] = {"benchmark": "compile", "machine": machine_info(), "settings": settings}
    payload["explain"] = {name: graph_breaks(model, batch) for name, model in models.items()}
    functions: dict[str, Callable[[], None]] = {}
    payload["compile_seconds"] = {}
    for name, model in models.items():
        compiled = torch.compile(model, fullgraph=name == "ours")
        functions[f"{name}_eager"] = training_step(model, batch, bf16)
        functions[f"{name}_compiled"] = training_step(model, batch, bf16, forward=compiled)
        print(f"compiling {name} ... (load {loadavg()})", flush=True)
        start = time.perf_counter()
        functions[f"{name}_compiled"]()
        payload["compile_seconds"][name] = time.perf_counter() - start
    before = loadavg()
    timings = interleaved_times(functions, repeats=args.repeats, warmup=1)
    payload.update(loadavg_before=before, loadavg_after=loadavg())
    positions = 64 * (16 + 16)
    payload["steps"] = {
        name: {
            "step_s": statistics.median(times),
            "step_s_all": times,
            "tokens_per_s": positions / statistics.median(times),
        }
        for name, times in timings.wall.items()
    }
    payload["speedup_compiled_over_eager"] = {
        name: paired_ratio(timings.wall[f"{name}_eager"], timings.wall[f"{name}_compiled"]) for name in models
    }
    if "marian" in models:
        payload["ours_compiled_over_marian_compiled"] = paired_ratio(
            timings.wall["marian_compiled"], timings.wall["ours_compiled"]
        )
    save_and_print(args.json, payload, format_table(payload))
    return payload


def format_table(payload: dict[str, Any]) -> str:
    """A Markdown table of a `bench_compile` result."""
    settings = payload["settings"]
    attention = f", {settings['attention']} attention" if "attention" in settings else ""
    lines = [
        f"Training step, {settings['size']} dims, {settings['precision']}{attention}, 64 x (16 + 16) tokens: eager vs "
        f"torch.compile (load {payload['loadavg_before'][0]:.1f} → {payload['loadavg_after'][0]:.1f})",
        "",
        "| model | graphs / breaks (explain) | eager tok/s | compiled tok/s | compiled / eager | first compiled step |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for name, explain in payload["explain"].items():
        steps = payload["steps"]
        lines.append(
            f"| {name} | {explain['graphs']} / {explain['graph_breaks']} | "
            f"{steps[f'{name}_eager']['tokens_per_s']:,.0f} | {steps[f'{name}_compiled']['tokens_per_s']:,.0f} | "
            f"{payload['speedup_compiled_over_eager'][name]:.2f} | {payload['compile_seconds'][name]:.0f} s |"
        )
    if "ours_compiled_over_marian_compiled" in payload:
        lines.append(f"\nours compiled / Marian compiled: {payload['ours_compiled_over_marian_compiled']:.2f}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
