"""The Gradio app: `build_app` loads the model and puts the page (`layout`) and its events (`events`) together;
`launch_app` serves it.

The app is a `DemoBlocks`, a ``gr.Blocks`` that carries its own `gr.I18n` (launched with it, whoever launches it),
documents its API in English, prunes the files Gradio caches for it, and closes the backend it loaded when it
closes. Every launch installs `vaswani_demo.security.RequestGuard` (only the demo's own host names are answered, no
upload route) and keeps at most `MAX_SESSIONS` sessions' state; a call to an endpoint with the wrong number of
values is answered with the demo's sentence (`api.values`), not Gradio's traceback.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Sequence
from typing import Any

import gradio as gr
import matplotlib
from gradio.i18n import I18nData

from .answers import session_end_handler
from .backend import DemoBackend
from .events import request_language, wire_events
from .layout import build_layout, page_i18n
from .page_script import PAGE_CSS, head_middleware, page_load_js
from .security import guard_middleware, needs_uploads, served_host_names
from .settings import (
    APP_CSS,
    CACHE_PRUNE_SECONDS,
    DEFAULT_CONCURRENCY_LIMIT,
    DEFAULT_MAX_QUEUE,
    FILE_TTL_SECONDS,
    MAX_SESSIONS,
)
from .texts import DEFAULT_LANGUAGE, LANGUAGES, PAGE, message

__all__ = ["DemoBlocks", "build_app", "launch_app"]

#: Gradio's i18n does not translate the browser tab's title: the page's load script sets it, in the language it
#: chose for the page (`vaswani_demo.page_script.page_load_js`).
_LOAD_JS = page_load_js({language: PAGE[language]["title"] for language in LANGUAGES})


def _in_english(value: Any, english: dict[str, str]) -> Any:
    """`value` with every `I18nData` key (in dicts, lists and tuples) replaced by its English text."""
    if isinstance(value, I18nData):
        return english.get(value.key, value.key)
    if isinstance(value, dict):
        return {key: _in_english(item, english) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_in_english(item, english) for item in value)
    return value


def _public(fn: Any) -> bool:
    """Whether the event `fn` (a Gradio ``BlockFunction``) is one of the API's documented endpoints."""
    return getattr(fn, "api_visibility", "public") == "public"


def _parameter_names(fn: Any) -> list[str]:
    """The names of the values the API documents for the event `fn`: its function's parameters but the states."""
    parameters = [name for name in inspect.signature(fn.fn).parameters if name != "request"]
    if len(parameters) < len(fn.inputs):
        parameters = [f"value {index}" for index in range(len(fn.inputs))]
    return [name for name, block in zip(parameters, fn.inputs) if not block.skip_api]


