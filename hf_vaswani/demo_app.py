"""The translate-and-inspect demo: a Gradio app around the project's Transformer and `vaswani_inspect`.

`build_app(model_path)` loads a model folder (or Hub id; default: the shipped ``pretrained/vaswani-tatoeba-es-en``)
and returns a `gradio.Blocks` app; `launch_app(app, ...)` serves it on 127.0.0.1 without a share link unless asked.
``hf-vaswani demo`` and ``demo/app.py`` (the Hugging Face Space) are thin wrappers around these two functions.

The app translates a sentence (Spanish -> English or English -> Spanish) and shows, for that one model run:

* the translation, and a status line (timing, or a human sentence explaining why the input was refused);
* the cross-attention of a chosen decoder layer and head (or their average) as a heatmap, word level with the
  alignment links boxed, or subword level;
* the aligned word pairs (each target word with the source word it attends to most);
* bertviz's head view and model view of the encoder, decoder or cross-attention, as an offline page inside an
  ``<iframe sandbox="allow-scripts" srcdoc="...">`` (Gradio's HTML component does not run scripts);
* the attention record (every matrix, as `vaswani_inspect.AttentionRecord` JSON) to download.

The record of the last translation is kept in a `gr.State`: changing the layer, head or view redraws from it and
never runs the model again. The translate function is the named API endpoint ``/translate`` (see
`DemoBackend.translate_outputs` and ``docs/demo.md``).

Importing this module sets ``GRADIO_ANALYTICS_ENABLED=False`` (before Gradio is imported) and the app is built
with ``analytics_enabled=False``: the demo makes no network request of its own.
"""

from __future__ import annotations

import argparse
import html
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Must happen before gradio is imported anywhere in the process; build_app also passes analytics_enabled=False.
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

__all__ = [
    "DEFAULT_CONCURRENCY_LIMIT",
    "DEFAULT_MAX_QUEUE",
    "DIRECTION_CHOICES",
    "EXAMPLES",
    "KIND_CHOICES",
    "MAX_BEAMS",
    "MAX_CHARS",
    "MODEL_ENV",
    "DemoBackend",
    "TranslationResult",
    "add_parser",
    "build_app",
    "iframe_html",
    "launch_app",
    "resolve_model_path",
]

logger = logging.getLogger(__name__)

#: Longest input, in characters, the demo translates (the model was trained on sentences of at most 64 tokens;
#: the token limit of the model, `max_position_embeddings`, is checked as well).
MAX_CHARS = 500
#: Largest beam size offered.
MAX_BEAMS = 8
#: Model runs (translations) served at the same time; more requests wait in the queue.
DEFAULT_CONCURRENCY_LIMIT = 2
#: Requests that may wait in the queue; beyond that Gradio answers "queue full".
DEFAULT_MAX_QUEUE = 64
#: Environment variable naming the model folder or Hub id when none is passed (used by the Space).
MODEL_ENV = "VASWANI_DEMO_MODEL"
#: A downloaded attention record file is deleted after this many seconds (Gradio keeps its own cached copy).
FILE_TTL_SECONDS = 3600
#: Records kept in gr.State are dropped after this many seconds without use.
STATE_TTL_SECONDS = 3600

#: The course examples: (text, direction).
EXAMPLES: tuple[tuple[str, str], ...] = (
    ("el gato negro", "es-en"),
    ("The cat ate the mouse.", "en-es"),
    ("El banco aprobó el crédito", "es-en"),
    ("Me senté en el banco de la plaza", "es-en"),
)
DIRECTION_CHOICES: list[tuple[str, str]] = [("Spanish → English", "es-en"), ("English → Spanish", "en-es")]
KIND_CHOICES: list[tuple[str, str]] = [
    ("Encoder self-attention", "encoder"),
    ("Decoder self-attention", "decoder"),
    ("Cross-attention", "cross"),
]
VIEW_CHOICES: list[tuple[str, str]] = [("Head view", "head"), ("Model view", "model")]
UNIT_CHOICES: list[tuple[str, str]] = [("Words, alignment links boxed", "words"), ("Subword tokens", "tokens")]
MEAN = "mean"
_LANGUAGE_NAMES = {"es": "Spanish", "en": "English"}
_KIND_NAMES = dict((value, label) for label, value in KIND_CHOICES)

