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
attention: its faster CPU training path), each model *alone* in its own child process, as a training run is:
one process per (model, setting), in turn, `--rounds` times. (Two models interleaved in one process reuse the
memory the other one freed, which hides the effect: a first version of this benchmark did that and saw no
faults for ours.) Reported per step: process CPU time (median of steps, then of rounds) and minor page faults
(`getrusage`). The ours / Marian ratios compare separate processes, so they are noisier than the interleaved
ones of `bench_vs_marian.py`.
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


def measure_in_this_process(size: str, precision: str, model_name: str, repeats: int, batch_size: int) -> dict:
    """CPU seconds and page faults per training step of one model, trained alone in this process (child side)."""
    ours, twins = build_pair(size, marian_attn=("eager",))
    model = ours if model_name == "ours" else twins["eager"]
    step = training_step(model, make_batch(batch_size, 16, 16, ours.config.vocab_size, seed=1), precision == "bf16")
    for _ in range(3):  # warm-up: the allocator reaches its steady state
        step()
    seconds, faults = [], []
    for _ in range(repeats):
        faults_before, start = _minor_faults(), time.process_time()
        step()
        seconds.append(time.process_time() - start)
        faults.append(_minor_faults() - faults_before)
    return {"cpu_s": statistics.median(seconds), "faults": statistics.median(faults), "cpu_s_all": seconds}


def measure(size: str, precision: str, args: argparse.Namespace) -> dict[str, Any]:
    """One child process per (model, allocator setting), in turn, `args.rounds` times; medians over the rounds."""
    row: dict[str, Any] = {"size": size, "precision": precision, "loadavg_before": loadavg()}
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {setting: {name: [] for name in MODELS} for setting in SETTINGS}
    for _ in range(args.rounds):
        for name in MODELS:
            for setting, variables in SETTINGS.items():
                command = [sys.executable, __file__, "--child", size, precision, name, "--repeats", str(args.repeats)]
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


def format_table(payload: dict[str, Any]) -> str:
    default, kept = SETTINGS
    lines = [
        f"Training step, {payload['settings']['batch']} sentences x (16 + 16) tokens, each model alone in its own "
        f"process: process CPU time and minor page faults per step (median of {payload['settings']['repeats']} "
        f"steps, then of {payload['settings'].get('rounds', 1)} processes per model and setting)",
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
    parser.add_argument("--rounds", type=int, default=None, help="child processes per model and setting (default 2)")
    parser.add_argument("--child", nargs=3, metavar=("SIZE", "PRECISION", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.repeats = args.repeats or (2 if args.quick else 5)
    args.rounds = args.rounds or (1 if args.quick else 2)
    args.batch = args.batch or (16 if args.quick else 64)
    if args.threads:
        torch.set_num_threads(args.threads)
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
        for precision in ("fp32", "bf16"):
            print(f"{size}, {precision} ... (load {loadavg()})", flush=True)
            payload["rows"].append(measure(size, precision, args))
    save_and_print(args.json, payload, format_table(payload))
    return payload


if __name__ == "__main__":
    main()
