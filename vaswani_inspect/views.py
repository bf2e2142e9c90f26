"""Interactive bertviz views (Vig 2019) as self-contained HTML pages that work offline and cannot be scripted by
token text.

`head_view_html` and `model_view_html` call bertviz's own `head_view`/`model_view` with `html_action="return"` and
then rewrite the HTML they return:

1. **Offline.** bertviz's HTML loads require.js from a CDN and asks require.js for d3 and jQuery from CDNs. Here d3
   (v5.7.0, the version bertviz asks for, shipped inside the `mpld3` package) and jQuery (shipped as package data
   by `xstatic-jquery`) are inlined, the require.js `<script src>` and the `require.config` CDN paths are removed,
   and a few lines of JavaScript (`_REQUIRE_SHIM`) stand in for require.js.
2. **Escaped data.** bertviz pastes `json.dumps(params)` into JavaScript source, so a token such as
   `</script><script>alert(1)</script>` ends the script element and runs. Here bertviz only ever sees placeholder
   tokens; the real tokens and weights go into a `<script type="application/json">` block in which `<`, `>` and
   `&` are written as `\\u003c`, `\\u003e`, `\\u0026` (the HTML parser cannot leave that block, and JSON.parse
   restores the characters), and the view reads its parameters with `JSON.parse`. bertviz draws tokens with d3's
   `.text()`, which never interprets markup.
3. **Small.** Weights are rounded to `decimals` (default 3) and stored as integers in units of 10**-decimals
   (`312` for 0.312); the page divides them back before bertviz sees them.
4. **One example, any shapes.** bertviz takes batch size 1 only: pass one `AttentionRecord` at a time. Its
   encoder-decoder mode also assumes the encoder and decoder have the same number of layers and heads: it reuses
   the encoder's layer list (and, in the model view, head list) for the decoder and cross-attention, so a deeper
   decoder is silently cut to the encoder's depth, a shallower one raises IndexError, and in the head view the
   head checkboxes follow the encoder's head count. When the shapes differ, `kind="all"` therefore renders one
   bertviz view per attention kind, each with its own layers and heads, on the same page.

Each view is one `View` in `VIEW_REGISTRY` (`register_view`): the report (`vaswani_inspect.report`) writes
every registered view, and the demo offers, draws and embeds them (`vaswani_demo.drawing.view`), from that entry
alone.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from .record import KINDS, AttentionRecord, check_kind

VIEW_DECIMALS = 3
_TITLES = {"encoder": "Encoder self-attention", "decoder": "Decoder self-attention", "cross": "Cross-attention"}
# bertviz substitutes its params for the marker PYTHON_PARAMS twice on this line (in the code and in the comment
# after it); the whole line is replaced. The JSON is single-line and holds placeholder tokens only.
_PARAMS = re.compile(r"const params = (\{.*?\}); // HACK[^\n]*")
_REQUIRE_SCRIPT = re.compile(r"<script src=\"[^\"]*require(?:\.min)?\.js\"></script>")
_REQUIRE_CONFIG = re.compile(r"require\.config\(\{.*?\}\);", re.DOTALL)

# bertviz's scripts call `require.config({paths: {...CDN URLs...}})` and then `requirejs(['jquery', 'd3'], cb)`.
# Loading the real require.js would fetch it and both libraries from CDNs, which fails offline (and leaks every
# page view). d3 and jQuery are already defined as globals by the inlined copies above this script, so the shim
# ignores the configuration and calls the callback at once with those globals, in the order asked for.
_REQUIRE_SHIM = """
(function () {
  "use strict";
  var modules = {jquery: window.jQuery, d3: window.d3};
  function shimRequire(names, callback) {
    var resolved = names.map(function (name) {
      if (!(name in modules) || !modules[name]) { throw new Error("offline page: no inlined module " + name); }
      return modules[name];
    });
    if (!callback) { return resolved[0]; }
    drawLater(callback, resolved);
  }
  // Each view is drawn once the page has painted (its note "Drawing the view..." on screen: the model view of a long
  // sentence takes seconds); the note goes when every view is drawn.
  var pending = 0;
  function drawLater(callback, resolved) {
    pending += 1;
    var draw = function () {
      try { callback.apply(window, resolved); } finally {
        pending -= 1;
        var note = document.getElementById("vaswani-drawing");
        if (pending === 0 && note) { note.remove(); }
      }
    };
    // After the next frame, or 100 ms for a frame hidden or off screen, which Chromium does not paint.
    var started = false;
    var start = function () { if (!started) { started = true; window.setTimeout(draw, 0); } };
    window.requestAnimationFrame(start);
    window.setTimeout(start, 100);
  }
  shimRequire.config = function () {};
  window.require = window.requirejs = shimRequire;
  // Parameters of one bertviz view: JSON from an inert <script type="application/json"> block, weights stored
  // as integers in units of 1/scale.
  window.vaswaniInspectParams = function (elementId) {
    var params = JSON.parse(document.getElementById(elementId).textContent);
    var scale = params.attn_scale || 1;
    params.attention.forEach(function (entry) {
      entry.attn = entry.attn.map(function (layer) {
        return layer.map(function (head) {
          return head.map(function (row) { return row.map(function (v) { return v / scale; }); });
        });
      });
    });
    return params;
  };
})();
"""

_STYLE = """
body { font-family: 'Helvetica Neue', Helvetica, Arial, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.5em; }
.pair { font-size: 1.05em; } .note { color: #666; font-size: 0.9em; max-width: 60em; }
#vaswani-drawing { color: #444; background: #f3f3f3; border-radius: 6px; padding: 0.5em 0.8em; display: inline-block; }
"""
#: What the page shows until its views are drawn (removed by the page's script then).
DRAWING_NOTE = "Drawing the view\u2026"


def head_view_html(
    record: AttentionRecord,
    kind: str = "all",
    *,
    layer: int | None = None,
    heads: Sequence[int] | None = None,
    decimals: int = VIEW_DECIMALS,
    title: str | None = None,
) -> str:
    """A self-contained offline HTML page with bertviz's head view of `record`.

    Args:
        record: ONE record (bertviz shows batch size 1); for a word-level view pass `to_words(record)`.
        kind: `"encoder"`, `"decoder"`, `"cross"`, or `"all"` (the three, with bertviz's selector when the encoder
            and decoder have the same number of layers and heads, else one view per kind: see the module docstring).
        layer: layer selected at first (default 0); must exist in every kind shown.
        heads: heads selected at first (default all); must exist in every kind shown.
        decimals: weights are rounded to this many decimals.
        title: page title (default: the source and target text).
    """
    kinds = _kinds(record, kind)
    if layer is not None:
        for k in kinds:
            record.layer_index(k, layer)
        layer = int(layer) % record.num_layers(kinds[0])
    if heads is not None:
        heads = [int(h) for h in heads]
        for k in kinds:
            for h in heads:
                record.head_index(k, h)
        heads = [h % record.num_heads(kinds[0]) for h in heads]
    from bertviz import head_view

    def render(group: list[str]) -> str:
        arguments = _bertviz_arguments(record, group, decimals)
        return head_view(**arguments, layer=layer, heads=heads, html_action="return").data

    return _page(record, kinds, render, decimals, title, VIEW_REGISTRY["head"].phrase())


def model_view_html(
    record: AttentionRecord,
    kind: str = "all",
    *,
    display_mode: str = "light",
    decimals: int = VIEW_DECIMALS,
    title: str | None = None,
) -> str:
    """A self-contained offline HTML page with bertviz's model view (every layer x head thumbnail) of `record`.

    Arguments as `head_view_html`; `display_mode` is bertviz's `"light"` or `"dark"`.
    """
    if display_mode not in ("light", "dark"):
        raise ValueError(f"display_mode must be 'light' or 'dark', got {display_mode!r}.")
    kinds = _kinds(record, kind)
    from bertviz import model_view

    def render(group: list[str]) -> str:
        arguments = _bertviz_arguments(record, group, decimals)
        return model_view(**arguments, display_mode=display_mode, html_action="return").data

    return _page(record, kinds, render, decimals, title, VIEW_REGISTRY["model"].phrase())


def save_html(text: str, path: str | Path) -> Path:
    """Write an HTML page (UTF-8) and return its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------------------------------------------
# The registry of views
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class View:
    """One view of an `AttentionRecord`: everything the report and the demo need to show it.

    Attributes:
        name: its value, a lower-case identifier (``"head"``): the demo's choice, the report's ``{name}_view.html``.
        render: ``render(record, kind)``, a self-contained HTML page of one record, `kind` being ``"encoder"``,
            ``"decoder"``, ``"cross"`` or ``"all"`` (the report's, so it is the default).
        height: ``height(record, kind)``, the pixels an iframe needs to show the page without scrolling (an
            estimate from the drawing's own sizes).
        labels: its name as the demo's control shows it, by language (``{"en": "Head view", "es": "Vista de
            cabezas"}``; ``"en"`` is required and stands in for a missing language). With a lower-case first
            letter (`phrase`) it names the view inside a sentence and in the page's title.
        glosses: what `name` means, for each language that does not read it as its own word (``{"es": "cabezas"}``):
            the demo's refusal of an unknown view lists the names with them.
    """

    name: str
    render: Callable[..., str]
    height: Callable[[AttentionRecord, str], int]
    labels: Mapping[str, str]
    glosses: Mapping[str, str] = field(default_factory=dict)

    @property
    def file_name(self) -> str:
        """The file the report writes the view to."""
        return f"{self.name}_view.html"

    def label(self, language: str = "en") -> str:
        """The control's label in `language` (English for a language without one)."""
        return self.labels.get(language, self.labels["en"])

    def phrase(self, language: str = "en") -> str:
        """The view named inside a sentence: its `label` with a lower-case first letter (``"head view"``)."""
        label = self.label(language)
        return label[:1].lower() + label[1:]


#: Every view, by name, in the order the report writes them and the demo offers them (the first is the default).
VIEW_REGISTRY: dict[str, View] = {}

_VIEW_NAME = re.compile(r"[a-z][a-z0-9_]*")


def register_view(view: View) -> View:
    """Add `view` to `VIEW_REGISTRY`, after the views already there, and return it. Its name must be new and a
    lower-case identifier (it becomes a file name and a key of the demo's texts), and it must have an English
    label."""
    if not _VIEW_NAME.fullmatch(view.name):
        raise ValueError(f"A view's name must be a lower-case identifier, got {view.name!r}.")
    if view.name in VIEW_REGISTRY:
        raise ValueError(f"A view named {view.name!r} is already registered.")
    if "en" not in view.labels:
        raise ValueError(f"The view {view.name!r} has no English label (labels={dict(view.labels)!r}).")
    VIEW_REGISTRY[view.name] = view
    return view


def view_names() -> tuple[str, ...]:
    """The names of the registered views, in order."""
    return tuple(VIEW_REGISTRY)


# The iframe heights follow bertviz's own sizes (`head_view.js`, `model_view.js`) plus the page's heading; the
# frame scrolls if an estimate is short.
_HEADING_PX = 230
_MAX_FRAME_PX = 2400


def _longest_side(record: AttentionRecord, kind: str) -> int:
    return max(len(record.query_tokens(kind)), len(record.key_tokens(kind)))


def _head_view_height(record: AttentionRecord, kind: str) -> int:
    return int(min(_HEADING_PX + 70 + _longest_side(record, kind) * 22.5 + 40, _MAX_FRAME_PX))


def _model_view_height(record: AttentionRecord, kind: str) -> int:
    longest = _longest_side(record, kind)
    thumbnail = longest * 7 * (12 / record.num_heads(kind)) + 10
    drawing = max(record.num_layers(kind) * thumbnail + 40, longest * 18 + 70)
    return int(min(_HEADING_PX + drawing + 40, _MAX_FRAME_PX))


register_view(
    View("head", head_view_html, _head_view_height, {"en": "Head view", "es": "Vista de cabezas"}, {"es": "cabezas"})
)
register_view(
    View("model", model_view_html, _model_view_height, {"en": "Model view", "es": "Vista del modelo"}, {"es": "modelo"})
)


# ----------------------------------------------------------------------------------------------------------------
# Building the page
# ----------------------------------------------------------------------------------------------------------------


def _kinds(record: Any, kind: str) -> list[str]:
    if isinstance(record, (list, tuple)):
        raise TypeError(
            "bertviz views show one example at a time (batch size 1): call the view once per AttentionRecord."
        )
    if not isinstance(record, AttentionRecord):
        raise TypeError(f"Expected an AttentionRecord, got {type(record).__name__}.")
    return list(KINDS) if kind == "all" else [check_kind(kind)]


def _groups(record: AttentionRecord, kinds: list[str]) -> list[list[str]]:
    """bertviz's encoder-decoder mode handles several kinds at once only when they share (layers, heads)."""
    shapes = {record.attention(k).shape[:2] for k in kinds}
    return [kinds] if len(shapes) == 1 else [[k] for k in kinds]


def _placeholders(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def _bertviz_arguments(record: AttentionRecord, kinds: list[str], decimals: int) -> dict[str, Any]:
    import torch

    def layers(kind: str) -> list:
        rounded = np.round(record.attention(kind).astype(np.float64), decimals)
        return [torch.from_numpy(layer[None]) for layer in rounded]

    arguments: dict[str, Any] = {
        "encoder_tokens": _placeholders("s", len(record.source_tokens)) if kinds != ["decoder"] else None,
        "decoder_tokens": _placeholders("t", len(record.target_tokens)) if kinds != ["encoder"] else None,
        "prettify_tokens": False,
    }
    for kind in kinds:
        arguments[f"{kind}_attention"] = layers(kind)
    return arguments


def _display_tokens(tokens: Sequence[str]) -> list[str]:
    """Token labels as bertviz prettifies them: the Metaspace marker "▁" shown as a space."""
    return [token.replace("▁", " ") for token in tokens]


def _rewrite(view: str, record: AttentionRecord, decimals: int) -> str:
    """Turn bertviz's HTML for one view into offline, escaped HTML (see the module docstring)."""
    match = _PARAMS.search(view)
    if match is None:
        raise RuntimeError("Unexpected bertviz output: no 'const params = ...; // HACK' line (bertviz version?).")
    if _PARAMS.search(view, match.end()):
        raise RuntimeError("Unexpected bertviz output: several 'const params' lines (bertviz version?).")
    params = json.loads(match.group(1))
    labels = {f"s{i}": t for i, t in enumerate(_display_tokens(record.source_tokens))}
    labels.update({f"t{i}": t for i, t in enumerate(_display_tokens(record.target_tokens))})
    scale = 10**decimals
    for entry in params["attention"]:
        entry["left_text"] = [labels[t] for t in entry["left_text"]]
        entry["right_text"] = [labels[t] for t in entry["right_text"]]
        entry["attn"] = np.rint(np.asarray(entry["attn"], dtype=np.float64) * scale).astype(np.int64).tolist()
    params["attn_scale"] = scale
    data_id = f"{params['root_div_id']}-params"
    view = (
        view[: match.start()]
        + f"const params = window.vaswaniInspectParams({json.dumps(data_id)});"
        + view[match.end() :]
    )
    view = _REQUIRE_SCRIPT.sub("", view)
    view = _REQUIRE_CONFIG.sub("/* require.config: CDN paths removed, modules are inlined */", view, count=1)
    # Only the attribution comment at the top of bertviz's script may still mention a URL; nothing may load one.
    if re.search(r"cdnjs|(?:src|href)\s*=\s*[\"']?https?:|'https?://", view):
        raise RuntimeError("bertviz output still references a remote URL after rewriting (bertviz version?).")
    block = f'<script type="application/json" id="{data_id}">{script_safe_json(params)}</script>\n'
    return block + view


def script_safe_json(data: Any) -> str:
    """JSON that can sit inside a `<script>` element: `<`, `>` and `&` become `\\u003c`, `\\u003e`, `\\u0026`."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _page(record: AttentionRecord, kinds: list[str], render: Any, decimals: int, title: str | None, what: str) -> str:
    if not isinstance(decimals, int) or not 0 <= decimals <= 6:
        raise ValueError(f"decimals must be an integer in 0..6, got {decimals!r}.")
    heading = title if title is not None else (record.source_text or " ".join(record.source_tokens))
    sections = []
    for group in _groups(record, kinds):
        name = " / ".join(_TITLES[k] for k in group) if len(group) == 1 else "Encoder, decoder and cross-attention"
        shape = ", ".join(f"{k}: {record.num_layers(k)} layers x {record.num_heads(k)} heads" for k in group)
        sections.append(
            f'<section class="view" data-kinds="{" ".join(group)}">\n<h2>{html.escape(name)} ({what})</h2>\n'
            f'<p class="note">{html.escape(shape)}</p>\n{_rewrite(render(group), record, decimals)}\n</section>'
        )
    note = (
        "Decoder and cross-attention rows are labelled with the decoder input token: the row of token t is the "
        "attention used to predict token t+1."
    )
    pair = f"{record.source_text} \u2192 {record.target_text}" if record.target_text else record.source_text
    meta = f"model: {record.model_name or '?'} \u00b7 direction: {record.direction or '?'} \u00b7 {record.level} level"
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(heading)} \u2013 {what}</title>\n<style>{_STYLE}</style>\n"
        f"<script>\n{_library('d3')}\n</script>\n<script>\n{_library('jquery')}\n</script>\n"
        f"<script>\n{_REQUIRE_SHIM}\n</script>\n</head>\n<body>\n"
        f'<p id="vaswani-drawing" role="status">{DRAWING_NOTE}</p>\n'
        f'<h1>{html.escape(heading)}</h1>\n<p class="pair">{html.escape(pair)}</p>\n'
        f'<p class="note">{html.escape(meta)}. {html.escape(note)}</p>\n' + "\n".join(sections) + "\n</body>\n</html>\n"
    )


@cache
def _library(name: str) -> str:
    """The JavaScript of d3 v5 (from mpld3's package files) or jQuery (from xstatic-jquery's package data)."""
    if name == "d3":
        import mpld3

        path = Path(mpld3.__file__).resolve().parent / "js" / "d3.v5.min.js"
    else:
        import xstatic.pkg.jquery as xstatic_jquery

        path = Path(xstatic_jquery.BASE_DIR) / "jquery.min.js"
    if not path.is_file():
        raise FileNotFoundError(f"Cannot inline {name}: {path} is missing (reinstall mpld3 / xstatic-jquery).")
    text = path.read_text(encoding="utf-8")
    # An inline script ends at the first "</script"; "<!--" changes how the HTML parser reads it. Neither occurs in
    # the shipped files, but escaping them keeps a future version from breaking the page ("<\/" is the same string
    # in JavaScript).
    return re.sub(r"</(script)", r"<\\/\1", text, flags=re.IGNORECASE).replace("<!--", "<\\!--")


__all__ = [
    "DRAWING_NOTE",
    "VIEW_DECIMALS",
    "VIEW_REGISTRY",
    "View",
    "head_view_html",
    "model_view_html",
    "register_view",
    "save_html",
    "script_safe_json",
    "view_names",
]
