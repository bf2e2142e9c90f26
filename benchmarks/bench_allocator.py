"""What the C library's allocator costs CPU training and generation: glibc's defaults vs. keeping freed memory.

    python benchmarks/bench_allocator.py --threads 1

Not a change to the model: a setting of the process that runs it. glibc's `malloc` serves large blocks with
fresh `mmap`ed pages and hands freed memory back to the system (`munmap`, heap trimming), so tensors of megabytes
allocated in every step (float32 logits of 1024 tokens x 8000 words are 33 MB; beam search's (128, 8000) scores
4 MB) touch new pages again and again, and each first touch is a page fault (a few microseconds per 4 KB page in a
virtual machine). Two glibc tunables make `malloc` keep and reuse that memory instead:

    MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 python train.py ...

(`hf_vaswani.runtime.keep_freed_memory()` sets the same from Python; the ``hf-vaswani`` commands and the demo call
it.) The cost is that the process keeps its peak memory. Also measured, alone and with the above: PyTorch's
``THP_MEM_ALLOC_ENABLE=1`` (transparent huge pages for CPU tensors of 2 MB or more: one fault maps 2 MB). Workloads:
the training step of `bench_vs_marian.py` (64 x (16 + 16) tokens, forward with labels, backward, fused AdamW; fp32
with sdpa attention and bf16 with eager, as CPU training runs) and `generate()` with beam 4 (32 sentences x 24 new
tokens, float32, sdpa), for ours and `MarianMTModel` (same weights, same attention implementation), each model
*alone* in its own child process, as a real run is: one process per (model, setting), in turn, `--rounds` times.
(Two models interleaved in one process reuse the memory the other one freed, which hides the effect.) Reported per
call: process CPU time (median of calls, then of rounds) and minor page faults (`getrusage`). The ours / Marian
ratios compare separate processes, so they are noisier than the interleaved ones of `bench_vs_marian.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_common import (  # noqa: E402
    benchmark_arguments,
    build_models,
    loadavg,
    machine_info,
    make_batch,
    save_and_print,
    training_attention,
    training_step,
)

from hf_vaswani.runtime import KEEP_FREED_MEMORY_TUNABLES  # noqa: E402

# PyTorch's own switch (read once, when torch allocates its first tensor): CPU tensors of 2 MB or more are aligned
# to 2 MB and marked for transparent huge pages (madvise), so one fault maps 2 MB instead of 4 KB.
HUGE_PAGES = {"THP_MEM_ALLOC_ENABLE": "1"}
SETTINGS = {
    "glibc default": {},
    # What hf_vaswani.runtime.keep_freed_memory() sets with mallopt, as environment variables.
    "keep freed memory": KEEP_FREED_MEMORY_TUNABLES,
    "huge pages": HUGE_PAGES,
    "keep freed + huge pages": {**KEEP_FREED_MEMORY_TUNABLES, **HUGE_PAGES},
}
MODELS = ("ours", "marian")


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


WORKLOADS = {"fp32": "training step, fp32", "bf16": "training step, bf16", "beam4": "generate(), beam 4"}


def _workload(size: str, workload: str, model_name: str, batch_size: int) -> Callable[[], Any]:
    training = workload in ("fp32", "bf16")
    name = f"{model_name}_{training_attention(workload) if training else 'sdpa'}"
    model = build_models(size, (name,))[name]
    vocab_size = model.config.vocab_size
    if training:
        return training_step(model, make_batch(batch_size, 16, 16, vocab_size, seed=1), workload == "bf16")
    source = make_batch(32, 16, 16, vocab_size, seed=2)
    model.eval()

    def translate() -> None:
        with torch.inference_mode():
            model.generate(
                input_ids=source["input_ids"],
                attention_mask=source["attention_mask"],
                num_beams=4,
                do_sample=False,
                max_new_tokens=24,
                min_new_tokens=24,
            )

    return translate


def measure_in_this_process(size: str, workload: str, model_name: str, repeats: int, batch_size: int) -> dict:
    """CPU seconds and page faults per call of one workload of one model, alone in this process (child side)."""
    call = _workload(size, workload, model_name, batch_size)
    for _ in range(3):  # warm-up: the allocator reaches its steady state
        call()
    seconds, faults = [], []
    for _ in range(repeats):
        faults_before, start = _minor_faults(), time.process_time()
        call()
        seconds.append(time.process_time() - start)
        faults.append(_minor_faults() - faults_before)
    return {"cpu_s": statistics.median(seconds), "faults": statistics.median(faults), "cpu_s_all": seconds}


def measure(size: str, workload: str, args: argparse.Namespace) -> dict[str, Any]:
    """One child process per (model, allocator setting), in turn, `args.rounds` times; medians over the rounds."""
    row: dict[str, Any] = {"size": size, "workload": workload, "loadavg_before": loadavg()}
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {setting: {name: [] for name in MODELS} for setting in SETTINGS}
    for _ in range(args.rounds):
        for name in MODELS:
            for setting, variables in SETTINGS.items():
                command = [sys.executable, __file__, "--child", size, workload, name, "--repeats", str(args.repeats)]
                command += ["--batch", str(args.batch)] + (["--threads", str(args.threads)] if args.threads else [])
                done = subprocess.run(
                    command, env={**os.environ, **variables}, capture_output=True, text=True, check=False
                )
                if done.returncode != 0:
                    raise RuntimeError(f"child for {name}, {setting!r} failed:\n{done.stderr[-2000:]}")
                runs[setting][name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    row["settings"] = {
        setting: {
            name: {
                "cpu_s": statistics.median(run["cpu_s"] for run in results),
                "faults": statistics.median(run["faults"] for run in results),
                "runs": results,
            }
            for name, results in by_model.items()
        }
        for setting, by_model in runs.items()
    }
    row["loadavg_after"] = loadavg()
    return row


def _label(row: dict[str, Any]) -> str:
    return WORKLOADS[row["workload"]]


def format_table(payload: dict[str, Any]) -> str:
    default = next(iter(SETTINGS))
    lines = [
        f"Training step: {payload['settings']['batch']} sentences x (16 + 16) tokens; generate(): 32 sentences x 24 "
        "new tokens, beam 4, float32. Both models with the same weights and attention implementation, each alone "
        "in its own process: process CPU time and minor page faults "
        f"per call (median of {payload['settings']['repeats']} calls, then of "
        f"{payload['settings'].get('rounds', 1)} processes per model and setting)",
        "",
        "| dims | workload | allocator | ours ms | Marian ms | ours / Marian (speed) | ours faults "
        "| Marian faults | load before → after |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in payload["rows"]:
        for setting, result in row["settings"].items():
            ours, marian = result["ours"], result["marian"]
            lines.append(
                f"| {row['size']} | {_label(row)} | {setting} | {ours['cpu_s'] * 1e3:.0f} | "
                f"{marian['cpu_s'] * 1e3:.0f} | {marian['cpu_s'] / ours['cpu_s']:.2f} | {ours['faults']:,.0f} | "
                f"{marian['faults']:,.0f} | {row['loadavg_before'][0]:.1f} → {row['loadavg_after'][0]:.1f} |"
            )
    lines += [
        "",
        "Speed-up of each setting over glibc's defaults (default / setting, CPU time per call, per model):",
        "",
        "| dims | workload | setting | ours | Marian |",
        "| --- | --- | --- | ---: | ---: |",
    ]
    for row in payload["rows"]:
        baseline = row["settings"][default]
        for setting, result in row["settings"].items():
            if setting == default:
                continue
            gains = [baseline[name]["cpu_s"] / result[name]["cpu_s"] for name in MODELS]
            lines.append(f"| {row['size']} | {_label(row)} | {setting} | {gains[0]:.2f} | {gains[1]:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=None, help="interleaved rounds (default 5, quick 2)")
    parser.add_argument("--batch", type=int, default=None, help="sentences per batch (default 64, quick 16)")
    parser.add_argument("--rounds", type=int, default=None, help="child processes per model and setting (default 2)")
    parser.add_argument("--child", nargs=3, metavar=("SIZE", "WORKLOAD", "MODEL"), help=argparse.SUPPRESS)
    args = benchmark_arguments(parser, "allocator", "small dims only, 2 rounds, 16 sentences", argv)
    args.repeats = args.repeats or (2 if args.quick else 5)
    args.rounds = args.rounds or (1 if args.quick else 2)
    args.batch = args.batch or (16 if args.quick else 64)
    if args.child:
        print(json.dumps(measure_in_this_process(*args.child, args.repeats, args.batch)))
        return None
    sizes = ["small"] if args.quick else ["small", "base"]
    settings = {
        "repeats": args.repeats,
        "rounds": args.rounds,
        "batch": args.batch,
        "sizes": sizes,
        "allocators": SETTINGS,
    }
    payload: dict[str, Any] = {"benchmark": "allocator", "machine": machine_info(), "settings": settings, "rows": []}
    for size in sizes:
        for workload in WORKLOADS:
            print(f"{size}, {workload} ... (load {loadavg()})", flush=True)
            payload["rows"].append(measure(size, workload, args))
    save_and_print(args.json, payload, format_table(payload))
    return payload


if __name__ == "__main__":
    main()
