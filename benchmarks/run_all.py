"""Run the CPU performance suite and regenerate `benchmarks/RESULTS.md`: one command.

    python benchmarks/run_all.py --threads 1     # full; one torch thread
    python benchmarks/run_all.py --quick         # a few minutes: fewer rounds and lengths, tiny compile check
    python benchmarks/run_all.py --report-only   # rebuild RESULTS.md from benchmarks/results/*.json

Runs, each in its own process: `bench_vs_marian.py` (training and generation vs MarianMTModel with the same
weights, both models with sdpa and eager attention, MFU), `bench_dropout.py` and `bench_loss.py` (what the two CPU
training kernels buy: the model against itself with the kernel replaced by the plain PyTorch call),
`bench_allocator.py` (glibc's malloc defaults vs keeping freed memory, a process setting), `bench_scaling.py`
(forward time and memory vs length, sdpa vs eager; generation time vs output length with and without the cache)
and `bench_compile.py` (torch.compile vs eager training step). Each writes `benchmarks/results/<name>.json`; this
script then prints the tables and writes RESULTS.md with the machine (CPU model, cores, threads, torch /
transformers versions, date) and the load average before and after. A results file that the current script cannot
read (written by a different version of it) is named in RESULTS.md instead of its table.
`benchmarks/gpu.py` is run separately on a GPU machine; its `results/gpu.json` is included when present.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import bench_allocator  # noqa: E402
import bench_compile  # noqa: E402
import bench_dropout  # noqa: E402
import bench_loss  # noqa: E402
import bench_scaling  # noqa: E402
import bench_vs_marian  # noqa: E402
import gpu  # noqa: E402
from perf_common import RESULTS_DIR, loadavg, machine_info  # noqa: E402

RESULTS_MD = HERE / "RESULTS.md"
SUITES = {
    "vs_marian": "bench_vs_marian.py",
    "dropout": "bench_dropout.py",
    "loss": "bench_loss.py",
    "allocator": "bench_allocator.py",
    "scaling": "bench_scaling.py",
    "compile": "bench_compile.py",
}


def run_suites(args: argparse.Namespace) -> dict[str, float]:
    """Run each suite as a subprocess; return the wall time of each."""
    common = ["--quick"] if args.quick else []
    if args.threads:
        common += ["--threads", str(args.threads)]
    durations = {}
    for name, script in SUITES.items():
        if name in args.skip:
            continue
        command = [sys.executable, str(HERE / script), *common, "--json", name]
        print(f"\n=== {' '.join(command[1:])}  (load {loadavg()})", flush=True)
        start = time.perf_counter()
        subprocess.run(command, check=True)
        durations[name] = time.perf_counter() - start
    return durations


def _load(name: str) -> dict[str, Any] | None:
    path = RESULTS_DIR / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _section(name: str, title: str, formatter: Callable[[dict[str, Any]], str], note: str = "") -> list[str]:
    """A section of RESULTS.md from `results/<name>.json`: the date, the suite's table and `note`; or, when the
    current formatter cannot read that file, a line that says so; nothing when there is no such file."""
    results = _load(name)
    if results is None:
        return []
    date = results.get("machine", {}).get("date", "undated")
    try:
        table = formatter(results)
    except (KeyError, TypeError, ValueError):
        script = SUITES.get(name, f"{name}.py")
        return [
            f"## {title}",
            "",
            f"`benchmarks/results/{name}.json` ({date}) is not in the format of the current `{script}`: re-run it.",
            "",
        ]
    return [f"## {title}", "", f"Measured {date}.", "", table, ""] + ([note, ""] if note else [])


# Suites measured on their own, each a section of RESULTS.md: (results name, title, table formatter, note).
_SECTIONS = [
    ("dropout", "What the CPU dropout kernel buys in a training step (ours, ablation)", bench_dropout.format_table, ""),
    ("loss", "What the label-smoothed loss kernel buys (ours, ablation)", bench_loss.format_table, ""),
    (
        "allocator",
        "The C library's allocator, training and beam search (a process setting, not the model)",
        bench_allocator.format_table,
        "`glibc default`: the environment as is; `keep freed memory`: "
        "`MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824`, what "
        "`hf_vaswani.runtime.keep_freed_memory()` sets; `huge pages`: `THP_MEM_ALLOC_ENABLE=1` (PyTorch marks CPU "
        "tensors of 2 MB or more for transparent huge pages); both together (see `bench_allocator.py`).",
    ),
    ("scaling", "Scaling with length (ours)", bench_scaling.format_tables, ""),
    ("compile", "torch.compile vs eager, training step (CPU)", bench_compile.format_table, ""),
]

_VS_MARIAN_NOTE = (
    "The goal: ours at least as fast as Marian (≥ 1.00), each model with the faster of its two attention "
    "implementations in the cell (named in brackets, ours / Marian). `(CPU time)` is the same ratio from the process "
    "CPU time of each call: with one thread it is much less affected by other processes than the wall clock (with "
    "several threads it also counts OpenMP's spinning). `ours eager / sdpa` > 1: eager attention is the faster for "
    "ours. Tokens/s count source + target positions (padding included). MFU = analytic training FLOPs per second / "
    "the same-precision matmul rate measured in the same rounds."
)


def _header(run: dict[str, Any], threads: int | None) -> list[str]:
    """The title, the command, the machine and the conditions of the run."""
    machine = run["machine"]
    cores = machine["cores"] or 1
    # The suite itself keeps `threads` cores busy; more than that at the start or end means other processes ran.
    own = run.get("threads") or cores
    loaded = run["loadavg_start"][0] > own + 0.3 or run["loadavg_end"][0] > own + 0.3
    lines = [
        "# Performance results",
        "",
        "Generated by `python benchmarks/run_all.py"
        + (" --quick" if run.get("quick") else "")
        + (f" --threads {run['threads']}" if run.get("threads") else "")
        + "` (do not edit by hand; methodology in `docs/benchmarks.md` and each script's docstring). Each section "
        "gives the date it was measured.",
        "",
        "| machine | |",
        "| --- | --- |",
        f"| CPU | {machine['cpu']} ({', '.join(machine['isa'])}) |",
        f"| cores / torch threads used | {machine['cores']} / {threads} |",
        f"| Python, torch, transformers | {machine['python']}, {machine['torch']}, {machine['transformers']} |",
        f"| date | {machine['date']} |",
        f"| load average (1, 5, 15 min) at start → end | {run['loadavg_start']} → {run['loadavg_end']} |",
        f"| mode | {'quick (few rounds: development numbers)' if run.get('quick') else 'full'} |",
        "",
    ]
    if loaded:
        peak_load = max(run["loadavg_start"][0], run["loadavg_end"][0])
        lines += [
            f"> **Measured on a loaded machine** (load average up to {peak_load:.1f} on {cores} cores: other "
            "processes were running). Absolute numbers are low and noisy; the ratios come from interleaved rounds "
            "(every contender in turn, same process) and are what to read. Each table gives the load average "
            "before → after it.",
            "",
        ]
    return lines


def report(run: dict[str, Any]) -> str:
    """RESULTS.md: machine and conditions, then every suite's tables."""
    first = next((results for results in map(_load, SUITES) if results), {})
    lines = _header(run, first.get("machine", run["machine"]).get("torch_threads"))
    lines += _section(
        "vs_marian", "Ours vs MarianMTModel (same dims, same weights)", bench_vs_marian.format_tables, _VS_MARIAN_NOTE
    )
    for section in _SECTIONS:
        lines += _section(*section)
    lines += ["## GPU (`benchmarks/gpu.py`)", ""]
    gpu_result = _load("gpu")
    if gpu_result and not gpu_result["settings"].get("smoke"):
        lines += [gpu.format_table(gpu_result), ""]
    else:
        lines += [
            "Not run: there is no `benchmarks/results/gpu.json` of a full run. On a GPU machine run "
            "`python benchmarks/gpu.py` (base model, bf16, sdpa, eager vs torch.compile, ~25k + 25k-token "
            "batches; goal ≥ 500,000 tokens/s on one H200), then `python benchmarks/run_all.py --report-only`.",
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and lengths (development)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads for every suite")
    parser.add_argument("--skip", default="", help="comma-separated suites to skip: " + ", ".join(SUITES))
    parser.add_argument("--report-only", action="store_true", help="only rebuild RESULTS.md from results/*.json")
    args = parser.parse_args(argv)
    args.skip = {name.strip() for name in args.skip.split(",") if name.strip()}
    unknown = args.skip - set(SUITES)
    if unknown:
        parser.error(f"unknown suites to skip: {sorted(unknown)}")
    run_path = RESULTS_DIR / "run.json"
    if args.report_only and run_path.exists():
        run = json.loads(run_path.read_text())
    else:
        run = {"machine": machine_info(), "loadavg_start": loadavg(), "quick": args.quick, "threads": args.threads}
        if not args.report_only:
            run["durations_s"] = run_suites(args)
        run["loadavg_end"] = loadavg()
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        run_path.write_text(json.dumps(run, indent=2) + "\n")
    text = report(run)
    RESULTS_MD.write_text(text + "\n")
    print("\n" + text)
    print(f"\nwrote {RESULTS_MD}")


if __name__ == "__main__":
    main()
