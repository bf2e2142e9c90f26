"""Latency of the demo: its API through `gradio_client`, and optionally the page in a real browser.

Starts the demo in this process on 127.0.0.1 (a free port) unless ``--url`` points at a running one, then measures,
cycling through the course examples:

* N sequential ``/translate`` calls (the translation, its status line and its word pairs) and one burst of C
  concurrent ones (threads);
* N sequential "complete" requests: ``/translate``, then ``/alignment``, ``/view`` and ``/record`` at once with the
  same client, everything the page shows (a demo whose ``/translate`` still returns its figures itself has no other
  endpoint: there the complete request is that one call);
* the same number of calls to an endpoint that only echoes its text, in an app with the same queue: what Gradio and
  `gradio_client` take by themselves (``--no-floor`` skips it; not measured with ``--url``);
* with ``--browser``, the course examples typed into the page in Chromium (Debian's ``/usr/bin/chromium`` through
  Playwright), N clicks on Translate: the time until the translation shows, and until its two alignment figures
  (the word lines and the heatmap) show too;
* with ``--steps N`` instead (no server), the step-by-step view's server side next to the translation it follows
  (`steps_times`).

Prints a table of p50/p90/p99 latencies (and the server-side model time, read from the status line) and writes JSON
with the raw numbers and a description of the machine.

    python benchmarks/bench_demo.py                       # shipped checkpoint, else a tiny random model
    python benchmarks/bench_demo.py --browser --backend torch --out bench.json
    python benchmarks/bench_demo.py --url http://127.0.0.1:7860/ --browser   # a demo started with `hf-vaswani demo`
    python benchmarks/bench_demo.py --steps 3                                  # the step-by-step view
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

from hf_vaswani.backends import BACKEND_CHOICES  # noqa: E402
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
    """(seconds, model seconds from the status line, translation) of one ``/translate`` call."""
    started = time.perf_counter()
    outputs = client.predict(example[0], example[1], **options, api_name="/translate")
    elapsed = time.perf_counter() - started
    status = outputs[1]
    if not status.startswith("Translated"):
        raise RuntimeError(f"/translate failed on {example[0]!r}: {status}")
    match = _MODEL_SECONDS.search(status)
    return elapsed, float(match.group(1)) if match else None, outputs[0]


#: What a client calls after ``/translate`` to have everything the page shows (a demo that has them).
AFTER_TRANSLATE = ("/alignment", "/view", "/record")


def _complete(client: Any, example: tuple[str, str], options: dict[str, Any], after: list[str]) -> float:
    """Seconds of one complete request: ``/translate``, then the endpoints of `after` with the same client, all at
    once (as the page asks for them)."""
    started = time.perf_counter()
    _call(client, example, options)
    jobs = [client.submit(api_name=endpoint) for endpoint in after]
    for job in jobs:
        job.result()
    return time.perf_counter() - started


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


CHROMIUM = Path("/usr/bin/chromium")

#: What the translate tab shows of a translation besides its text: (selector, attribute) of its two alignment
#: figures, the word lines and the heatmap (the bertviz view and the record link sit in another tab and a folded
#: section, drawn only when opened).
_FIGURES = [["#alignment-links img", "src"], ["#alignment-plot img", "src"]]
_READ_FIGURES_JS = """(figures) => figures.map(([selector, attribute]) => {
  const element = document.querySelector(selector);
  return element ? element.getAttribute(attribute) : null;
})"""
#: Arms a timer for the next click on Translate: from that click (in the page, so that Playwright's own work is not
#: counted) to the first frame that shows the translation `expected`, and to the first that also shows figures that
#: all differ from `before` (what the page showed before the click). `window.benchTimes` resolves to both, in ms.
_ARM_TIMER_JS = f"""([expected, figures, before]) => {{
  const read = {_READ_FIGURES_JS};
  const button = document.querySelector("#translate-button");
  window.benchTimes = new Promise((resolve) => {{
    let start = null;
    let shown = null;
    const frame = () => {{
      const now = performance.now() - start;
      const translation = document.querySelector("#translation textarea");
      if (shown === null && translation && translation.value === expected) shown = now;
      const figuresNow = read(figures);
      if (shown !== null && figuresNow.every((item, i) => item && item !== before[i])) resolve([shown, now]);
      else requestAnimationFrame(frame);
    }};
    const clicked = () => {{
      start = performance.now();
      requestAnimationFrame(frame);
    }};
    button.addEventListener("click", clicked, {{ capture: true, once: true }});
  }});
}}"""


def browser_times(url: str, translations: dict[str, str], clicks: int, warmup: int) -> dict[str, list[float]]:
    """Seconds from a click on Translate until the page shows the translation, and until it also shows its two
    alignment figures, for `clicks` course examples typed into the page in Chromium (typing and choosing
    the direction are not timed; the times are taken in the page, frame by frame). `translations` (text:
    translation, from the API) tell when the right one shows."""
    from playwright.sync_api import sync_playwright

    arguments = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
    times: dict[str, list[float]] = {"translation": [], "everything": []}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=arguments, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 4000}, locale="en-US")
            page.goto(url, wait_until="domcontentloaded")
            source = page.locator("#source-text textarea")
            source.wait_for(timeout=60_000)
            for i in range(warmup + clicks):
                text, direction = EXAMPLES[i % len(EXAMPLES)]
                source.fill(text)
                page.locator(f'#direction input[value="{direction}"]').check()
                page.wait_for_timeout(200)  # let the page settle: the previous figures are drawn
                before = page.evaluate(_READ_FIGURES_JS, _FIGURES)
                page.evaluate(_ARM_TIMER_JS, [translations[text], _FIGURES, before])
                page.locator("#translate-button").click()
                shown, everything = page.evaluate("window.benchTimes")
                if i >= warmup:
                    times["translation"].append(shown / 1000)
                    times["everything"].append(everything / 1000)
        finally:
            browser.close()
    return times


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
        n_params = sum(p.numel() for p in backend.runner.model.parameters())
        model_desc = {
            "model": model,
            "tiny_random_model": is_tiny_model(model),
            "parameters": n_params,
            "default_num_beams": backend.choices.default_beams,
            "default_max_new_tokens": backend.choices.default_max_new_tokens,
            "concurrency_limit": args.concurrency_limit,
            "translation_backend": "ctranslate2" if backend.runner.translator is not None else "torch",
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
            endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
            after = [endpoint for endpoint in AFTER_TRANSLATE if endpoint in endpoints]
            for i in range(args.warmup):
                _complete(client, EXAMPLES[i % len(EXAMPLES)], options, after)
            sequential = [_call(client, EXAMPLES[i % len(EXAMPLES)], options) for i in range(args.sequential)]
            complete = [_complete(client, EXAMPLES[i % len(EXAMPLES)], options, after) for i in range(args.sequential)]
            burst = [EXAMPLES[i % len(EXAMPLES)] for i in range(args.concurrent)]
            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=args.concurrent) as pool:
                concurrent = list(pool.map(lambda example: _call(client, example, options), burst))
            burst_seconds = time.perf_counter() - started
            translations = {text: _call(client, (text, direction), options)[2] for text, direction in EXAMPLES}
            browser = browser_times(url, translations, args.sequential, args.warmup) if args.browser else None
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
        "benchmark": "demo latency (gradio_client end to end, and in a browser)",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine(),
        **model_desc,
        "options": options or "model defaults",
        "sequential": summary(sequential),
        "complete": {
            "calls": len(complete),
            "endpoints": ["/translate", *after],
            "end_to_end": percentiles(complete),
            "model": None,
            "raw_end_to_end_s": [round(seconds, 4) for seconds in complete],
        },
        "concurrent": {**summary(concurrent), "threads": args.concurrent, "wall_s": round(burst_seconds, 3)},
        "translations": translations,
    }
    report["concurrent"]["throughput_per_s"] = round(args.concurrent / burst_seconds, 3)
    if browser is not None:
        report["browser"] = {
            "clicks": len(browser["translation"]),
            "translation": percentiles(browser["translation"]),
            "everything": percentiles(browser["everything"]),
            "raw_s": {key: [round(seconds, 4) for seconds in values] for key, values in browser.items()},
        }
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
    sections = [("sequential", "sequential"), ("complete request", "complete")]
    sections.append((f"concurrent ({report['concurrent']['threads']})", "concurrent"))
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
    if "browser" in report:
        browser = report["browser"]
        for part, label in (("translation", "browser, translation shown"), ("everything", "browser, everything shown")):
            stats = browser[part]
            print(
                f"{label:<30}{browser['clicks']:>6}{stats['p50_ms']:>10.0f}{stats['p90_ms']:>10.0f}"
                f"{stats['p99_ms']:>10.0f}{stats['mean_ms']:>10.0f}{stats['max_ms']:>10.0f}"
            )
    print(f"complete request: {', '.join(report['complete']['endpoints'])}")
    burst = report["concurrent"]
    print(f"burst of {burst['threads']}: {burst['wall_s']:.2f} s wall, {burst['throughput_per_s']:.2f} requests/s")


def steps_times(model: str | None, repeats: int, threads: int | None) -> dict[str, Any]:
    """The step-by-step view's server side, side by side with the translation it follows, for each course
    example, each figure encoded as the page's SVG (`vaswani_demo.components.figure`): the translation
    (`translate_outputs`); the decoding trace alone; "step 1 shown", what the page runs after a translation
    (`traced_outputs`: the trace and the first step's three figures); "tree shown", what it runs next
    (`tree_output`); "view ready", the two together; one step change (three figures); and the SVG size of the
    largest figure, the tree (the file a download saves, or draws on a canvas for PNG). Milliseconds
    (`percentiles`) over `repeats` runs per sentence (its first run not counted); the tree's size in kB."""
    import gradio as gr
    import matplotlib
    import torch

    from vaswani_demo import steps_view
    from vaswani_demo.backend import DemoBackend
    from vaswani_demo.components import figure
    from vaswani_demo.events import translate_outputs

    if threads:
        torch.set_num_threads(threads)
    matplotlib.rcParams["svg.fonttype"] = "none"  # as build_app sets it
    backend = DemoBackend.load(model or shipped_checkpoint())
    with gr.Blocks():
        plot = figure("figure", "bench-figure")
    names = ("translate", "trace", "step 1 shown", "tree shown", "view ready", "step change")
    times: dict[str, list[float]] = {name: [] for name in names}
    tree_kb: list[float] = []
    try:
        for text, direction in EXAMPLES:
            for run in range(repeats + 1):
                started = time.perf_counter()
                result, _ = translate_outputs(backend, text, direction)
                translated = time.perf_counter()
                steps_view.trace_of_record(backend, result.record)
                traced = time.perf_counter()
                outputs = steps_view.traced_outputs(backend, result.record)
                for shown in outputs[5:]:
                    plot.postprocess(shown)
                first_step = time.perf_counter()
                tree = plot.postprocess(steps_view.tree_output(outputs[0]))
                tree_done = time.perf_counter()
                for shown in steps_view.step_outputs(outputs[0], 2)[1:]:
                    plot.postprocess(shown)
                stepped = time.perf_counter()
                if run:
                    times["translate"].append(translated - started)
                    times["trace"].append(traced - translated)
                    times["step 1 shown"].append(first_step - traced)
                    times["tree shown"].append(tree_done - first_step)
                    times["view ready"].append(tree_done - traced)
                    times["step change"].append(stepped - tree_done)
                    tree_kb.append(len(tree.plot) * 3 / 4 / 1000)  # base64 in the data URL
    finally:
        backend.close()
    table = {name: percentiles(values) for name, values in times.items()}
    table["tree svg kB"] = {"max": max(tree_kb), "mean": float(np.mean(tree_kb))}
    return table


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
        choices=BACKEND_CHOICES,
        default="auto",
        help="what chooses the translation in the app (default: auto, CTranslate2 when installed)",
    )
    parser.add_argument(
        "--browser",
        action="store_true",
        help=f"also time clicks on the course examples in Chromium ({CHROMIUM}, through playwright)",
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
    parser.add_argument(
        "--steps",
        type=int,
        default=0,
        metavar="N",
        help="only time the step-by-step view next to the translation, N runs per course example (no server)",
    )
    parser.add_argument("--threads", type=int, default=None, help="torch threads for --steps (default: torch's)")
    args = parser.parse_args(argv)
    if args.steps:
        table = steps_times(args.model, args.steps, args.threads)
        for name, values in table.items():
            print(f"{name:12s} " + "  ".join(f"{key} {value:.0f}" for key, value in values.items()))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"steps": table, "machine": machine()}, indent=2) + "\n", encoding="utf-8")
        return 0
    if args.sequential < 1 or args.concurrent < 1:
        parser.error("--sequential and --concurrent must be at least 1")
    if args.browser and not CHROMIUM.exists():
        parser.error(f"--browser needs Chromium at {CHROMIUM} (Debian: apt-get install chromium)")
    if args.browser and (args.num_beams is not None or args.max_new_tokens is not None):
        parser.error("--browser clicks the page with its own decoding options: leave out --num-beams/--max-new-tokens")
    report = run(args)
    print_table(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
