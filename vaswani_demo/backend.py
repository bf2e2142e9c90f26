"""The demo's logic without Gradio: load a model, check the input, translate once, draw from the attention record.

`DemoBackend.translate` runs the model and keeps every attention matrix (`vaswani_inspect.extract`);
`alignment`, `alignment_links` and `view` draw from that record (a heatmap with word pairs, the aligned words as
lines between the two sentences, a bertviz page in an iframe) and never run the model again. The alignment is
read as the model's `config.alignment` says (layer, heads, shift) unless the user chooses otherwise. `ablate`
translates the last sentence again with chosen heads switched off (`vaswani_inspect.ablate_heads`), in a copy of the
model that only ablations use, so that translations served at the same time never see the switched-off heads.
`translate_outputs`, `alignment_outputs`, `view_output` and `record_output` are what the API's endpoints return: the
translation first, then the figures and the record's file from its record. One backend serves every request: the model
is shared by Gradio's worker threads, which `hf_vaswani`'s model supports, and the run counter is guarded by a
lock.

Every sentence for the user comes in the `language` a method is given (``"en"`` or ``"es"``, `vaswani_demo.texts`);
the input rules are `vaswani_demo.checks`. The attention records offered for download are written atomically
(`hf_vaswani.outputs.write_text`) into a temporary folder that `close` removes (and the interpreter, at exit).
"""

from __future__ import annotations

import copy
import logging
import os
import shutil
import tempfile
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hf_vaswani import paths
from hf_vaswani.inference import UnknownCharactersWarning, generation_limits, load_translator
from hf_vaswani.limits import MAX_NUM_BEAMS
from hf_vaswani.outputs import write_text
from vaswani_inspect import (
    DEFAULT_ALIGNMENT,
    Head,
    ablate_heads,
    align,
    alignment_matrix,
    alignment_settings,
    extract,
    head_view_html,
    model_view_html,
    plot_alignment,
    plot_alignment_links,
    plot_heatmap,
    source_words,
    target_words,
)
from vaswani_inspect.ablation import head_counts
from vaswani_inspect.record import check_alignment

from .checks import choice, flag, head_choice, layer_choice, shown, text_notes, whole_number
from .embed import iframe_html, placeholder_html, view_height
from .figures import label_figure, settings_text
from .settings import FILE_TTL_SECONDS, HEAD_LABEL, KINDS, MAX_BEAMS, MEAN, MODEL_ALIGNER, MODEL_ENV, UNITS, VIEWS
from .texts import DEFAULT_LANGUAGE, Named, Refusal, decimal, message, page_text

__all__ = ["AblationResult", "DemoBackend", "TranslationResult", "resolve_model_path"]

logger = logging.getLogger(__name__)


def resolve_model_path(model_path: str | os.PathLike[str] | None = None) -> str:
    """The model to load: `model_path`, else ``$VASWANI_DEMO_MODEL``, else the shipped checkpoint
    (`hf_vaswani.paths.default_model_path`).

    Raises:
        FileNotFoundError: no model was named and the shipped checkpoint is missing. The default is never looked up
            on the Hub, where ``pretrained/...`` would be taken for a repository id.
    """
    if model_path is not None and str(model_path):
        return str(model_path)
    if os.environ.get(MODEL_ENV):
        return os.environ[MODEL_ENV]
    try:
        name = paths.default_model_path()
    except FileNotFoundError as error:
        raise FileNotFoundError(f"{error} The demo also takes a model folder or Hub id from ${MODEL_ENV}.") from error
    if not (Path(name) / "config.json").is_file():
        raise FileNotFoundError(
            f"No trained checkpoint at {name}: pass --model with a model folder or Hub id, or set {MODEL_ENV}."
        )
    return name


@dataclass
class TranslationResult:
    """What one call of `DemoBackend.translate` produced: a record, or a message saying why there is none."""

    translation: str = ""
    status: str = ""
    record: Any = None
    ok: bool = False
    notes: list[str] = field(default_factory=list)


