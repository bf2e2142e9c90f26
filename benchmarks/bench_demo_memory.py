"""Resident memory and temporary files of the demo as fresh sessions keep coming: do they stay flat?

Starts the demo in this process on 127.0.0.1 (a free port), then sends N requests, each from a fresh session (a new
``session_hash``) through Gradio's raw API, cycling through the course examples. A request is, by ``--mode``:

* ``mixed`` (the default): ``/translate``; every 10th request also the page's explanation of the translation (the
  alignment section drawn by a method other than attention, cycling through the methods the demo offers, called
  through Gradio's queue as the page calls it) and its ``/record``.
* ``full``: ``/translate``, ``/alignment``, ``/view`` and ``/record`` for every request.
* ``translate``: ``/translate`` alone.

Every ``--every`` requests it prints the process's resident memory (RSS), the sessions whose state the server
keeps, and the files (count and MiB) the demo and Gradio's cache hold in the temporary folder; it writes JSON with
the numbers. Everything the app writes to temporary files goes to a scratch folder of this run
(``GRADIO_TEMP_DIR`` and `tempfile.tempdir`), removed at the end. Past the first ``--warmup`` requests, RSS and
temporary files should stay within ~10 %.

    python benchmarks/bench_demo_memory.py                        # a tiny random model, 1,000 mixed requests
    python benchmarks/bench_demo_memory.py --mode translate       # /translate alone, from fresh sessions
    python benchmarks/bench_demo_memory.py --model pretrained/vaswani-tatoeba-es-en --requests 500
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import socket
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from vaswani_demo.settings import EXAMPLES, MAX_SESSIONS  # noqa: E402

#: Every this many requests, a mixed run also explains the translation and asks for its record.
EXPLAIN_EVERY = 10
MODES = ("mixed", "full", "translate")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rss_mb() -> float:
    """This process's resident memory, in MiB (from /proc, else `resource`'s peak)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _files_under(folder: Path) -> tuple[int, float]:
    """(files, MiB) under `folder`."""
    count, size = 0, 0
    for path in folder.rglob("*"):
        try:
            if path.is_file():
                count += 1
                size += path.stat().st_size
        except OSError:
            pass  # removed meanwhile
    return count, size / 2**20


def call(client: httpx.Client, endpoint: str, data: list[Any], session: str) -> str:
    """One raw call of `endpoint` in `session`; returns the last SSE event's name ("complete" or "error")."""
    posted = client.post(f"/gradio_api/call/{endpoint}", json={"data": data, "session_hash": session})
    posted.raise_for_status()
    answer = client.get(f"/gradio_api/call/{endpoint}/{posted.json()['event_id']}")
    events = [line.split(":", 1)[1].strip() for line in answer.text.splitlines() if line.startswith("event:")]
    return events[-1] if events else "none"


def queued_call(client: httpx.Client, fn_index: int, data: list[Any], session: str) -> str:
    """One call of the page's event `fn_index` through Gradio's queue, as the browser makes it; returns "complete"
    when it succeeded, else "error"."""
    body = {"data": data, "fn_index": fn_index, "session_hash": session, "event_data": None, "trigger_id": None}
    client.post("/gradio_api/queue/join", json=body).raise_for_status()
    with client.stream("GET", "/gradio_api/queue/data", params={"session_hash": session}) as stream:
        for line in stream.iter_lines():
            if not line.startswith("data:"):
                continue
            message = json.loads(line[5:])
            if message.get("msg") == "process_completed":
                return "complete" if message.get("success") else "error"
    return "none"


