"""The part of the demo that runs the models: translate a checked request keeping every attention matrix
(`vaswani_inspect.extract.extract`), translate a record's sentence again with heads switched off, and explain a
record's translation by an attribution method (`vaswani_inspect.attribution.attribute`).

One `ModelRunner` serves every request: each direction goes to the model that serves it (`ServedModel`, from
`vaswani_demo.models`), records name theirs (`AttentionRecord.direction`). The models are shared by Gradio's worker
threads, which transformers models support, and the run counter is guarded by a lock. Ablations and the explanation
methods that run a model work in a copy of it that only they use, one at a time (the copies' lock): translations
served at the same time never see the switched-off heads, nor the hooks value zeroing puts on the cross-attention or
the gradients' passes.

Every sentence for the user comes in the `language` a method is given (``"en"`` or ``"es"``, `vaswani_demo.texts`);
the input rules are `vaswani_demo.checks`. Nothing here knows of Gradio.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import threading
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hf_vaswani.inference import translate
from hf_vaswani.placeholders import find_spans, vocabulary_of
from hf_vaswani.source_checks import UnknownCharactersWarning
from vaswani_inspect.ablation import ablate_heads
from vaswani_inspect.architectures import is_vaswani
from vaswani_inspect.attribution import attribute
from vaswani_inspect.attribution.registry import method_names
from vaswani_inspect.extract import extract

from .checks import TranslationRequest, heads_from_labels, text_notes, translation_request
from .choices import DemoChoices
from .models import ServedModel
from .settings import METHOD_OPTIONS
from .texts import DEFAULT_LANGUAGE, Named, Refusal, decimal, message

__all__ = [
    "AblationResult",
    "ExplanationResult",
    "ModelRunner",
    "TranslationResult",
    "explanation_options",
]

logger = logging.getLogger(__name__)


@dataclass
class TranslationResult:
    """What one translation produced: a record, or a message saying why there is none."""

    translation: str = ""
    status: str = ""
    record: Any = None
    ok: bool = False
    notes: list[str] = field(default_factory=list)


@dataclass
class AblationResult:
    """What one translation with heads off produced: the translation and its record (`heads_off`: their labels,
    ``"cross L1 H0"``), or a message saying why there is none."""

    translation: str = ""
    status: str = ""
    record: Any = None
    ok: bool = False
    heads_off: list[str] = field(default_factory=list)


@dataclass
class ExplanationResult:
    """One explanation of a record's translation: the `Attribution` (`vaswani_inspect.attribution`) and the
    seconds it took, or a message saying why there is none."""

    attribution: Any = None
    status: str = ""
    ok: bool = False
    seconds: float = 0.0


class ModelRunner:
    """Runs the models: translations (`translate`, `run`), translations with heads off (`ablate`) and explanations
    (`explain`), each by the model that serves its direction.

    Attributes:
        models: the `ServedModel`s, the one serving the page's first direction first.
        routes: ``{direction: ServedModel}``.
        choices: what the models accept (`DemoChoices`): the limits every request is checked against.
        model_runs: how many times a model was run (translations, ablations, explanations by a method that runs
            it); redraws do not count.
        keep_spans: whether a translation by one of our models keeps long numbers, URLs and rare names unchanged
            (`hf_vaswani.placeholders`; default True; ``hf-vaswani demo --no-keep-spans`` turns it off).
    """

    keep_spans: bool = True

    def __init__(self, models: Sequence[ServedModel], choices: DemoChoices) -> None:
        self.models = tuple(models)
        for served in self.models:
            served.model.eval()
        self.routes = {direction: served for served in self.models for direction in served.directions}
        self.choices = choices
        self.model_runs = 0
        self._lock = threading.Lock()
        # One ablated run or explanation at a time: they share the models' copies.
        self._ablation_lock = threading.Lock()
        self._copies: dict[int, Any] = {}
        self._last_explanation: Any = None  # what a copy last explained, for a request that waited on it

    @property
    def model(self) -> Any:
        """The PyTorch model serving the page's first direction."""
        return self.models[0].model

    @property
    def tokenizer(self) -> Any:
        """Its tokenizer."""
        return self.models[0].tokenizer

    @property
    def translator(self) -> Any:
        """Its CTranslate2 translator (`hf_vaswani.backends`), or None: ``generate()`` chooses its translations (the
        attention always comes from one teacher-forced pass of the PyTorch model over the output)."""
        return self.models[0].translator

    def served(self, direction: str | None) -> ServedModel:
        """The model that serves `direction` (a record's); the first model for a direction none serves."""
        return self.routes.get(direction or "", self.models[0])

    def _count_run(self) -> None:
        with self._lock:
            self.model_runs += 1

    def check_text(
        self, text: Any, direction: Any, *, language: str = DEFAULT_LANGUAGE
    ) -> tuple[str | None, list[str]]:
        """(a message explaining why `text` cannot be translated, or None; notes to show with the translation), in
        `language` (the rules: `vaswani_demo.checks.text_notes`)."""
        try:
            notes = text_notes(self.routes, text, direction, self.choices.max_tokens)
        except Refusal as refusal:
            return refusal.told(language), []
        return None, [message(language, key, **fields) for key, fields in notes]

    def translate(
        self,
        text: Any,
        direction: Any,
        num_beams: Any = None,
        max_new_tokens: Any = None,
        *,
        language: str = DEFAULT_LANGUAGE,
    ) -> TranslationResult:
        """Check the input (`vaswani_demo.checks.translation_request`) and translate it (`run`).

        Never raises for bad input: the result then has `ok=False` and a `status` sentence for the user, in
        `language`.
        """
        try:
            request = translation_request(self.choices, self.routes, text, direction, num_beams, max_new_tokens)
        except Refusal as refusal:
            return TranslationResult(status=refusal.told(language))
        return self.run(request, language=language)

    def run(self, request: TranslationRequest, *, language: str = DEFAULT_LANGUAGE) -> TranslationResult:
        """Translate a checked request, keeping every attention matrix; the status line (timing, settings, notes)
        is in `language`. A failure of the model is a result with `ok=False` and a sentence (the log has the
        traceback)."""
        notes = [message(language, key, **fields) for key, fields in request.notes]
        generate_kwargs = {"num_beams": request.num_beams, "max_new_tokens": request.max_new_tokens}
        started = time.perf_counter()
        try:
            self._count_run()
            record = self._extract(request.text, request.direction, generate_kwargs)
        except ValueError as error:  # e.g. a limit extract() checks itself
            return TranslationResult(status=message(language, "failed.extract", error=error))
        except Exception as error:  # noqa: BLE001 - the user gets a sentence, the log gets the traceback
            logger.exception("The demo failed on %r (%s)", request.text, request.direction)
            return TranslationResult(status=message(language, "failed.model", error=type(error).__name__))
        status = self._status(record, request, time.perf_counter() - started, notes, language)
        return TranslationResult(record.target_text, status, record, True, notes)

    def _extract(self, text: str, direction: str, generate_kwargs: dict[str, Any]) -> Any:
        """The attention record of `text` translated in `direction` by the model that serves it: `generate` chooses
        the output, or CTranslate2 does and one teacher-forced pass records the attention over its choice."""
        served = self.routes[direction]
        if served.translator is None:
            if self._keeps_spans_of(served, text):
                return self._extract_keeping_spans(served, text, direction, generate_kwargs)
            return self._extract_by(served, served.model, text, direction, generate_kwargs)
        with warnings.catch_warnings():
            # The status line already names the unknown characters (checks.text_notes), in the page's language.
            warnings.simplefilter("ignore", UnknownCharactersWarning)
            # Long numbers, URLs and rare names come through placeholders the model copies (hf_vaswani.placeholders).
            output = served.translator.translate([text], direction, keep_spans=self.keep_spans, **generate_kwargs)[0]
        with served.encoding(direction):
            record = extract(served.model, served.tokenizer, text, output, direction=direction, model_name=served.name)
        guarded = {"keep_spans": True} if self.keep_spans and find_spans(text, vocabulary_of(served.tokenizer)) else {}
        record.generate_kwargs = {**generate_kwargs, "backend": "ctranslate2", **guarded}
        return record

    def _keeps_spans_of(self, served: ServedModel, text: str) -> bool:
        """Whether `text` has spans the guard keeps, translated by one of our models (the placeholders were chosen
        on its training data) with the guard on."""
        return self.keep_spans and is_vaswani(served.model) and bool(find_spans(text, vocabulary_of(served.tokenizer)))

    @staticmethod
    def _extract_keeping_spans(served: ServedModel, text: str, direction: str, generate_kwargs: dict[str, Any]) -> Any:
        """`generate` translates `text` with its spans behind placeholders (`hf_vaswani.inference.translate`), and one
        teacher-forced pass records the attention over the translation with the spans put back."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnknownCharactersWarning)  # (named on the status line already)
            output = translate(served.model, served.tokenizer, [text], direction, keep_spans=True, **generate_kwargs)[0]
        with served.encoding(direction):
            record = extract(served.model, served.tokenizer, text, output, direction=direction, model_name=served.name)
        record.generate_kwargs = {**generate_kwargs, "keep_spans": True}
        return record

    @staticmethod
    def _extract_by(served: ServedModel, model: Any, text: str, direction: str, settings: dict[str, Any]) -> Any:
        """The record of `text` translated by `model` (`served`'s own, or its copy) with `generate` and the decoding
        `settings`."""
        with served.encoding(direction):
            return extract(
                model, served.tokenizer, text, direction=direction, generate_kwargs=settings, model_name=served.name
            )

    def _status(self, record: Any, request: TranslationRequest, seconds: float, notes: list[str], language: str) -> str:
        """The status line of a translation: direction, time, settings, token counts, then `notes` (extended with
        an empty translation or one cut at the maximum length)."""
        source, target = request.direction.split("-")
        output_tokens = max(0, len(record.target_tokens) - 1)
        status = message(
            language,
            "status",
            source=Named("language", source),
            target=Named("language", target),
            seconds=decimal(language, seconds),
            beams=request.num_beams,
            source_tokens=len(record.source_tokens),
            output_tokens=output_tokens,
        )
        if not record.target_text:
            notes.append(message(language, "note.empty"))
        limit = request.max_new_tokens
        eos = getattr(self.routes[request.direction].tokenizer, "eos_token", None)
        if output_tokens >= limit and record.target_tokens[-1] != eos:
            notes.append(message(language, "note.cut", limit=limit))
        return " ".join([status, *notes])

    # ------------------------------------------------------------------------------------------ switching heads off

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
            heads = heads_from_labels(self.choices, heads_off)
        except Refusal as refusal:
            return AblationResult(status=refusal.told(language))
        labels = [head.label() for head in heads]
        if not heads:
            return AblationResult(status=message(language, "ablation.none"))
        started = time.perf_counter()
        served = self.served(record.direction)
        try:
            with self._ablation_lock:
                self._count_run()
                model = self.copy_of(served)
                settings, reference = self._pytorch_reference(served, model, record)
                with ablate_heads(model, heads):
                    ablated = self._extract_by(served, model, record.source_text, record.direction, settings)
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

    def _pytorch_reference(self, served: ServedModel, model: Any, record: Any) -> tuple[dict[str, Any], str]:
        """(the record's decoding settings for `generate`, the PyTorch model's translation with every head on).

        Heads can only be switched off in the PyTorch model, so a translation that CTranslate2 chose (int8 by
        default) or that went through placeholders is first translated again in PyTorch as it is: a difference
        must come from the heads, not the backend or the guard.
        """
        settings = {key: value for key, value in record.generate_kwargs.items() if key not in ("backend", "keep_spans")}
        if record.generate_kwargs.get("backend") != "ctranslate2" and not record.generate_kwargs.get("keep_spans"):
            return settings, record.target_text
        return settings, self._extract_by(served, model, record.source_text, record.direction, settings).target_text

    @contextlib.contextmanager
    def inspecting(self, served: ServedModel) -> Iterator[Any]:
        """Inside: the copy of `served`'s model (`copy_of`), for a computation that hooks into it (one head's
        arithmetic, `vaswani_demo.head_view`), one at a time with the ablations and explanations."""
        with self._ablation_lock:
            yield self.copy_of(served)

    def copy_of(self, served: ServedModel) -> Any:
        """The copy of `served`'s model that ablated runs switch heads off in and explanations run (made on first
        use; a one-direction model's copy keeps the direction it was told)."""
        index = self.models.index(served)
        if index not in self._copies:
            self._copies[index] = copy.deepcopy(served.model).eval()
        return self._copies[index]

    @contextlib.contextmanager
    def borrowed_copy(self, direction: str | None) -> Iterator[tuple[ServedModel, Any]]:
        """Inside: (the model that serves `direction`, its copy), the copy this caller's alone (the copies' lock;
        counted as a run): for the runs that put hooks or gradients on a model (`vaswani_demo.causes`), which the
        translations served meanwhile must never see."""
        served = self.served(direction)
        with self._ablation_lock:
            self._count_run()
            yield served, self.copy_of(served)

    # ------------------------------------------------------------------------------------------------ explaining

    def explain(self, record: Any, method: str, *, language: str = DEFAULT_LANGUAGE) -> ExplanationResult:
        """Explain `record`'s translation (token level, from `translate`) by `method`, one of
        `vaswani_inspect.attribution.METHODS`, with the demo's options for it (`settings.METHOD_OPTIONS`).

        The methods that run the model (`MODEL_METHODS`) run in the copy of the model that serves the record's
        direction, one at a time; the others read the record's attention only. Never raises for a failure of the
        method: the result then has `ok=False` and a sentence in `language` (a missing library named with how to
        install it; the log has the traceback of anything else).
        """
        started = time.perf_counter()
        served = self.served(getattr(record, "direction", None))
        try:
            if method in method_names(runs_model=True):
                attribution = self._explain_with_the_copy(served, record, method)
            else:
                options = explanation_options(method, served.model)
                attribution = attribute(served.model, served.tokenizer, record, method=method, **options)
        except ImportError as error:  # captum, the [explain] extra
            logger.warning("The demo cannot explain by %s: %s", method, error)
            return ExplanationResult(status=message(language, "explain.needs", method=Named("method", method)))
        except Exception as error:  # noqa: BLE001 - the user gets a sentence, the log gets the traceback
            logger.exception("The demo failed to explain %r by %s", getattr(record, "source_text", None), method)
            told = message(language, "explain.failed", method=Named("method", method), error=type(error).__name__)
            return ExplanationResult(status=told)
        return ExplanationResult(attribution, "", True, time.perf_counter() - started)

    def _explain_with_the_copy(self, served: ServedModel, record: Any, method: str) -> Any:
        """`method`'s attribution of `record`, computed in the copy of `served`'s model; a request for the one it
        has just computed (another redraw of the same page that waited for it) gets that one."""
        with self._ablation_lock:
            last = self._last_explanation
            if last is not None and last.record is record and last.method == method:
                return last
            self._count_run()
            model = self.copy_of(served)
            options = explanation_options(method, model)
            attribution = attribute(model, served.tokenizer, record, method=method, **options)
            self._last_explanation = attribution
            return attribution


def explanation_options(method: str, model: Any) -> dict[str, Any]:
    """The options the demo passes to `attribute` for `method` (a copy: the settings stay as they are); bfloat16
    only where `model`'s device multiplies bfloat16 fast (elsewhere it would be slower than float32)."""
    options = dict(METHOD_OPTIONS.get(method, {}))
    if options.get("precision") == "bfloat16" and not _fast_bfloat16(model):
        options["precision"] = "float32"
    return options


def _fast_bfloat16(model: Any) -> bool:
    """Whether bfloat16 matmuls are fast where `model` runs: a GPU that has them, or a CPU whose oneDNN kernels
    do (AVX-512 BF16 or AMX)."""
    import torch

    device = next(model.parameters()).device
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type != "cpu":
        return False
    return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
