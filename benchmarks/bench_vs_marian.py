"""Ours vs `transformers.MarianMTModel` on CPU: training throughput, model FLOP utilisation, generation speed.

    python benchmarks/bench_vs_marian.py            # full: small and base dims, fp32 and bf16, generation
    python benchmarks/bench_vs_marian.py --quick    # a few rounds, for development

Both models have the same dimensions and the same weights (`perf_common.build_pair`: our fused projections are
sliced into Marian's q/k/v, sinusoids in Marian's layout); Marian runs twice, with its default attention (`sdpa`)
and with `eager`, side by side. Every contender runs in the same process, one call each in turn (interleaved
rounds), so that a background load hits all of them alike; a ratio is the median over rounds of the per-round
ratio, a time the median over rounds.

* **Training**: one step = `zero_grad` + forward with labels (+ `torch.autocast("cpu", bfloat16)` for bf16) +
  backward + `AdamW(fused=True).step` (PyTorch's fused CPU kernel: the default foreach AdamW takes ~250 ms per step
  at base dims on one thread, the fused one ~70 ms), on a padded batch (default 64 sentences, source and target
  padded to 16 tokens, row lengths drawn in [8, 16]). Tokens/s counts source + target positions, padding included
  (that is the work done). Our model's default attention (sdpa) trains on the eager path on CPU (see
  `VaswaniAttention`).
* **Model FLOP utilisation**: analytic training FLOPs (`perf_common.transformer_flops`: 3 x forward, forward =
  2 x weights touched per token + attention terms) per second, over the rate of a plain matmul of the same
  precision and a similar shape ((batch x target tokens) x d_model x d_ff), measured as one more contender of
  the same interleaved rounds.
* **Generation**: `generate()` on a batch of source sentences, greedy and beam 4, every contender forced to
  the same output length (`min_new_tokens = max_new_tokens`); sentences/s, and the latency of one sentence
  (greedy). The tokens are checked to be the same for all contenders (same weights, same function).

The goal ratios use the *faster* of Marian's two attention implementations in each cell (the stronger
baseline); the ratio against Marian's default (sdpa) is reported next to it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_common import (  # noqa: E402
    RESULTS_DIR,
    build_pair,
    check_same_function,
    generate_call,
    interleaved_times,
    loadavg,
    machine_info,
    make_batch,
    paired_ratio,
    save_and_print,
    training_step,
    transformer_flops,
)

CONTENDERS = ("ours", "marian_sdpa", "marian_eager")

# The goals: ours / best Marian, by (section, size, precision or mode).
TRAIN_GOALS = {("base", "fp32"): 1.0, ("small", "fp32"): 1.15, ("base", "bf16"): 1.3, ("small", "bf16"): 1.3}
MFU_GOAL = ("base", "bf16", 0.5)
GENERATE_GOAL = 1.2


def _models(size: str, vocab_size: int) -> tuple[dict[str, torch.nn.Module], dict[str, float]]:
    ours, twins = build_pair(size, vocab_size)
    models = {"ours": ours, "marian_sdpa": twins["sdpa"], "marian_eager": twins["eager"]}
    differences = {name: check_same_function(ours, twins[name.split("_")[1]], vocab_size) for name in CONTENDERS[1:]}
    return models, differences


def _matmul_contender(m: int, k: int, n: int, dtype: torch.dtype, seconds: float) -> tuple[Callable[[], None], float]:
    """A function that runs as many (m, k) x (k, n) matmuls as take about `seconds`, and its FLOPs."""
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(m, k, generator=generator).to(dtype)
    b = torch.randn(k, n, generator=generator).to(dtype)
    times = interleaved_times({"mm": lambda: torch.mm(a, b)}, repeats=3, warmup=2).wall["mm"]
    calls = max(1, int(seconds / min(times)))

    def run() -> None:
        for _ in range(calls):
            torch.mm(a, b)

    return run, 2.0 * m * k * n * calls


def train_benchmark(args: argparse.Namespace, size: str, precision: str) -> dict[str, Any]:
    """Interleaved training steps of the three models plus the matmul reference, for one size and precision."""
    bf16 = precision == "bf16"
    models, differences = _models(size, args.vocab)
    config = models["ours"].config
    batch = make_batch(args.batch, args.source_length, args.target_length, args.vocab, seed=1)
    flops = transformer_flops(config, args.batch, args.source_length, args.target_length)
    positions = args.batch * (args.source_length + args.target_length)
    real_tokens = int(batch["attention_mask"].sum()) + int((batch["labels"] != -100).sum())
    functions: dict[str, Callable[[], None]] = {
        name: training_step(model, batch, bf16) for name, model in models.items()
    }
    dtype = torch.bfloat16 if bf16 else torch.float32
    matmul, matmul_flops = _matmul_contender(
        args.batch * args.target_length, config.d_model, config.encoder_ffn_dim, dtype, seconds=0.25
    )
    functions["matmul"] = matmul
    before = loadavg()
    timings = interleaved_times(functions, repeats=args.repeats, warmup=1)
    after = loadavg()
    wall = timings.wall
    matmul_rate = [matmul_flops / t for t in wall["matmul"]]
    result: dict[str, Any] = {
        "size": size,
        "precision": precision,
        "batch": {
            "sentences": args.batch,
            "source_length": args.source_length,
            "target_length": args.target_length,
            "positions": positions,
            "real_tokens": real_tokens,
        },
        "flops_per_step": flops.training,
        "matmul_gflops": statistics.median(matmul_rate) / 1e9,
        "matmul_shape": [args.batch * args.target_length, config.d_model, config.encoder_ffn_dim],
        "max_logit_difference": differences,
        "loadavg_before": before,
        "loadavg_after": after,
        "contenders": {},
    }
    for name in CONTENDERS:
        times = wall[name]
        mfu = [flops.training / t / rate for t, rate in zip(times, matmul_rate, strict=True)]
        result["contenders"][name] = {
            "step_s": statistics.median(times),
            "step_s_all": times,
            "cpu_s": statistics.median(timings.cpu[name]),
            "tokens_per_s": positions / statistics.median(times),
            "gflops": flops.training / statistics.median(times) / 1e9,
            "mfu": statistics.median(mfu),
        }
    best = min(CONTENDERS[1:], key=lambda name: statistics.median(wall[name]))
    result["best_marian"] = best
    result["speedup_vs_best_marian"] = paired_ratio(wall[best], wall["ours"])
    result["speedup_vs_marian_sdpa"] = paired_ratio(wall["marian_sdpa"], wall["ours"])
    result["speedup_vs_marian_eager"] = paired_ratio(wall["marian_eager"], wall["ours"])
    result["speedup_vs_best_marian_cpu_time"] = paired_ratio(timings.cpu[best], timings.cpu["ours"])
    return result


def generate_benchmark(args: argparse.Namespace, size: str) -> dict[str, Any]:
    """Greedy and beam-4 sentences/s on a batch, and one-sentence latency, interleaved over the three models."""
    models, differences = _models(size, args.vocab)
    source = make_batch(args.sentences, args.source_length, args.source_length, args.vocab, seed=2)
    inputs = {"input_ids": source["input_ids"], "attention_mask": source["attention_mask"]}
    single = {key: value[:1] for key, value in inputs.items()}
    result: dict[str, Any] = {
        "size": size,
        "sentences": args.sentences,
        "source_length": args.source_length,
        "new_tokens": args.new_tokens,
        "max_logit_difference": differences,
        "modes": {},
    }
    modes = {"greedy": (inputs, 1), "beam4": (inputs, 4), "latency_1_sentence": (single, 1)}
    for mode, (mode_inputs, beams) in modes.items():
        functions = {name: generate_call(model, mode_inputs, beams, args.new_tokens) for name, model in models.items()}
        before = loadavg()
        timings = interleaved_times(functions, repeats=args.repeats, warmup=1)
        after = loadavg()
        wall = timings.wall
        tokens = {name: function.outputs["tokens"] for name, function in functions.items()}  # type: ignore[attr-defined]
        sentences = mode_inputs["input_ids"].shape[0]
        best = min(CONTENDERS[1:], key=lambda name: statistics.median(wall[name]))
        result["modes"][mode] = {
            "beams": beams,
            "sentences": sentences,
            "same_tokens": all(torch.equal(tokens["ours"], tokens[name]) for name in CONTENDERS[1:]),
            "loadavg_before": before,
            "loadavg_after": after,
            "contenders": {
                name: {
                    "seconds": statistics.median(wall[name]),
                    "seconds_all": wall[name],
                    "cpu_s": statistics.median(timings.cpu[name]),
                    "sentences_per_s": sentences / statistics.median(wall[name]),
                }
                for name in CONTENDERS
            },
            "best_marian": best,
            "speedup_vs_best_marian": paired_ratio(wall[best], wall["ours"]),
            "speedup_vs_marian_sdpa": paired_ratio(wall["marian_sdpa"], wall["ours"]),
            "speedup_vs_marian_eager": paired_ratio(wall["marian_eager"], wall["ours"]),
            "speedup_vs_best_marian_cpu_time": paired_ratio(timings.cpu[best], timings.cpu["ours"]),
        }
    return result


def goals(train: list[dict[str, Any]], generate: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's goals with the measured values (None where the cell was not run)."""
    rows = []
    for (size, precision), target in TRAIN_GOALS.items():
        cell = next((r for r in train if r["size"] == size and r["precision"] == precision), None)
        value = cell["speedup_vs_best_marian"] if cell else None
        rows.append(_goal(f"training tokens/s ours / best Marian, {size}, {precision}", value, target))
    size, precision, target = MFU_GOAL
    cell = next((r for r in train if r["size"] == size and r["precision"] == precision), None)
    value = cell["contenders"]["ours"]["mfu"] if cell else None
    rows.append(_goal(f"training MFU (vs same-run {precision} matmul), {size}, {precision}", value, target))
    for result in generate:
        for mode in ("greedy", "beam4"):
            value = result["modes"][mode]["speedup_vs_best_marian"]
            rows.append(_goal(f"generate sentences/s ours / best Marian, {result['size']}, {mode}", value, 1.2))
    return rows


