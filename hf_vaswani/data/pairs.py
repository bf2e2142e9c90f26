"""English–Spanish sentence pairs and the files that hold them: reading, checking, writing.

`read_pairs` reads a local TSV / CSV / JSONL file, `load_hub_pairs` a dataset on the Hugging Face Hub (for online
users), and `load_pairs` picks one of the two. Every record is checked (both sides present, non-empty, valid UTF-8);
malformed lines are reported with their line numbers. `write_pairs_tsv` writes pairs as ``English<TAB>Spanish``
lines, the format `read_pairs` reads by default.

What is done with the pairs next lives beside this module: `hf_vaswani.data.splits` (deduplicating, filtering,
the train/validation/test split) and `hf_vaswani.data.translation_datasets` (both directions, tokenization).
"""

from __future__ import annotations

import csv
import json
import os
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "LANGUAGES",
    "MalformedLine",
    "MalformedLinesWarning",
    "SentencePair",
    "load_hub_pairs",
    "load_pairs",
    "read_pairs",
    "write_pairs_tsv",
]

#: The two languages of a pair, in the order of the fields of a `SentencePair` and of a TSV line.
LANGUAGES: tuple[str, str] = ("en", "es")
_LANGUAGE_NAMES = {"en": "English", "es": "Spanish"}

