"""What the C library's allocator costs a CPU training step: glibc's defaults vs. keeping freed memory, side by side.

    python benchmarks/bench_allocator.py --threads 1

Not a change to the model: a setting of the process that trains it. glibc's `malloc` serves large blocks with
fresh `mmap`ed pages and hands freed memory back to the system (`munmap`, heap trimming), so a tensor of tens of
megabytes allocated in every step (float32 logits of 1024 tokens x 8000 words are 33 MB) touches new pages every
time, and each first touch is a page fault (a few microseconds per 4 KB page in a virtual machine). Two glibc
tunables make `malloc` keep and reuse that memory instead:

    MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=1099511627776 python train.py ...

The cost is that the process keeps its peak memory. The same training step as `bench_vs_marian.py` (64 x (16 + 16)
tokens, forward with labels, backward, fused AdamW) runs for ours and `MarianMTModel` (same weights, eager
attention: its faster CPU training path) in two child processes, one per allocator setting, each interleaving
the two models. Reported per step: process CPU time (median of rounds) and minor page faults (`getrusage`).
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
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_common import build_pair, loadavg, machine_info, make_batch, save_and_print, training_step  # noqa: E402

SETTINGS = {
    "glibc default": {},
    "keep freed memory": {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 40)},
}
MODELS = ("ours", "marian_eager")


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def measure_in_this_process(size: str, precision: str, repeats: int, batch_size: int) -> dict[str, Any]:
    """CPU seconds and page faults per training step of each model, interleaved rounds (child side)."""
    ours, twins = build_pair(size, marian_attn=("eager",))
    batch = make_batch(batch_size, 16, 16, ours.config.vocab_size, seed=1)
    steps = {
        "ours": training_step(ours, batch, precision == "bf16"),
        "marian_eager": training_step(twins["eager"], batch, precision == "bf16"),
    }
    for step in steps.values():  # warm-up: the allocator reaches its steady state
        step(), step()
    seconds: dict[str, list[float]] = {name: [] for name in MODELS}
    faults: dict[str, list[int]] = {name: [] for name in MODELS}
    for _ in range(repeats):
        for name in MODELS:
            faults_before, start = _minor_faults(), time.process_time()
            steps[name]()
            seconds[name].append(time.process_time() - start)
            faults[name].append(_minor_faults() - faults_before)
    summary = {}
    for name in MODELS:
        summary[name] = {"cpu_s": statistics.median(seconds[name]), "faults": statistics.median(faults[name])}
        summary[name]["cpu_s_all"] = seconds[name]
    return summary


def measure(size: str, precision: str, args: argparse.Namespace) -> dict[str, Any]:
    """Run `measure_in_this_process` under each allocator setting in a child process."""
    row: dict[str, Any] = {"size": size, "precision": precision, "loadavg_before": loadavg(), "settings": {}}
    for setting, variables in SETTINGS.items():
        command = [sys.executable, __file__, "--child", size, precision, "--repeats", str(args.repeats)]
        command += ["--batch", str(args.batch)] + (["--threads", str(args.threads)] if args.threads else [])
        environment = {**os.environ, **variables}
        done = subprocess.run(command, env=environment, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"child for {setting!r} failed:\n{done.stderr[-2000:]}")
        row["settings"][setting] = json.loads(done.stdout.strip().splitlines()[-1])
    row["loadavg_after"] = loadavg()
    return row


def format_table(payload: dict[str, Any]) -> str:
    default, kept = SETTINGS
    lines = [
        f"Training step, {payload['settings']['batch']} sentences x (16 + 16) tokens, process CPU time (median of "
        f"{payload['settings']['repeats']} interleaved rounds) and minor page faults per step; one child process per "
        "allocator setting",
        "",
        "| dims | precision | allocator | ours ms | Marian eager ms | ours / Marian (speed) | ours faults "
        "| Marian faults | load before → after |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in payload["rows"]:
        for setting in (default, kept):
            result = row["settings"][setting]
            ours, marian = result["ours"], result["marian_eager"]
            lines.append(
                f"| {row['size']} | {row['precision']} | {setting} | {ours['cpu_s'] * 1e3:.0f} | "
                f"{marian['cpu_s'] * 1e3:.0f} | {marian['cpu_s'] / ours['cpu_s']:.2f} | {ours['faults']:,.0f} | "
                f"{marian['faults']:,.0f} | {row['loadavg_before'][0]:.1f} → {row['loadavg_after'][0]:.1f} |"
            )
    lines += [
        "",
        "Speed-up from keeping freed memory (glibc default / kept, per model):",
        "",
        "| dims | precision | ours | Marian eager |",
        "| --- | --- | ---: | ---: |",
    ]
    for row in payload["rows"]:
        default_result, kept_result = row["settings"][default], row["settings"][kept]
        gains = [default_result[name]["cpu_s"] / kept_result[name]["cpu_s"] for name in MODELS]
        lines.append(f"| {row['size']} | {row['precision']} | {gains[0]:.2f} | {gains[1]:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small dims only, 2 rounds, 16 sentences")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved rounds (default 5, quick 2)")
    parser.add_argument("--batch", type=int, default=None, help="sentences per batch (default 64, quick 16)")
    parser.add_argument("--json", default="allocator", help="results name: benchmarks/results/<name>.json")
    parser.add_argument("--child", nargs=2, metavar=("SIZE", "PRECISION"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.repeats = args.repeats or (2 if args.quick else 5)
    args.batch = args.batch or (16 if args.quick else 64)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.child:
        print(json.dumps(measure_in_this_process(*args.child, args.repeats, args.batch)))
        return None
    sizes = ["small"] if args.quick else ["small", "base"]
    settings = {"repeats": args.repeats, "batch": args.batch, "sizes": sizes, "allocators": SETTINGS}
    payload: dict[str, Any] = {"benchmark": "allocator", "machine": machine_info(), "settings": settings, "rows": []}
    for size in sizes:
        for precision in ("fp32", "bf16"):
            print(f"{size}, {precision} ... (load {loadavg()})", flush=True)
            payload["rows"].append(measure(size, precision, args))
    save_and_print(args.json, payload, format_table(payload))
    return payload


if __name__ == "__main__":
    main()
