"""Sentence pairs as `datasets` for training and evaluation: both directions, tokenization, evaluation lists.

1. `build_translation_datasets`: a `datasets.DatasetDict` with BOTH directions (es→en and en→es) of every pair,
   columns ``source``, ``target``, ``direction`` (and ``word_links`` for guided-alignment training).
2. `tokenize_pairs`: adds ``input_ids``, ``attention_mask`` and ``labels``, ready for
   `transformers.DataCollatorForSeq2Seq`.

`load_translation_datasets` reads, splits and builds in one call (`hf_vaswani.data.pairs.load_pairs`,
`hf_vaswani.data.splits.prepare_splits`, then step 1). `evaluation_lists` gives a split as plain (sources,
references) lists per direction, and `write_split_tsv` writes a split as ``English<TAB>Spanish`` lines.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from datasets import Dataset, DatasetDict

from ..languages import DIRECTIONS, direction_to_languages, source_with_language
from .pairs import LANGUAGES, SentencePair, load_pairs, write_pairs_tsv
from .splits import prepare_splits
from .word_alignment import Links, token_words

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

__all__ = [
    "build_translation_datasets",
    "evaluation_lists",
    "load_translation_datasets",
    "tokenize_pairs",
    "write_split_tsv",
]


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
