"""English–Spanish sentence pairs: reading, cleaning, splitting, both directions, tokenization.

The pipeline, each step a public function:

1. `read_pairs` (local TSV / CSV / JSONL file) or `load_hub_pairs` (a dataset on the Hugging Face Hub, for
   online users); `load_pairs` picks one of the two. Malformed lines are reported with their line numbers.
2. `prepare_splits`: `deduplicate_pairs`, then `split_pairs` (deterministic train/validation/test split that
   does not depend on the order of the lines), then `filter_pairs` (length filters) on the training split.
3. `build_translation_datasets`: a `datasets.DatasetDict` with BOTH directions (es→en and en→es) of every
   pair, columns ``source``, ``target``, ``direction``.
4. `tokenize_pairs`: adds ``input_ids``, ``attention_mask`` and ``labels``, ready for
   `transformers.DataCollatorForSeq2Seq`.

`load_translation_datasets` runs steps 1–3. `evaluation_lists` gives a split as plain (sources, references)
lists per direction, and `write_split_tsv` writes a split as ``English<TAB>Spanish`` lines, the format
`read_pairs` reads by default.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import unicodedata
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from datasets import Dataset, DatasetDict

from ..languages import DIRECTIONS, direction_to_languages, source_with_language
from .word_alignment import Links, token_words

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

__all__ = [
    "LANGUAGES",
    "SPLIT_NAMES",
    "MalformedLine",
    "MalformedLinesWarning",
    "SentencePair",
    "build_translation_datasets",
    "deduplicate_pairs",
    "evaluation_lists",
    "filter_pairs",
    "load_hub_pairs",
    "load_pairs",
    "load_translation_datasets",
    "prepare_splits",
    "read_pairs",
    "split_pairs",
    "tokenize_pairs",
    "write_pairs_tsv",
    "write_split_tsv",
]

#: The two languages of a pair, in the order of the fields of a `SentencePair` and of a TSV line.
LANGUAGES: tuple[str, str] = ("en", "es")
SPLIT_NAMES: tuple[str, str, str] = ("train", "validation", "test")
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
        FileNotFoundError: if `path` does not exist.
        ValueError: on an unknown format, a header without the language columns, a malformed line when
            `strict`, or a file with no valid pair at all.
    """
    path = Path(path)
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


# ------------------------------------------------------------------------------------ cleaning, splitting


def deduplicate_pairs(pairs: Iterable[SentencePair]) -> list[SentencePair]:
    """Drop exact repeats of a pair (same English and same Spanish text), keeping the first."""
    return list(dict.fromkeys(SentencePair(*pair) for pair in pairs))


def filter_pairs(
    pairs: Iterable[SentencePair],
    *,
    min_chars: int = 1,
    max_chars: int | None = None,
    max_tokens: int | None = None,
    tokenizer: PreTrainedTokenizerBase | None = None,
    max_length_ratio: float | None = None,
) -> list[SentencePair]:
    """Keep the pairs whose two sides both pass the length limits.

    Args:
        min_chars / max_chars: bounds on the length of each side in characters (after stripping).
        max_tokens: bound on the length of each side in TOKENS, counted as the longest form the model sees
            it in: language token + subword pieces + ``</s>`` (the form of a source; as a target the side is
            one token shorter). Pass the same value as `tokenize_pairs`'s `max_length` to drop the pairs
            that would otherwise be truncated. Needs `tokenizer`.
        max_length_ratio: drop a pair whose longer side has more than this many times the characters of
            its shorter side (a cheap filter for misaligned pairs); None keeps all.
    """
    kept = [
        SentencePair(*pair)
        for pair in pairs
        if min_chars <= len(pair[0])
        and min_chars <= len(pair[1])
        and (max_chars is None or (len(pair[0]) <= max_chars and len(pair[1]) <= max_chars))
        and (
            max_length_ratio is None
            or max(len(pair[0]), len(pair[1])) <= max_length_ratio * max(1, min(len(pair[0]), len(pair[1])))
        )
    ]
    if max_tokens is not None:
        if tokenizer is None:
            raise ValueError("filter_pairs: max_tokens needs a tokenizer to count the tokens.")
        en_lengths = [len(ids) + 1 for ids in tokenizer([p.en for p in kept])["input_ids"]]
        es_lengths = [len(ids) + 1 for ids in tokenizer([p.es for p in kept])["input_ids"]]
        kept = [p for p, n_en, n_es in zip(kept, en_lengths, es_lengths) if max(n_en, n_es) <= max_tokens]
    return kept