class Workload:
    """The requests of one run against an app: `send(index)` makes request `index` from a fresh session."""

    def __init__(self, app: Any, client: httpx.Client, mode: str) -> None:
        self.client = client
        self.mode = mode
        self.explainer = next(index for index, fn in app.fns.items() if fn.name == "explained_alignment")
        self.methods = [method for method in app.demo_backend.choices.methods if method != "attention"]

    def send(self, index: int) -> bool:
        """Request `index`; True when every call completed."""
        text, direction = EXAMPLES[index % len(EXAMPLES)]
        session = uuid.uuid4().hex
        answers = [call(self.client, "translate", [text, direction, 1, 16, None, None], session)]
        if self.mode == "translate":
            return answers == ["complete"]
        if self.mode == "full":
            answers.append(call(self.client, "alignment", [None, None, None, "words", None, True], session))
            answers.append(call(self.client, "view", [None, "head", "cross"], session))
        if self.mode == "full" or index % EXPLAIN_EVERY == 0:
            answers.append(call(self.client, "record", [None], session))
        if self.mode == "mixed" and index % EXPLAIN_EVERY == 0:
            method = self.methods[(index // EXPLAIN_EVERY) % len(self.methods)]
            values = [None, None, method, None, None, "words", None, True]
            answers.append(queued_call(self.client, self.explainer, values, session))
        return all(answer == "complete" for answer in answers)


def run(args: argparse.Namespace, scratch: Path) -> tuple[list[dict[str, Any]], int]:
    """The rows (requests, RSS, sessions, temporary files) and the number of failed requests."""
    temporary = scratch / "tmp"
    temporary.mkdir()
    # Everything the app writes (the demo's records, Gradio's cache) lands where it is counted.
    os.environ["GRADIO_TEMP_DIR"] = str(temporary / "gradio")
    tempfile.tempdir = str(temporary)
    from vaswani_demo import build_app, launch_app
    from vaswani_demo.testing import write_tiny_model

    model = args.model or str(write_tiny_model(scratch / "tiny"))
    app = build_app(model, translation_backend=args.backend)
    port = _free_port()
    launch_app(app, host="127.0.0.1", port=port, prevent_thread_lock=True, quiet=True)
    rows: list[dict[str, Any]] = []
    failed = 0
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=300) as client:
            workload = Workload(app, client, args.mode)
            start = time.perf_counter()
            print(f"{'requests':>9} {'RSS MiB':>8} {'sessions':>9} {'tmp files':>10} {'tmp MiB':>8} {'seconds':>8}")
            for index in range(1, args.requests + 1):
                failed += not workload.send(index)
                if index % args.every == 0 or index == args.requests:
                    gc.collect()
                    files, size = _files_under(temporary)
                    row = {
                        "requests": index,
                        "rss_mb": round(_rss_mb(), 1),
                        "sessions": len(app.state_holder.session_data),
                        "tmp_files": files,
                        "tmp_mb": round(size, 2),
                        "seconds": round(time.perf_counter() - start, 1),
                    }
                    rows.append(row)
                    print(
                        f"{index:>9} {row['rss_mb']:>8} {row['sessions']:>9} {files:>10} {row['tmp_mb']:>8} "
                        f"{row['seconds']:>8}",
                        flush=True,
                    )
    finally:
        app.close()
    return rows, failed


def growth(rows: list[dict[str, Any]], key: str, warmup: int) -> float:
    """How much `key` grew from the first row at or past `warmup` requests to the last row (a fraction)."""
    base = next((row[key] for row in rows if row["requests"] >= warmup), rows[0][key])
    return rows[-1][key] / base - 1 if base else float(rows[-1][key] > 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="model folder (default: a tiny random model)")
    parser.add_argument("--requests", type=int, default=1000, help="requests, each from a fresh session")
    parser.add_argument("--mode", choices=MODES, default="mixed", help="what each request asks for (see above)")
    parser.add_argument("--every", type=int, default=100, help="print the numbers every this many requests")
    parser.add_argument("--warmup", type=int, default=300, help="growth is measured from this many requests on")
    parser.add_argument("--backend", default="torch", help="what chooses the translations (default: torch)")
    parser.add_argument(
        "--keep-freed-memory",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="glibc keeps freed memory as the hf-vaswani commands set it (hf_vaswani.runtime; default: on)",
    )
    parser.add_argument("--out", default=None, help="write the numbers as JSON here")
    args = parser.parse_args(argv)
    if args.requests < 1 or args.every < 1:
        parser.error("--requests and --every must be at least 1")

    if args.keep_freed_memory:
        from hf_vaswani.runtime import keep_freed_memory

        applied = keep_freed_memory()
    else:
        applied = False
    with tempfile.TemporaryDirectory() as scratch:
        rows, failed = run(args, Path(scratch))
    rss, files = growth(rows, "rss_mb", args.warmup), growth(rows, "tmp_mb", args.warmup)
    print(
        f"failed requests: {failed}; from {args.warmup} requests on, RSS {rss:+.1%}, temporary files {files:+.1%} "
        f"(at most {MAX_SESSIONS} sessions kept)"
    )
    if args.out:
        summary = {
            "model": args.model or "tiny",
            "mode": args.mode,
            "backend": args.backend,
            "keep_freed_memory": applied,
            "max_sessions": MAX_SESSIONS,
            "failed": failed,
            "rss_growth": round(rss, 4),
            "tmp_growth": round(files, 4),
            "rows": rows,
        }
        Path(args.out).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
