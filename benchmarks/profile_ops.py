"""Where the time of a training step or a `generate()` call goes, ours vs Marian, operator by operator.

    python benchmarks/profile_ops.py --threads 1                                   # base dims, bf16 training step
    python benchmarks/profile_ops.py --threads 1 --size small --precision fp32 --by-shape
    python benchmarks/profile_ops.py --threads 1 --size small --mode beam4

The benchmarks say how much faster or slower a whole call is; this says where. Both models come from
`perf_common.build_models` (same dimensions, same weights) and run the same attention implementation (`--attn`;
default: the one CPU training uses for a training step, eager in bf16 and sdpa in fp32, and sdpa, the models'
default, for `generate()`). After their warm-up calls, each model is timed without the profiler (median process
CPU time of `--calls` calls), then profiled for `--calls` calls, one profile per call; the models take turns call
by call in one process. The table gives each operator's self CPU time per call for both models side by side and
the ratio Marian / ours, largest first; `--by-shape` splits operators by their input shapes (what
tells a weight cast from an activation cast, or the output projection from the rest). The profiler adds a few
microseconds per operator, so its totals exceed the unprofiled times, and the same operator on the same shapes can
differ by 10 - 20 % between the models (cache and allocator state): read the table for shares and for differences
in what runs, the benchmarks for speed. `--json NAME` also writes `benchmarks/results/NAME.json`.

Training: `perf_common.training_step` (forward with labels, backward, fused AdamW) on 64 sentences x (16 + 16)
tokens; `greedy` and `beam4`: `generate()` on 32 source sentences of up to 16 tokens, exactly 24 new tokens.
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
    benchmark_arguments,
    build_models,
    generate_call,
    interleaved_times,
    machine_info,
    make_batch,
    save_and_print,
    training_attention,
    training_step,
)

MODES = ("train", "greedy", "beam4")


def model_call(model: torch.nn.Module, mode: str, precision: str, vocab_size: int) -> Callable[[], None]:
    """The call to profile: one training step, or one `generate()` of 32 sentences (greedy or 4 beams)."""
    if mode == "train":
        return training_step(model, make_batch(64, 16, 16, vocab_size, seed=1), precision == "bf16")
    source = make_batch(32, 16, 16, vocab_size, seed=2)
    inputs = {"input_ids": source["input_ids"], "attention_mask": source["attention_mask"]}
    return generate_call(model, inputs, beams=1 if mode == "greedy" else 4, new_tokens=24)


def operator_times(call: Callable[[], None], by_shape: bool) -> dict[str, dict[str, float]]:
    """Self CPU microseconds and call counts by operator (and input shapes) of one call of `call`, profiled."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=by_shape) as prof:
        call()
    operators: dict[str, dict[str, float]] = {}
    for event in prof.key_averages(group_by_input_shape=by_shape):
        shapes = [list(shape) for shape in event.input_shapes if shape] if by_shape else []
        name = f"{event.key} {shapes}" if shapes else event.key
        entry = operators.setdefault(name, {"self_us": 0.0, "count": 0.0})
        entry["self_us"] += event.self_cpu_time_total
        entry["count"] += event.count
    return operators