#: Page style (Gradio 6 takes it in `launch`): a long translation must not make the heatmap metres tall.
APP_CSS = "#alignment-plot img { max-height: 760px; object-fit: contain; }"

_PLACEHOLDER_VIEW = (
    '<div class="vaswani-placeholder" style="padding:2em;color:#666;border:1px dashed #bbb;border-radius:8px">'
    "Translate a sentence to see its attention heads here.</div>"
)


def resolve_model_path(model_path: str | os.PathLike[str] | None = None) -> str:
    """The model to load: `model_path`, else ``$VASWANI_DEMO_MODEL``, else the shipped checkpoint (looked up in the
    current directory, the repository root and the package folder by `hf_vaswani.inference.default_model_path`)."""
    if model_path is not None and str(model_path):
        return str(model_path)
    if os.environ.get(MODEL_ENV):
        return os.environ[MODEL_ENV]
    from .inference import default_model_path

    return default_model_path()


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


@dataclass
class TranslationResult:
    """What one call of `DemoBackend.translate` produced: a record, or a message saying why there is none."""

    translation: str = ""
    status: str = ""
    record: Any = None
    ok: bool = False
    notes: list[str] = field(default_factory=list)


class DemoBackend:
    """The demo's logic without Gradio: checks the input, runs the model once, draws from the record.

    Attributes:
        model, tokenizer: the loaded model (eval mode) and its tokenizer.
        model_name: shown in the app (the folder or Hub id).
        model_runs: how many times the model was run (translations); redraws do not count.
        max_tokens: the longest source, in tokens (language token and ``</s>`` included), the model reads.
    """

    def __init__(self, model: Any, tokenizer: Any, model_name: str = "") -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.model_name = model_name or str(getattr(model.config, "_name_or_path", "") or type(model).__name__)
        config = model.config
        limits = [int(getattr(config, "max_position_embeddings", 0) or 0)]
        tokenizer_limit = int(getattr(tokenizer, "model_max_length", 0) or 0)
        if 0 < tokenizer_limit < 10**6:
            limits.append(tokenizer_limit)
        self.max_tokens = min(limit for limit in limits if limit > 0) if any(limits) else 512
        self.decoder_layers = int(config.decoder_layers)
        self.decoder_heads = int(config.decoder_attention_heads)
        generation = getattr(model, "generation_config", None)
        self.default_beams = max(1, min(MAX_BEAMS, int(getattr(generation, "num_beams", None) or 1)))
        new_tokens = getattr(generation, "max_new_tokens", None)
        if not new_tokens and getattr(generation, "max_length", None):
            new_tokens = int(generation.max_length) - 1  # the decoder start token counts in max_length
        self.max_new_tokens_limit = max(1, self.max_tokens - 1)
        self.default_max_new_tokens = max(1, min(int(new_tokens or 64), self.max_new_tokens_limit))
        self.model_runs = 0
        self._lock = threading.Lock()
        # Import the drawing libraries now, in this thread, rather than on the first requests in worker threads.
        import bertviz  # noqa: F401

        import vaswani_inspect  # noqa: F401

        self.files_dir = Path(tempfile.mkdtemp(prefix="vaswani-demo-"))

    @classmethod
    def load(cls, model_path: str | os.PathLike[str] | None = None, *, device: str | None = None) -> DemoBackend:
        """Load a model folder or Hub id (see `resolve_model_path`).

        Raises:
            FileNotFoundError: when the folder does not exist (the message says how to pass one).
        """
        from .inference import load_translator
        from .paths import DEFAULT_MODEL

        name = resolve_model_path(model_path)
        if model_path is None and not os.environ.get(MODEL_ENV) and not (Path(name) / "config.json").is_file():
            # Without this check a missing default folder would be looked up on the Hub as "pretrained/...".
            raise FileNotFoundError(
                f"No trained checkpoint at {DEFAULT_MODEL} (not in this checkout yet): pass --model with a model "
                f"folder or Hub id, or set {MODEL_ENV}."
            )
        model, tokenizer = load_translator(name, device=device)
        # A local folder is shown (and stored in the records) by its name only: no server paths in the page.
        shown = Path(name).expanduser().name if Path(name).expanduser().is_dir() else name
        return cls(model, tokenizer, model_name=shown)

    # ------------------------------------------------------------------------------------------------ input checks

    def check_text(self, text: Any, direction: str) -> tuple[str | None, list[str]]:
        """(a message explaining why `text` cannot be translated, or None; notes to show with the translation)."""
        from .tokenization import DIRECTIONS, direction_to_languages, source_with_language

        if direction not in DIRECTIONS:
            choices = " or ".join(f"{label} ({value})" for label, value in DIRECTION_CHOICES)
            return f"Choose a translation direction: {choices}.", []
        if text is None or not isinstance(text, str) or text == "":
            return "The text box is empty: type a sentence to translate.", []
        if not text.strip():
            return "The text is only blank space: type a sentence to translate.", []
        if len(text) > MAX_CHARS:
            return (
                f"The text is {len(text)} characters long; this demo translates at most {MAX_CHARS} characters "
                "(a sentence or two). Please shorten it.",
                [],
            )
        _, target = direction_to_languages(direction)
        source = source_with_language(text, target)
        n_tokens = len(self.tokenizer(source, verbose=False).input_ids)
        if n_tokens > self.max_tokens:
            return (
                f"The text is {n_tokens} tokens long, but the model reads at most {self.max_tokens} tokens "
                "(language token and end of sentence included). Please shorten it.",
                [],
            )
        unknown, content = self._unknown_characters(text)
        notes = []
        if unknown:
            shown = " ".join(unknown[:10]) + (" ..." if len(unknown) > 10 else "")
            if not content:
                return (
                    f"The model does not know any of these characters ({shown}): it would read them all as "
                    "<unk> (unknown), so there is nothing to translate. Type words in Spanish or English.",
                    [],
                )
            notes.append(f"The model has never seen {shown}: it read {'them' if len(unknown) > 1 else 'it'} as <unk>.")
        return None, notes

    def _unknown_characters(self, text: str) -> tuple[list[str], bool]:
        """(the distinct pieces of `text` the tokenizer maps to `<unk>`, whether any other real piece exists)."""
        unk_id = getattr(self.tokenizer, "unk_token_id", None)
        encoding = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        unknown: list[str] = []
        content = False
        tokens = self.tokenizer.convert_ids_to_tokens(encoding["input_ids"])
        for token_id, token, (start, end) in zip(encoding["input_ids"], tokens, encoding["offset_mapping"]):
            if unk_id is not None and token_id == unk_id:
                piece = text[start:end].strip() or "?"
                if piece not in unknown:
                    unknown.append(piece)
            elif token.replace("▁", ""):
                content = True
        return unknown, content

    # ------------------------------------------------------------------------------------------------- model run

    def translate(
        self, text: Any, direction: str, num_beams: Any = None, max_new_tokens: Any = None
    ) -> TranslationResult:
        """Check the input and translate it, keeping every attention matrix (`vaswani_inspect.extract`).

        Never raises for bad input: the result then has `ok=False` and a `status` sentence for the user.
        """
        from vaswani_inspect import extract

        try:
            beams = self._int_option(num_beams, self.default_beams, 1, MAX_BEAMS, "The beam size")
            new_tokens = self._int_option(
                max_new_tokens, self.default_max_new_tokens, 1, self.max_new_tokens_limit, "The maximum length"
            )
        except ValueError as error:
            return TranslationResult(status=str(error))
        message, notes = self.check_text(text, direction)
        if message is not None:
            return TranslationResult(status=message)
        generate_kwargs = {"num_beams": beams, "max_length": new_tokens + 1}  # max_length counts the start token
        started = time.perf_counter()
        try:
            with self._lock:
                self.model_runs += 1
            record = extract(
                self.model,
                self.tokenizer,
                text,
                direction=direction,
                generate_kwargs=generate_kwargs,
                model_name=self.model_name,
            )
        except ValueError as error:  # e.g. a limit extract() checks itself
            return TranslationResult(status=f"This text cannot be translated: {error}")
        except Exception as error:  # noqa: BLE001 - the user gets a sentence, the log gets the traceback
            logger.exception("The demo failed on %r (%s)", text, direction)
            return TranslationResult(
                status=f"Something went wrong while translating ({type(error).__name__}); the server log has the "
                "details. Try another sentence."
            )
        seconds = time.perf_counter() - started
        source, target = direction.split("-")
        output_tokens = max(0, len(record.target_tokens) - 1)
        status = (
            f"Translated {_LANGUAGE_NAMES[source]} → {_LANGUAGE_NAMES[target]} in {seconds:.2f} s (beam size "
            f"{beams}; {len(record.source_tokens)} source tokens, {output_tokens} output tokens)."
        )
        if not record.target_text:
            notes.append("The model produced an empty translation.")
        if output_tokens >= new_tokens and record.target_tokens[-1] != getattr(self.tokenizer, "eos_token", None):
            notes.append(f"The translation stopped at the maximum length ({new_tokens} tokens).")
        status = " ".join([status, *notes])
        return TranslationResult(record.target_text, status, record, True, notes)

    @staticmethod
    def _int_option(value: Any, default: int, low: int, high: int, what: str) -> int:
        if value is None or value == "":
            return default
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{what} must be a whole number from {low} to {high}, got {value!r}.") from None
        if number != int(number) or not low <= number <= high:
            raise ValueError(f"{what} must be a whole number from {low} to {high}, got {value!r}.")
        return int(number)

    # ---------------------------------------------------------------------------------------- drawing the record

    @staticmethod
    def _index(value: Any) -> int | str:
        if value is None or value == "" or value == MEAN:
            return MEAN
        return int(value)

    def alignment(self, record: Any, layer: Any = MEAN, head: Any = MEAN, unit: str = "words") -> tuple[Any, list]:
        """(matplotlib Figure of the cross-attention, aligned word pairs) for a layer/head index or `"mean"`.

        The pairs are rows ``[target word, source word, weight]``: each target word with the source word its
        (layer, head) cross-attention gives the most weight (`vaswani_inspect.align`, argmax, rows that predict
        the word). Nothing is drawn for `record=None`.
        """
        from vaswani_inspect import alignment_matrix, plot_alignment, plot_heatmap, source_words, target_words

        if record is None:
            return None, []
        layer_index, head_index = self._index(layer), self._index(head)
        heads = "all" if head_index == MEAN else head_index
        pairs: list[list[Any]] = []
        try:
            matrix = alignment_matrix(record, layer_index, heads)
            sources, targets = source_words(record), target_words(record)
            for j, row in enumerate(matrix):
                i = int(row.argmax())
                pairs.append([targets[j], sources[i], round(float(row[i]), 3)])
        except ValueError:  # no words on one side (e.g. an empty translation): no pairs, token heatmap
            unit = "tokens"
        if unit == "words":
            figure = plot_alignment(record, layer_index, heads)
            layer_text = "mean of layers" if layer_index == MEAN else f"layer {layer_index}"
            head_text = "mean of heads" if head_index == MEAN else f"head {head_index}"
            figure.axes[0].set_title(f"cross-attention alignment, {layer_text}, {head_text}", fontsize=10)
        else:
            figure = plot_heatmap(record, "cross", layer_index, head_index)
        return figure, pairs

    def view(self, record: Any, view: str = "head", kind: str = "encoder") -> str:
        """The bertviz head or model view of one attention kind, as a sandboxed iframe (a placeholder for None)."""
        from vaswani_inspect import head_view_html, model_view_html

        if record is None:
            return _PLACEHOLDER_VIEW
        kind = kind if kind in _KIND_NAMES else "encoder"
        if view == "model":
            page = model_view_html(record, kind)
        else:
            page = head_view_html(record, kind)
        title = f"bertviz {'model' if view == 'model' else 'head'} view: {_KIND_NAMES[kind]}"
        return iframe_html(page, height=self._view_height(record, view, kind), title=title)

    @staticmethod
    def _view_height(record: Any, view: str, kind: str) -> int:
        """Iframe height that fits bertviz's drawing (its own sizes, `head_view.js`/`model_view.js`) plus the page
        heading; the frame scrolls if the estimate is short."""
        queries, keys = len(record.query_tokens(kind)), len(record.key_tokens(kind))
        longest = max(queries, keys)
        header = 230
        if view == "model":
            layers, heads = record.num_layers(kind), record.num_heads(kind)
            thumbnail = longest * 7 * (12 / heads) + 10
            drawing = max(layers * thumbnail + 40, longest * 18 + 70)
            return int(min(header + drawing + 40, 2400))
        return int(min(header + 70 + longest * 22.5 + 40, 2400))

    def save_record(self, record: Any) -> str | None:
        """Write the record as JSON to a fresh file for download; returns its path (None for no record)."""
        if record is None:
            return None
        self._prune_files()
        folder = Path(tempfile.mkdtemp(dir=self.files_dir))
        name = f"attention-{record.direction or 'record'}.json"
        return str(record.save(folder / name))

    def _prune_files(self) -> None:
        cutoff = time.time() - FILE_TTL_SECONDS
        for folder in self.files_dir.glob("*"):
            try:
                if folder.stat().st_mtime < cutoff:
                    shutil.rmtree(folder, ignore_errors=True)
            except OSError:
                pass

    def translate_outputs(
        self,
        text: Any,
        direction: str,
        num_beams: Any = None,
        max_new_tokens: Any = None,
        layer: Any = MEAN,
        head: Any = MEAN,
        unit: str = "words",
        view: str = "head",
        kind: str = "encoder",
    ) -> tuple[TranslationResult, tuple[Any, ...]]:
        """Everything ``/translate`` returns: (result, (translation, status, figure, pairs, view HTML, JSON path,
        record))."""
        result = self.translate(text, direction, num_beams, max_new_tokens)
        if not result.ok:
            return result, ("", result.status, None, [], _PLACEHOLDER_VIEW, None, None)
        record = result.record
        try:
            figure, pairs = self.alignment(record, layer, head, unit)
            page = self.view(record, view, kind)
            path = self.save_record(record)
        except Exception as error:  # noqa: BLE001 - a drawing problem must not hide the translation
            logger.exception("The demo could not draw the attention of %r", text)
            status = f"{result.status} The attention could not be drawn ({type(error).__name__})."
            return result, (result.translation, status, None, [], _PLACEHOLDER_VIEW, None, record)
        return result, (result.translation, result.status, figure, pairs, page, path, record)


