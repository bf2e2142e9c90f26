"""The few lines of JavaScript and CSS the page runs in the browser: its language, its presentation mode and the
figures' downloads. (Strings only: nothing here imports Gradio.)

* `PAGE_HEAD` runs before Gradio starts: it chooses the page's language (``?lang=es`` or ``?lang=en``, else the
  browser's first language: Spanish for any ``es*``, English otherwise), makes Gradio's i18n see that language, and
  keeps it in a cookie (`vaswani_demo.texts.PAGE_LANGUAGE_COOKIE`) that the server reads to answer in the same
  language; ``?present=1`` starts the presentation mode.
* `SWITCH_LANGUAGE_JS` reloads the page in the language chosen on its switch; `SET_PRESENTATION_JS` turns the
  presentation mode on or off (and keeps it in the address, ``?present=1``).
* `download_js` saves a figure shown on the page (an SVG image) as SVG or PNG, in the browser, without a server
  round trip.
"""

from __future__ import annotations

import json
from typing import Any

from .texts import DEFAULT_LANGUAGE, LANGUAGES, PAGE, PAGE_LANGUAGE_COOKIE

__all__ = [
    "CURRENT_LANGUAGE_JS",
    "CURRENT_PRESENTATION_JS",
    "DOWNLOAD_NOTE_CLASS",
    "PAGE_CSS",
    "PAGE_HEAD",
    "PRESENT_CLASS",
    "SET_PRESENTATION_JS",
    "SWITCH_LANGUAGE_JS",
    "PageHeadInjector",
    "download_js",
    "head_middleware",
    "page_load_js",
]

#: The class on ``<html>`` that turns the presentation mode on.
PRESENT_CLASS = "vaswani-present"

_LANGUAGES = json.dumps(list(LANGUAGES))

#: Chooses the page's language (the same rule in `PAGE_HEAD` and `page_load_js`).
_CHOOSE_LANGUAGE = f"""
  var offered = {_LANGUAGES};
  var params = new URLSearchParams(window.location.search);
  var asked = (params.get("lang") || "").toLowerCase();
  var browser = ((navigator.languages && navigator.languages[0]) || navigator.language || "").toLowerCase();
  var language = offered.indexOf(asked) >= 0 ? asked : (browser.split("-")[0] === "es" ? "es" : "{DEFAULT_LANGUAGE}");
  if (window.vaswaniLanguage) language = window.vaswaniLanguage;
  window.vaswaniLanguage = language;
  document.cookie = "{PAGE_LANGUAGE_COOKIE}=" + language + "; path=/; SameSite=Strict";
  document.documentElement.lang = language;
  if (params.get("present") === "1") document.documentElement.classList.add("{PRESENT_CLASS}");
"""

#: Goes into ``<head>``: chooses the page's language as early as the page allows, and tells Gradio's i18n (which
#: reads ``navigator.language`` when it starts, if it starts later than this).
PAGE_HEAD = f"""<script>
(function () {{{_CHOOSE_LANGUAGE}
  try {{
    var told = function (value) {{ return {{ get: function () {{ return value; }}, configurable: true }}; }};
    Object.defineProperty(Navigator.prototype, "language", told(language));
    Object.defineProperty(Navigator.prototype, "languages", told([language]));
  }} catch (error) {{}}
}})();
</script>"""


def page_load_js(titles: dict[str, str]) -> str:
    """The page's load script: chooses its language (if `PAGE_HEAD` has not: the cookie must be set before the
    first event) and titles the browser tab from `titles` (by language)."""
    return f"""() => {{{_CHOOSE_LANGUAGE}
  const titles = {json.dumps(titles, ensure_ascii=False)};
  document.title = titles[language] || titles["{DEFAULT_LANGUAGE}"];
}}"""


#: The language switch's starting value, the language the page chose; tells Gradio's i18n that language again
#: (``changeLocale`` of the module Gradio loaded), since Gradio may have started its i18n from the browser's own
#: before the page chose.
CURRENT_LANGUAGE_JS = f"""async () => {{{_CHOOSE_LANGUAGE}
  const core = performance.getEntriesByType("resource").map((entry) => entry.name)
    .find((name) => /\\/assets\\/core-[^/]*\\.js$/.test(name));
  if (core) {{
    try {{
      const i18n = await import(core);
      if (i18n.changeLocale) i18n.changeLocale(language);
    }} catch (error) {{
      console.warn("The page could not switch its language", error);
    }}
  }}
  return language;
}}"""

#: The presentation checkbox's starting value.
CURRENT_PRESENTATION_JS = f'() => document.documentElement.classList.contains("{PRESENT_CLASS}")'

#: Reload the page in the chosen language (the other parameters of the address kept).
SWITCH_LANGUAGE_JS = """(language) => {
  const address = new URL(window.location.href);
  address.searchParams.set("lang", language);
  window.location.assign(address.toString());
  return language;
}"""

