"""A source text checked once, where it came in, and read as checked further in.

The demo checks a request's text before anything runs (`vaswani_demo.checks`: not empty, no language token written
in it, short enough, characters its model's tokenizer knows), as ``hf-vaswani inspect`` and ``explain`` check their
sentences, and passes it on as a `CheckedSource`.
`hf_vaswani.inference.translate`, the CTranslate2 translators and `vaswani_inspect`'s extract and decoding trace
then take it as the text it is: they tokenize it to check it only when it is a plain string (`unchecked`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["CheckedSource", "is_checked", "unchecked"]


class CheckedSource(str):
    """A source text that passed every check of a source for `direction` at the door; a `str` as any other."""

    direction: str

    def __new__(cls, text: str, direction: str) -> CheckedSource:
        source = super().__new__(cls, text)
        source.direction = direction
        return source


def is_checked(text: Any, direction: str | None) -> bool:
    """Whether `text` was checked at the door for `direction`."""
    return isinstance(text, CheckedSource) and text.direction == direction


def unchecked(sentences: Sequence[Any], labels: Sequence[str], direction: str) -> tuple[list[Any], list[str]]:
    """The sentences (and their labels) of a request that were not checked at the door for `direction`."""
    kept = [(s, label) for s, label in zip(sentences, labels, strict=True) if not is_checked(s, direction)]
    return [s for s, _ in kept], [label for _, label in kept]
