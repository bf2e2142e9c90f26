"""Resident memory of the demo as fresh sessions keep coming: does it stay flat?

Starts the demo in this process on 127.0.0.1 (a free port), then sends N requests, each from a fresh session (a
new ``session_hash``) through Gradio's raw API: ``/translate``, then ``/alignment``, ``/view`` and ``/record`` of that
translation (everything the page shows), cycling through the course examples. Prints the process's resident memory
(RSS) and the number of sessions whose state the server keeps, every ``--every`` requests, and writes JSON with the
numbers. The demo keeps at most `vaswani_demo.settings.MAX_SESSIONS` sessions: past that many requests, memory
should stay within ~10 %.

    python benchmarks/bench_demo_memory.py                        # a tiny random model, 1,000 requests
    python benchmarks/bench_demo_memory.py --translate-only       # /translate alone, from fresh sessions
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

from vaswani_demo import build_app, launch_app  # noqa: E402
from vaswani_demo.settings import EXAMPLES, MAX_SESSIONS  # noqa: E402
from vaswani_demo.testing import write_tiny_model  # noqa: E402


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


def call(client: httpx.Client, endpoint: str, data: list[Any], session: str) -> str:
    """One raw call of `endpoint` in `session`; returns the last SSE event's name ("complete" or "error")."""
    posted = client.post(f"/gradio_api/call/{endpoint}", json={"data": data, "session_hash": session})
    posted.raise_for_status()
    answer = client.get(f"/gradio_api/call/{endpoint}/{posted.json()['event_id']}")
    events = [line.split(":", 1)[1].strip() for line in answer.text.splitlines() if line.startswith("event:")]
    return events[-1] if events else "none"


def complete_request(client: httpx.Client, index: int, translate_only: bool = False) -> bool:
    """Everything the page asks for one translation (only ``/translate`` with `translate_only`), from a fresh
    session; True when every call completed."""
    text, direction = EXAMPLES[index % len(EXAMPLES)]
    session = uuid.uuid4().hex
    answers = [call(client, "translate", [text, direction, 1, 16, None, None], session)]
    if translate_only:
        return answers == ["complete"]
    answers.append(call(client, "alignment", [None, None, None, "words", None, True], session))
    answers.append(call(client, "view", [None, "head", "cross"], session))
    answers.append(call(client, "record", [None], session))
    return all(answer == "complete" for answer in answers)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="model folder (default: a tiny random model)")
    parser.add_argument("--requests", type=int, default=1000, help="requests, each from a fresh session")
    parser.add_argument("--every", type=int, default=100, help="print memory every this many requests")
    parser.add_argument("--translate-only", action="store_true", help="only /translate (4 times faster)")
    parser.add_argument("--out", default=None, help="write the numbers as JSON here")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as scratch:
        model = args.model or str(write_tiny_model(Path(scratch) / "tiny"))
        app = build_app(model, translation_backend="torch")
        port = _free_port()
        launch_app(app, host="127.0.0.1", port=port, prevent_thread_lock=True, quiet=True)
        rows: list[dict[str, Any]] = []
        failed = 0
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
                start = time.perf_counter()
                print(f"{'requests':>9} {'RSS MiB':>8} {'sessions':>9} {'seconds':>8}")
                for index in range(1, args.requests + 1):
                    failed += not complete_request(client, index, args.translate_only)
                    if index % args.every == 0 or index == args.requests:
                        gc.collect()
                        row = {
                            "requests": index,
                            "rss_mb": round(_rss_mb(), 1),
                            "sessions": len(app.state_holder.session_data),
                            "seconds": round(time.perf_counter() - start, 1),
                        }
                        rows.append(row)
                        print(f"{index:>9} {row['rss_mb']:>8} {row['sessions']:>9} {row['seconds']:>8}", flush=True)
        finally:
            app.close()
    base = next((row["rss_mb"] for row in rows if row["requests"] >= min(100, args.requests)), rows[0]["rss_mb"])
    growth = rows[-1]["rss_mb"] / base - 1
    print(f"failed requests: {failed}; RSS growth after the first 100 requests: {growth:+.1%} (cap {MAX_SESSIONS})")
    if args.out:
        summary = {"model": args.model or "tiny", "max_sessions": MAX_SESSIONS, "failed": failed, "rows": rows}
        Path(args.out).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