# ------------------------------------------------------------------------------------------------------ the app


def build_app(
    model_path: str | os.PathLike[str] | None = None,
    *,
    backend: DemoBackend | None = None,
    device: str | None = None,
    concurrency_limit: int = DEFAULT_CONCURRENCY_LIMIT,
    max_queue: int = DEFAULT_MAX_QUEUE,
) -> Any:
    """Load the model and build the Gradio app (queue configured); `app.demo_backend` is the `DemoBackend`.

    Args:
        model_path: model folder or Hub id (default: ``$VASWANI_DEMO_MODEL``, else the shipped checkpoint).
        backend: an already loaded `DemoBackend` (then `model_path` and `device` are ignored).
        device: torch device for the model (default: cuda if available, else cpu).
        concurrency_limit: translations run at the same time (`default_concurrency_limit` of the queue).
        max_queue: requests that may wait (`max_size` of the queue).

    Raises:
        FileNotFoundError: the model folder does not exist.
    """
    import gradio as gr

    if backend is None:
        backend = DemoBackend.load(model_path, device=device)
    layer_choices = [("average of all layers", MEAN)] + [(f"layer {i}", str(i)) for i in range(backend.decoder_layers)]
    head_choices = [("average of all heads", MEAN)] + [(f"head {i}", str(i)) for i in range(backend.decoder_heads)]

    def translate(
        text: str,
        direction: str,
        num_beams: float,
        max_new_tokens: float,
        layer: str,
        head: str,
        unit: str,
        view: str,
        kind: str,
    ) -> tuple[Any, ...]:
        """Translate a sentence and show what the attention heads did.

        Args:
            text: the sentence to translate (at most 500 characters and the model's token limit).
            direction: "es-en" (Spanish to English) or "en-es" (English to Spanish).
            num_beams: beam size, 1 (greedy) to 8.
            max_new_tokens: longest translation, in tokens.
            layer: decoder layer of the cross-attention heatmap and word pairs: "mean" or "0", "1", ...
            head: head of that layer: "mean" or "0", "1", ...
            unit: heatmap over "words" (alignment links boxed) or subword "tokens".
            view: bertviz "head" view or "model" view.
            kind: attention shown by bertviz: "encoder", "decoder" or "cross".

        Returns:
            translation: the translation ("" when the input was refused).
            status: timing and notes, or the sentence explaining why the input was refused.
            alignment: the cross-attention heatmap (a plot).
            pairs: aligned words, rows of [target word, source word, attention weight].
            view: HTML, an iframe with the offline bertviz page in its srcdoc.
            record: path of the attention record JSON (vaswani_inspect.AttentionRecord).
        """
        result, outputs = backend.translate_outputs(
            text, direction, num_beams, max_new_tokens, layer, head, unit, view, kind
        )
        if not result.ok:
            gr.Warning(result.status)
        return outputs

    def redraw_alignment(record: Any, layer: str, head: str, unit: str) -> tuple[Any, list]:
        try:
            return backend.alignment(record, layer, head, unit)
        except Exception as error:  # noqa: BLE001
            logger.exception("The demo could not redraw the alignment")
            gr.Warning(f"The alignment could not be drawn ({type(error).__name__}).")
            return None, []

    def redraw_view(record: Any, view: str, kind: str) -> str:
        try:
            return backend.view(record, view, kind)
        except Exception as error:  # noqa: BLE001
            logger.exception("The demo could not draw the bertviz view")
            gr.Warning(f"The view could not be drawn ({type(error).__name__}).")
            return _PLACEHOLDER_VIEW

    with gr.Blocks(title="Attention Is All You Need: translate and inspect", analytics_enabled=False) as app:
        gr.Markdown(
            "# Attention Is All You Need: translate and inspect\n"
            "A Transformer (Vaswani et al., 2017) written from scratch as a Hugging Face transformers model, "
            "trained on Tatoeba Spanish ↔ English sentence pairs. Translate a sentence, then look at what its "
            f"attention heads did. Model: `{backend.model_name}`. Limits: {MAX_CHARS} characters and "
            f"{backend.max_tokens} tokens per input."
        )
        with gr.Row(equal_height=False):
            with gr.Column(scale=1):
                text = gr.Textbox(
                    label="Text to translate",
                    placeholder="Escribe una frase… / Type a sentence…",
                    lines=2,
                    max_lines=6,
                    elem_id="source-text",
                )
                direction = gr.Radio(DIRECTION_CHOICES, value="es-en", label="Direction", elem_id="direction")
                with gr.Accordion("Decoding options", open=False):
                    num_beams = gr.Slider(
                        1, MAX_BEAMS, value=backend.default_beams, step=1, label="Beam size (1 = greedy)"
                    )
                    max_new_tokens = gr.Slider(
                        1,
                        backend.max_new_tokens_limit,
                        value=backend.default_max_new_tokens,
                        step=1,
                        label="Maximum length of the translation (tokens)",
                    )
                button = gr.Button("Translate", variant="primary", elem_id="translate-button")
            with gr.Column(scale=1):
                translation = gr.Textbox(
                    label="Translation", interactive=False, lines=2, buttons=["copy"], elem_id="translation"
                )
                status = gr.Textbox(label="Status", interactive=False, lines=2, elem_id="status")
                record_file = gr.File(label="Attention record (JSON)", interactive=False, elem_id="record-file")
        examples = gr.Examples(
            [list(example) for example in EXAMPLES],
            inputs=[text, direction],
            label="Examples (click one to translate it)",
            cache_examples=False,
            example_labels=[f"{t}  ({'es→en' if d == 'es-en' else 'en→es'})" for t, d in EXAMPLES],
        )

        gr.Markdown(
            "## Cross-attention: which source words each target word looked at\n"
            "Rows are target words (the attention that *produced* each word), columns source words; red boxes mark "
            "each target word's most attended source word."
        )
        with gr.Row():
            layer = gr.Dropdown(layer_choices, value=MEAN, label="Decoder layer", elem_id="layer")
            head = gr.Dropdown(head_choices, value=MEAN, label="Head", elem_id="head")
            unit = gr.Radio(UNIT_CHOICES, value="words", label="Heatmap of", elem_id="unit")
        with gr.Row(equal_height=False):
            plot = gr.Plot(
                label="Cross-attention heatmap", show_label=False, format="png", scale=3, elem_id="alignment-plot"
            )
            pairs = gr.Dataframe(
                headers=["target word", "source word", "weight"],
                datatype=["str", "str", "number"],
                label="Aligned words",
                interactive=False,
                scale=2,
                elem_id="alignment-pairs",
            )

        gr.Markdown(
            "## Inside the heads (bertviz)\n"
            "Head view: lines from each token to the tokens it attends to (hover a token; double-click a head "
            "colour to show it alone). Model view: every layer × head at once (click a thumbnail to enlarge). "
            "Decoder rows are labelled with the decoder *input* token: the row of token t predicts token t + 1."
        )
        with gr.Row():
            view = gr.Radio(VIEW_CHOICES, value="head", label="bertviz view", elem_id="view")
            kind = gr.Radio(KIND_CHOICES, value="encoder", label="Attention", elem_id="kind")
        views = gr.HTML(_PLACEHOLDER_VIEW, label="bertviz view", js_on_load=None, elem_id="bertviz")
        record_state = gr.State(None, time_to_live=STATE_TTL_SECONDS)

        inputs = [text, direction, num_beams, max_new_tokens, layer, head, unit, view, kind]
        outputs = [translation, status, plot, pairs, views, record_file, record_state]
        model_events: dict[str, Any] = dict(
            fn=translate, inputs=inputs, outputs=outputs, concurrency_id="model", concurrency_limit=concurrency_limit
        )
        button.click(api_name="translate", **model_events)
        text.submit(api_visibility="private", **model_events)
        examples.load_input_event.then(api_visibility="private", **model_events)
        for control in (layer, head, unit):
            control.change(
                redraw_alignment,
                inputs=[record_state, layer, head, unit],
                outputs=[plot, pairs],
                api_visibility="private",
                concurrency_id="redraw",
                show_progress="minimal",
            )
        for control in (view, kind):
            control.change(
                redraw_view,
                inputs=[record_state, view, kind],
                outputs=[views],
                api_visibility="private",
                concurrency_id="redraw",
                show_progress="minimal",
            )
    app.queue(default_concurrency_limit=concurrency_limit, max_size=max_queue)
    app.demo_backend = backend
    return app


