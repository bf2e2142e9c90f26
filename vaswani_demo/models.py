"""The models the demo serves and which one serves each direction: `ServedModel`, `load_served_models`.

``--model`` takes a folder or Hub id of any architecture `vaswani_inspect` can look inside (ours, Marian/OPUS-MT,
NLLB/M2M100, mBART-50, BART, T5): one model for the directions it offers, or one model per direction,
``DIRECTION=PATH`` (``--model es-en=Helsinki-NLP/opus-mt-es-en --model en-es=Helsinki-NLP/opus-mt-en-es``).
`parse_model_option` reads one value. `load_served_models` loads each model for inspection
(`vaswani_inspect.loading.load_for_inspection`), finds the directions it serves among the demo's
(`settings.DIRECTIONS`, through `vaswani_inspect.directions`) and what chooses its translations
(`translation_backend`): CTranslate2 where its architecture has an exact export (ours, Marian) and the backend
asked allows it, else PyTorch's ``generate()``. Every problem is one `ValueError` sentence, for the command line.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_vaswani import paths
from hf_vaswani.architectures import architecture_for_model_type
from hf_vaswani.directions import (
    Direction,
    model_direction,
    model_directions,
    resolve_direction,
    scheme_of,
    set_model_direction,
    source_language_settings,
)
from vaswani_inspect.architectures import ARCHITECTURES, Architecture, architecture_of, head_counts

from .settings import ARCHITECTURE_NAMES, DIRECTIONS, MODEL_ENV

__all__ = [
    "ModelSpec",
    "ServedModel",
    "architecture_name",
    "is_shipped_checkpoint",
    "load_served_models",
    "model_specs",
    "parse_model_option",
    "resolve_model_path",
    "translation_backend",
]

_DIRECTION = re.compile(r"^([a-z]{2,3})-([a-z]{2,3})$")


@dataclass(frozen=True)
class ModelSpec:
    """One ``--model`` value: a folder or Hub id, and the direction it was named for (None: what it offers)."""

    path: str
    direction: str | None = None


def parse_model_option(value: str | os.PathLike[str]) -> ModelSpec:
    """``"PATH"`` or ``"DIRECTION=PATH"`` (``"es-en=Helsinki-NLP/opus-mt-es-en"``) as a `ModelSpec`. A value whose
    part before the first ``=`` is no direction is a path as it is.

    Raises:
        ValueError: an empty value, a direction with nothing after ``=``, or a direction the demo does not serve.
    """
    text = str(value).strip()
    before, equals, after = text.partition("=")
    if not equals or not re.fullmatch(r"[A-Za-z_]+-[A-Za-z_]+", before):
        if not text:
            raise ValueError("--model needs a model folder or Hub id, or DIRECTION=PATH (es-en=PATH).")
        return ModelSpec(text)
    if not after.strip():
        raise ValueError(f"--model {text!r} names the direction {before} but no model: write {before}=PATH.")
    if before not in DIRECTIONS:
        raise ValueError(f"--model {text!r}: the demo translates {' and '.join(DIRECTIONS)}, not {before}.")
    return ModelSpec(after.strip(), before)


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


def model_specs(models: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None) -> list[ModelSpec]:
    """The `ModelSpec`s of the ``--model`` values (one value, several, or none: `resolve_model_path`'s model; a
    ``$VASWANI_DEMO_MODEL`` of several space-separated values, unless it names an existing folder, gives each)."""
    if models is None or isinstance(models, (str, os.PathLike)):
        values = [resolve_model_path(models)]
        if models is None and not Path(values[0]).expanduser().is_dir():
            values = values[0].split()
    else:
        values = [str(value) for value in models]
        if not values:
            return model_specs(None)
    return [parse_model_option(value) for value in values]


def is_shipped_checkpoint(name: str) -> bool:
    """Whether the served model named `name` (a folder or a Hub id) is the checkpoint the project ships: the texts
    that quote its translations (the failures to discuss) are true of it only."""
    last = str(name).replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return last == Path(paths.DEFAULT_MODEL).name


def architecture_name(name: str) -> str:
    """How the page names the architecture `name` of `hf_vaswani.architectures` ("Marian / OPUS-MT")."""
    return ARCHITECTURE_NAMES.get(name, name)


@dataclass(eq=False)
class ServedModel:
    """One loaded model, the directions it serves and what chooses its translations.

    Attributes:
        model, tokenizer: the PyTorch model (eval mode, attention weights readable) and its tokenizer.
        name: shown in the page and stored in the records (a folder's name, or the Hub id).
        directions: the demo's directions it serves, in the demo's order.
        architecture: its `vaswani_inspect.architectures` name ("vaswani", "marian", ...).
        translator: a CTranslate2 translator (`hf_vaswani.backends`) that chooses its translations, or None
            (``generate()`` does).
    """

    model: Any
    tokenizer: Any
    name: str
    directions: tuple[str, ...]
    architecture: str = ""
    translator: Any = None
    _routes: dict[str, Direction] = field(default_factory=dict, init=False, repr=False)
    _encoding_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self.architecture = self.architecture or architecture_of(self.model).name
        self._routes = {d: resolve_direction(self.model, self.tokenizer, d) for d in self.directions}

    @classmethod
    def of(
        cls,
        model: Any,
        tokenizer: Any,
        name: str = "",
        translator: Any = None,
        direction: str | None = None,
    ) -> ServedModel:
        """A model already loaded, serving `direction` or every direction of the demo it offers
        (`served_directions`); `name` defaults to the config's ``_name_or_path``."""
        shown = name or str(getattr(model.config, "_name_or_path", "") or type(model).__name__)
        directions = served_directions(model, tokenizer, ModelSpec(shown, direction))
        return cls(model, tokenizer, shown, directions, translator=translator)

    @property
    def backend(self) -> str:
        """What chooses the translations: "ctranslate2" or "torch"."""
        return "ctranslate2" if self.translator is not None else "torch"

    @contextlib.contextmanager
    def encoding(self, direction: str) -> Iterator[None]:
        """Inside: `direction`'s sources may be encoded. A model told its source language through tokenizer
        settings (``src_lang``: NLLB, mBART-50) in both directions encodes one request at a time, so that a
        translation served meanwhile never reads the other direction's settings; the others need no lock."""
        shared = len(self.directions) > 1 and any(route.tokenizer_settings for route in self._routes.values())
        with self._encoding_lock if shared else contextlib.nullcontext():
            yield

    def source_ids(self, text: str, direction: str) -> list[int]:
        """The token ids the model reads for `text` in `direction`: its language token, code or task prefix and
        the end of sentence included."""
        route = self._routes[direction]
        with self.encoding(direction), source_language_settings(self.tokenizer, route):
            return list(self.tokenizer(f"{route.source_prefix}{text.strip()}", verbose=False)["input_ids"])

    def source_length(self, text: str, direction: str) -> int:
        """How many tokens the model reads for `text` in `direction` (`source_ids`)."""
        return len(self.source_ids(text, direction))


def served_directions(model: Any, tokenizer: Any, spec: ModelSpec) -> tuple[str, ...]:
    """The directions of `settings.DIRECTIONS` the model of `spec` serves: `spec.direction` when named (a
    one-direction model whose folder does not say its own is told it), else those it offers.

    Raises:
        ValueError: the model cannot translate the direction named, translates another than its folder says, or
            offers none of the demo's; a one-direction model whose direction is unknown is asked for
            ``DIRECTION=PATH``.
    """
    name = spec.path
    scheme = scheme_of(model, tokenizer)
    if spec.direction is None:
        offered = tuple(d for d in DIRECTIONS if d in model_directions(model, tokenizer, DIRECTIONS))
        if offered:
            return offered
        if scheme == "one_direction" and model_direction(model, tokenizer) is None:
            raise ValueError(
                f"Which way does {name!r} translate? It has no language tokens, codes or task prefixes, and neither "
                f"its tokenizer nor its name says: name its direction, --model es-en={name} (or en-es=...)."
            )
        found = model_directions(model, tokenizer, DIRECTIONS)
        says = f"it translates {', '.join(found)}" if found else "it offers neither"
        raise ValueError(f"{name!r} cannot serve the demo, which translates {' and '.join(DIRECTIONS)}: {says}.")
    if scheme == "one_direction":
        own = model_direction(model, tokenizer)
        if own is not None and own != spec.direction:
            raise ValueError(f"{name!r} translates {own} (its tokenizer or name says so), not {spec.direction}.")
        set_model_direction(model, spec.direction)
    else:
        try:
            resolve_direction(model, tokenizer, spec.direction)
        except ValueError as error:
            raise ValueError(f"{name!r} cannot translate {spec.direction}: {error}") from None
    return (spec.direction,)


def _known_architecture(model_type: str | None) -> Architecture | None:
    """The architecture of a config's `model_type`, before the model is loaded (None: not known yet)."""
    return architecture_for_model_type(model_type)


def translation_backend(requested: str | None, architecture: Architecture, device: str | None, name: str) -> str:
    """What chooses `name`'s translations: "ctranslate2" or "torch" (`hf_vaswani.backends.resolve_backend`; "auto"
    is CTranslate2 on a CPU when it is installed and the architecture has an exact export).

    Raises:
        ValueError: "ctranslate2" asked for an architecture CTranslate2 does not serve here (or an unknown name).
        ModuleNotFoundError: "ctranslate2" asked for without the [fast] extra.
    """
    from hf_vaswani.backends import resolve_backend

    if requested == "ctranslate2" and not architecture.ctranslate2:
        served = " and ".join(architecture_name(a.name) for a in ARCHITECTURES.values() if a.ctranslate2)
        raise ValueError(
            f"The CTranslate2 backend serves {served} models only; {name!r} ({architecture_name(architecture.name)}) "
            "is translated with PyTorch: use --backend torch, or auto (the default)."
        )
    chosen = resolve_backend(requested, device)
    return chosen if architecture.ctranslate2 else "torch"


def _shown_name(path: str) -> str:
    # A local folder is shown (and stored in the records) by its name only: no server paths in the page.
    folder = Path(path).expanduser()
    return folder.name if folder.is_dir() else path


def _load_one(spec: ModelSpec, device: str | None, backend: str | None) -> ServedModel:
    from hf_vaswani.backends import load_ctranslate2, load_ctranslate2_or_none
    from hf_vaswani.inference import resolve_device
    from vaswani_inspect.loading import load_for_inspection, model_type_of

    model_type = model_type_of(spec.path)  # config.json, read once for the backend and the loader
    known = _known_architecture(model_type)
    # Chosen before loading when the config names the architecture: a model that will not be served is refused.
    chosen = translation_backend(backend, known, device, spec.path) if known is not None else None
    # No device named: a GPU when PyTorch sees one (CTranslate2's "auto" stays on the CPU, as `translate` does).
    model, tokenizer = load_for_inspection(spec.path, str(resolve_device(device)), model_type=model_type)
    architecture = architecture_of(model)
    directions = served_directions(model, tokenizer, ModelSpec(spec.path, spec.direction))
    translator = None
    if chosen is None:
        chosen = translation_backend(backend, architecture, device, spec.path)
    if chosen == "ctranslate2":
        # "auto" falls back to PyTorch, with one warning, when the CTranslate2 cache cannot be written.
        load = load_ctranslate2 if backend == "ctranslate2" else load_ctranslate2_or_none
        translator = load(spec.path, device=device)
    return ServedModel(model, tokenizer, _shown_name(spec.path), directions, architecture.name, translator)


def _check_together(models: Sequence[ServedModel]) -> None:
    """Refuse two models for one direction, and models whose attention heads differ (one page's controls serve
    every direction)."""
    seen: dict[str, str] = {}
    for served in models:
        for direction in served.directions:
            if direction in seen:
                raise ValueError(
                    f"{direction} is served by both {seen[direction]!r} and {served.name!r}: name each model's "
                    "direction once (--model es-en=PATH --model en-es=PATH)."
                )
            seen[direction] = served.name
    counts = [head_counts(served.model) for served in models]
    if any(other != counts[0] for other in counts[1:]):
        shown = "; ".join(f"{served.name}: {_heads_text(c)}" for served, c in zip(models, counts))
        raise ValueError(
            f"The models have different attention heads ({shown}): the page's layer, head and ablation controls "
            "serve every direction, so the models of a pair need the same layers and heads. Start one demo per model."
        )


def _heads_text(counts: dict[str, tuple[int, int]]) -> str:
    return ", ".join(f"{kind} {layers}x{heads}" for kind, (layers, heads) in counts.items())


def load_served_models(
    models: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    *,
    device: str | None = None,
    backend: str | None = "auto",
) -> list[ServedModel]:
    """Load the ``--model`` values (`model_specs`), on `device`, translated by `backend` ("auto", "torch",
    "ctranslate2"), in the order of the demo's directions (the first serves the page's first direction).

    Raises:
        FileNotFoundError: a local folder that does not exist.
        ValueError: a model that cannot be loaded or served (module docstring), two models for one direction, or
            models whose heads differ.
    """
    specs = model_specs(models)
    loaded = [_load_one(spec, device, backend) for spec in specs]
    _check_together(loaded)
    return sorted(loaded, key=lambda served: DIRECTIONS.index(served.directions[0]))
