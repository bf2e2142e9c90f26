"""``hf-vaswani demo``: start the translate-and-inspect app (registered through the ``hf_vaswani.commands``
entry-point group, see `hf_vaswani.commands`).

Only constants are imported here; Gradio, the model and `vaswani_inspect` are loaded when the command runs.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

from hf_vaswani.backends import BACKEND_CHOICES
from hf_vaswani.commands import host_address, positive_int
from hf_vaswani.paths import DEFAULT_MODEL

from .settings import DEFAULT_CONCURRENCY_LIMIT, DEFAULT_MAX_QUEUE, MODEL_ENV

__all__ = ["add_parser"]

_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def _port(text: str) -> int:
    """An argparse ``type`` for a TCP port, 1 to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"must be between 1 and 65535, got {value}")
    return value


def _run_demo(args: argparse.Namespace) -> int:
    from hf_vaswani.inference import resolve_device

    resolve_device(args.device)  # a device this machine lacks is one line, before Gradio or the model loads

    from .app import build_app, launch_app
    from .models import model_specs

    specs = model_specs(args.model)  # a malformed --model is one line, before any model loads
    try:
        app = build_app(
            args.model,
            device=args.device,
            concurrency_limit=args.concurrency_limit,
            max_queue=args.max_queue,
            translation_backend=args.backend,
            keep_spans=args.keep_spans,
        )
    except FileNotFoundError:
        raise
    except OSError as error:  # e.g. a Hub id that is neither cached nor reachable (HF_HUB_OFFLINE=1)
        named = " and ".join(repr(spec.path) for spec in specs)
        raise ValueError(f"Could not load the model {named}: {error}") from error
    if args.host not in _LOCAL_HOSTS:
        print(f"hf-vaswani demo: serving on {args.host}: anyone who can reach this machine can use the demo.")
    try:
        with _stopped_like_ctrl_c():
            launch_app(app, host=args.host, port=args.port, share=args.share)
    finally:  # after Ctrl-C or SIGTERM too: Gradio's cached files and the demo's record folder go
        app.close()
    return 0


@contextlib.contextmanager
def _stopped_like_ctrl_c() -> Iterator[None]:
    """SIGTERM (``kill``, a service manager stopping the demo) stops the server as Ctrl-C does, so that what the
    demo wrote is removed: without a handler the process would end on the spot."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():  # (only the main thread may set a handler)
        yield
        return
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def add_parser(subparsers: Any) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo",
        help="translate-and-inspect web demo (Gradio) on 127.0.0.1",
        description="Start the Gradio demo: translate a sentence and see its attention heads (heatmaps, word "
        "alignment, bertviz views). Serves on 127.0.0.1 only, without a share link unless --share.",
        epilog="example: hf-vaswani demo --port 7860   (then open http://127.0.0.1:7860)",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=None,
        metavar="[DIRECTION=]PATH",
        help="a model folder or Hub id: ours, Marian/OPUS-MT, NLLB/M2M100, mBART-50, BART or T5, serving the "
        "directions es-en and en-es it offers; or one model per direction, repeated: --model es-en=PATH --model "
        "en-es=PATH (a one-direction model whose folder does not say its direction needs DIRECTION=PATH; "
        f"default: ${MODEL_ENV}, else {DEFAULT_MODEL})",
    )
    parser.add_argument(
        "--host",
        type=host_address,
        default="127.0.0.1",
        help="address to bind, checked before the model loads (default: 127.0.0.1, this machine only)",
    )
    parser.add_argument("--port", type=_port, default=None, help="port (default: the first free one from 7860)")
    parser.add_argument("--share", action="store_true", help="also open a public gradio.live link (off by default)")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: cuda if available)")
    parser.add_argument(
        "--backend",
        choices=BACKEND_CHOICES,
        default="auto",
        help="what chooses the translation: ctranslate2 (ours and Marian/OPUS-MT models, exported once and cached; "
        "several times faster on CPUs), torch (generate(), every architecture), or auto (default: ctranslate2 on "
        "the CPU where it serves the model and the [fast] extra is installed, else torch); the attention always "
        "comes from the PyTorch model",
    )
    parser.add_argument(
        "--keep-spans",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep numbers of 3+ digits, URLs, e-mail addresses and rare names of our models' translations as they "
        "are, through placeholders the model copies (default: on; docs/numbers_and_names.md)",
    )
    parser.add_argument(
        "--concurrency-limit",
        type=positive_int,
        default=DEFAULT_CONCURRENCY_LIMIT,
        help=f"translations run at the same time (default: {DEFAULT_CONCURRENCY_LIMIT})",
    )
    parser.add_argument(
        "--max-queue",
        type=positive_int,
        default=DEFAULT_MAX_QUEUE,
        help=f"requests that may wait in the queue (default: {DEFAULT_MAX_QUEUE})",
    )
    parser.set_defaults(func=_run_demo)
