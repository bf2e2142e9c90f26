"""How the demo's handlers answer a request: in its language (`request_language`), with a warning on the page
(`warn_on_page`). Shared by `vaswani_demo.events` and `vaswani_demo.explaining`."""

from __future__ import annotations

import html

import gradio as gr

from .texts import DEFAULT_LANGUAGE, language_from_header

__all__ = ["request_language", "warn_on_page"]


def request_language(request: gr.Request | None) -> str:
    """The language to answer `request` in: Spanish or English, from its ``Accept-Language`` header (English
    without a request or header, as for most API clients)."""
    if request is None:
        return DEFAULT_LANGUAGE
    return language_from_header(request.headers.get("accept-language"))


def warn_on_page(text: str) -> None:
    """Show `text` as a warning on the page; escaped, since Gradio renders a warning's message as HTML (and the
    demo's messages name ``<unk>`` and characters the user typed)."""
    gr.Warning(html.escape(text, quote=False))