def _goal(name: str, value: float | None, target: float) -> dict[str, Any]:
    return {"goal": name, "target": target, "value": value, "met": None if value is None else value >= target}


def format_tables(payload: dict[str, Any]) -> str:
    """Markdown tables of a `bench_vs_marian` result (used for the console and for RESULTS.md)."""
    lines = [
        "Training step (fwd + bwd + AdamW), tokens/s = source + target positions per second (median of rounds)",
        "",
        "| dims | precision | ours tok/s | Marian sdpa tok/s | Marian eager tok/s | ours / best Marian"
        " | (CPU time) | ours / Marian sdpa | ours GFLOP/s (MFU) | best Marian GFLOP/s (MFU) | matmul GFLOP/s"
        " | load before → after |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    if payload.get("train_measured"):
        lines[0] += f" — measured {payload['train_measured']}, in an earlier run than the tables below"
    for cell in payload.get("train", []):
        c = cell["contenders"]
        best = c[cell["best_marian"]]
        lines.append(
            f"| {cell['size']} | {cell['precision']} | {c['ours']['tokens_per_s']:,.0f} | "
            f"{c['marian_sdpa']['tokens_per_s']:,.0f} | {c['marian_eager']['tokens_per_s']:,.0f} | "
            f"**{cell['speedup_vs_best_marian']:.2f}** ({cell['best_marian'].split('_')[1]}) | "
            f"{cell['speedup_vs_best_marian_cpu_time']:.2f} | "
            f"{cell['speedup_vs_marian_sdpa']:.2f} | {c['ours']['gflops']:.0f} ({c['ours']['mfu']:.0%}) | "
            f"{best['gflops']:.0f} ({best['mfu']:.0%}) | {cell['matmul_gflops']:.0f} | "
            f"{cell['loadavg_before'][0]:.1f} → {cell['loadavg_after'][0]:.1f} |"
        )
    if payload.get("generate"):
        lines += [
            "",
            "generate(): sentences/s on a batch (greedy, beam 4) and one-sentence latency, same output length for all",
            "",
            "| dims | mode | ours | Marian sdpa | Marian eager | ours / best Marian | (CPU time) | ours / Marian sdpa"
            " | same tokens | load before → after |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
        ]
        for result in payload["generate"]:
            for mode, cell in result["modes"].items():
                c = cell["contenders"]
                if mode == "latency_1_sentence":
                    values = [f"{c[name]['seconds'] * 1e3:.0f} ms" for name in CONTENDERS]
                else:
                    values = [f"{c[name]['sentences_per_s']:.1f}/s" for name in CONTENDERS]
                lines.append(
                    f"| {result['size']} | {mode} ({cell['sentences']} sent., {result['new_tokens']} tokens) | "
                    + " | ".join(values)
                    + f" | **{cell['speedup_vs_best_marian']:.2f}** ({cell['best_marian'].split('_')[1]}) | "
                    f"{cell['speedup_vs_best_marian_cpu_time']:.2f} | "
                    f"{cell['speedup_vs_marian_sdpa']:.2f} | {'yes' if cell['same_tokens'] else 'NO'} | "
                    f"{cell['loadavg_before'][0]:.1f} → {cell['loadavg_after'][0]:.1f} |"
                )
    if payload.get("goals"):
        lines += ["", "| goal | target | measured | met |", "| --- | ---: | ---: | --- |"]
        for goal in payload["goals"]:
            value = "not run" if goal["value"] is None else f"{goal['value']:.2f}"
            met = "—" if goal["met"] is None else ("yes" if goal["met"] else "**no**")
            lines.append(f"| {goal['goal']} | ≥ {goal['target']:.2f} | {value} | {met} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds, small batches of sentences: development")
    parser.add_argument("--sizes", default="small,base", help="comma-separated: small, base (tiny for smoke tests)")
    parser.add_argument("--precisions", default="fp32,bf16", help="comma-separated: fp32, bf16")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved rounds (default 7, quick 2)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's, all cores)")
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--batch", type=int, default=64, help="training sentences per batch")
    parser.add_argument("--source-length", type=int, default=16)
    parser.add_argument("--target-length", type=int, default=16)
    parser.add_argument("--sentences", type=int, default=None, help="generate() batch (default 32, quick 8)")
    parser.add_argument("--new-tokens", type=int, default=None, help="generated tokens (default 24, quick 12)")
    parser.add_argument("--skip-train", action="store_true")
    parser.add_argument("--skip-generate", action="store_true")
    parser.add_argument(
        "--keep-train",
        action="store_true",
        help="with --skip-train: keep the training rows (and their date) of the existing results JSON",
    )
    parser.add_argument("--json", default="vs_marian", help="results name: benchmarks/results/<name>.json")
    args = parser.parse_args(argv)
    args.repeats = args.repeats or (2 if args.quick else 7)
    args.sentences = args.sentences or (8 if args.quick else 32)
    args.new_tokens = args.new_tokens or (12 if args.quick else 24)
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    sizes = [size.strip() for size in args.sizes.split(",") if size.strip()]
    precisions = [precision.strip() for precision in args.precisions.split(",") if precision.strip()]
    payload: dict[str, Any] = {"benchmark": "vs_marian", "machine": machine_info(), "settings": vars(args)}
    train: list[dict[str, Any]] = []
    generate: list[dict[str, Any]] = []
    if not args.skip_train:
        for size in sizes:
            for precision in precisions:
                print(f"training {size} {precision} ... (load {loadavg()})", flush=True)
                train.append(train_benchmark(args, size, precision))
    if not args.skip_generate:
        for size in sizes:
            print(f"generate {size} ... (load {loadavg()})", flush=True)
            generate.append(generate_benchmark(args, size))
    previous = RESULTS_DIR / f"{args.json}.json"
    if args.keep_train and args.skip_train and previous.is_file():
        kept = json.loads(previous.read_text())
        train = kept.get("train", [])
        payload["train_measured"] = kept.get("train_measured") or kept["machine"]["date"]
    payload.update(train=train, generate=generate, goals=goals(train, generate), loadavg_end=loadavg())
    save_and_print(args.json, payload, format_tables(payload))
    return payload


if __name__ == "__main__":
    main()