_FORMATS_BY_SUFFIX = {".tsv": "tsv", ".txt": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl"}
# Bytes that are not valid UTF-8 come out of the "surrogateescape" error handler as lone surrogates
# U+DC80..U+DCFF, which a valid UTF-8 file can never produce.
_UNDECODABLE = re.compile("[\udc80-\udcff]")
_REPORTED_LINES = 5


class SentencePair(NamedTuple):
    """One English sentence and its Spanish translation."""

    en: str
    es: str


class MalformedLine(NamedTuple):
    """A line (or row) that could not be read as a pair, and why."""

    line: int
    reason: str


class MalformedLinesWarning(UserWarning):
    """Malformed lines were skipped while reading sentence pairs."""


# --------------------------------------------------------------------------------------------- reading


def _detect_format(path: Path, file_format: str | None) -> str:
    if file_format is not None:
        file_format = file_format.lower()
        if file_format not in ("tsv", "csv", "jsonl"):
            raise ValueError(f"Unknown file_format {file_format!r}: expected 'tsv', 'csv' or 'jsonl'.")
        return file_format
    detected = _FORMATS_BY_SUFFIX.get(path.suffix.lower())
    if detected is None:
        hint = "pass file_format='tsv', 'csv' or 'jsonl'"
        raise ValueError(f"Cannot tell the format of {str(path)!r} from its suffix: {hint}.")
    return detected


def _check_pair(values: Mapping[str, Any]) -> SentencePair | str:
    """A `SentencePair` from language -> text, or the reason why the values are not a valid pair."""
    texts = []
    for lang in LANGUAGES:
        value = values.get(lang)
        if value is None:
            return f"no {_LANGUAGE_NAMES[lang]} ({lang!r}) field"
        if not isinstance(value, str):
            return f"the {_LANGUAGE_NAMES[lang]} ({lang!r}) field is a {type(value).__name__}, not a string"
        if _UNDECODABLE.search(value):
            return "invalid UTF-8"
        value = value.strip()
        if not value:
            return f"empty {_LANGUAGE_NAMES[lang]} side"
        texts.append(value)
    return SentencePair(*texts)


def _resolve_columns(
    header: Sequence[str],
    language_columns: Mapping[str, str],
    where: Path,
) -> dict[str, int]:
    """Language -> index of its column in `header` (names compared without case and surrounding spaces)."""
    positions = {name.strip().lower(): i for i, name in enumerate(header)}
    resolved = {}
    for lang in LANGUAGES:
        name = language_columns.get(lang, lang)
        index = positions.get(name.strip().lower())
        if index is None:
            raise ValueError(
                f"{where}: no column {name!r} for the {_LANGUAGE_NAMES[lang]} side among the columns "
                f"{list(header)}; name the columns with language_columns={{'en': ..., 'es': ...}}."
            )
        resolved[lang] = index
    return resolved


def _iter_delimited(
    path: Path,
    file_format: str,
    fields: Sequence[str] | None,
    has_header: bool | None,
    language_columns: Mapping[str, str],
) -> Iterator[tuple[int, SentencePair | str]]:
    """(line number, pair or reason) for each record of a TSV or CSV file. Blank lines are skipped."""
    if has_header is None:
        has_header = file_format == "csv" and fields is None
    if fields is None and not has_header:
        fields = LANGUAGES
    # "surrogateescape" keeps going past bytes that are not UTF-8, so they can be reported with their line.
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as handle:
        if file_format == "tsv":
            # Quoting is OFF: a double quote is an ordinary character. Lines end with "\n" (or "\r\n").
            records: Iterator[tuple[int, str, list[str]]] = (
                (number, line, line.rstrip("\n").rstrip("\r").split("\t"))
                for number, line in enumerate(_split_lines(handle), start=1)
            )
        else:
            records = _iter_csv(handle)
        columns: dict[str, int] = {}
        n_fields = 0
        if fields is not None:
            columns = _resolve_columns(fields, language_columns, path)
            n_fields = len(fields)
        header_pending = has_header
        for number, raw, row in records:
            if not raw.strip():
                continue
            if number == 1 and raw.startswith("\ufeff"):
                row[0] = row[0].removeprefix("\ufeff")
            if header_pending:
                header_pending = False
                if fields is None:
                    if _UNDECODABLE.search(raw):
                        raise ValueError(f"{path}, line {number}: the header is not valid UTF-8.")
                    columns = _resolve_columns(row, language_columns, path)
                    n_fields = len(row)
                continue
            if _UNDECODABLE.search(raw):
                yield number, "invalid UTF-8"
            elif len(row) != n_fields:
                separator = "tab-separated " if file_format == "tsv" else ""
                yield number, f"expected {n_fields} {separator}fields, found {len(row)}"
            else:
                yield number, _check_pair({lang: row[index] for lang, index in columns.items()})


def _split_lines(handle: Iterable[str]) -> Iterator[str]:
    """Lines ending in "\\n" only (a file opened with newline="" also splits on a lone "\\r")."""
    pending = ""
    for chunk in handle:
        if chunk.endswith("\n"):
            yield pending + chunk
            pending = ""
        else:
            pending += chunk
    if pending:
        yield pending


def _iter_csv(handle: Iterable[str]) -> Iterator[tuple[int, str, list[str]]]:
    """(first line number, raw text, fields) for each CSV record; a quoted field may span lines."""
    raw_lines: list[str] = []

    def remember(lines: Iterable[str]) -> Iterator[str]:
        for line in lines:
            raw_lines.append(line)
            yield line

    reader = csv.reader(remember(handle))
    first_line = 1
    for row in reader:
        raw = "".join(raw_lines)
        raw_lines.clear()
        yield first_line, raw, row
        first_line = reader.line_num + 1


def _iter_jsonl(path: Path, language_columns: Mapping[str, str]) -> Iterator[tuple[int, SentencePair | str]]:
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as handle:
        for number, line in enumerate(_split_lines(handle), start=1):
            if number == 1:
                line = line.removeprefix("\ufeff")
            if not line.strip():
                continue
            if _UNDECODABLE.search(line):
                yield number, "invalid UTF-8"
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                yield number, f"not valid JSON ({error.msg})"
                continue
            if not isinstance(record, dict):
                yield number, f"a JSON {type(record).__name__}, not an object"
                continue
            values = {lang: record.get(language_columns.get(lang, lang)) for lang in LANGUAGES}
            yield number, _check_pair(values)


def _collect(
    records: Iterable[tuple[int, SentencePair | str]], source: str, strict: bool, unit: str = "line"
) -> list[SentencePair]:
    """Keep the valid pairs; raise on the first bad record (strict) or warn once about all of them."""
    pairs: list[SentencePair] = []
    bad: list[MalformedLine] = []
    for number, result in records:
        if isinstance(result, SentencePair):
            pairs.append(result)
        elif strict:
            raise ValueError(f"{source}, {unit} {number}: {result}.")
        else:
            bad.append(MalformedLine(number, result))
    if bad:
        listed = "; ".join(f"{unit} {b.line}: {b.reason}" for b in bad[:_REPORTED_LINES])
        more = f"; and {len(bad) - _REPORTED_LINES} more" if len(bad) > _REPORTED_LINES else ""
        warnings.warn(
            f"{source}: skipped {len(bad)} malformed {unit}(s) ({listed}{more}).",
            MalformedLinesWarning,
            stacklevel=3,
        )
    if not pairs:
        raise ValueError(f"{source}: no valid sentence pair found.")
    return pairs


def read_pairs(
    path: str | os.PathLike[str],
    *,
    file_format: str | None = None,
    fields: Sequence[str] | None = None,
    has_header: bool | None = None,
    language_columns: Mapping[str, str] | None = None,
    strict: bool = False,
) -> list[SentencePair]:
    """Read English–Spanish sentence pairs from a local file.

    Formats (from the suffix, or `file_format`):

    * ``tsv`` (``.tsv``, ``.txt``): one pair a line, ``English<TAB>Spanish``, no header, quoting OFF (a double
      quote is an ordinary character). `fields` names the fields of a line in order when there are more or
      they are in another order, e.g. ``fields=("en", "es", "attribution")`` for the original Anki files;
      fields that are not a language are ignored.
    * ``csv`` (``.csv``): standard quoted CSV whose first row names the columns; the columns ``en`` and ``es``
      are used unless `language_columns` maps the languages to other names, e.g.
      ``{"en": "English", "es": "Spanish"}``. Pass `fields` (and ``has_header=False``) for a file without one.
    * ``jsonl`` (``.jsonl``, ``.json``): one JSON object a line, ``{"en": "...", "es": "..."}`` (keys renamed
      with `language_columns`).

    Both sides are stripped of surrounding white space; blank lines are skipped silently. A malformed line
    (wrong number of fields, an empty side, bytes that are not UTF-8, bad JSON) is skipped with ONE
    `MalformedLinesWarning` that gives how many there were and the first few line numbers and reasons; with
    ``strict=True`` the first one raises a ValueError naming its line instead.

    Raises:
        FileNotFoundError: if `path` does not exist (IsADirectoryError: it is a folder).
        ValueError: on an unknown format, a header without the language columns, a malformed line when
            `strict`, or a file with no valid pair at all.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{str(path)!r} is a folder: give the file of sentence pairs inside it.")
    if not path.is_file():
        raise FileNotFoundError(f"No such file of sentence pairs: {str(path)!r}")
    file_format = _detect_format(path, file_format)
    columns = dict(language_columns or {})
    if file_format == "jsonl":
        records = _iter_jsonl(path, columns)
    else:
        records = _iter_delimited(path, file_format, fields, has_header, columns)
    return _collect(records, str(path), strict)


def load_hub_pairs(
    dataset_id: str,
    *,
    split: str = "train",
    config_name: str | None = None,
    language_columns: Mapping[str, str] | None = None,
    strict: bool = False,
    **load_kwargs: Any,
) -> list[SentencePair]:
    """Read sentence pairs from a dataset on the Hugging Face Hub (needs a network connection).

    Two layouts are understood: a ``translation`` column holding ``{"en": ..., "es": ...}`` dictionaries (as
    in ``opus_books``), or one column per language, named ``en`` and ``es`` unless `language_columns` says
    otherwise. Bad rows are handled as malformed lines in `read_pairs`, numbered from 1.
    """
    from datasets import load_dataset

    dataset = load_dataset(dataset_id, config_name, split=split, **load_kwargs)
    columns = dict(language_columns or {})
    names = [columns.get(lang, lang) for lang in LANGUAGES]
    if "translation" in dataset.column_names and not set(names) <= set(dataset.column_names):
        rows: Iterable[Mapping[str, Any]] = (row or {} for row in dataset["translation"])
    else:
        missing = [name for name in names if name not in dataset.column_names]
        if missing:
            raise ValueError(
                f"{dataset_id}: no column(s) {missing} among {dataset.column_names}; "
                "name them with language_columns={'en': ..., 'es': ...}."
            )
        rows = ({name: row[name] for name in names} for row in dataset.select_columns(names))
    records = (
        (number, _check_pair({lang: row.get(columns.get(lang, lang)) for lang in LANGUAGES}))
        for number, row in enumerate(rows, start=1)
    )
    return _collect(records, f"{dataset_id} ({split})", strict, unit="row")


def load_pairs(source: str | os.PathLike[str], **kwargs: Any) -> list[SentencePair]:
    """`read_pairs` for a local file, `load_hub_pairs` for a Hub dataset id.

    `source` is a local file when it exists or when its name ends in a known suffix (``.tsv``, ``.txt``,
    ``.csv``, ``.jsonl``, ``.json``), so a mistyped file name raises FileNotFoundError instead of going to
    the Hub; anything else (``"user/dataset"``) is a Hub dataset id.
    """
    path = Path(source)
    if path.exists() or path.suffix.lower() in _FORMATS_BY_SUFFIX or isinstance(source, os.PathLike):
        return read_pairs(path, **kwargs)
    return load_hub_pairs(str(source), **kwargs)


# ------------------------------------------------------------------------------------------- writing


def write_pairs_tsv(pairs: Iterable[SentencePair], path: str | os.PathLike[str]) -> int:
    """Write pairs as ``English<TAB>Spanish`` lines (UTF-8, no header, no quoting); return how many. The file is
    written whole, through a temporary sibling renamed into place: a kill or a full disk part-way leaves the
    previous file (or none), never a file cut short.

    Raises:
        ValueError: if a sentence contains a tab or a line break, which the format cannot hold (nothing written).
    """
    from ..outputs import write_text

    lines = []
    for count, (en, es) in enumerate(pairs, start=1):
        for text in (en, es):
            if "\t" in text or "\n" in text or "\r" in text:
                raise ValueError(f"Pair {count} cannot be written as TSV: {text!r} has a tab or newline.")
        lines.append(f"{en}\t{es}\n")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, "".join(lines))
    return len(lines)
