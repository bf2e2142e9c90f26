"""Latency of the demo's ``/translate`` endpoint, end to end through `gradio_client`.

Starts the demo in this process on 127.0.0.1 (a free port) unless ``--url`` points at a running one, then measures
N sequential calls and one burst of C concurrent calls (threads), cycling through the course examples. Prints a
table of p50/p90/p99 latencies (and the server-side model time, read from the status line) and writes JSON with the
raw numbers and a description of the machine.

    python benchmarks/bench_demo.py                       # shipped checkpoint, else a tiny random model
    python benchmarks/bench_demo.py --model PATH --sequential 50 --concurrent 20 --out bench.json
    python benchmarks/bench_demo.py --url http://127.0.0.1:7860/   # a demo started with `hf-vaswani demo`

End-to-end time includes the queue, the model run (generation + one teacher-forced pass with attentions), the
heatmap, the bertviz page (~0.4 MB of HTML), the JSON record and the transfer of all of it. For scale, the same
number of sequential calls to an endpoint that only echoes its text, in an app with the same queue, measures what
Gradio and `gradio_client` take by themselves (``--no-floor`` skips it; not measured with ``--url``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import socket
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from vaswani_demo import build_app, launch_app  # noqa: E402
from vaswani_demo.settings import EXAMPLES  # noqa: E402
from vaswani_demo.testing import is_tiny_model, shipped_checkpoint, write_tiny_model  # noqa: E402

_MODEL_SECONDS = re.compile(r" in (\d+(?:\.\d+)?) s ")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def percentiles(values: list[float]) -> dict[str, float]:
    """p50/p90/p99 (linear interpolation), mean, min and max of `values`, in milliseconds."""
    array = np.asarray(values, dtype=np.float64) * 1000.0
    return {
        "p50_ms": float(np.percentile(array, 50)),
        "p90_ms": float(np.percentile(array, 90)),
        "p99_ms": float(np.percentile(array, 99)),
        "mean_ms": float(array.mean()),
        "min_ms": float(array.min()),
        "max_ms": float(array.max()),
    }


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    import gradio
    import torch
    import transformers

    info: dict[str, Any] = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "load_average_1_5_15": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "gradio": gradio.__version__,
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return info


def _call(client: Any, example: tuple[str, str], options: dict[str, Any]) -> tuple[float, float | None, str]:
    started = time.perf_counter()
    outputs = client.predict(example[0], example[1], **options, api_name="/translate")
    elapsed = time.perf_counter() - started
    status = outputs[1]
    if not status.startswith("Translated"):
        raise RuntimeError(f"/translate failed on {example[0]!r}: {status}")
    match = _MODEL_SECONDS.search(status)
    return elapsed, float(match.group(1)) if match else None, outputs[0]


def gradio_floor(calls: int, concurrency_limit: int) -> list[float]:
    """Seconds of `calls` sequential calls to an app whose one endpoint echoes its text: Gradio's own round trip."""
    import gradio as gr
    from gradio_client import Client

    with gr.Blocks() as app:
        text, echoed = gr.Textbox(), gr.Textbox()
        gr.Button().click(lambda value: value, text, echoed, api_name="echo")
    app.queue(default_concurrency_limit=concurrency_limit)
    port = _free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        client = Client(f"http://127.0.0.1:{port}/", verbose=False, analytics_enabled=False)
        client.predict("warm-up", api_name="/echo")
        times = []
        for i in range(calls):
            started = time.perf_counter()
            client.predict(f"el gato negro {i}", api_name="/echo")
            times.append(time.perf_counter() - started)
        return times
    finally:
        app.close()


