"""Training throughput of the paper's base model on one GPU: bf16 autocast, sdpa, eager vs `torch.compile`.

    python benchmarks/gpu.py                      # on a machine with a CUDA GPU (e.g. one H200)
    python benchmarks/gpu.py --device cpu --smoke # a seconds-long check of the script itself, without a GPU

One command: imports only torch, transformers, hf_vaswani and `perf_common.py` next to it. Builds
`VaswaniConfig.base()` (d_model 512, 6+6 layers, 8 heads, d_ff 2048, shared vocabulary of 37,000 as in sec. 5.1),
with the default `sdpa` attention,
and times training steps (`zero_grad` + forward with labels under `torch.autocast(bfloat16)` + backward +
`AdamW(fused=True).step`) on batches of about 25,000 source and 25,000 target tokens (sec. 5.1: "each
training batch contained a set of sentence pairs containing approximately 25000 source tokens and 25000 target
tokens"; default 1,000 pairs of 25 + 25 tokens), in eager mode and compiled (`torch.compile(fullgraph=True)`).

Reported: tokens/s (source + target), step time, peak memory, and model FLOP utilisation = analytic training
FLOPs per second (3 x forward; forward = 2 x weights touched per token + attention terms:
`perf_common.transformer_flops`) over a bf16 matmul rate measured in the same run (the better of an
8192^3 matmul and one of the model's shape, (tokens x 512) x (512 x 2048)). Goal: >= 500,000 tokens/s on one
H200 (the paper, sec. 5.2: the base model took 12 hours for 100,000 steps of ~50,000-token batches on 8 P100s,
~116,000 tokens/s).
Writes a table to stdout and everything to `benchmarks/results/gpu.json` (or `--json PATH`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent))  # perf_common, next to this script
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # hf_vaswani from this checkout if not installed

from perf_common import transformer_flops  # noqa: E402

from hf_vaswani import VaswaniConfig, VaswaniForConditionalGeneration  # noqa: E402

GOAL_TOKENS_PER_S = 500_000
PAPER_TOKENS_PER_S = 100_000 * 50_000 / (12 * 3600)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_rate(m: int, k: int, n: int, device: torch.device, dtype: torch.dtype, seconds: float = 1.0) -> float:
    """Best FLOP/s of an (m, k) x (k, n) matmul over a few timed batches of calls."""
    a = torch.randn(m, k, device=device, dtype=dtype)
    b = torch.randn(k, n, device=device, dtype=dtype)
    for _ in range(3):
        torch.mm(a, b)
    synchronize(device)
    start = time.perf_counter()
    torch.mm(a, b)
    synchronize(device)
    calls = max(1, int(seconds / 5 / max(time.perf_counter() - start, 1e-6)))
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            torch.mm(a, b)
        synchronize(device)
        best = min(best, (time.perf_counter() - start) / calls)
    return 2.0 * m * k * n / best


def make_batch(
    sentences: int, source_length: int, target_length: int, vocab_size: int, device: torch.device
) -> dict[str, torch.Tensor]:
    """Random ids >= 4 (no special tokens), no padding: length-bucketed batches are nearly free of it."""
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(4, vocab_size, (sentences, source_length), generator=generator)
    labels = torch.randint(4, vocab_size, (sentences, target_length), generator=generator)
    return {
        "input_ids": input_ids.to(device),
        "attention_mask": torch.ones_like(input_ids).to(device),
        "labels": labels.to(device),
    }


def time_training(
    model: torch.nn.Module,
    forward: Any,
    batch: dict[str, torch.Tensor],
    device: torch.device,
    warmup: int,
    steps: int,
) -> dict[str, Any]:
    """Warm up (the first call compiles), then time `steps` steps one by one; median and all step times."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    model.train()

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = forward(**batch).loss
        loss.backward()
        optimizer.step()

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    start = time.perf_counter()
    step()
    synchronize(device)
    first = time.perf_counter() - start
    for _ in range(max(0, warmup - 1)):
        step()
    synchronize(device)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        synchronize(device)
        times.append(time.perf_counter() - start)
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    return {"first_step_s": first, "step_s": statistics.median(times), "step_s_all": times, "peak_bytes": peak}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--vocab", type=int, default=37000)
    parser.add_argument("--sentences", type=int, default=1000, help="sentence pairs per batch")
    parser.add_argument("--source-length", type=int, default=25)
    parser.add_argument("--target-length", type=int, default=25)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per mode")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps per mode (the first one compiles)")
    parser.add_argument("--modes", default="eager,compile", help="comma-separated: eager, compile")
    parser.add_argument("--compile-mode", default=None, help="torch.compile mode (default: Inductor's default)")
    parser.add_argument("--smoke", action="store_true", help="tiny dims and batch: check the script, not the GPU")
    parser.add_argument("--json", default=str(Path(__file__).resolve().parent / "results" / "gpu.json"))
    args = parser.parse_args(argv)
    if args.smoke:
        args.sentences, args.steps, args.warmup = min(args.sentences, 8), min(args.steps, 2), min(args.warmup, 1)
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("No CUDA device: run this on a machine with a GPU (or --device cpu --smoke to check it).")
    torch.manual_seed(0)
    overrides: dict[str, Any] = dict(vocab_size=args.vocab)
    if args.smoke:
        overrides.update(d_model=64, encoder_ffn_dim=128, decoder_ffn_dim=128, encoder_layers=2, decoder_layers=2)
    config = VaswaniConfig.base(**overrides)
    model = VaswaniForConditionalGeneration(config).to(device)
    batch = make_batch(args.sentences, args.source_length, args.target_length, args.vocab, device)
    tokens = args.sentences * (args.source_length + args.target_length)
    flops = transformer_flops(config, args.sentences, args.source_length, args.target_length).training

    square = 1024 if args.smoke else 8192
    rates = {
        f"mm_{square}^3": matmul_rate(square, square, square, device, torch.bfloat16),
        "mm_model_shape": matmul_rate(
            args.sentences * args.target_length, config.d_model, config.encoder_ffn_dim, device, torch.bfloat16
        ),
    }
    reference = max(rates.values())

    results: dict[str, Any] = {}
    for mode in [mode.strip() for mode in args.modes.split(",") if mode.strip()]:
        if mode == "compile":
            forward = torch.compile(model, fullgraph=True, mode=args.compile_mode)
        elif mode == "eager":
            forward = model
        else:
            raise SystemExit(f"unknown mode {mode!r}: use eager and/or compile")
        print(f"{mode}: timing {args.steps} steps after {args.warmup} warm-up steps ...", flush=True)
        timing = time_training(model, forward, batch, device, args.warmup, args.steps)
        timing["tokens_per_s"] = tokens / timing["step_s"]
        timing["tflops"] = flops / timing["step_s"] / 1e12
        timing["mfu"] = flops / timing["step_s"] / reference
        results[mode] = timing

    payload = {
        "benchmark": "gpu",
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "settings": vars(args),
        "parameters": sum(p.numel() for p in model.parameters()),
        "tokens_per_step": tokens,
        "flops_per_step": flops,
        "bf16_matmul_flops_per_s": rates,
        "goal_tokens_per_s": GOAL_TOKENS_PER_S,
        "paper_tokens_per_s_8_p100": PAPER_TOKENS_PER_S,
        "results": results,
    }
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2) + "\n")
    print(format_table(payload))
    print(f"\nwrote {path}")
    return payload