#: Turn the presentation mode on or off, and keep it in the address so that a reload (or a shared link) keeps it.
SET_PRESENTATION_JS = f"""(present) => {{
  document.documentElement.classList.toggle("{PRESENT_CLASS}", Boolean(present));
  const address = new URL(window.location.href);
  if (present) address.searchParams.set("present", "1"); else address.searchParams.delete("present");
  window.history.replaceState(null, "", address.toString());
  return present;
}}"""


#: The class of the line a download button writes beside its buttons when there is no figure to save yet.
DOWNLOAD_NOTE_CLASS = "vaswani-download-note"


def download_js(elem_id: str, name: str, kind: str) -> str:
    """A button's JavaScript that saves the figure shown in the element `elem_id` as ``NAME.svg`` (the image as it
    is) or ``NAME.png`` (`kind`; drawn on a canvas at twice its size), with the labels it shows. When no figure is
    shown yet it saves nothing and says what to do, beside the buttons, in the page's language
    (``download.empty``)."""
    if kind not in ("svg", "png"):
        raise ValueError(f"kind must be 'svg' or 'png', got {kind!r}")
    selector = json.dumps(f"#{elem_id} img")
    buttons = json.dumps(f"{elem_id}-{kind}")
    empty = json.dumps({language: PAGE[language]["download.empty"] for language in LANGUAGES}, ensure_ascii=False)
    filename = json.dumps(f"{name}.{kind}")
    save = "save(source);" if kind == "svg" else "toPng(source);"
    return f"""() => {{
  const image = document.querySelector({selector});
  const button = document.getElementById({buttons});
  const row = button ? button.parentElement : null;
  let note = row ? row.querySelector(".{DOWNLOAD_NOTE_CLASS}") : null;
  if (!image || !image.src) {{
    if (!row) return;
    if (!note) {{
      note = document.createElement("span");
      note.className = "{DOWNLOAD_NOTE_CLASS}";
      note.setAttribute("role", "status");
      row.appendChild(note);
    }}
    const told = {empty};
    note.textContent = told[window.vaswaniLanguage] || told["{DEFAULT_LANGUAGE}"];
    return;
  }}
  if (note) note.remove();
  const source = image.src;
  const save = (href) => {{
    const link = document.createElement("a");
    link.href = href;
    link.download = {filename};
    document.body.appendChild(link);
    link.click();
    link.remove();
  }};
  const toPng = (shown) => {{
    const picture = new Image();
    picture.onload = () => {{
      const canvas = document.createElement("canvas");
      canvas.width = picture.naturalWidth * 2;
      canvas.height = picture.naturalHeight * 2;
      const context = canvas.getContext("2d");
      context.fillStyle = "#ffffff";
      context.fillRect(0, 0, canvas.width, canvas.height);
      context.drawImage(picture, 0, 0, canvas.width, canvas.height);
      canvas.toBlob((blob) => {{
        const href = URL.createObjectURL(blob);
        save(href);
        setTimeout(() => URL.revokeObjectURL(href), 10000);
      }}, "image/png");
    }};
    picture.src = shown;
  }};
  {save}
}}"""


def page_css() -> str:
    """The page's style: every figure fits its box, and one wider than the screen (the beam tree on a phone)
    scrolls inside it; nothing makes the page itself scroll sideways (the bertviz frame is as wide as its box, its
    drawing scrolls inside the frame); an empty figure says what to do (``figure.empty``, in the page's language);
    the presentation mode shows the translation, the alignment, the steps and the lecture views' sentences and words
    in large type, figures and labels included, and hides the rest; the lecture views' wide figures scroll on a
    phone."""
    rules = []
    for language in LANGUAGES:
        told = json.dumps(PAGE[language]["figure.empty"], ensure_ascii=False)
        rules.append(f'html[lang="{language}"] .vaswani-figure .empty::after {{ content: {told}; }}')
        told = json.dumps(PAGE[language]["figure.empty.ablation"], ensure_ascii=False)
        rules.append(f'html[lang="{language}"] #tab-ablation .vaswani-figure .empty::after {{ content: {told}; }}')
    return _PAGE_CSS + "\n".join(rules) + "\n"


