"""Ours vs `transformers.MarianMTModel` on CPU: training throughput, model FLOP utilisation, generation speed.

    python benchmarks/bench_vs_marian.py --threads 1   # small and base dims, fp32 and bf16, generation
    python benchmarks/bench_vs_marian.py --quick       # a few rounds, for development

Both models have the same dimensions and the same weights (`perf_common.build_models`), and each runs with both
attention implementations, `sdpa` (the default of both) and `eager` (two matmuls and a softmax), set with
`set_attn_implementation`: four contenders, `ours_sdpa`, `ours_eager`, `marian_sdpa`, `marian_eager`. They run in
the same process, one call each in turn (interleaved rounds), so that a background load hits all of them alike; a
ratio is the median over rounds of the per-round ratio, a time the median over rounds. The results record each
contender's largest logit difference from `ours_sdpa` and whether all four generate the same tokens.

* **Training**: one step = `zero_grad` + forward with labels (+ `torch.autocast("cpu", bfloat16)` for bf16) +
  backward + `AdamW(fused=True).step`, on a padded batch (default 64 sentences, source and target padded to 16
  tokens, row lengths drawn in [8, 16]). Tokens/s counts source + target positions, padding included (that is the
  work done). `ours eager / ours sdpa` is what the training recipe's choice of attention rests on.
* **Model FLOP utilisation**: analytic training FLOPs (`perf_common.transformer_flops`: 3 x forward, forward =
  2 x weights touched per token + attention terms) per second, over the rate of a plain matmul of the same
  precision and a similar shape ((batch x target tokens) x d_model x d_ff), measured as one more contender of
  the same interleaved rounds.
* **Generation**: `generate()` on a batch of source sentences, greedy and beam 4, and the latency of one sentence
  (greedy), every contender forced to the same output length (`min_new_tokens = max_new_tokens`).

The goal: ours at least as fast as Marian, each model with the faster of its two attention implementations in the
cell (`best ours / best Marian` >= 1.00); the same-implementation ratios are reported next to it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_common import (  # noqa: E402
    CONTENDERS,
    build_models,
    generate_call,
    interleaved_times,
    loadavg,
    machine_info,
    make_batch,
    max_logit_difference,
    paired_ratio,
    save_and_print,
    training_step,
    transformer_flops,
)

GOAL = 1.0  # ours / Marian, each with its faster attention implementation
GOAL_SIZES = ("small", "base")
PRECISIONS = ("fp32", "bf16")
GENERATE_MODES = ("greedy", "beam4", "latency_1_sentence")


def _models(size: str, vocab_size: int) -> tuple[dict[str, torch.nn.Module], dict[str, float]]:
    """The four contenders, and each one's largest logit difference from `ours_sdpa`."""
    models = build_models(size, CONTENDERS, vocab_size)
    reference = models["ours_sdpa"]
    differences = {name: max_logit_difference(reference, models[name], vocab_size) for name in CONTENDERS[1:]}
    return models, differences


def _fastest(wall: dict[str, list[float]], family: str) -> str:
    return min((name for name in CONTENDERS if name.startswith(family)), key=lambda name: statistics.median(wall[name]))


def comparisons(wall: dict[str, list[float]], cpu: dict[str, list[float]]) -> dict[str, Any]:
    """Speed ratios (> 1: ours faster) from the per-round times of the four contenders: best ours / best Marian (wall
    clock and process CPU time), ours / Marian with the same attention implementation, and ours eager / ours sdpa."""
    best_ours, best_marian = _fastest(wall, "ours"), _fastest(wall, "marian")
    return {
        "best_ours": best_ours,
        "best_marian": best_marian,
        "ours_over_marian": {
            "best": paired_ratio(wall[best_marian], wall[best_ours]),
            "best_cpu_time": paired_ratio(cpu[best_marian], cpu[best_ours]),
            "sdpa": paired_ratio(wall["marian_sdpa"], wall["ours_sdpa"]),
            "eager": paired_ratio(wall["marian_eager"], wall["ours_eager"]),
        },
        "ours_eager_over_sdpa": paired_ratio(wall["ours_sdpa"], wall["ours_eager"]),
    }


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
    """Interleaved training steps of the four contenders plus the matmul reference, for one size and precision."""
    bf16 = precision == "bf16"
    models, differences = _models(size, args.vocab)
    config = models["ours_sdpa"].config
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
    result.update(comparisons(wall, timings.cpu))
    return result


def generate_benchmark(args: argparse.Namespace, size: str) -> dict[str, Any]:
    """Greedy and beam-4 sentences/s on a batch, and one-sentence latency, interleaved over the four contenders."""
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
        result["modes"][mode] = {
            "beams": beams,
            "sentences": sentences,
            "same_tokens": all(torch.equal(tokens["ours_sdpa"], tokens[name]) for name in CONTENDERS),
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
            **comparisons(wall, timings.cpu),
        }
    return result


def _sizes(measured: list[dict[str, Any]]) -> list[str]:
    """The goal's sizes (small, base), then any other size that was measured (tiny, in smoke tests)."""
    return list(GOAL_SIZES) + [cell["size"] for cell in measured if cell["size"] not in GOAL_SIZES]