def run(args: argparse.Namespace) -> dict[str, Any]:
    from gradio_client import Client

    app = None
    model_desc: dict[str, Any] = {}
    if args.url:
        url = args.url
        model_desc["model"] = f"(running server at {url})"
    else:
        model = args.model
        if model is None:
            shipped = None if args.tiny else shipped_checkpoint()
            model = shipped or str(write_tiny_model(Path(tempfile.mkdtemp(prefix="bench-demo-")) / "tiny"))
        app = build_app(model, concurrency_limit=args.concurrency_limit, translation_backend=args.backend)
        backend = app.demo_backend
        n_params = sum(p.numel() for p in backend.model.parameters())
        model_desc = {
            "model": model,
            "tiny_random_model": is_tiny_model(model),
            "parameters": n_params,
            "default_num_beams": backend.default_beams,
            "default_max_new_tokens": backend.default_max_new_tokens,
            "concurrency_limit": args.concurrency_limit,
            "translation_backend": "ctranslate2" if backend.translator is not None else "torch",
        }
        port = _free_port()
        launch_app(app, host="127.0.0.1", port=port, prevent_thread_lock=True, quiet=True)
        url = f"http://127.0.0.1:{port}/"
    options: dict[str, Any] = {}
    if args.num_beams is not None:
        options["num_beams"] = args.num_beams
    if args.max_new_tokens is not None:
        options["max_new_tokens"] = args.max_new_tokens
    try:
        with tempfile.TemporaryDirectory() as downloads:
            client = Client(url, verbose=False, analytics_enabled=False, download_files=downloads)
            for i in range(args.warmup):
                _call(client, EXAMPLES[i % len(EXAMPLES)], options)
            sequential = [_call(client, EXAMPLES[i % len(EXAMPLES)], options) for i in range(args.sequential)]
            burst = [EXAMPLES[i % len(EXAMPLES)] for i in range(args.concurrent)]
            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=args.concurrent) as pool:
                concurrent = list(pool.map(lambda example: _call(client, example, options), burst))
            burst_seconds = time.perf_counter() - started
            translations = {text: _call(client, (text, direction), options)[2] for text, direction in EXAMPLES}
    finally:
        if app is not None:
            app.close()

    def summary(results: list[tuple[float, float | None, str]]) -> dict[str, Any]:
        model_times = [r[1] for r in results if r[1] is not None]
        return {
            "calls": len(results),
            "end_to_end": percentiles([r[0] for r in results]),
            "model": percentiles(model_times) if model_times else None,
            "raw_end_to_end_s": [round(r[0], 4) for r in results],
        }

    report = {
        "benchmark": "demo /translate latency (gradio_client, end to end)",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine(),
        **model_desc,
        "options": options or "model defaults",
        "sequential": summary(sequential),
        "concurrent": {**summary(concurrent), "threads": args.concurrent, "wall_s": round(burst_seconds, 3)},
        "translations": translations,
    }
    report["concurrent"]["throughput_per_s"] = round(args.concurrent / burst_seconds, 3)
    if args.floor and not args.url:
        floor = gradio_floor(args.sequential, args.concurrency_limit)
        report["gradio_floor"] = {"calls": len(floor), "end_to_end": percentiles(floor), "model": None}
    return report


def print_table(report: dict[str, Any]) -> None:
    """The p50/p90/p99 table on stdout."""
    info = report["machine"]
    print(
        f"machine: {info.get('cpu_model', info['processor'])}, {info['cpu_count']} CPUs, torch threads "
        f"{info['torch_threads']}, load average {info['load_average_1_5_15']}, cuda: {info['cuda']}"
    )
    print(f"model: {report['model']}" + (" (tiny random weights)" if report.get("tiny_random_model") else ""))
    print(f"options: {report['options']}")
    header = f"{'run':<30}{'calls':>6}{'p50 ms':>10}{'p90 ms':>10}{'p99 ms':>10}{'mean ms':>10}{'max ms':>10}"
    print(header)
    print("-" * len(header))
    sections = [("sequential", "sequential"), (f"concurrent ({report['concurrent']['threads']})", "concurrent")]
    if "gradio_floor" in report:
        sections.append(("echo endpoint", "gradio_floor"))
    for name, key in sections:
        section = report[key]
        for part in ("end_to_end", "model"):
            stats = section[part]
            if stats is None:
                continue
            label = f"{name}, {'end to end' if part == 'end_to_end' else 'model only'}"
            print(
                f"{label:<30}{section['calls']:>6}{stats['p50_ms']:>10.0f}{stats['p90_ms']:>10.0f}"
                f"{stats['p99_ms']:>10.0f}{stats['mean_ms']:>10.0f}{stats['max_ms']:>10.0f}"
            )
    burst = report["concurrent"]
    print(f"burst of {burst['threads']}: {burst['wall_s']:.2f} s wall, {burst['throughput_per_s']:.2f} requests/s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="model folder or Hub id (default: the shipped checkpoint)")
    parser.add_argument("--tiny", action="store_true", help="use a tiny random model even if the checkpoint exists")
    parser.add_argument("--url", default=None, help="benchmark a demo that is already running at this URL")
    parser.add_argument("--sequential", type=int, default=20, help="sequential calls (default: 20)")
    parser.add_argument("--concurrent", type=int, default=20, help="concurrent calls in one burst (default: 20)")
    parser.add_argument("--warmup", type=int, default=2, help="calls before measuring (default: 2)")
    parser.add_argument("--num-beams", type=int, default=None, help="beam size (default: the model's)")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="longest translation (default: the model's)")
    parser.add_argument("--concurrency-limit", type=int, default=2, help="the app's concurrency limit (default: 2)")
    parser.add_argument(
        "--backend",
        choices=("auto", "ctranslate2", "torch"),
        default="auto",
        help="what chooses the translation in the app (default: auto, CTranslate2 when installed)",
    )
    parser.add_argument(
        "--no-floor",
        dest="floor",
        action="store_false",
        help="do not measure the echo endpoint (Gradio's own round trip)",
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / "test-artifacts" / "bench_demo.json", help="JSON output path"
    )
    args = parser.parse_args(argv)
    if args.sequential < 1 or args.concurrent < 1:
        parser.error("--sequential and --concurrent must be at least 1")
    report = run(args)
    print_table(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
