"""How a bertviz page goes into the Gradio page: inside a sandboxed ``<iframe srcdoc="...">``.

Gradio's HTML component does not run scripts, and bertviz's views are scripts; an iframe whose ``srcdoc`` holds the
whole offline page (`vaswani_inspect.head_view_html` / `model_view_html`) runs them, and its sandbox keeps them away
from the app.
"""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import quote

from vaswani_inspect.views import DRAWING_NOTE, VIEW_REGISTRY, View

__all__ = ["DRAWING_NOTES", "iframe_html", "localised_view", "placeholder_html", "view_entry", "view_height"]


def placeholder_html(text: Any) -> str:
    """What the view area shows before the first translation (and when a view cannot be drawn): `text` in a dashed
    box. `text` is one of the demo's own sentences, or the `gr.I18n` key of one (whose JSON quotes must stay as they
    are for the browser to translate it); ``<`` and ``&`` are escaped."""
    return (
        '<div class="vaswani-placeholder" style="padding:2em;color:#666;border:1px dashed #bbb;border-radius:8px">'
        f"{html.escape(str(text), quote=False)}</div>"
    )


#: The note a bertviz page shows while it draws, by language (the page itself is written with the English one).
DRAWING_NOTES = {"en": DRAWING_NOTE, "es": "Dibujando la vista\u2026"}


def iframe_html(page: str, *, height: int, title: str, waiting: str = "") -> str:
    """An ``<iframe>`` that runs the self-contained HTML `page` in a sandbox (scripts allowed, nothing else: no
    same-origin access to the app, no forms, no popups, no top navigation). `page` goes into the ``srcdoc``
    attribute, HTML-escaped, so no character of it can end the attribute or the tag. `waiting` is written behind
    the frame, seen until the page paints its own background (a bertviz page first reads its inlined libraries)."""
    background = "#fff"
    if waiting:
        text = html.escape(waiting, quote=True)
        picture = (
            '<svg xmlns="http://www.w3.org/2000/svg" width="420" height="60"><text x="0" y="30" '
            f'font-family="sans-serif" font-size="16" fill="#444">{text}</text></svg>'
        )
        background = f"#fff url('data:image/svg+xml,{quote(picture)}') no-repeat 1.5em 1.5em"
    return (
        f'<iframe class="vaswani-view" title="{html.escape(title, quote=True)}" sandbox="allow-scripts" '
        f'referrerpolicy="no-referrer" loading="eager" '
        f'style="width:100%;height:{int(height)}px;border:1px solid #ddd;border-radius:8px;background:{background}" '
        f'srcdoc="{html.escape(page, quote=True)}"></iframe>'
    )


def view_height(record: Any, view: str, kind: str) -> int:
    """Iframe height, in pixels, that fits the drawing of `record` by `view` (its entry's
    `vaswani_inspect.views.View.height`; the head view's for a view not registered); the frame scrolls if the
    estimate is short."""
    return int(view_entry(view).height(record, kind))


def view_entry(view: Any) -> View:
    """The entry of `view` in `vaswani_inspect.views.VIEW_REGISTRY`, the head view's for a value that names none:
    the view the demo draws and embeds."""
    return VIEW_REGISTRY[view] if isinstance(view, str) and view in VIEW_REGISTRY else VIEW_REGISTRY["head"]


#: The words of the toolkit's bertviz pages (`vaswani_inspect.views`), in Spanish: (pattern, replacement). Each
#: view's own name, in the page's title and headings, comes from its registry entry (`_view_names`).
_SPANISH_VIEW = (
    (re.compile(r'<html lang="en">'), '<html lang="es">'),
    (re.compile(r"<h2>Encoder self-attention \("), "<h2>Self-attention del encoder ("),
    (re.compile(r"<h2>Decoder self-attention \("), "<h2>Self-attention del decoder ("),
    (
        re.compile(r'<p class="note">model: ([^<·]*) · direction: ([^<·]*) · token level\.[^<]*</p>'),
        r'<p class="note">modelo: \1 · dirección: \2 · nivel de token. Las filas del decoder y de la cross-attention '
        r"llevan el token de entrada del decoder: la fila del token t es la atención con la que se predice el token "
        r"t+1.</p>",
    ),
    (
        re.compile(r'<p class="note">(\w+): (\d+) layers x (\d+) heads</p>'),
        r'<p class="note">\1: \2 capas × \3 cabezas</p>',
    ),
    (re.compile(r"Layer: <select"), "Capa: <select"),
    (re.compile(r"Attention: <select"), "Atención: <select"),
    # bertviz's own words in its drawings: the model view's axes and the title of a thumbnail opened.
    (re.compile(r'\.text\("Heads"\)'), '.text("Cabezas")'),
    (re.compile(r'\.text\("Layers"\)'), '.text("Capas")'),
    (re.compile(r"""\.text\('Layer ' \+ (.*?) \+ ", Head " \+"""), r""".text('Capa ' + \1 + ", cabeza " +"""),
    (re.compile(re.escape(DRAWING_NOTE)), "Dibujando la vista\u2026"),  # DRAWING_NOTES["es"]
)

#: Style added to every bertviz page: larger text, and a page that scrolls sideways on a narrow screen instead of
#: clipping the drawing.
_VIEW_STYLE = (
    "<style>html { background: #fff; } html, body { overflow: auto; -webkit-text-size-adjust: 100%; } "
    "body { font-size: 16px; } h2 { font-size: 1.2em; } .note { font-size: 0.95em; }</style>"
)


def localised_view(page: str, language: str) -> str:
    """A bertviz page of `vaswani_inspect.views` with its headings, notes and labels in `language` ("es" or
    "en") and the demo's style (larger text, scrolls on a phone)."""
    if language == "es":
        for pattern, replacement in _SPANISH_VIEW:
            page = pattern.sub(replacement, page)
        page = _view_names(page, language)
    # Token labels a little larger than bertviz's 15 / 13 px, for a projector and a phone.
    page = page.replace("TEXT_SIZE = 15", "TEXT_SIZE = 17").replace("TEXT_SIZE = 13", "TEXT_SIZE = 14")
    return page.replace("</head>", _VIEW_STYLE + "</head>", 1)


def _view_names(page: str, language: str) -> str:
    """`page` with each registered view's English name, in its title and section headings ("– head view</title>",
    "(head view)</h2>"), in `language`."""
    for view in VIEW_REGISTRY.values():
        english, told = view.phrase("en"), view.phrase(language)
        page = page.replace(f"\u2013 {english}</title>", f"\u2013 {told}</title>")
        page = page.replace(f"({english})</h2>", f"({told})</h2>")
    return page
