"""How a model is told which way to translate, for every architecture the toolkit knows.

A direction is written "source-target": ``"es-en"`` in ISO 639-1 codes, or in the model's own codes
(``"spa_Latn-eng_Latn"`` for NLLB, ``"es_XX-en_XX"`` for mBART-50). Models name directions in four ways
(`scheme_of`):

* ``"target_token"``: the source starts with a token naming the target language, ``>>en<<`` (ours, multilingual
  OPUS-MT models);
* ``"language_codes"``: the tokenizer frames the source with its language code (``src_lang``) and generation
  starts the output with the target's code (``forced_bos_token_id``): NLLB, M2M100, mBART-50;
* ``"task_prefix"``: the source starts with an instruction, ``"translate English to German: "``, listed in the
  config's ``task_specific_params`` (T5);
* ``"one_direction"``: the model translates one way only (most OPUS-MT models): its direction is read from the
  folder (the Marian tokenizer's ``source_lang``/``target_lang``, or a name ending in ``-es-en``) or given once with
  `set_model_direction`; any other direction is refused.

`resolve_direction` turns a direction into a `Direction`: the text to put before the source, the tokenizer's
settings, the ids the output starts with and the generation settings. `model_directions` lists the directions a
model offers (for the demo's switch).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .languages import DIRECTIONS, direction_to_languages, is_language_token

__all__ = [
    "Direction",
    "check_direction_syntax",
    "code_tokens",
    "default_direction",
    "pair_language",
    "language_codes",
    "model_direction",
    "model_directions",
    "resolve_direction",
    "scheme_of",
    "set_model_direction",
    "source_for",
    "source_language_settings",
    "target_language_settings",
    "target_language_token",
]

_CODE_PATTERNS = (
    re.compile(r"^[a-z]{3}_[A-Z][a-z]{3}$"),  # NLLB: spa_Latn
    re.compile(r"^[a-z]{2}_[A-Z]{2}$"),  # mBART: es_XX
    re.compile(r"^__[a-z]{2,3}__$"),  # M2M100: __es__
)
#: ISO 639-1 -> ISO 639-3 codes NLLB names its languages with (the languages of the course and their neighbours).
ISO_639_3 = {
    "ar": "arb",
    "ca": "cat",
    "de": "deu",
    "el": "ell",
    "en": "eng",
    "es": "spa",
    "eu": "eus",
    "fr": "fra",
    "gl": "glg",
    "hi": "hin",
    "it": "ita",
    "ja": "jpn",
    "ko": "kor",
    "nl": "nld",
    "pl": "pol",
    "pt": "por",
    "ro": "ron",
    "ru": "rus",
    "tr": "tur",
    "uk": "ukr",
    "zh": "zho",
}
_DIRECTION = re.compile(r"^([A-Za-z_]+)-([A-Za-z_]+)$")
_MODEL_DIRECTION = "_vaswani_inspect_direction"


@dataclass(frozen=True)
class Direction:
    """How to ask a model for one direction.

    Attributes:
        name: the direction as given (``"es-en"``).
        source, target: the model's codes for the two languages (``"es"``, ``"spa_Latn"``, ``"es_XX"``).
        scheme: how the model names directions (module docstring).
        source_prefix: text put before the source (``">>en<< "``, ``"translate Spanish to English: "``, or "").
        tokenizer_settings: attributes set on the tokenizer while the source is encoded (``src_lang``).
        target_start: the ids that follow the decoder start token in every output (the target's language code).
        generate_settings: keyword arguments for ``generate()`` (``forced_bos_token_id``).
    """

    name: str
    source: str
    target: str
    scheme: str
    source_prefix: str = ""
    tokenizer_settings: dict[str, Any] = field(default_factory=dict)
    target_start: list[int] = field(default_factory=list)
    generate_settings: dict[str, Any] = field(default_factory=dict)


def _split(direction: str) -> tuple[str, str]:
    match = _DIRECTION.match(direction or "") if isinstance(direction, str) else None
    if not match:
        raise ValueError(f"direction must look like 'es-en' (source-target), got {direction!r}.")
    return match.group(1), match.group(2)


def _target_tokens(tokenizer: Any) -> list[str]:
    vocabulary = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else {}
    return sorted(token for token in vocabulary if is_language_token(token))


def target_language_token(tokenizer: Any, direction: str) -> str:
    """The token that asks for the target of `direction` (``">>en<<"`` for ``"es-en"``) in a vocabulary of such
    tokens (ours, multilingual OPUS-MT models), or "" for a tokenizer without them.

    Raises:
        ValueError: a malformed direction, or a target language the vocabulary has no token for.
    """
    known = _target_tokens(tokenizer)
    if not known:
        return ""
    token = f">>{_split(direction)[1]}<<"
    if token not in known:
        shown = ", ".join(known[:12]) + (" ..." if len(known) > 12 else "")
        raise ValueError(f"The model has no language token {token} for direction {direction!r}; it has {shown}.")
    return token


def language_codes(tokenizer: Any) -> list[str]:
    """The language codes of a tokenizer that frames sources with them (NLLB, M2M100, mBART-50), else []."""
    if not hasattr(tokenizer, "src_lang"):
        return []
    specials = list(getattr(tokenizer, "all_special_tokens", []) or [])
    specials += list(getattr(tokenizer, "additional_special_tokens", []) or [])
    codes = {token for token in specials if any(p.match(token) for p in _CODE_PATTERNS)}
    codes |= set(getattr(tokenizer, "lang_code_to_id", {}) or {})
    return sorted(codes)


def code_tokens(tokenizer: Any) -> list[str]:
    """The tokens of a tokenizer's language codes that it does not list among its special tokens (M2M100's
    ``__es__``: markers, not words, as NLLB's ``spa_Latn``), else []."""
    listed = set(getattr(tokenizer, "all_special_tokens", None) or ())
    return sorted(set(getattr(tokenizer, "lang_token_to_id", None) or {}) - listed)


def _code_id(tokenizer: Any, code: str) -> int:
    """The id of a language code's token: NLLB's and mBART-50's codes are tokens (``spa_Latn``), M2M100's tokenizer
    names its codes ``es`` and their tokens ``__es__`` (its ``lang_code_to_id``)."""
    by_code = getattr(tokenizer, "lang_code_to_id", None) or {}
    return int(by_code[code]) if code in by_code else int(tokenizer.convert_tokens_to_ids(code))


def _translation_prefixes(model: Any) -> dict[tuple[str, str], str]:
    params = getattr(model.config, "task_specific_params", None) or {}
    found = {}
    for task, settings in params.items():
        match = re.fullmatch(r"translation_([a-z]+)_to_([a-z]+)", str(task))
        if match and isinstance(settings, dict) and isinstance(settings.get("prefix"), str):
            found[(match.group(1), match.group(2))] = settings["prefix"]
    return found


def scheme_of(model: Any, tokenizer: Any) -> str:
    """How `model` is told the direction: "target_token", "language_codes", "task_prefix" or "one_direction"."""
    if _target_tokens(tokenizer):
        return "target_token"
    if language_codes(tokenizer):
        return "language_codes"
    if _translation_prefixes(model):
        return "task_prefix"
    return "one_direction"


def set_model_direction(model: Any, direction: str) -> None:
    """Say once which way a one-direction model translates (when its folder does not say)."""
    _split(direction)
    setattr(model, _MODEL_DIRECTION, direction)


def model_direction(model: Any, tokenizer: Any) -> str | None:
    """The direction of a one-direction model: given with `set_model_direction`, else read from its folder (the
    tokenizer's ``source_lang``/``target_lang``, or a name ending in ``-xx-yy`` as OPUS-MT's do), else None."""
    given = getattr(model, _MODEL_DIRECTION, None)
    if given:
        return given
    source, target = getattr(tokenizer, "source_lang", None), getattr(tokenizer, "target_lang", None)
    if isinstance(source, str) and isinstance(target, str) and source and target:
        return f"{source}-{target}"
    for name in (getattr(model.config, "_name_or_path", ""), getattr(tokenizer, "name_or_path", "")):
        match = re.search(r"(?:^|[-_/])([a-z]{2,3})-([a-z]{2,3})/?$", str(name or ""))
        if match:
            return f"{match.group(1)}-{match.group(2)}"
    return None


def model_directions(model: Any, tokenizer: Any, wanted: tuple[str, ...] = DIRECTIONS) -> list[str]:
    """The directions of `wanted` the model translates (all of them for a model of language codes that has both
    languages); for a one-direction model, its direction (whatever `wanted` says) or none when unknown."""
    if scheme_of(model, tokenizer) == "one_direction":
        known = model_direction(model, tokenizer)
        return [known] if known else []
    offered = []
    for direction in wanted:
        try:
            resolve_direction(model, tokenizer, direction)
        except ValueError:
            continue
        offered.append(direction)
    return offered


def _code_for(language: str, codes: list[str]) -> str:
    if language in codes:
        return language
    if language.startswith("__") and language.endswith("__") and language.strip("_") in codes:
        return language.strip("_")  # M2M100's token "__es__" for a tokenizer whose codes are "es"
    candidates = [c for c in codes if c.startswith(f"{language}_") or c == f"__{language}__"]
    if language in ISO_639_3:
        candidates += [c for c in codes if c.startswith(f"{ISO_639_3[language]}_")]
    candidates = sorted(set(candidates))
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        shown = ", ".join(codes[:12]) + (" ..." if len(codes) > 12 else "")
        raise ValueError(f"The model has no language code for {language!r}; its codes are {shown}.")
    raise ValueError(f"{language!r} is ambiguous for this model ({', '.join(candidates)}): write the code itself.")


def resolve_direction(model: Any, tokenizer: Any, direction: str) -> Direction:
    """The `Direction` that asks `model` to translate `direction`.

    Raises:
        ValueError: a malformed direction, a language the model has no token, code or prefix for, or another
            direction than a one-direction model's.
    """
    source, target = _split(direction)
    if getattr(getattr(model, "config", None), "model_type", None) == "vaswani":
        direction_to_languages(direction)  # our models translate es-en and en-es
    scheme = scheme_of(model, tokenizer)
    if scheme == "target_token":
        return Direction(
            direction, source, target, scheme, source_prefix=f"{target_language_token(tokenizer, direction)} "
        )
    if scheme == "language_codes":
        codes = language_codes(tokenizer)
        source_code, target_code = _code_for(source, codes), _code_for(target, codes)
        target_id = _code_id(tokenizer, target_code)
        return Direction(
            direction,
            source_code,
            target_code,
            scheme,
            tokenizer_settings={"src_lang": source_code},
            target_start=[target_id],
            generate_settings={"forced_bos_token_id": target_id},
        )
    if scheme == "task_prefix":
        prefixes = _translation_prefixes(model)
        pair = (source, target)
        if pair not in prefixes:
            offered = ", ".join(f"{a}-{b}" for a, b in sorted(prefixes))
            raise ValueError(f"The model has no task prefix for {direction!r}: it translates {offered}.")
        return Direction(direction, pair[0], pair[1], scheme, source_prefix=prefixes[pair])
    known = model_direction(model, tokenizer)
    if known is None:
        set_model_direction(model, direction)  # given once: later directions must match it
    elif known != direction:
        raise ValueError(
            f"This model translates {known} only (it has no language tokens): {direction!r} needs another model, "
            "e.g. the OPUS-MT model of that direction."
        )
    return Direction(direction, source, target, scheme)


@contextlib.contextmanager
def source_language_settings(tokenizer: Any, direction: Direction | None) -> Iterator[Any]:
    """Inside: the tokenizer encodes sources as `direction` asks (``src_lang`` set); restored on the way out."""
    with _tokenizer_set(tokenizer, direction.tokenizer_settings if direction is not None else {}):
        yield tokenizer


@contextlib.contextmanager
def _tokenizer_set(tokenizer: Any, settings: dict[str, Any]) -> Iterator[None]:
    saved = {name: getattr(tokenizer, name) for name in settings}
    try:
        for name, value in settings.items():
            setattr(tokenizer, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(tokenizer, name, value)


def pair_language(code: str) -> str:
    """The ISO 639-1 code of a language written in any of the models' codes: "es", "spa_Latn", "es_XX" and "__es__"
    are all "es" (English-Spanish pair files name their columns so)."""
    bare = code.strip("_").split("_")[0]
    reverse = {three: one for one, three in ISO_639_3.items()}
    return reverse.get(bare, bare)


def check_direction_syntax(direction: str | None) -> None:
    """Refuse a direction that is not written "source-target" (before a model is loaded); None passes."""
    if direction is not None:
        _split(direction)


def default_direction(model: Any, tokenizer: Any, given: str | None) -> str:
    """The direction a command uses: the one given, else a one-direction model's own, else "es-en"."""
    if given is not None:
        return given
    if scheme_of(model, tokenizer) == "one_direction":
        return model_direction(model, tokenizer) or "es-en"
    return "es-en"


def source_for(direction: Direction, text: str) -> str:
    """The source text as the model reads it in `direction` (its language token or task prefix in front)."""
    return f"{direction.source_prefix}{text.strip()}"


@contextlib.contextmanager
def target_language_settings(tokenizer: Any, direction: Direction | None) -> Iterator[Any]:
    """Inside: the tokenizer encodes sources and ``text_target`` references as `direction` asks (``src_lang`` and
    ``tgt_lang`` for a tokenizer of language codes; None: as it is); restored on the way out."""
    settings = dict(direction.tokenizer_settings) if direction is not None else {}
    if direction is not None and direction.scheme == "language_codes" and hasattr(tokenizer, "tgt_lang"):
        settings["tgt_lang"] = direction.target
    with _tokenizer_set(tokenizer, settings):
        yield tokenizer
