"""The two languages of the project and how a source names the language to translate into.

As in the multilingual Marian models, a source sentence starts with a token naming the TARGET language:
``>>en<< El gato negro.`` asks for English, ``>>es<< The black cat.`` for Spanish. A direction is written
"source-target" (``es-en``, ``en-es``).
"""

from __future__ import annotations

import re

from .empty_input import check_not_empty
from .pipeline_vaswani import LANGUAGE_TOKEN

__all__ = [
    "DIRECTIONS",
    "LANGUAGE_TOKENS",
    "LANGUAGE_TOKEN_PATTERN",
    "LANGUAGE_TOKEN_IDS",
    "SUPPORTED_LANGUAGES",
    "direction_to_languages",
    "is_language_token",
    "language_token",
    "leading_language_token",
    "source_with_language",
]

#: Language code -> the token that asks the model to translate INTO that language.
LANGUAGE_TOKENS: dict[str, str] = {"en": ">>en<<", "es": ">>es<<"}
#: Language code -> id of its language token.
LANGUAGE_TOKEN_IDS: dict[str, int] = {"en": 4, "es": 5}
SUPPORTED_LANGUAGES: tuple[str, ...] = tuple(LANGUAGE_TOKENS)
#: What a language token looks like (``>>en<<``, the language in group 1); one written inside a source text is
#: refused. Written in `hf_vaswani.pipeline_vaswani`, which is copied next to the weights and imports only torch and
#: transformers; every other module reads it from here.
LANGUAGE_TOKEN_PATTERN: re.Pattern[str] = LANGUAGE_TOKEN
#: The translation directions, "source-target".
DIRECTIONS: tuple[str, ...] = ("es-en", "en-es")


def is_language_token(token: str) -> bool:
    """Whether `token` is a language token as a whole (``">>en<<"``, ``">>fr<<"``: any model's, not only ours)."""
    return bool(LANGUAGE_TOKEN_PATTERN.fullmatch(token))


def leading_language_token(text: str) -> str | None:
    """The language token `text` starts with (``">>en<< El gato."`` -> ``">>en<<"``), else None."""
    found = LANGUAGE_TOKEN_PATTERN.match(text)
    return found.group(0) if found else None


def language_token(lang: str) -> str:
    """Return the language token for the language code `lang` (``"en"`` -> ``">>en<<"``).

    Raises:
        ValueError: if `lang` is not a supported language; the message lists the supported ones.
    """
    try:
        return LANGUAGE_TOKENS[lang]
    except (KeyError, TypeError):
        supported = ", ".join(repr(code) for code in SUPPORTED_LANGUAGES)
        raise ValueError(f"Unsupported language {lang!r}: the supported languages are {supported}.") from None


def source_with_language(text: str, target_lang: str) -> str:
    """Prefix a source sentence with the token of the language to translate it into.

    >>> source_with_language("el gato negro", "en")
    '>>en<< el gato negro'

    Raises:
        ValueError: if `target_lang` is not supported (the message lists the supported languages), or if
            `text` is empty (`hf_vaswani.empty_input`).
    """
    token = language_token(target_lang)
    if not isinstance(text, str):
        raise TypeError(f"The source text must be a string, got {type(text).__name__}.")
    check_not_empty(text, "the source text")
    found = LANGUAGE_TOKEN_PATTERN.search(text)
    if found:
        known = ", ".join(LANGUAGE_TOKENS.values())
        what = "an unknown language token" if found.group(0) not in LANGUAGE_TOKENS.values() else "a language token"
        raise ValueError(
            f"The source text contains {what}, {found.group(0)!r}: the token of the target language ({known}) is "
            "added from the direction, not written in the text."
        )
    return f"{token} {text.strip()}"


def direction_to_languages(direction: str) -> tuple[str, str]:
    """Split a direction such as ``"es-en"`` into ``(source_lang, target_lang)``.

    Raises:
        ValueError: if `direction` is not one of `DIRECTIONS`; the message lists the valid ones.
    """
    if direction not in DIRECTIONS:
        valid = ", ".join(repr(d) for d in DIRECTIONS)
        raise ValueError(f"Unknown translation direction {direction!r}: expected one of {valid}.")
    source_lang, target_lang = direction.split("-")
    return source_lang, target_lang
