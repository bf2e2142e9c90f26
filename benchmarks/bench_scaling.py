"""How our model's cost grows with length on CPU: forward time and peak memory vs sequence length, sdpa vs eager;
generation time vs output length, with and without the KV cache.

    python benchmarks/bench_scaling.py            # lengths 16 ... 512, outputs 8 ... 256
    python benchmarks/bench_scaling.py --quick    # fewer lengths and rounds

* **Forward vs length**: one teacher-forced forward (eval mode, no gradients) of the encoder-decoder stack
  (`model.model`: without the output projection, whose (batch, L, vocab) logits would dominate the memory and
  hide the attention's) on a batch with source and target both L tokens long, for L in 16 ... 512 (quick: 16,
  64, 256), with `attn_implementation="sdpa"` and `"eager"` (interleaved).
  *Peak memory* is the peak of live tensor bytes allocated by PyTorch's CPU allocator during that forward,
  above what was allocated before it (weights and inputs): the allocation and free events recorded by
  `torch.profiler` (`profile_memory=True`) summed in time order. It counts tensor storage exactly, not the
  allocator's or Python's overhead; it is what the attention implementation changes (eager materialises the
  (batch, heads, L, L) score and weight matrices per layer, sdpa's flash kernel works in blocks).
  `tracemalloc` cannot see torch's allocations, and max-RSS deltas mix in the allocator's caching.
* **Generation vs output length**: `generate()` greedy on one sentence with `min_new_tokens = max_new_tokens =
  n`, `use_cache=True` and `False`. Fit t(n) = a + b n + c n^2 by least squares and report the local exponent
  d log t / d log n between the two longest outputs: with the cache each step attends over the cached keys and
  costs nearly the same, so t grows about linearly (exponent ~1); without it, step k re-runs the decoder on all
  k tokens, so t grows quadratically (exponent -> 2).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_common import interleaved_times, loadavg, machine_info, make_batch, save_and_print, vaswani_config  # noqa: E402

from hf_vaswani import VaswaniForConditionalGeneration  # noqa: E402


def peak_tensor_bytes(function: Any) -> int:
    """Peak of live CPU tensor bytes allocated while `function()` runs, from the profiler's memory events."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as profiler:
        function()
    events = sorted(
        (event.start_ns(), event.nbytes())
        for event in profiler.profiler.kineto_results.events()
        if event.name() == "[memory]" and event.device_type() == torch.autograd.DeviceType.CPU
    )
    live = peak = 0
    for _, change in events:
        live += change
        peak = max(peak, live)
    return peak


def forward_vs_length(args: argparse.Namespace) -> list[dict[str, Any]]:
    torch.manual_seed(0)
    config = vaswani_config(args.size, args.vocab)
    models = {}
    for implementation in ("sdpa", "eager"):
        # One config each: set_attn_implementation writes to the config object, which a shared one would share.
        model = VaswaniForConditionalGeneration(copy.deepcopy(config)).eval()
        model.set_attn_implementation(implementation)
        models[implementation] = model
    models["eager"].load_state_dict(models["sdpa"].state_dict())
    rows = []
    for length in args.lengths:
        batch = make_batch(args.batch, length, length, args.vocab, seed=length)

        def forward(model: VaswaniForConditionalGeneration, batch: dict[str, torch.Tensor] = batch) -> None:
            decoder_input_ids = model.prepare_decoder_input_ids_from_labels(batch["labels"])
            with torch.inference_mode():
                model.model(batch["input_ids"], batch["attention_mask"], decoder_input_ids=decoder_input_ids)

        functions = {name: (lambda model=model: forward(model)) for name, model in models.items()}
        before = loadavg()
        timings = interleaved_times(functions, repeats=args.repeats, warmup=1)
        row: dict[str, Any] = {"length": length, "batch": args.batch, "loadavg_before": before}
        for name in models:
            row[name] = {
                "seconds": statistics.median(timings.wall[name]),
                "seconds_all": timings.wall[name],
                "peak_bytes": peak_tensor_bytes(functions[name]),
            }
        row["eager_over_sdpa_time"] = statistics.median(
            e / s for e, s in zip(timings.wall["eager"], timings.wall["sdpa"], strict=True)
        )
        row["loadavg_after"] = loadavg()
        print(
            f"  L={length:4d}  sdpa {row['sdpa']['seconds'] * 1e3:8.1f} ms {row['sdpa']['peak_bytes'] / 2**20:7.1f} MiB"
            f"   eager {row['eager']['seconds'] * 1e3:8.1f} ms {row['eager']['peak_bytes'] / 2**20:7.1f} MiB",
            flush=True,
        )
        rows.append(row)
    return rows


def growth_fit(lengths: list[int], seconds: list[float]) -> dict[str, Any]:
    """Least-squares t = a + b n + c n^2, and the local exponent between the two longest outputs."""
    n = np.asarray(lengths, dtype=float)
    t = np.asarray(seconds, dtype=float)
    if len(lengths) < 3:
        raise ValueError("a quadratic fit needs at least three output lengths")
    c, b, a = np.polyfit(n, t, 2)
    slope, intercept = np.polyfit(n, t, 1)
    linear_residual = float(np.sqrt(np.mean((t - (slope * n + intercept)) ** 2)) / t.mean())
    exponent = float(np.log(t[-1] / t[-2]) / np.log(n[-1] / n[-2]))
    return {
        "a": float(a),
        "b": float(b),
        "c": float(c),
        "quadratic_share_at_longest": float(c * n[-1] ** 2 / t[-1]),
        "linear_fit_relative_rms": linear_residual,
        "local_exponent": exponent,
    }