def goals(train: list[dict[str, Any]], generate: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per cell of the goal (best ours / best Marian >= 1.00), its value None where the cell was not run."""
    rows = []
    cells = {(cell["size"], cell["precision"]): cell for cell in train}
    for size in dict.fromkeys(_sizes(train)):
        for precision in PRECISIONS:
            cell = cells.get((size, precision))
            value = cell["ours_over_marian"]["best"] if cell else None
            rows.append(_goal(f"training tokens/s, {size}, {precision}", value))
    results = {result["size"]: result for result in generate}
    for size in dict.fromkeys(_sizes(generate)):
        for mode in GENERATE_MODES:
            value = results[size]["modes"][mode]["ours_over_marian"]["best"] if size in results else None
            rows.append(_goal(f"generate() speed, {size}, {mode}", value))
    return rows


def _goal(name: str, value: float | None) -> dict[str, Any]:
    return {"goal": name, "target": GOAL, "value": value, "met": None if value is None else value >= GOAL}


def _names(cell: dict[str, Any]) -> str:
    """Which attention implementation was the faster for each model: "(eager / sdpa)" = ours eager, Marian sdpa."""
    return f"({cell['best_ours'].split('_')[1]} / {cell['best_marian'].split('_')[1]})"


def _ratios(cell: dict[str, Any]) -> str:
    """The ratio columns shared by both tables."""
    ratios = cell["ours_over_marian"]
    return (
        f"**{ratios['best']:.2f}** {_names(cell)} | {ratios['best_cpu_time']:.2f} | {ratios['sdpa']:.2f} | "
        f"{ratios['eager']:.2f} | {cell['ours_eager_over_sdpa']:.2f}"
    )


_RATIO_HEADER = "best ours / best Marian | (CPU time) | ours / Marian, sdpa | ours / Marian, eager | ours eager / sdpa"


def format_tables(payload: dict[str, Any]) -> str:
    """Markdown tables of a `bench_vs_marian` result (used for the console and for RESULTS.md)."""
    lines = [
        "Training step (fwd + bwd + AdamW), tokens/s = source + target positions per second (median of rounds)",
        "",
        "| dims | precision | ours sdpa tok/s | ours eager tok/s | Marian sdpa tok/s | Marian eager tok/s | "
        + _RATIO_HEADER
        + " | best ours GFLOP/s (MFU) | best Marian GFLOP/s (MFU) | matmul GFLOP/s | load before → after |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for cell in payload.get("train", []):
        c = cell["contenders"]
        ours, marian = c[cell["best_ours"]], c[cell["best_marian"]]
        lines.append(
            f"| {cell['size']} | {cell['precision']} | "
            + " | ".join(f"{c[name]['tokens_per_s']:,.0f}" for name in CONTENDERS)
            + f" | {_ratios(cell)} | {ours['gflops']:.0f} ({ours['mfu']:.0%}) | {marian['gflops']:.0f} "
            f"({marian['mfu']:.0%}) | {cell['matmul_gflops']:.0f} | "
            f"{cell['loadavg_before'][0]:.1f} → {cell['loadavg_after'][0]:.1f} |"
        )
    if payload.get("generate"):
        lines += [
            "",
            "generate(): sentences/s on a batch (greedy, beam 4) and one-sentence latency, same output length for all",
            "",
            "| dims | mode | ours sdpa | ours eager | Marian sdpa | Marian eager | "
            + _RATIO_HEADER
            + " | same tokens | load before → after |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
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
                    + f" | {_ratios(cell)} | {'yes' if cell['same_tokens'] else 'NO'} | "
                    f"{cell['loadavg_before'][0]:.1f} → {cell['loadavg_after'][0]:.1f} |"
                )
    if payload.get("goals"):
        lines += [
            "",
            "| goal: ours / Marian, each with its faster attention | target | measured | met |",
            "| --- | ---: | ---: | --- |",
        ]
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
    parser.add_argument("--json", default="vs_marian", help="results name: benchmarks/results/<name>.json")
    args = parser.parse_args(argv)
    args.sizes = [size.strip() for size in args.sizes.split(",") if size.strip()]
    args.precisions = [precision.strip() for precision in args.precisions.split(",") if precision.strip()]
    unknown = sorted(set(args.sizes) - {"small", "base", "tiny"}) + sorted(set(args.precisions) - set(PRECISIONS))
    if unknown:
        parser.error(f"unknown sizes or precisions {unknown}: sizes are small, base, tiny; precisions fp32, bf16")
    args.repeats = args.repeats or (2 if args.quick else 7)
    args.sentences = args.sentences or (8 if args.quick else 32)
    args.new_tokens = args.new_tokens or (12 if args.quick else 24)
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    payload: dict[str, Any] = {"benchmark": "vs_marian", "machine": machine_info(), "settings": vars(args)}
    train: list[dict[str, Any]] = []
    generate: list[dict[str, Any]] = []
    if not args.skip_train:
        for size in args.sizes:
            for precision in args.precisions:
                print(f"training {size} {precision} ... (load {loadavg()})", flush=True)
                train.append(train_benchmark(args, size, precision))
    if not args.skip_generate:
        for size in args.sizes:
            print(f"generate {size} ... (load {loadavg()})", flush=True)
            generate.append(generate_benchmark(args, size))
    payload.update(train=train, generate=generate, goals=goals(train, generate), loadavg_end=loadavg())
    save_and_print(args.json, payload, format_tables(payload))
    return payload


if __name__ == "__main__":
    main()