@dataclass
class AblationResult:
    """What one call of `DemoBackend.ablate` produced: the translation with the chosen heads off and its record
    (`heads_off`: their labels, ``"cross L1 H0"``), or a message saying why there is none."""

    translation: str = ""
    status: str = ""
    record: Any = None
    ok: bool = False
    heads_off: list[str] = field(default_factory=list)


def _choice(heads: list[int] | str) -> str:
    """The head dropdown's value for a list of heads (or "all")."""
    return MEAN if heads == "all" else ",".join(str(head) for head in heads)


class DemoBackend:
    """The demo's logic without Gradio: checks the input, runs the model once, draws from the record.

    Attributes:
        model, tokenizer: the loaded model (eval mode) and its tokenizer.
        model_name: shown in the app (the folder or Hub id).
        alignment_config: the model's alignment configuration (`config.alignment`, else the mean of all layers and
            heads, not shifted): what the layer, head and shift controls start from.
        model_runs: how many times the model was run (translations); redraws do not count.
        max_tokens: the longest source, in tokens (language token and ``</s>`` included), the model reads.
        decoder_layers, decoder_heads: what the layer and head choices offer.
        heads: ``{kind: (layers, heads per layer)}``, what the ablation panel offers.
        max_beams, max_new_tokens_limit: the largest beam size and translation length accepted: the demo's
            `MAX_BEAMS`, the shared `MAX_NUM_BEAMS` and what the model can generate
            (`hf_vaswani.inference.generation_limits`).
        default_beams, default_max_new_tokens: the decoding options' defaults (the model's generation config).
        files_dir: where the attention records offered for download are written (removed by `close`).
    """

    def __init__(self, model: Any, tokenizer: Any, model_name: str = "", translator: Any = None) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        # A CTranslate2 translator (hf_vaswani.backends) chooses the output when given; the attention always comes
        # from one teacher-forced pass of the PyTorch model over that output.
        self.translator = translator
        self.model_name = model_name or str(getattr(model.config, "_name_or_path", "") or type(model).__name__)
        config = model.config
        source_limits = [int(getattr(config, "max_position_embeddings", 0) or 0)]
        tokenizer_limit = int(getattr(tokenizer, "model_max_length", 0) or 0)
        if 0 < tokenizer_limit < 10**6:
            source_limits.append(tokenizer_limit)
        self.max_tokens = min(limit for limit in source_limits if limit > 0) if any(source_limits) else 512
        self.decoder_layers = int(config.decoder_layers)
        self.decoder_heads = int(config.decoder_attention_heads)
        self.alignment_config = check_alignment(getattr(config, "alignment", None)) or dict(DEFAULT_ALIGNMENT)
        limits = generation_limits(model)
        self.max_beams = max(1, min(MAX_BEAMS, MAX_NUM_BEAMS, limits.num_beams))
        self.max_new_tokens_limit = max(1, min(limits.max_new_tokens, self.max_tokens - 1))
        generation = getattr(model, "generation_config", None)
        self.default_beams = max(1, min(self.max_beams, int(getattr(generation, "num_beams", None) or 1)))
        new_tokens = getattr(generation, "max_new_tokens", None)
        if not new_tokens and getattr(generation, "max_length", None):
            new_tokens = int(generation.max_length) - 1  # the decoder start token counts in max_length
        self.default_max_new_tokens = max(1, min(int(new_tokens or 64), self.max_new_tokens_limit))
        self.heads = head_counts(model)
        self.model_runs = 0
        self._lock = threading.Lock()
        self._ablation_lock = threading.Lock()  # one ablated run at a time: they share one copy of the model
        self._ablation_model: Any = None
        # Import bertviz now, in this thread, rather than on the first requests in worker threads.
        import bertviz  # noqa: F401

        # Removed by close(); TemporaryDirectory also removes it when the interpreter exits.
        self._files = tempfile.TemporaryDirectory(prefix="vaswani-demo-")
        self.files_dir = Path(self._files.name)
        self.closed = False

    @classmethod
    def load(
        cls, model_path: str | os.PathLike[str] | None = None, *, device: str | None = None, backend: str = "auto"
    ) -> DemoBackend:
        """Load a model folder or Hub id (see `resolve_model_path`) on `device` (default: cuda if available), with
        the translating `backend` of `hf_vaswani.backends.resolve_backend` (auto: CTranslate2 on the CPU when the
        [fast] extra is installed).

        Raises:
            FileNotFoundError: when the folder does not exist (the message says how to pass one).
        """
        from hf_vaswani.backends import load_ctranslate2, resolve_backend

        name = resolve_model_path(model_path)
        model, tokenizer = load_translator(name, device=device)
        translator = None
        if resolve_backend(backend, device) == "ctranslate2":
            translator = load_ctranslate2(name, device=device)
        # A local folder is shown (and stored in the records) by its name only: no server paths in the page.
        shown = Path(name).expanduser().name if Path(name).expanduser().is_dir() else name
        return cls(model, tokenizer, model_name=shown, translator=translator)

    # ------------------------------------------------------------------------------------------------ input checks

    def check_text(
        self, text: Any, direction: Any, *, language: str = DEFAULT_LANGUAGE
    ) -> tuple[str | None, list[str]]:
        """(a message explaining why `text` cannot be translated, or None; notes to show with the translation), in
        `language` (the rules: `vaswani_demo.checks.text_notes`)."""
        try:
            notes = text_notes(self.tokenizer, text, direction, self.max_tokens)
        except Refusal as refusal:
            return refusal.told(language), []
        return None, [message(language, key, **fields) for key, fields in notes]

    def check_options(
        self, num_beams: Any = None, max_new_tokens: Any = None, layer: Any = None, head: Any = None
    ) -> dict[str, Any]:
        """The ``/translate`` options as the backend uses them (empty: the default); `Refusal` for a value out of
        range or not among the choices."""
        return {
            "num_beams": whole_number(num_beams, self.default_beams, 1, self.max_beams, "option.beams"),
            "max_new_tokens": whole_number(
                max_new_tokens, self.default_max_new_tokens, 1, self.max_new_tokens_limit, "option.new_tokens"
            ),
            "layer": layer_choice(layer, self.decoder_layers),
            "head": head_choice(head, self.decoder_heads),
        }

    def check_alignment_options(
        self, layer: Any = None, head: Any = None, unit: Any = None, shift: Any = None, skip_punctuation: Any = None
    ) -> dict[str, Any]:
        """The ``/alignment`` options (empty: the model's configuration, words, punctuation skipped); `Refusal` for a
        value out of range or not among the choices."""
        return {
            "layer": layer_choice(layer, self.decoder_layers),
            "head": head_choice(head, self.decoder_heads),
            "unit": choice(unit, UNITS, "words", "option.unit"),
            "shift": flag(shift, None, "option.shift"),
            "skip_punctuation": flag(skip_punctuation, True, "option.skip_punctuation"),
        }

    @staticmethod
    def check_view_options(view: Any = None, kind: Any = None) -> dict[str, str]:
        """The ``/view`` options (empty: the head view of the encoder); `Refusal` for a value not among the
        choices."""
        return {
            "view": choice(view, VIEWS, "head", "option.view"),
            "kind": choice(kind, KINDS, "encoder", "option.kind"),
        }

    # ------------------------------------------------------------------------------------------------- model run

    def translate(
        self,
        text: Any,
        direction: Any,
        num_beams: Any = None,
        max_new_tokens: Any = None,
        *,
        language: str = DEFAULT_LANGUAGE,
    ) -> TranslationResult:
        """Check the input and translate it, keeping every attention matrix (`vaswani_inspect.extract`).

        Never raises for bad input: the result then has `ok=False` and a `status` sentence for the user, in
        `language`.
        """
        try:
            options = self.check_options(num_beams, max_new_tokens)
            found = text_notes(self.tokenizer, text, direction, self.max_tokens)
            notes = [message(language, key, **fields) for key, fields in found]
        except Refusal as refusal:
            return TranslationResult(status=refusal.told(language))
        beams, new_tokens = options["num_beams"], options["max_new_tokens"]
        generate_kwargs = {"num_beams": beams, "max_new_tokens": new_tokens}
        started = time.perf_counter()
        try:
            with self._lock:
                self.model_runs += 1
            record = self._extract(text, direction, generate_kwargs)
        except ValueError as error:  # e.g. a limit extract() checks itself
            return TranslationResult(status=message(language, "failed.extract", error=error))
        except Exception as error:  # noqa: BLE001 - the user gets a sentence, the log gets the traceback
            logger.exception("The demo failed on %r (%s)", text, direction)
            return TranslationResult(status=message(language, "failed.model", error=type(error).__name__))
        seconds = time.perf_counter() - started
        status = self._status(record, direction, beams, new_tokens, seconds, notes, language)
        return TranslationResult(record.target_text, status, record, True, notes)

    def _extract(self, text: str, direction: str, generate_kwargs: dict[str, Any]) -> Any:
        """The attention record of `text` translated in `direction`: `generate` chooses the output, or CTranslate2
        does and one teacher-forced pass records the attention over its choice."""
        if self.translator is None:
            return extract(
                self.model,
                self.tokenizer,
                text,
                direction=direction,
                generate_kwargs=generate_kwargs,
                model_name=self.model_name,
            )
        with warnings.catch_warnings():
            # The status line already names the unknown characters (checks.text_notes), in the page's language.
            warnings.simplefilter("ignore", UnknownCharactersWarning)
            ids = self.translator.translate_ids([text], direction, **generate_kwargs)[0]
        output = self.tokenizer.decode(ids, skip_special_tokens=True).strip()
        record = extract(self.model, self.tokenizer, text, output, direction=direction, model_name=self.model_name)
        record.generate_kwargs = {**generate_kwargs, "backend": "ctranslate2"}
        return record

    def _status(
        self,
        record: Any,
        direction: str,
        beams: int,
        new_tokens: int,
        seconds: float,
        notes: list[str],
        language: str = DEFAULT_LANGUAGE,
    ) -> str:
        """The status line of a translation: direction, time, settings, token counts, then `notes` (extended with
        an empty translation or one cut at the maximum length)."""
        source, target = direction.split("-")
        output_tokens = max(0, len(record.target_tokens) - 1)
        status = message(
            language,
            "status",
            source=Named("language", source),
            target=Named("language", target),
            seconds=decimal(language, seconds),
            beams=beams,
            source_tokens=len(record.source_tokens),
            output_tokens=output_tokens,
        )
        if not record.target_text:
            notes.append(message(language, "note.empty"))
        if output_tokens >= new_tokens and record.target_tokens[-1] != getattr(self.tokenizer, "eos_token", None):
            notes.append(message(language, "note.cut", limit=new_tokens))
        return " ".join([status, *notes])

    # ---------------------------------------------------------------------------------------- drawing the record

    def layer_choices(self, language: str = DEFAULT_LANGUAGE) -> list[tuple[str, str]]:
        """(label, value) of the decoder layer control, labels in `language`: the model's aligner when it averages
        several readings (value "model"), the average of all layers, then each layer."""
        layers = [(message(language, "layer.one", layer=i), str(i)) for i in range(self.decoder_layers)]
        choices = [(message(language, "layer.mean"), MEAN), *layers]
        if self.alignment_config.get("average_with"):
            described = settings_text(self.alignment_config, language)
            choices.insert(0, (message(language, "layer.model", settings=described), MODEL_ALIGNER))
        return choices

    def head_choices(self, language: str = DEFAULT_LANGUAGE) -> list[tuple[str, str]]:
        """(label, value) of the head control, labels in `language`: the average of all heads, each head, and the
        model's configured heads when it averages several ("heads 1, 3", value "1,3")."""
        heads = [(message(language, "head.one", head=i), str(i)) for i in range(self.decoder_heads)]
        choices = [(message(language, "head.mean"), MEAN), *heads]
        configured = self.alignment_config["heads"]
        if configured != "all" and len(configured) > 1:
            listed = ", ".join(str(head) for head in configured)
            choices.append((message(language, "head.several", heads=listed), _choice(configured)))
        return choices

    def default_choices(self) -> dict[str, Any]:
        """The controls' starting values, from the model's alignment configuration: layer (the model's aligner when it
        averages several readings), head, shift."""
        layer = self.alignment_config["layer"]
        if self.alignment_config.get("average_with"):
            layer = MODEL_ALIGNER
        return {
            "layer": layer if layer in (MEAN, MODEL_ALIGNER) else str(layer),
            "head": _choice(self.alignment_config["heads"]),
            "shift": bool(self.alignment_config["shift"]),
        }

    def alignment(
        self,
        record: Any,
        layer: Any = None,
        head: Any = None,
        unit: str = "words",
        shift: bool | None = None,
        skip_punctuation: bool = True,
        language: str = DEFAULT_LANGUAGE,
    ) -> tuple[Any, list]:
        """(matplotlib Figure of the cross-attention, aligned word pairs) for a layer choice ("0", "1", ..., "mean",
        or "model": the model's aligner, whatever the head and shift), a head choice ("0", "1,3" or "mean") and
        `shift`; left at None, each is the model's configuration (the record's `alignment`). The figure's title and
        axes are in `language`.

        The pairs are rows ``[target word, source word, weight]``: each target word with the source word its
        cross-attention gives the most weight (`vaswani_inspect.align`, argmax); punctuation words get no pair with
        `skip_punctuation`. Nothing is drawn for `record=None`.
        """
        if record is None:
            return None, []
        settings = self._settings(record, layer, head, shift)
        pairs = self._pairs(record, settings, skip_punctuation)
        if unit == "words" and pairs is not None:
            figure = plot_alignment(record, **settings, skip_punctuation=skip_punctuation)
            return label_figure(figure, "figure.alignment", settings, language), pairs
        # Token-level heatmaps show one reading: the first of an averaged configuration.
        first = {key: value for key, value in settings.items() if key != "average_with"}
        return label_figure(self._token_heatmap(record, first), "figure.tokens", first, language), pairs or []

    def word_pairs(
        self, record: Any, layer: Any = None, head: Any = None, shift: bool | None = None, skip_punctuation: bool = True
    ) -> list[list[Any]]:
        """The aligned word pairs of `alignment` without its figure (no pairs for `record=None` or a side without
        words)."""
        if record is None:
            return []
        return self._pairs(record, self._settings(record, layer, head, shift), skip_punctuation) or []

    @staticmethod
    def _pairs(record: Any, settings: dict[str, Any], skip_punctuation: bool) -> list[list[Any]] | None:
        """Rows ``[target word, source word, weight]`` in target order; None when one side has no words (e.g. an
        empty translation)."""
        try:
            matrix = alignment_matrix(record, **settings, skip_punctuation=skip_punctuation)
            links = align(record, **settings, skip_punctuation=skip_punctuation)
        except ValueError:
            return None
        sources, targets = source_words(record), target_words(record)
        return [
            [targets[j], sources[i], round(float(matrix[j, i]), 3)]
            for i, j in sorted(links, key=lambda link: (link[1], link[0]))
        ]

    def _settings(self, record: Any, layer: Any, head: Any, shift: bool | None) -> dict[str, Any]:
        """`vaswani_inspect.alignment_settings` for the controls' choices: the model's configuration (averaged
        readings included) for the "model" layer choice, else the one reading chosen."""
        chosen_layer = layer_choice(layer, self.decoder_layers)
        chosen_heads = head_choice(head, self.decoder_heads)
        if chosen_layer == MODEL_ALIGNER or (chosen_layer is None and chosen_heads is None and shift is None):
            return alignment_settings(record)
        return alignment_settings(record, chosen_layer, chosen_heads, shift, [])

    @staticmethod
    def _token_heatmap(record: Any, settings: dict[str, Any]) -> Any:
        """The subword-level cross-attention of the chosen layer and heads (several heads: their mean)."""
        heads = settings["heads"]
        if heads == "all":
            return plot_heatmap(record, "cross", settings["layer"], MEAN)
        if len(heads) == 1:
            return plot_heatmap(record, "cross", settings["layer"], heads[0])
        chosen = replace(record, decoder=record.decoder[:, heads], cross=record.cross[:, heads])
        return plot_heatmap(chosen, "cross", settings["layer"], MEAN)

    def alignment_links(
        self,
        record: Any,
        layer: Any = None,
        head: Any = None,
        shift: bool | None = None,
        skip_punctuation: bool = True,
        language: str = DEFAULT_LANGUAGE,
    ) -> Any:
        """The aligned words as lines between the two sentences (`vaswani_inspect.plot_alignment_links`), for the
        same choices as `alignment`, titled in `language`; None for no record or a side without words."""
        if record is None or not source_words(record) or not target_words(record):
            return None
        settings = self._settings(record, layer, head, shift)
        figure = plot_alignment_links(record, **settings, skip_punctuation=skip_punctuation)
        return label_figure(figure, "figure.links", settings, language)

    def view(self, record: Any, view: str = "head", kind: str = "encoder", language: str = DEFAULT_LANGUAGE) -> str:
        """The bertviz head or model view of one attention kind, as a sandboxed iframe titled in `language` (a
        placeholder for None)."""
        if record is None:
            return self.placeholder(language)
        kind = kind if kind in KINDS else "encoder"
        view = "model" if view == "model" else "head"
        page = model_view_html(record, kind) if view == "model" else head_view_html(record, kind)
        title = message(language, "view.title", view=message(language, f"view.{view}"), kind=Named("kind", kind))
        return iframe_html(page, height=view_height(record, view, kind), title=title)

    @staticmethod
    def placeholder(language: str = DEFAULT_LANGUAGE) -> str:
        """What the view area shows before the first translation (and when a view cannot be drawn), in
        `language`."""
        return placeholder_html(page_text(language, "placeholder"))

    @staticmethod
    def pair_headers(language: str = DEFAULT_LANGUAGE) -> list[str]:
        """The column names of the aligned word pairs (rows of `alignment`), in `language`."""
        return [message(language, key) for key in ("pairs.target", "pairs.source", "pairs.weight")]

    # ------------------------------------------------------------------------------------------ switching heads off

    def head_labels(self, kind: str) -> list[str]:
        """The heads of one attention kind as the ablation panel names them: ``"L0 H0"``, ``"L0 H1"``, ..."""
        layers, heads = self.heads[kind]
        return [HEAD_LABEL.format(layer=layer, head=head) for layer in range(layers) for head in range(heads)]

    def heads_from_labels(self, chosen: Mapping[str, Sequence[str] | None]) -> list[Head]:
        """``{kind: ["L0 H1", ...]}`` as heads; `Refusal` (a ValueError) for an unknown kind or a head the model
        does not have."""
        heads = []
        for kind, labels in chosen.items():
            if kind not in self.heads:
                raise Refusal("ablation.kind", kind=shown(kind))
            valid = self.head_labels(kind)
            for label in labels or ():
                if label not in valid:
                    named = Named("kind", kind, lower=True)
                    raise Refusal("ablation.head", kind=named, label=shown(label), first=valid[0], last=valid[-1])
                layer, head = (int(part[1:]) for part in label.split())
                heads.append(Head(kind, layer, head))
        return sorted(set(heads))

    def ablate(
        self, record: Any, heads_off: Mapping[str, Sequence[str] | None], *, language: str = DEFAULT_LANGUAGE
    ) -> AblationResult:
        """Translate the record's source again, with the same decoding settings, with `heads_off` (``{kind: ["L0
        H1", ...]}``) switched off, keeping every attention matrix.

        Never raises for bad input: the result then has `ok=False` and a `status` sentence for the user, in
        `language`.
        """
        if record is None:
            return AblationResult(status=message(language, "ablation.first"))
        try:
            heads = self.heads_from_labels(heads_off)
        except Refusal as refusal:
            return AblationResult(status=refusal.told(language))
        labels = [head.label() for head in heads]
        if not heads:
            return AblationResult(status=message(language, "ablation.none"))
        started = time.perf_counter()
        try:
            with self._ablation_lock:
                with self._lock:
                    self.model_runs += 1
                model = self._ablation_copy()
                settings, reference = self._pytorch_reference(model, record)
                with ablate_heads(model, heads):
                    ablated = extract(
                        model,
                        self.tokenizer,
                        record.source_text,
                        direction=record.direction,
                        generate_kwargs=settings,
                        model_name=self.model_name,
                    )
        except Exception as error:  # noqa: BLE001 - the user gets a sentence, the log gets the traceback
            logger.exception("The demo failed to translate %r with heads off", record.source_text)
            return AblationResult(status=message(language, "ablation.failed", error=type(error).__name__))
        outcome = "ablation.changed" if ablated.target_text != reference else "ablation.same"
        status = message(
            language,
            "ablation.status",
            count=len(labels),
            labels=", ".join(labels),
            seconds=decimal(language, time.perf_counter() - started),
            outcome=message(language, outcome),
        )
        if reference != record.target_text:
            status += " " + message(language, "ablation.reference", reference=reference)
        return AblationResult(ablated.target_text, status, ablated, True, labels)

    def _pytorch_reference(self, model: Any, record: Any) -> tuple[dict[str, Any], str]:
        """(the record's decoding settings for `generate`, the PyTorch model's translation with every head on).

        Heads can only be switched off in the PyTorch model, so a translation that CTranslate2 chose (int8 by
        default) is first translated again in PyTorch: a difference must come from the heads, not the backend.
        """
        settings = {key: value for key, value in record.generate_kwargs.items() if key != "backend"}
        if record.generate_kwargs.get("backend") != "ctranslate2":
            return settings, record.target_text
        reference = extract(
            model,
            self.tokenizer,
            record.source_text,
            direction=record.direction,
            generate_kwargs=settings,
            model_name=self.model_name,
        )
        return settings, reference.target_text

    def _ablation_copy(self) -> Any:
        """The copy of the model that ablated runs switch heads off in (made on first use)."""
        if self._ablation_model is None:
            self._ablation_model = copy.deepcopy(self.model).eval()
        return self._ablation_model

    def ablation_outputs(
        self,
        record: Any,
        encoder_heads: Sequence[str] | None = None,
        decoder_heads: Sequence[str] | None = None,
        cross_heads: Sequence[str] | None = None,
        layer: Any = None,
        head: Any = None,
        shift: bool | None = None,
        skip_punctuation: bool = True,
        *,
        language: str = DEFAULT_LANGUAGE,
    ) -> tuple[AblationResult, tuple[Any, ...]]:
        """What the ablation panel shows: (result, (status, translation with all heads, its alignment lines,
        translation with the heads off, its alignment lines)); the lines follow the alignment section's layer, head,
        shift and punctuation choices, the status is in `language`."""
        chosen = {"encoder": encoder_heads, "decoder": decoder_heads, "cross": cross_heads}
        result = self.ablate(record, chosen, language=language)
        original = record.target_text if record is not None else ""
        try:
            original_links = self.alignment_links(record, layer, head, shift, skip_punctuation, language)
            links = None
            if result.ok:
                links = self.alignment_links(result.record, layer, head, shift, skip_punctuation, language)
        except Exception as error:  # noqa: BLE001 - a drawing problem must not hide the translations
            logger.exception("The demo could not draw the alignment with heads off")
            failed = message(language, "failed.alignment", error=type(error).__name__)
            return result, (f"{result.status} {failed}", original, None, result.translation, None)
        return result, (result.status, original, original_links, result.translation, links)

    # ------------------------------------------------------------------------------------------------- downloads

    def save_record(self, record: Any) -> str | None:
        """Write the record as JSON to a fresh file for download (atomically, `hf_vaswani.outputs.write_text`);
        returns its path (None for no record, or once the backend is closed)."""
        if record is None or self.closed:
            return None
        self._prune_files()
        folder = Path(tempfile.mkdtemp(dir=self.files_dir))
        name = f"attention-{record.direction or 'record'}.json"
        return str(write_text(folder / name, record.to_json()))

    def _prune_files(self) -> None:
        cutoff = time.time() - FILE_TTL_SECONDS
        for folder in self.files_dir.glob("*"):
            try:
                if folder.stat().st_mtime < cutoff:
                    shutil.rmtree(folder, ignore_errors=True)
            except OSError:
                pass

    def close(self) -> None:
        """Remove the folder of downloadable records (`files_dir`); the backend translates on, without downloads."""
        self.closed = True
        self._files.cleanup()

    # ------------------------------------------------------------------------------------------------ the endpoint

    def translate_outputs(
        self,
        text: Any,
        direction: Any,
        num_beams: Any = None,
        max_new_tokens: Any = None,
        layer: Any = None,
        head: Any = None,
        *,
        language: str = DEFAULT_LANGUAGE,
    ) -> tuple[TranslationResult, tuple[Any, ...]]:
        """Everything ``/translate`` returns: (result, (translation, status, word pairs, record)), every sentence in
        `language`. Every option is checked before the model runs; the pairs are read with the model's shift,
        punctuation skipped (`word_pairs` defaults). Nothing is drawn or written: `alignment_outputs`, `view_output`
        and `record_output` work from the record afterwards, so that the translation waits for none of them."""
        try:
            options = self.check_options(num_beams, max_new_tokens, layer, head)
        except Refusal as refusal:
            result = TranslationResult(status=refusal.told(language))
        else:
            result = self.translate(text, direction, options["num_beams"], options["max_new_tokens"], language=language)
        if not result.ok:
            return result, ("", result.status, [], None)
        record = result.record
        try:
            pairs = self.word_pairs(record, layer, head)
        except Exception as error:  # noqa: BLE001 - a problem with the pairs must not hide the translation
            logger.exception("The demo could not read the alignment of %r", text)
            status = f"{result.status} {message(language, 'failed.attention', error=type(error).__name__)}"
            return result, (result.translation, status, [], record)
        return result, (result.translation, result.status, pairs, record)

    def alignment_outputs(
        self,
        record: Any,
        layer: Any = None,
        head: Any = None,
        unit: Any = None,
        shift: Any = None,
        skip_punctuation: Any = None,
        *,
        language: str = DEFAULT_LANGUAGE,
    ) -> tuple[Any, Any, list[list[Any]]]:
        """Everything ``/alignment`` returns for the session's last translation: (heatmap, alignment lines, word
        pairs), titled in `language`.

        Raises:
            Refusal: no translation yet (`record` is None), or an option out of range or not among the choices.
        """
        if record is None:
            raise Refusal("api.first")
        options = self.check_alignment_options(layer, head, unit, shift, skip_punctuation)
        shift, skip = options["shift"], options["skip_punctuation"]
        figure, pairs = self.alignment(record, layer, head, options["unit"], shift, skip, language)
        return figure, self.alignment_links(record, layer, head, shift, skip, language), pairs

    def view_output(self, record: Any, view: Any = None, kind: Any = None, *, language: str = DEFAULT_LANGUAGE) -> str:
        """What ``/view`` returns for the session's last translation: the bertviz page in an iframe (`view`).

        Raises:
            Refusal: no translation yet (`record` is None), or a view or kind not among the choices.
        """
        if record is None:
            raise Refusal("api.first")
        options = self.check_view_options(view, kind)
        return self.view(record, options["view"], options["kind"], language)

    def record_output(self, record: Any) -> str | None:
        """What ``/record`` returns for the session's last translation: the path of its JSON file (`save_record`;
        None once the backend is closed).

        Raises:
            Refusal: no translation yet (`record` is None).
        """
        if record is None:
            raise Refusal("api.first")
        return self.save_record(record)