_PAGE_CSS = f"""
.vaswani-figure img {{ max-width: 100%; height: auto; }}
.vaswani-figure .matplotlib {{ overflow-x: auto; align-items: safe center; -webkit-overflow-scrolling: touch; }}
.vaswani-figure .empty {{ flex-direction: column; gap: 0.6em; }}
.vaswani-figure .empty::after {{ font-size: var(--text-md); color: var(--body-text-color-subdued); padding: 0 1em;
  text-align: center; }}
#bertviz {{ max-width: 100%; overflow: hidden; }}
#bertviz iframe {{ width: 100%; max-width: 100%; min-width: 0; }}
.vaswani-downloads {{ gap: 6px; align-items: center; }}
.vaswani-downloads button {{ flex: 0 0 auto; min-width: 0; }}
.{DOWNLOAD_NOTE_CLASS} {{ font-size: var(--text-sm); color: var(--body-text-color-subdued); }}
#page-controls {{ align-items: center; }}
#layer {{ flex: 1 1 100% !important; min-width: min(100%, 34rem) !important; }}
#layer input {{ text-overflow: ellipsis; }}
:root.{PRESENT_CLASS} {{
  --text-xxs: 13px; --text-xs: 15px; --text-sm: 18px; --text-md: 21px; --text-lg: 25px; --text-xl: 30px;
  --text-xxl: 36px;
}}
.{PRESENT_CLASS} #source-text textarea, .{PRESENT_CLASS} #translation textarea {{ font-size: 2rem; line-height: 1.3; }}
.{PRESENT_CLASS} #source-text textarea {{ min-height: 3.2rem; }}
.{PRESENT_CLASS} #translate-button {{ font-size: 1.5rem; }}
.{PRESENT_CLASS} #steps-where textarea {{ font-size: 1.6rem; }}
.{PRESENT_CLASS} #steps-slider {{ font-size: 1.3rem; }}
.{PRESENT_CLASS} .vaswani-figure img, .{PRESENT_CLASS} #alignment-plot img {{ max-height: none; width: 100%;
  max-width: none; }}
.{PRESENT_CLASS} #encoder-attention-plot img {{ width: auto; height: 86vh; max-width: 100%; object-fit: contain; }}
.{PRESENT_CLASS} .vaswani-hide-in-presentation {{ display: none !important; }}
@media (max-width: 768px) {{
  #translate-row {{ flex-direction: column; }}
  #translate-left {{ display: contents; }}
  #translate-right {{ order: 1; }}
  #examples-block {{ order: 2; }}
  #steps-tree img {{ max-width: none !important; width: 880px; }}
  #head-computation, #positions-table, #contexts-figure {{ overflow-x: auto; }}
  #head-computation img, #positions-table img {{ max-width: none !important; width: 820px; }}
  #contexts-figure img {{ max-width: none !important; width: 640px; }}
}}
.{PRESENT_CLASS} #head-summary p, .{PRESENT_CLASS} #positions-summary p, .{PRESENT_CLASS} #contexts-summary p {{
  font-size: 1.5rem !important; line-height: 1.4; }}
.{PRESENT_CLASS} #head-query label, .{PRESENT_CLASS} #head-kind label {{ font-size: 1.3rem; }}
"""


class PageHeadInjector:
    """ASGI middleware that puts `PAGE_HEAD` at the top of the ``<head>`` of the page's HTML (a GET answered with
    ``text/html``), so that it runs before Gradio's scripts: Gradio's own ``head`` option adds its scripts only
    once the page has started, after its i18n has chosen a language."""

    def __init__(self, app: Any, head: str = "") -> None:
        self.app = app
        self.head = (head or PAGE_HEAD).encode("utf-8")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "GET":
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] | None = None
        chunks: list[bytes] = []

        async def rewrite(message: dict[str, Any]) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                if _is_html(message.get("headers", ())):
                    start = message  # held until the whole body is here
                    return
                await send(message)
            elif message["type"] == "http.response.body" and start is not None:
                chunks.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                body = _with_head(b"".join(chunks), self.head)
                headers = [(key, value) for key, value in start.get("headers", ()) if key.lower() != b"content-length"]
                headers.append((b"content-length", str(len(body)).encode("ascii")))
                await send({**start, "headers": headers})
                await send({"type": "http.response.body", "body": body})
            else:
                await send(message)

        await self.app(scope, receive, rewrite)


def _is_html(headers: Any) -> bool:
    """Whether response headers say the body is an HTML page (not compressed, which this could not edit)."""
    named = {key.lower(): value.lower() for key, value in headers}
    return named.get(b"content-type", b"").startswith(b"text/html") and b"content-encoding" not in named


def _with_head(body: bytes, head: bytes) -> bytes:
    """`body` with `head` right after its ``<head>`` tag (as it was, without one)."""
    found = body.find(b"<head>")
    if found < 0:
        return body
    end = found + len(b"<head>")
    return body[:end] + head + body[end:]


def head_middleware() -> Any:
    """`PageHeadInjector` as a Starlette ``Middleware`` entry, for ``FastAPI(middleware=[...])``."""
    from starlette.middleware import Middleware

    return Middleware(PageHeadInjector)


#: The page's CSS, as `page_css` writes it.
PAGE_CSS = page_css()