def generation_vs_length(args: argparse.Namespace) -> dict[str, Any]:
    torch.manual_seed(0)
    model = VaswaniForConditionalGeneration(vaswani_config(args.size, args.vocab)).eval()
    source = make_batch(1, 16, 16, args.vocab, seed=3)
    inputs = {"input_ids": source["input_ids"], "attention_mask": source["attention_mask"]}
    result: dict[str, Any] = {"lengths": args.outputs, "cached": [], "uncached": []}
    for length in args.outputs:

        def run(use_cache: bool, length: int = length) -> None:
            with torch.inference_mode():
                model.generate(**inputs, max_new_tokens=length, min_new_tokens=length, use_cache=use_cache)

        timings = interleaved_times(
            {"cached": lambda: run(True), "uncached": lambda: run(False)}, repeats=args.repeats, warmup=1
        )
        for name in ("cached", "uncached"):
            result[name].append(statistics.median(timings.wall[name]))
        cached, uncached = result["cached"][-1] * 1e3, result["uncached"][-1] * 1e3
        print(f"  n={length:4d}  cached {cached:8.1f} ms   uncached {uncached:8.1f} ms", flush=True)
    result["fit_cached"] = growth_fit(args.outputs, result["cached"])
    result["fit_uncached"] = growth_fit(args.outputs, result["uncached"])
    return result


def format_tables(payload: dict[str, Any]) -> str:
    """Markdown tables of a `bench_scaling` result."""
    settings = payload["settings"]
    lines = [
        f"Forward of the encoder-decoder stack (eval, no grad, no output projection), {settings['size']} dims, "
        f"batch {settings['batch']}, source = target = L tokens",
        "",
        "| L | sdpa ms | eager ms | eager / sdpa time | sdpa peak MiB | eager peak MiB | load before |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in payload["forward"]:
        lines.append(
            f"| {row['length']} | {row['sdpa']['seconds'] * 1e3:.1f} | {row['eager']['seconds'] * 1e3:.1f} | "
            f"{row['eager_over_sdpa_time']:.2f} | {row['sdpa']['peak_bytes'] / 2**20:.1f} | "
            f"{row['eager']['peak_bytes'] / 2**20:.1f} | {row['loadavg_before'][0]:.1f} |"
        )
    generation = payload["generation"]
    lines += [
        "",
        f"generate() greedy, one 16-token sentence, {settings['size']} dims: time vs output length n",
        "",
        "| n | with cache ms | ms / token | without cache ms | ms / token | without / with |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for n, cached, uncached in zip(generation["lengths"], generation["cached"], generation["uncached"], strict=True):
        lines.append(
            f"| {n} | {cached * 1e3:.1f} | {cached * 1e3 / n:.2f} | {uncached * 1e3:.1f} | {uncached * 1e3 / n:.2f} | "
            f"{uncached / cached:.2f} |"
        )
    lines += [
        "",
        "| fit t = a + b n + c n² | b (ms/token) | c (ms/token²) | c n² / t at longest | local exponent |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name in ("cached", "uncached"):
        fit = generation[f"fit_{name}"]
        lines.append(
            f"| {'with' if name == 'cached' else 'without'} cache | {fit['b'] * 1e3:.3f} | {fit['c'] * 1e3:.5f} | "
            f"{fit['quadratic_share_at_longest']:.0%} | {fit['local_exponent']:.2f} |"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--size", default="small", help="small or base (tiny for smoke tests)")
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--batch", type=int, default=8, help="sentences per forward")
    parser.add_argument("--lengths", default=None, help="comma-separated (default 16,32,64,128,256,512)")
    parser.add_argument("--outputs", default=None, help="comma-separated output lengths (default 8,...,256)")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved rounds (default 5, quick 2)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", default="scaling", help="results name: benchmarks/results/<name>.json")
    args = parser.parse_args(argv)
    default_lengths = "16,64,256" if args.quick else "16,32,64,128,256,512"
    default_outputs = "8,16,32,64" if args.quick else "8,16,32,64,128,256"
    args.lengths = [int(value) for value in (args.lengths or default_lengths).split(",")]
    args.outputs = [int(value) for value in (args.outputs or default_outputs).split(",")]
    if len(args.outputs) < 3:
        parser.error("--outputs needs at least three lengths (the growth fit is quadratic)")
    args.repeats = args.repeats or (2 if args.quick else 5)
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    payload: dict[str, Any] = {"benchmark": "scaling", "machine": machine_info(), "settings": vars(args)}
    print(f"forward vs length (load {loadavg()})", flush=True)
    payload["forward"] = forward_vs_length(args)
    print(f"generation vs output length (load {loadavg()})", flush=True)
    payload["generation"] = generation_vs_length(args)
    payload["loadavg_end"] = loadavg()
    save_and_print(args.json, payload, format_tables(payload))
    return payload


if __name__ == "__main__":
    main()
