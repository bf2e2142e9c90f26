"""How a bertviz page goes into the Gradio page: inside a sandboxed ``<iframe srcdoc="...">``.

Gradio's HTML component does not run scripts, and bertviz's views are scripts; an iframe whose ``srcdoc`` holds the
whole offline page (`vaswani_inspect.head_view_html` / `model_view_html`) runs them, and its sandbox keeps them away
from the app.
"""

from __future__ import annotations

import html
from typing import Any

__all__ = ["iframe_html", "placeholder_html", "view_height"]


def placeholder_html(text: Any) -> str:
    """What the view area shows before the first translation (and when a view cannot be drawn): `text` in a dashed
    box. `text` is one of the demo's own sentences, or the `gr.I18n` key of one (whose JSON quotes must stay as they
    are for the browser to translate it); ``<`` and ``&`` are escaped."""
    return (
        '<div class="vaswani-placeholder" style="padding:2em;color:#666;border:1px dashed #bbb;border-radius:8px">'
        f"{html.escape(str(text), quote=False)}</div>"
    )


def iframe_html(page: str, *, height: int, title: str) -> str:
    """An ``<iframe>`` that runs the self-contained HTML `page` in a sandbox (scripts allowed, nothing else: no
    same-origin access to the app, no forms, no popups, no top navigation). `page` goes into the ``srcdoc``
    attribute, HTML-escaped, so no character of it can end the attribute or the tag."""
    return (
        f'<iframe class="vaswani-view" title="{html.escape(title, quote=True)}" sandbox="allow-scripts" '
        f'referrerpolicy="no-referrer" loading="eager" '
        f'style="width:100%;height:{int(height)}px;border:1px solid #ddd;border-radius:8px;background:#fff" '
        f'srcdoc="{html.escape(page, quote=True)}"></iframe>'
    )


def view_height(record: Any, view: str, kind: str) -> int:
    """Iframe height, in pixels, that fits bertviz's drawing of `record` (its own sizes, `head_view.js` and
    `model_view.js`) plus the page heading; the frame scrolls if the estimate is short."""
    queries, keys = len(record.query_tokens(kind)), len(record.key_tokens(kind))
    longest = max(queries, keys)
    header = 230
    if view == "model":
        layers, heads = record.num_layers(kind), record.num_heads(kind)
        thumbnail = longest * 7 * (12 / heads) + 10
        drawing = max(layers * thumbnail + 40, longest * 18 + 70)
        return int(min(header + drawing + 40, 2400))
    return int(min(header + 70 + longest * 22.5 + 40, 2400))
