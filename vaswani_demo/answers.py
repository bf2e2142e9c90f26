"""How the demo's handlers answer a request: in its language (`request_language`), with a warning on the page
(`warn_on_page`). Shared by `vaswani_demo.events` and `vaswani_demo.explaining`."""

from __future__ import annotations

import html
from collections.abc import Callable

import gradio as gr

from .files import RecordFiles
from .texts import DEFAULT_LANGUAGE, language_from_header, page_language_cookie

__all__ = ["request_language", "session_end_handler", "warn_on_page"]


def request_language(request: gr.Request | None) -> str:
    """The language to answer `request` in: Spanish or English, the page's language cookie
    (`vaswani_demo.texts.PAGE_LANGUAGE_COOKIE`) if it has one, else from its ``Accept-Language`` header (English
    without a request or header, as for most API clients)."""
    if request is None:
        return DEFAULT_LANGUAGE
    # The page's own choice (its language switch, ``?lang=``, or the browser's language) is a cookie it sets, so
    # that status lines speak the language of the labels; API clients send none and get their Accept-Language.
    chosen = page_language_cookie(request.headers.get("cookie"))
    return chosen or language_from_header(request.headers.get("accept-language"))


def warn_on_page(text: str) -> None:
    """Show `text` as a warning on the page; escaped, since Gradio renders a warning's message as HTML (and the
    demo's messages name ``<unk>`` and characters the user typed)."""
    gr.Warning(html.escape(text, quote=False))


def session_end_handler(files: RecordFiles) -> Callable[[gr.Request], None]:
    """The function for ``Blocks.unload``: when a page is closed, its session's record file goes
    (`RecordFiles.forget`); Gradio drops the session's state itself."""

    def end_session(request: gr.Request) -> None:
        files.forget(getattr(request, "session_hash", None))

    return end_session