class DemoBlocks(gr.Blocks):
    """The demo's ``gr.Blocks``: `i18n` (the page's texts) is passed to every `launch`, the API description is in
    English (Gradio would show the i18n keys of the labels), and `close` also closes `owned_backend`.

    Attributes:
        demo_i18n: the page's `gr.I18n` (`vaswani_demo.layout.page_i18n`).
        owned_backend: the backend `build_app` loaded for this app (None when it was given one).
    """

    def __init__(self, *, i18n: gr.I18n, owned_backend: DemoBackend | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.demo_i18n = i18n
        self.owned_backend = owned_backend

    def launch(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("i18n", self.demo_i18n)
        kwargs.setdefault("js", _LOAD_JS)
        # Gradio keeps every session's copy of the page's config (and its record) for up to 10,000 sessions.
        kwargs.setdefault("state_session_capacity", MAX_SESSIONS)
        address = kwargs.get("server_name") or os.environ.get("GRADIO_SERVER_NAME") or "127.0.0.1"
        uploads = needs_uploads(block for fn in self.fns.values() for block in fn.inputs)

        def allowed_hosts() -> frozenset[str] | None:
            # Read per request: the bound address and the share link's host are known only once the server runs.
            bound = getattr(self, "server_name", None) or address
            return served_host_names(bound, getattr(self, "share_url", None))

        app_kwargs = dict(kwargs.get("app_kwargs") or {})
        guard = guard_middleware(allowed_hosts, lambda: uploads)
        # The page's language script goes into its HTML before Gradio's scripts (`page_script.PageHeadInjector`).
        app_kwargs["middleware"] = [*app_kwargs.get("middleware", ()), guard, head_middleware()]
        kwargs["app_kwargs"] = app_kwargs
        return super().launch(*args, **kwargs)

    async def process_api(self, block_fn: Any, inputs: list[Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
        fn = self.fns[block_fn] if isinstance(block_fn, int) else block_fn
        documented = [block for block in fn.inputs if not block.skip_api]  # the API documents no gr.State
        if fn.fn is not None and fn.api_name and len(inputs) != len(fn.inputs):
            if len(inputs) == len(documented):  # as the documented values (Gradio's /call does the same)
                values = iter(inputs)
                inputs = [None if block.skip_api else next(values) for block in fn.inputs]
            elif len(inputs) < len(fn.inputs) or _public(fn):
                # Gradio raises a bare ValueError for too few values (a traceback in the log, {"error": null} for
                # the client) and ignores extra ones; the demo answers both with its sentence.
                request = kwargs.get("request", args[1] if len(args) > 1 else None)
                language = request_language(request[0] if isinstance(request, list) and request else request)
                names = ", ".join(_parameter_names(fn)) or "-"
                endpoint, wanted, got = f"/{fn.api_name}", len(documented), len(inputs)
                told = message(language, "api.values", endpoint=endpoint, wanted=wanted, names=names, got=got)
                raise gr.Error(told, print_exception=False)
        return await super().process_api(block_fn, inputs, *args, **kwargs)

    def get_api_info(self, all_endpoints: bool = False, page: str | None = None) -> Any:
        info = super().get_api_info(all_endpoints=all_endpoints, page=page)
        return _in_english(info, self.demo_i18n.translations_dict.get(DEFAULT_LANGUAGE, {}))

    def close(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().close(*args, **kwargs)
        finally:
            if self.owned_backend is not None:
                self.owned_backend.close()


def build_app(
    model_path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    *,
    backend: DemoBackend | None = None,
    device: str | None = None,
    concurrency_limit: int = DEFAULT_CONCURRENCY_LIMIT,
    max_queue: int = DEFAULT_MAX_QUEUE,
    translation_backend: str = "auto",
    keep_spans: bool = True,
) -> DemoBlocks:
    """Load the model(s) and build the Gradio app (queue configured); `app.demo_backend` is the `DemoBackend`.

    Args:
        model_path: a model folder or Hub id of any architecture `vaswani_inspect` reads, or several values, each
            ``PATH`` or ``DIRECTION=PATH`` (one model per direction: `vaswani_demo.models`); default:
            ``$VASWANI_DEMO_MODEL``, else the shipped checkpoint.
        backend: an already loaded `DemoBackend` (then `model_path` and `device` are ignored, and closing the app
            leaves it open: its owner closes it).
        device: torch device for the model (default: cuda if available, else cpu).
        concurrency_limit: translations run at the same time (`default_concurrency_limit` of the queue).
        max_queue: requests that may wait (`max_size` of the queue).
        translation_backend: what chooses the translations (`vaswani_demo.models.translation_backend`: "auto" is
            CTranslate2 on the CPU for the architectures it serves, ours and Marian, when the [fast] extra is
            installed, else "torch"); attention always comes from the PyTorch model.
        keep_spans: keep long numbers, URLs and rare names unchanged through placeholders (`hf_vaswani.placeholders`,
            `ModelRunner.keep_spans`); False translates the text as it is.

    Raises:
        FileNotFoundError: a model folder does not exist, or no model was named and the shipped checkpoint is
            missing.
        ValueError: `device` is not a device of this machine, a model cannot be loaded or served (its direction
            unknown, two models for one direction), or "ctranslate2" was asked for a model it does not serve.
    """
    owned = None
    if backend is None:
        backend = owned = DemoBackend.load(model_path, device=device, backend=translation_backend)
    backend.runner.keep_spans = keep_spans
    i18n = page_i18n(backend.choices)
    # The page's figures are SVG images (downloaded as SVG or PNG): text as text is half the size and time of
    # text as paths.
    matplotlib.rcParams["svg.fonttype"] = "none"
    with DemoBlocks(
        i18n=i18n,
        owned_backend=owned,
        title=PAGE[DEFAULT_LANGUAGE]["title"],
        analytics_enabled=False,
        delete_cache=(CACHE_PRUNE_SECONDS, FILE_TTL_SECONDS),
    ) as app:
        ui = build_layout(backend.choices, i18n)
        wire_events(app, ui, backend, concurrency_limit=concurrency_limit)
        app.unload(session_end_handler(backend.files))  # a closed page's record file goes with it
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
        allowed_paths=[str(app.demo_backend.files.folder)],
        css=APP_CSS + PAGE_CSS,
    )