def profile(
    calls: dict[str, Callable[[], None]], rounds: int, warmup: int, by_shape: bool
) -> dict[str, dict[str, Any]]:
    """For each model: the median unprofiled process CPU seconds of its call, and its operators' self CPU
    microseconds and counts per call, averaged over `rounds` profiled calls. The models take turns call by call
    (a, b, a, b...), so that the machine's drift over seconds hits both alike."""
    seconds = interleaved_times(calls, repeats=rounds, warmup=warmup).cpu
    operators: dict[str, dict[str, dict[str, float]]] = {name: {} for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            for operator, entry in operator_times(call, by_shape).items():
                total = operators[name].setdefault(operator, {"self_us": 0.0, "count": 0.0})
                total["self_us"] += entry["self_us"] / rounds
                total["count"] += entry["count"] / rounds
    return {name: {"seconds": statistics.median(seconds[name]), "operators": operators[name]} for name in calls}


def compare(ours: dict[str, Any], marian: dict[str, Any], rows: int) -> list[dict[str, Any]]:
    """Operators of either model, by the larger of their two self times, with the ratio Marian / ours."""
    names = set(ours["operators"]) | set(marian["operators"])
    empty = {"self_us": 0.0, "count": 0.0}
    table = []
    for name in names:
        a, b = ours["operators"].get(name, empty), marian["operators"].get(name, empty)
        ratio = b["self_us"] / a["self_us"] if a["self_us"] > 0 else None
        table.append({"operator": name, "ours": a, "marian": b, "marian_over_ours": ratio})
    table.sort(key=lambda row: -max(row["ours"]["self_us"], row["marian"]["self_us"]))
    return table[:rows]


def format_table(payload: dict[str, Any]) -> str:
    settings, totals = payload["settings"], payload["seconds_per_call"]
    what = "training step" if settings["mode"] == "train" else f"generate() {settings['mode']}"
    lines = [
        f"{settings['size']} dims, {settings['precision']}, {what}; both models with {settings['attn']} attention; "
        f"{payload['machine']['torch_threads']} torch thread(s), {payload['machine']['cpu']}",
        f"unprofiled process CPU time per call: ours {totals['ours'] * 1e3:.1f} ms, Marian "
        f"{totals['marian'] * 1e3:.1f} ms, Marian / ours {totals['marian'] / totals['ours']:.2f}",
        "",
        "| operator | ours ms/call | calls | Marian ms/call | calls | Marian / ours |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in payload["operators"]:
        ratio = row["marian_over_ours"]
        lines.append(
            f"| {row['operator'].replace('|', '/')} | {row['ours']['self_us'] / 1e3:.2f} | {row['ours']['count']:.0f} "
            f"| {row['marian']['self_us'] / 1e3:.2f} | {row['marian']['count']:.0f} | "
            f"{'-' if ratio is None else f'{ratio:.2f}'} |"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=MODES, default="train")
    parser.add_argument("--size", choices=("small", "base", "tiny"), default="base", help="tiny: smoke tests")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="bf16", help="training only")
    parser.add_argument(
        "--attn", choices=("eager", "sdpa"), default=None, help="both models' (default: CPU training's, or sdpa)"
    )
    parser.add_argument("--calls", type=int, default=3, help="timed calls, then as many profiled")
    parser.add_argument(
        "--warmup", type=int, default=2, help="untimed calls first (0 still runs one: a first call is never timed)"
    )
    parser.add_argument("--rows", type=int, default=30)
    parser.add_argument("--by-shape", action="store_true", help="one row per operator and input shapes")
    parser.add_argument("--vocab", type=int, default=8000)
    args = benchmark_arguments(parser, "", "one warm-up call and one call each (a first look)", argv)
    if args.quick:
        args.calls, args.warmup = 1, 1
    if args.calls < 1 or args.warmup < 0 or args.rows < 1:
        parser.error("--calls and --rows must be >= 1, --warmup >= 0")
    if args.mode != "train":
        args.precision = "fp32"  # generate() runs the float32 model
    args.attn = args.attn or (training_attention(args.precision) if args.mode == "train" else "sdpa")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    models = build_models(args.size, (f"ours_{args.attn}", f"marian_{args.attn}"), args.vocab)
    calls = {
        name.split("_")[0]: model_call(model, args.mode, args.precision, args.vocab) for name, model in models.items()
    }
    results = profile(calls, args.calls, args.warmup, args.by_shape)
    payload = {
        "benchmark": "profile_ops",
        "machine": machine_info(),
        "settings": {key: getattr(args, key) for key in ("mode", "size", "precision", "attn", "calls")},
        "seconds_per_call": {name: result["seconds"] for name, result in results.items()},
        "operators": compare(results["ours"], results["marian"], args.rows),
    }
    table = format_table(payload)
    if args.json:
        save_and_print(args.json, payload, table)
    else:
        print(table)
    return payload


if __name__ == "__main__":
    main()