def _group_key(text: str) -> str:
    """The form in which two sentences count as "the same": NFKC, case-folded, no punctuation, one space."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(" " if unicodedata.category(c)[0] in "PSZC" else c for c in text)
    return " ".join(text.split())


def _resolve_size(size: int | float, total: int, name: str) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, float)) or size < 0:
        raise ValueError(f"{name} must be a count of pairs (int >= 0) or a fraction in [0, 1), got {size!r}.")
    if isinstance(size, float):
        if size >= 1:
            raise ValueError(f"{name} as a fraction must be below 1, got {size!r}; pass an int for a count.")
        return round(size * total)
    return size


def split_pairs(
    pairs: Sequence[SentencePair],
    *,
    validation_size: int | float = 2000,
    test_size: int | float = 2000,
    seed: int = 0,
) -> dict[str, list[SentencePair]]:
    """Split pairs into ``train``, ``validation`` and ``test``, deterministically and leak-free.

    Pairs are grouped so that sentences that are "the same" (equal after NFKC, case folding and removing
    punctuation and extra spaces) never land in two splits: two pairs are in one group when they share their
    English side OR their Spanish side (connected components; on the Tatoeba corpus the largest group has
    about 30 pairs). Each group gets a pseudo-random rank from a hash of its smallest English key and the
    `seed`; groups are taken in rank order for the test split until it holds at least `test_size` pairs, then
    for validation, and the rest is train. The result depends only on the SET of pairs and the seed, not on
    their order (each split is returned in rank order); the evaluation splits may be a few pairs larger than
    asked because a group is never cut.

    Args:
        pairs: the (deduplicated) pairs.
        validation_size / test_size: number of pairs (int) or fraction of all pairs (float in [0, 1)).
        seed: changes the ranking, hence which pairs are held out.

    Raises:
        ValueError: on a bad size, or when the evaluation splits would leave no training pair.
    """
    pairs = [SentencePair(*pair) for pair in pairs]
    n_validation = _resolve_size(validation_size, len(pairs), "validation_size")
    n_test = _resolve_size(test_size, len(pairs), "test_size")
    if n_validation + n_test >= len(pairs):
        raise ValueError(
            f"Cannot hold out {n_validation} validation and {n_test} test pairs from only {len(pairs)} "
            "pairs: no training pair would be left."
        )

    # Union-find over the normalized sentences of both languages.
    parent: dict[str, str] = {}

    def find(node: str) -> str:
        root = node
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[node] != root:
            parent[node], node = root, parent[node]
        return root

    keys = [("en\0" + _group_key(pair.en), "es\0" + _group_key(pair.es)) for pair in pairs]
    for en_key, es_key in keys:
        root_en, root_es = find(en_key), find(es_key)
        if root_en != root_es:
            parent[max(root_en, root_es)] = min(root_en, root_es)  # smallest key is the root: order-free

    def rank(root: str) -> tuple[bytes, str]:
        digest = hashlib.blake2b(f"{seed}\0{root}".encode("utf-8", "surrogatepass"), digest_size=8).digest()
        return digest, root

    groups: dict[str, list[int]] = {}
    for index, (en_key, _) in enumerate(keys):
        groups.setdefault(find(en_key), []).append(index)

    splits: dict[str, list[SentencePair]] = {name: [] for name in SPLIT_NAMES}
    wanted = {"test": n_test, "validation": n_validation}
    for root in sorted(groups, key=rank):
        members = sorted((pairs[i] for i in groups[root]), key=tuple)
        for name in ("test", "validation", "train"):
            if name == "train" or len(splits[name]) < wanted[name]:
                splits[name].extend(members)
                break
    return splits


def prepare_splits(
    pairs: Iterable[SentencePair],
    *,
    validation_size: int | float = 2000,
    test_size: int | float = 2000,
    seed: int = 0,
    min_chars: int = 1,
    max_chars: int | None = None,
    max_tokens: int | None = None,
    tokenizer: PreTrainedTokenizerBase | None = None,
    max_length_ratio: float | None = None,
    filter_evaluation_splits: bool = False,
) -> dict[str, list[SentencePair]]:
    """Deduplicate, split (`split_pairs`) and length-filter (`filter_pairs`) the pairs.

    The split is made BEFORE filtering, so changing a length limit never moves a pair between splits. By
    default only the training split is filtered: the validation and test sets stay the whole held-out data.
    """
    unique = deduplicate_pairs(pairs)
    splits = split_pairs(unique, validation_size=validation_size, test_size=test_size, seed=seed)
    limits = {
        "min_chars": min_chars,
        "max_chars": max_chars,
        "max_tokens": max_tokens,
        "tokenizer": tokenizer,
        "max_length_ratio": max_length_ratio,
    }
    for name in SPLIT_NAMES:
        if name == "train" or filter_evaluation_splits:
            splits[name] = filter_pairs(splits[name], **limits)
    return splits


# ------------------------------------------------------------------------------------------ datasets


def _directional_columns(
    pairs: Sequence[SentencePair], directions: Sequence[str], links: Sequence[Links] | None = None
) -> dict[str, list[Any]]:
    columns: dict[str, list[Any]] = {"source": [], "target": [], "direction": []}
    if links is not None:
        if len(links) != len(pairs):
            raise ValueError(f"{len(links)} alignments for {len(pairs)} sentence pairs.")
        columns["word_links"] = []
    for direction in directions:
        source_lang, target_lang = direction_to_languages(direction)
        source_index, target_index = LANGUAGES.index(source_lang), LANGUAGES.index(target_lang)
        columns["source"].extend(pair[source_index] for pair in pairs)
        columns["target"].extend(pair[target_index] for pair in pairs)
        columns["direction"].extend([direction] * len(pairs))
        if links is not None:  # pair links are (English word, Spanish word); a row's are (source word, target word)
            swap = source_lang != LANGUAGES[0]
            columns["word_links"].extend(sorted((j, i) if swap else (i, j) for i, j in row) for row in links)
    return columns


def build_translation_datasets(
    splits: Mapping[str, Sequence[SentencePair]],
    directions: Sequence[str] = DIRECTIONS,
    word_links: Mapping[str, Sequence[Links]] | None = None,
) -> DatasetDict:
    """One `datasets.Dataset` per split with every pair in each direction.

    Columns: ``source`` and ``target`` (plain text; `tokenize_pairs` adds the language token) and
    ``direction`` (``"es-en"`` or ``"en-es"``). Rows are grouped by direction, in the order of `directions`.
    `word_links[split][k]`, the word alignment of pair k as (English word, Spanish word) links (words of
    `hf_vaswani.data.word_alignment.words`), adds a ``word_links`` column of (source word, target word) links, which
    `tokenize_pairs` turns into token links for guided-alignment training.
    """
    if not directions:
        raise ValueError(f"No direction given: pass some of {list(DIRECTIONS)}.")
    result = DatasetDict()
    for name, rows in splits.items():
        links = word_links.get(name) if word_links else None
        result[name] = Dataset.from_dict(_directional_columns(list(rows), directions, links))
    return result


def load_translation_datasets(
    source: str | os.PathLike[str],
    *,
    validation_size: int | float = 2000,
    test_size: int | float = 2000,
    seed: int = 0,
    directions: Sequence[str] = DIRECTIONS,
    min_chars: int = 1,
    max_chars: int | None = None,
    max_tokens: int | None = None,
    tokenizer: PreTrainedTokenizerBase | None = None,
    max_length_ratio: float | None = None,
    **read_kwargs: Any,
) -> DatasetDict:
    """Read pairs (`load_pairs`), split and filter them (`prepare_splits`), build both directions.

    `read_kwargs` go to `read_pairs` / `load_hub_pairs` (e.g. ``strict=True``, ``language_columns=...``).
    """
    splits = prepare_splits(
        load_pairs(source, **read_kwargs),
        validation_size=validation_size,
        test_size=test_size,
        seed=seed,
        min_chars=min_chars,
        max_chars=max_chars,
        max_tokens=max_tokens,
        tokenizer=tokenizer,
        max_length_ratio=max_length_ratio,
    )
    return build_translation_datasets(splits, directions)


def _tokenize_function(
    tokenizer: PreTrainedTokenizerBase, max_length: int
) -> Callable[[dict[str, list[Any]]], dict[str, list[list[int]]]]:
    def encode(batch: dict[str, list[Any]]) -> dict[str, list[list[int]]]:
        sources = [
            source_with_language(text, direction_to_languages(direction)[1])
            for text, direction in zip(batch["source"], batch["direction"], strict=True)
        ]
        links = batch.get("word_links")
        encoded = tokenizer(
            sources,
            text_target=batch["target"],
            max_length=max_length,
            truncation=True,
            return_offsets_mapping=bool(links),
        )
        columns = {
            "input_ids": encoded["input_ids"],
            "attention_mask": encoded["attention_mask"],
            "labels": encoded["labels"],
        }
        if links:
            targets = tokenizer(
                text_target=batch["target"], max_length=max_length, truncation=True, return_offsets_mapping=True
            )
            columns["alignment"] = [
                _token_links(row_links, source, source_offsets, target, target_offsets)
                for row_links, source, source_offsets, target, target_offsets in zip(
                    links, sources, encoded["offset_mapping"], batch["target"], targets["offset_mapping"], strict=True
                )
            ]
        return columns

    return encode


def _token_links(
    word_links: Sequence[Sequence[int]],
    source: str,
    source_offsets: Sequence[tuple[int, int]],
    target: str,
    target_offsets: Sequence[tuple[int, int]],
) -> list[int]:
    """The (source token, label position) links of one row, flattened: every token of source word i with every
    token of target word j, for each word link (i, j). The language token and `</s>` belong to no word."""
    prefix = source.index(" ") + 1  # ">>en<< " before the text the word links index
    text = source[prefix:]
    source_words = token_words([(max(a - prefix, 0), max(b - prefix, 0)) for a, b in source_offsets], text)
    target_words = token_words(target_offsets, target)
    source_tokens: dict[int, list[int]] = {}
    target_tokens: dict[int, list[int]] = {}
    for position, word in enumerate(source_words):
        if word is not None:
            source_tokens.setdefault(word, []).append(position)
    for position, word in enumerate(target_words):
        if word is not None:
            target_tokens.setdefault(word, []).append(position)
    return [
        index
        for i, j in word_links
        for s in source_tokens.get(i, ())
        for t in target_tokens.get(j, ())
        for index in (s, t)
    ]


def tokenize_pairs(
    dataset: Dataset | DatasetDict,
    tokenizer: PreTrainedTokenizerBase,
    max_length: int = 128,
    *,
    keep_text_columns: bool = False,
    batch_size: int = 1000,
    num_proc: int | None = None,
) -> Dataset | DatasetDict:
    """Tokenize the ``source``/``target``/``direction`` rows of `build_translation_datasets` (batched `map`).

    The encoder input is ``>>{target_lang}<< source </s>`` and the labels are ``target </s>``, both cut to
    `max_length` tokens (``</s>`` is kept). Adds ``input_ids``, ``attention_mask`` and ``labels`` (not padded:
    `transformers.DataCollatorForSeq2Seq` pads them, the labels with -100), and, from a ``word_links`` column,
    ``alignment``: the (source token, label position) links, flattened, for guided-alignment training. The text
    columns are removed unless `keep_text_columns`, so the result goes straight into the collator.
    """
    function = _tokenize_function(tokenizer, max_length)
    if isinstance(dataset, DatasetDict):
        return DatasetDict(
            {
                name: tokenize_pairs(
                    split,
                    tokenizer,
                    max_length,
                    keep_text_columns=keep_text_columns,
                    batch_size=batch_size,
                    num_proc=num_proc,
                )
                for name, split in dataset.items()
            }
        )
    missing = {"source", "target", "direction"} - set(dataset.column_names)
    if missing:
        needed = "tokenize_pairs needs the columns source, target and direction"
        raise ValueError(f"{needed}; missing {sorted(missing)}.")
    return dataset.map(
        function,
        batched=True,
        batch_size=batch_size,
        num_proc=num_proc,
        remove_columns=None if keep_text_columns else dataset.column_names,
        desc="Tokenizing",
    )


# -------------------------------------------------------------------------------------- evaluation


def _as_split(data: Dataset | DatasetDict | Mapping[str, Any] | Sequence[SentencePair], split: str) -> Any:
    if isinstance(data, (DatasetDict, Mapping)):
        if split not in data:
            raise KeyError(f"No split {split!r}; the splits are {list(data)}.")
        return data[split]
    return data


def evaluation_lists(
    data: Dataset | DatasetDict | Mapping[str, Sequence[SentencePair]] | Sequence[SentencePair],
    split: str = "test",
) -> dict[str, tuple[list[str], list[str]]]:
    """The sources and references of a split, per direction: ``{"es-en": (sources, references), ...}``.

    `data` is what `build_translation_datasets` returns (or one of its datasets), or pairs as from
    `prepare_splits` (a dict of lists, or one list), which give both directions. Sources are plain text,
    without the language token.
    """
    part = _as_split(data, split)
    if isinstance(part, Dataset):
        result: dict[str, tuple[list[str], list[str]]] = {}
        for source, target, direction in zip(part["source"], part["target"], part["direction"], strict=True):
            sources, references = result.setdefault(direction, ([], []))
            sources.append(source)
            references.append(target)
        return result
    columns = _directional_columns([SentencePair(*pair) for pair in part], DIRECTIONS)
    return {
        direction: (
            [s for s, d in zip(columns["source"], columns["direction"]) if d == direction],
            [t for t, d in zip(columns["target"], columns["direction"]) if d == direction],
        )
        for direction in DIRECTIONS
    }


def write_pairs_tsv(pairs: Iterable[SentencePair], path: str | os.PathLike[str]) -> int:
    """Write pairs as ``English<TAB>Spanish`` lines (UTF-8, no header, no quoting); return how many.

    Raises:
        ValueError: if a sentence contains a tab or a line break, which the format cannot hold.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for count, (en, es) in enumerate(pairs, start=1):
            for text in (en, es):
                if "\t" in text or "\n" in text or "\r" in text:
                    raise ValueError(f"Pair {count} cannot be written as TSV: {text!r} has a tab or newline.")
            handle.write(f"{en}\t{es}\n")
    return count


def write_split_tsv(
    data: DatasetDict | Mapping[str, Sequence[SentencePair]],
    split: str,
    path: str | os.PathLike[str],
) -> int:
    """Write one split as ``English<TAB>Spanish`` lines, for `read_pairs` or an evaluation command.

    `data` is what `build_translation_datasets` returns (the pairs are taken from the ``en-es`` rows, or the
    ``es-en`` ones if only that direction is there) or the pair lists of `prepare_splits`. Returns the number
    of lines written.
    """
    part = _as_split(data, split)
    if isinstance(part, Dataset):
        lists = evaluation_lists(part)
        if "en-es" in lists:
            pairs = [SentencePair(en, es) for en, es in zip(*lists["en-es"], strict=True)]
        elif "es-en" in lists:
            pairs = [SentencePair(en, es) for es, en in zip(*lists["es-en"], strict=True)]
        else:
            raise ValueError(f"Split {split!r} has no en-es or es-en rows to write.")
    else:
        pairs = list(part)
    return write_pairs_tsv(pairs, path)
