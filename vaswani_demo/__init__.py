"""The translate-and-inspect demo: a Gradio app around the project's Transformer (`hf_vaswani`), or any translation
model the attention toolkit (`vaswani_inspect`) can look inside, and its attention views.

`build_app(model_path)` loads a model folder or Hub id (default: ``$VASWANI_DEMO_MODEL``, else the shipped
``pretrained/vaswani-tatoeba-es-en``) of any supported architecture (ours, Marian/OPUS-MT, NLLB/M2M100, mBART-50,
BART, T5), or one model per direction (``["es-en=Helsinki-NLP/opus-mt-es-en", "en-es=Helsinki-NLP/opus-mt-en-es"]``,
`vaswani_demo.models`), and returns a `gradio.Blocks` app; `launch_app(app, ...)` serves it on 127.0.0.1 without a
share link unless asked. ``hf-vaswani demo`` (`vaswani_demo.commands`) and ``demo/app.py`` (the Hugging Face Space)
are thin wrappers around these two. `DemoBackend` is the demo without Gradio: the models served, their choices, the
part that runs them and the session's files.

The app translates a sentence (Spanish -> English or English -> Spanish, those of the two directions its models
serve; the page says which model and backend serve each) and shows, for that one model run:

* the translation, and a status line (timing, or a human sentence explaining why the input was refused);
* the cross-attention of a chosen decoder layer and head (or their average), with or without shift, punctuation
  skipped or not, starting at the model's alignment configuration (`config.alignment`; without one, the
  penultimate layer's heads averaged, `vaswani_demo.readings`): a heatmap, word level
  with the alignment links boxed, or subword level; next to it the aligned words as lines between the two
  sentences;
* the aligned word pairs (each target word with the source word it attends to most);
* an explanation method for the heatmap, the lines and the pairs (`vaswani_inspect.attribution.METHODS`: attention,
  attention norms, rollout, the gradient methods when captum is installed, value zeroing), with a sentence on how
  faithful it measured on the model (the model folder's ``explanations.json``), and under the translation a bar per
  target word of the share that comes from the source rather than the target prefix;
* bertviz's head view and model view of the encoder, decoder or cross-attention, as an offline page inside an
  ``<iframe sandbox="allow-scripts" srcdoc="...">`` (Gradio's HTML component does not run scripts);
* the attention record (every matrix, as `vaswani_inspect.AttentionRecord` JSON) to download.

The record of the last translation is kept in a `gr.State`: changing the layer, head, shift, skip-punctuation or
view redraws from it and never runs the model again; each explanation method's attribution of it is computed once
and kept beside it. The translate function is the named API endpoint
``/translate`` (``docs/demo.md``); it checks every value itself and answers a bad one with a sentence.

The page speaks Spanish and English: its texts go through Gradio's i18n (`gr.I18n`, the browser's language), and
what the server writes (status, refusals, warnings, figure titles) follows the request's ``Accept-Language``.

Modules: `settings` (limits, defaults, the controls' values, the course examples), `texts` (every word, in English and
Spanish), `models` (the models served, which serves each direction, their backends), `readings` (where the alignment
controls start), `choices` (what the controls offer, read once from the models), `checks` (the input rules), `runner`
(runs the models: translations, heads switched off, explanations), `drawing` (figures, word pairs and bertviz views from
a record), `attribution_drawing` (the same pictures of an explanation method's attribution), `figures` (the figures'
titles), `measurements` (the model's ``explanations.json`` in a sentence), `embed` (bertviz pages in an iframe), `files`
(the records offered for download), `backend` (`DemoBackend`: models, choices, runner and files), `layout` (the
components), `events` (what they do, in Gradio's shapes), `explaining` (the explanation methods' part of it), `answers`
(a request's language, a warning on the page), `app` (`build_app`, `launch_app`), `commands` (``hf-vaswani demo``),
`testing` (a tiny model folder for tests).

Importing this package sets ``GRADIO_ANALYTICS_ENABLED=False`` (before Gradio is imported) and the app is built
with ``analytics_enabled=False``: the demo makes no network request of its own. `build_app`, `launch_app` and
`DemoBackend` are imported on first use, so that ``hf-vaswani`` can read the ``demo`` command's options without
loading Gradio or a model.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

# Must happen before gradio is imported anywhere in the process; build_app also passes analytics_enabled=False.
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

if TYPE_CHECKING:
    from .app import build_app, launch_app
    from .backend import DemoBackend

__all__ = ["DemoBackend", "build_app", "launch_app"]

_EXPORTS = {"build_app": "vaswani_demo.app", "launch_app": "vaswani_demo.app", "DemoBackend": "vaswani_demo.backend"}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'vaswani_demo' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
