"""The Gradio app: `build_app` loads the model and puts the page (`layout`) and its events (`events`) together;
`launch_app` serves it."""

from __future__ import annotations

import os
from typing import Any

import gradio as gr

from .backend import DemoBackend
from .events import wire_events
from .layout import PAGE_TITLE, build_layout
from .settings import APP_CSS, DEFAULT_CONCURRENCY_LIMIT, DEFAULT_MAX_QUEUE

__all__ = ["build_app", "launch_app"]


def build_app(
    model_path: str | os.PathLike[str] | None = None,
    *,
    backend: DemoBackend | None = None,
    device: str | None = None,
    concurrency_limit: int = DEFAULT_CONCURRENCY_LIMIT,
    max_queue: int = DEFAULT_MAX_QUEUE,
) -> gr.Blocks:
    """Load the model and build the Gradio app (queue configured); `app.demo_backend` is the `DemoBackend`.

    Args:
        model_path: model folder or Hub id (default: ``$VASWANI_DEMO_MODEL``, else the shipped checkpoint).
        backend: an already loaded `DemoBackend` (then `model_path` and `device` are ignored).
        device: torch device for the model (default: cuda if available, else cpu).
        concurrency_limit: translations run at the same time (`default_concurrency_limit` of the queue).
        max_queue: requests that may wait (`max_size` of the queue).

    Raises:
        FileNotFoundError: the model folder does not exist, or no model was named and the shipped checkpoint is
            missing.
    """
    if backend is None:
        backend = DemoBackend.load(model_path, device=device)
    with gr.Blocks(title=PAGE_TITLE, analytics_enabled=False) as app:
        ui = build_layout(backend)
        wire_events(ui, backend, concurrency_limit=concurrency_limit)
    app.queue(default_concurrency_limit=concurrency_limit, max_size=max_queue)
    app.demo_backend = backend
    return app


def launch_app(
    app: gr.Blocks,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    share: bool = False,
    prevent_thread_lock: bool = False,
    quiet: bool = False,
) -> Any:
    """Serve `app` (from `build_app`) on `host:port` (default 127.0.0.1, the first free port from 7860); a public
    share link only with `share=True`. Returns what `Blocks.launch` returns."""
    return app.launch(
        server_name=host,
        server_port=port,
        share=share,
        prevent_thread_lock=prevent_thread_lock,
        quiet=quiet,
        show_error=False,
        footer_links=["api", "gradio"],
        allowed_paths=[str(app.demo_backend.files_dir)],
        css=APP_CSS,
    )
