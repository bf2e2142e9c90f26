"""The one rule, and its one message, for input with nothing in it, whichever door it comes in by (the commands,
`translate`, the CTranslate2 translators, `vaswani_inspect`'s extract, trace and translation, the demo's check):
a text that is empty or only white space (`check_not_empty`), and a request with no sentence at all
(`check_some_sentences`)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["NO_SENTENCE", "check_not_empty", "check_some_sentences", "check_text", "empty_text_message"]

#: The message for a request with no sentence at all.
NO_SENTENCE = "No sentence to translate: the input is empty."


def empty_text_message(label: str) -> str:
    """The message for a text named `label` (``"sentence 2"``, ``"--target"``) that is empty or only white space."""
    return f"{label[:1].upper()}{label[1:]} is empty or whitespace only."


def check_not_empty(text: str, label: str) -> None:
    """Refuse a text with nothing but white space in it.

    Raises:
        ValueError: `empty_text_message` for `label`.
    """
    if not text.strip():
        raise ValueError(empty_text_message(label))


def check_text(text: object, label: str) -> None:
    """Refuse what is not a string, or a string with nothing but white space in it (`check_not_empty`).

    Raises:
        ValueError: naming `label`.
    """
    if not isinstance(text, str):
        raise ValueError(f"{label[:1].upper()}{label[1:]} must be a string, got {type(text).__name__}.")
    check_not_empty(text, label)


def check_some_sentences(sentences: Sequence[object]) -> None:
    """Refuse a request without a single sentence.

    Raises:
        ValueError: `NO_SENTENCE`.
    """
    if not sentences:
        raise ValueError(NO_SENTENCE)