def format_table(payload: dict[str, Any]) -> str:
    """A Markdown table of a `gpu.py` result."""
    rates = ", ".join(f"{name} {rate / 1e12:.0f} TFLOP/s" for name, rate in payload["bf16_matmul_flops_per_s"].items())
    settings = payload["settings"]
    lines = [
        f"{payload['device']}, torch {payload['torch']} (CUDA {payload['cuda']}), transformers "
        f"{payload['transformers']}, {payload['date']}",
        f"{'SMOKE TEST, tiny dims' if settings['smoke'] else 'base model'}, {payload['parameters'] / 1e6:.1f}M "
        f"parameters, bf16 autocast, sdpa; batch {settings['sentences']} x ({settings['source_length']} + "
        f"{settings['target_length']}) = {payload['tokens_per_step']:,} tokens; bf16 matmul: {rates}",
        "",
        "| mode | tokens/s | step ms | TFLOP/s | MFU | first step s | peak memory GiB | goal ≥ 500k tok/s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for mode, result in payload["results"].items():
        peak = "—" if result["peak_bytes"] is None else f"{result['peak_bytes'] / 2**30:.1f}"
        met = "yes" if result["tokens_per_s"] >= payload["goal_tokens_per_s"] else "**no**"
        lines.append(
            f"| {mode} | {result['tokens_per_s']:,.0f} | {result['step_s'] * 1e3:.1f} | {result['tflops']:.0f} | "
            f"{result['mfu']:.0%} | {result['first_step_s']:.1f} | {peak} | {met} |"
        )
    if "eager" in payload["results"] and "compile" in payload["results"]:
        speedup = payload["results"]["eager"]["step_s"] / payload["results"]["compile"]["step_s"]
        lines.append(f"\ncompile / eager: {speedup:.2f}x")
    lines.append(f"paper (8 P100, base): ~{payload['paper_tokens_per_s_8_p100']:,.0f} tokens/s")
    return "\n".join(lines)


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