def launch_app(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    share: bool = False,
    prevent_thread_lock: bool = False,
    quiet: bool = False,
) -> Any:
    """Serve `app` on `host:port` (default 127.0.0.1, the first free port from 7860); a public share link only
    with `share=True`. Returns what `Blocks.launch` returns."""
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


# -------------------------------------------------------------------------------------------------------- CLI


def _run_demo(args: argparse.Namespace) -> int:
    if args.port is not None and not 0 < args.port < 65536:
        raise ValueError(f"--port must be between 1 and 65535, got {args.port}.")
    if args.concurrency_limit < 1 or args.max_queue < 1:
        raise ValueError("--concurrency-limit and --max-queue must be at least 1.")
    try:
        import gradio  # noqa: F401
    except ImportError:
        print(
            "hf-vaswani demo: gradio is not installed: pip install -e '.[demo]' (or bash scripts/setup.sh demo)",
            file=sys.stderr,
        )
        return 2
    try:
        app = build_app(
            args.model, device=args.device, concurrency_limit=args.concurrency_limit, max_queue=args.max_queue
        )
    except FileNotFoundError:
        raise
    except OSError as error:  # e.g. a Hub id that is neither cached nor reachable (HF_HUB_OFFLINE=1)
        raise ValueError(f"Could not load the model {resolve_model_path(args.model)!r}: {error}") from error
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"hf-vaswani demo: serving on {args.host}: anyone who can reach this machine can use the demo.")
    launch_app(app, host=args.host, port=args.port, share=args.share)
    return 0


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
        default=None,
        help="model folder or Hub id (default: $VASWANI_DEMO_MODEL, else pretrained/vaswani-tatoeba-es-en)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=int, default=None, help="port (default: the first free one from 7860)")
    parser.add_argument("--share", action="store_true", help="also open a public gradio.live link (off by default)")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: cuda if available)")
    parser.add_argument(
        "--concurrency-limit",
        type=int,
        default=DEFAULT_CONCURRENCY_LIMIT,
        help=f"translations run at the same time (default: {DEFAULT_CONCURRENCY_LIMIT})",
    )
    parser.add_argument(
        "--max-queue",
        type=int,
        default=DEFAULT_MAX_QUEUE,
        help=f"requests that may wait in the queue (default: {DEFAULT_MAX_QUEUE})",
    )
    parser.set_defaults(func=_run_demo)
