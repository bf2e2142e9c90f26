"""The demo's logic without Gradio: load a model, check the input, translate once, draw from the attention record.

`DemoBackend.translate` runs the model and keeps every attention matrix (`vaswani_inspect.extract`);
`alignment`, `alignment_links` and `view` draw from that record (a heatmap with word pairs, the aligned words as
lines between the two sentences, a bertviz page in an iframe) and never run the model again. The alignment is
read as the model's `config.alignment` says (layer, heads, shift) unless the user chooses otherwise. `ablate`
translates the last sentence again with chosen heads switched off (`vaswani_inspect.ablate_heads`), in a copy of the
model that only ablations use, so that translations served at the same time never see the switched-off heads.
`translate_outputs` is everything the ``/translate`` endpoint returns. One backend serves every request: the model
is shared by Gradio's worker threads, which `hf_vaswani`'s model supports, and the run counter is guarded by a
lock.
"""

from __future__ import annotations

import copy
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hf_vaswani import paths
from hf_vaswani.inference import load_translator
from hf_vaswani.tokenization import DIRECTIONS, direction_to_languages, source_with_language
from vaswani_inspect import (
    DEFAULT_ALIGNMENT,
    KINDS,
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

from .embed import PLACEHOLDER_VIEW, iframe_html, view_height
from .settings import (
    DIRECTION_CHOICES,
    FILE_TTL_SECONDS,
    HEAD_LABEL,
    KIND_NAMES,
    LANGUAGE_NAMES,
    MAX_BEAMS,
    MAX_CHARS,
    MEAN,
    MODEL_ENV,
)

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


def _int_option(value: Any, default: int, low: int, high: int, what: str) -> int:
    """`value` as a whole number from `low` to `high` (`default` when empty), or ValueError naming `what`."""
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a whole number from {low} to {high}, got {value!r}.") from None
    if number != int(number) or not low <= number <= high:
        raise ValueError(f"{what} must be a whole number from {low} to {high}, got {value!r}.")
    return int(number)


def _layer(value: Any) -> int | str | None:
    """A layer choice ("0", "1", ... or "mean") as an index or `MEAN`; None (empty): the model's configuration."""
    if value is None or value == "":
        return None
    return MEAN if value == MEAN else int(value)


def _heads(value: Any) -> list[int] | str | None:
    """A head choice ("0", "1,3" or "mean") as a list of heads or "all"; None (empty): the model's configuration."""
    if value is None or value == "":
        return None
    if value == MEAN:
        return "all"
    return [int(head) for head in str(value).split(",")]


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
        default_beams, default_max_new_tokens, max_new_tokens_limit: the decoding options' defaults and limit.
        files_dir: where the attention records offered for download are written.
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
        self.alignment_config = check_alignment(getattr(config, "alignment", None)) or dict(DEFAULT_ALIGNMENT)
        generation = getattr(model, "generation_config", None)
        self.default_beams = max(1, min(MAX_BEAMS, int(getattr(generation, "num_beams", None) or 1)))
        new_tokens = getattr(generation, "max_new_tokens", None)
        if not new_tokens and getattr(generation, "max_length", None):
            new_tokens = int(generation.max_length) - 1  # the decoder start token counts in max_length
        self.max_new_tokens_limit = max(1, self.max_tokens - 1)
        self.default_max_new_tokens = max(1, min(int(new_tokens or 64), self.max_new_tokens_limit))
        self.heads = head_counts(model)
        self.model_runs = 0
        self._lock = threading.Lock()
        self._ablation_lock = threading.Lock()  # one ablated run at a time: they share one copy of the model
        self._ablation_model: Any = None
        # Import bertviz now, in this thread, rather than on the first requests in worker threads.
        import bertviz  # noqa: F401

        self.files_dir = Path(tempfile.mkdtemp(prefix="vaswani-demo-"))

    @classmethod
    def load(cls, model_path: str | os.PathLike[str] | None = None, *, device: str | None = None) -> DemoBackend:
        """Load a model folder or Hub id (see `resolve_model_path`) on `device` (default: cuda if available).

        Raises:
            FileNotFoundError: when the folder does not exist (the message says how to pass one).
        """
        name = resolve_model_path(model_path)
        model, tokenizer = load_translator(name, device=device)
        # A local folder is shown (and stored in the records) by its name only: no server paths in the page.
        shown = Path(name).expanduser().name if Path(name).expanduser().is_dir() else name
        return cls(model, tokenizer, model_name=shown)

    # ------------------------------------------------------------------------------------------------ input checks

    def check_text(self, text: Any, direction: str) -> tuple[str | None, list[str]]:
        """(a message explaining why `text` cannot be translated, or None; notes to show with the translation)."""
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
        n_tokens = len(self.tokenizer(source_with_language(text, target), verbose=False).input_ids)
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
        try:
            beams = _int_option(num_beams, self.default_beams, 1, MAX_BEAMS, "The beam size")
            new_tokens = _int_option(
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
        status = self._status(record, direction, beams, new_tokens, time.perf_counter() - started, notes)
        return TranslationResult(record.target_text, status, record, True, notes)

    def _status(
        self, record: Any, direction: str, beams: int, new_tokens: int, seconds: float, notes: list[str]
    ) -> str:
        """The status line of a translation: direction, time, settings, token counts, then `notes` (extended with
        an empty translation or one cut at the maximum length)."""
        source, target = direction.split("-")
        output_tokens = max(0, len(record.target_tokens) - 1)
        status = (
            f"Translated {LANGUAGE_NAMES[source]} → {LANGUAGE_NAMES[target]} in {seconds:.2f} s (beam size "
            f"{beams}; {len(record.source_tokens)} source tokens, {output_tokens} output tokens)."
        )
        if not record.target_text:
            notes.append("The model produced an empty translation.")
        if output_tokens >= new_tokens and record.target_tokens[-1] != getattr(self.tokenizer, "eos_token", None):
            notes.append(f"The translation stopped at the maximum length ({new_tokens} tokens).")
        return " ".join([status, *notes])

    # ---------------------------------------------------------------------------------------- drawing the record

    def layer_choices(self) -> list[tuple[str, str]]:
        """(label, value) of the decoder layer control: the average of all layers, then each layer."""
        return [("average of all layers", MEAN)] + [(f"layer {i}", str(i)) for i in range(self.decoder_layers)]

    def head_choices(self) -> list[tuple[str, str]]:
        """(label, value) of the head control: the average of all heads, each head, and the model's configured
        heads when it averages several ("heads 1, 3", value "1,3")."""
        choices = [("average of all heads", MEAN)] + [(f"head {i}", str(i)) for i in range(self.decoder_heads)]
        heads = self.alignment_config["heads"]
        if heads != "all" and len(heads) > 1:
            choices.append((f"heads {', '.join(str(h) for h in heads)}", _choice(heads)))
        return choices

    def default_choices(self) -> dict[str, Any]:
        """The controls' starting values, from the model's alignment configuration: layer, head, shift."""
        layer = self.alignment_config["layer"]
        return {
            "layer": MEAN if layer == MEAN else str(layer),
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
    ) -> tuple[Any, list]:
        """(matplotlib Figure of the cross-attention, aligned word pairs) for a layer choice ("0", "1", ... or
        "mean"), a head choice ("0", "1,3" or "mean") and `shift`; left at None, each is the model's configuration
        (the record's `alignment`).

        The pairs are rows ``[target word, source word, weight]``: each target word with the source word its
        cross-attention gives the most weight (`vaswani_inspect.align`, argmax); punctuation words get no pair with
        `skip_punctuation`. Nothing is drawn for `record=None`.
        """
        if record is None:
            return None, []
        settings = alignment_settings(record, _layer(layer), _heads(head), shift)
        pairs: list[list[Any]] = []
        try:
            matrix = alignment_matrix(record, **settings, skip_punctuation=skip_punctuation)
            sources, targets = source_words(record), target_words(record)
            links = align(record, **settings, skip_punctuation=skip_punctuation)
            for i, j in sorted(links, key=lambda link: (link[1], link[0])):
                pairs.append([targets[j], sources[i], round(float(matrix[j, i]), 3)])
        except ValueError:  # no words on one side (e.g. an empty translation): no pairs, token heatmap
            unit = "tokens"
        if unit == "words":
            figure = plot_alignment(record, **settings, skip_punctuation=skip_punctuation)
        else:
            figure = self._token_heatmap(record, settings)
        return figure, pairs

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
        self, record: Any, layer: Any = None, head: Any = None, shift: bool | None = None, skip_punctuation: bool = True
    ) -> Any:
        """The aligned words as lines between the two sentences (`vaswani_inspect.plot_alignment_links`), for the
        same choices as `alignment`; None for no record or a side without words."""
        if record is None or not source_words(record) or not target_words(record):
            return None
        settings = alignment_settings(record, _layer(layer), _heads(head), shift)
        return plot_alignment_links(record, **settings, skip_punctuation=skip_punctuation)

    def view(self, record: Any, view: str = "head", kind: str = "encoder") -> str:
        """The bertviz head or model view of one attention kind, as a sandboxed iframe (a placeholder for None)."""
        if record is None:
            return PLACEHOLDER_VIEW
        kind = kind if kind in KIND_NAMES else "encoder"
        page = model_view_html(record, kind) if view == "model" else head_view_html(record, kind)
        title = f"bertviz {'model' if view == 'model' else 'head'} view: {KIND_NAMES[kind]}"
        return iframe_html(page, height=view_height(record, view, kind), title=title)

    # ------------------------------------------------------------------------------------------ switching heads off

    def head_labels(self, kind: str) -> list[str]:
        """The heads of one attention kind as the ablation panel names them: ``"L0 H0"``, ``"L0 H1"``, ..."""
        layers, heads = self.heads[kind]
        return [HEAD_LABEL.format(layer=layer, head=head) for layer in range(layers) for head in range(heads)]

    def heads_from_labels(self, chosen: Mapping[str, Sequence[str] | None]) -> list[Head]:
        """``{kind: ["L0 H1", ...]}`` as heads; ValueError for an unknown kind or a head the model does not have."""
        heads = []
        for kind, labels in chosen.items():
            if kind not in self.heads:
                raise ValueError(f"Unknown attention kind {kind!r}: choose one of {', '.join(KINDS)}.")
            valid = self.head_labels(kind)
            for label in labels or ():
                if label not in valid:
                    raise ValueError(
                        f"The model has no {KIND_NAMES[kind].lower()} head {label!r}: from {valid[0]} to {valid[-1]}."
                    )
                layer, head = (int(part[1:]) for part in label.split())
                heads.append(Head(kind, layer, head))
        return sorted(set(heads))

    def ablate(self, record: Any, heads_off: Mapping[str, Sequence[str] | None]) -> AblationResult:
        """Translate the record's source again, with the same decoding settings, with `heads_off` (``{kind: ["L0
        H1", ...]}``) switched off, keeping every attention matrix.

        Never raises for bad input: the result then has `ok=False` and a `status` sentence for the user.
        """
        if record is None:
            return AblationResult(status="Translate a sentence first: the heads are switched off for that sentence.")
        try:
            heads = self.heads_from_labels(heads_off)
        except ValueError as error:
            return AblationResult(status=str(error))
        labels = [head.label() for head in heads]
        if not heads:
            return AblationResult(status="Tick at least one head to switch off.")
        started = time.perf_counter()
        try:
            with self._ablation_lock:
                with self._lock:
                    self.model_runs += 1
                model = self._ablation_copy()
                with ablate_heads(model, heads):
                    ablated = extract(
                        model,
                        self.tokenizer,
                        record.source_text,
                        direction=record.direction,
                        generate_kwargs=record.generate_kwargs,
                        model_name=self.model_name,
                    )
        except Exception as error:  # noqa: BLE001 - the user gets a sentence, the log gets the traceback
            logger.exception("The demo failed to translate %r with heads off", record.source_text)
            return AblationResult(status=f"Something went wrong with the heads off ({type(error).__name__}).")
        changed = "changed" if ablated.target_text != record.target_text else "is the same"
        status = (
            f"{len(labels)} head(s) off ({', '.join(labels)}), translated in {time.perf_counter() - started:.2f} s: "
            f"the translation {changed}. A head that is off still computes its attention weights (the alignment "
            "shows them if it reads that head), but they no longer reach the output."
        )
        return AblationResult(ablated.target_text, status, ablated, True, labels)

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
    ) -> tuple[AblationResult, tuple[Any, ...]]:
        """What the ablation panel shows: (result, (status, translation with all heads, its alignment lines,
        translation with the heads off, its alignment lines)); the lines follow the alignment section's layer, head,
        shift and punctuation choices."""
        result = self.ablate(record, {"encoder": encoder_heads, "decoder": decoder_heads, "cross": cross_heads})
        original = record.target_text if record is not None else ""
        try:
            original_links = self.alignment_links(record, layer, head, shift, skip_punctuation)
            links = self.alignment_links(result.record, layer, head, shift, skip_punctuation) if result.ok else None
        except Exception as error:  # noqa: BLE001 - a drawing problem must not hide the translations
            logger.exception("The demo could not draw the alignment with heads off")
            status = f"{result.status} The alignment could not be drawn ({type(error).__name__})."
            return result, (status, original, None, result.translation, None)
        return result, (result.status, original, original_links, result.translation, links)

    # ------------------------------------------------------------------------------------------------- downloads

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

    # ------------------------------------------------------------------------------------------------ the endpoint

    def translate_outputs(
        self,
        text: Any,
        direction: str,
        num_beams: Any = None,
        max_new_tokens: Any = None,
        layer: Any = None,
        head: Any = None,
        unit: str = "words",
        view: str = "head",
        kind: str = "encoder",
    ) -> tuple[TranslationResult, tuple[Any, ...]]:
        """Everything ``/translate`` returns: (result, (translation, status, figure, pairs, view HTML, JSON path,
        record)). The heatmap and pairs use the model's shift and skip punctuation (`alignment` defaults)."""
        result = self.translate(text, direction, num_beams, max_new_tokens)
        if not result.ok:
            return result, ("", result.status, None, [], PLACEHOLDER_VIEW, None, None)
        record = result.record
        try:
            figure, pairs = self.alignment(record, layer, head, unit)
            page = self.view(record, view, kind)
            path = self.save_record(record)
        except Exception as error:  # noqa: BLE001 - a drawing problem must not hide the translation
            logger.exception("The demo could not draw the attention of %r", text)
            status = f"{result.status} The attention could not be drawn ({type(error).__name__})."
            return result, (result.translation, status, None, [], PLACEHOLDER_VIEW, None, record)
        return result, (result.translation, result.status, figure, pairs, page, path, record)
