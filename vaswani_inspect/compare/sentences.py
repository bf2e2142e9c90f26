"""The English sentences to compare on: read from a text file (one per line) or a TSV (English<TAB>Spanish)."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..alignment.gold import read_lines
from .errors import CompareInputError

__all__ = ["Sentence", "as_sentences", "read_sentences"]


@dataclass
class Sentence:
    """One English sentence of the input file (NFC-normalised, stripped), with its 1-based line number and the
    Spanish side when the file is a TSV (English<TAB>Spanish)."""

    text: str
    line: int
    spanish: str | None = None


def read_sentences(path: str | Path, max_sentences: int | None = None) -> list[Sentence]:
    """Read English sentences, one per line (blank lines skipped). A TSV line's first column is the English
    sentence and its second column, if any, the Spanish one (used as the source of the decoder comparison), as in
    `runs/.../splits/test.tsv`. At most `max_sentences` (the first ones).

    Raises:
        FileNotFoundError: no such file. CompareInputError: no sentence in it, or `max_sentences` < 1.
        ValueError: bytes that are not UTF-8 (the message names the file and the lines).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Sentence file {path} does not exist (or is not a file).")
    if max_sentences is not None and max_sentences < 1:
        raise CompareInputError(f"max_sentences must be >= 1, got {max_sentences}.")
    sentences: list[Sentence] = []
    for number, line in enumerate(read_lines(path, "sentence file"), start=1):
        columns = line.split("\t")
        english = unicodedata.normalize("NFC", columns[0]).strip()
        if not english:
            continue
        spanish = unicodedata.normalize("NFC", columns[1]).strip() if len(columns) > 1 else ""
        sentences.append(Sentence(english, number, spanish or None))
        if max_sentences is not None and len(sentences) >= max_sentences:
            break
    if not sentences:
        raise CompareInputError(
            f"{path} contains no sentences (it is empty or has only blank lines): write one English sentence per "
            "line (or English<TAB>Spanish)."
        )
    return sentences


def as_sentences(sentences: Sequence[Sentence | str]) -> list[Sentence]:
    """`Sentence`s as they are, plain strings NFC-normalised and stripped, numbered from line 1."""
    return [
        s if isinstance(s, Sentence) else Sentence(unicodedata.normalize("NFC", s).strip(), i + 1)
        for i, s in enumerate(sentences)
    ]
