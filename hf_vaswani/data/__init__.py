"""The data the model is trained and evaluated on: English-Spanish sentence pairs and what is derived from them.

- `hf_vaswani.data.pairs`: the sentence pair, and reading, checking and writing the files that hold them.
- `hf_vaswani.data.splits`: deduplicating, length-filtering and the leak-free train/validation/test split.
- `hf_vaswani.data.translation_datasets`: `datasets` with both directions of every pair, tokenized for training.
- `hf_vaswani.data.phrases`: noun-phrase pairs and casual copies mined from the training split.
- `hf_vaswani.data.word_alignment`: words, Pharaoh files and eflomal's statistical word alignments.

The names most callers need are re-exported here (``from hf_vaswani.data import read_pairs``).
"""

from .pairs import (
    LANGUAGES,
    MalformedLine,
    MalformedLinesWarning,
    SentencePair,
    load_hub_pairs,
    load_pairs,
    read_pairs,
    write_pairs_tsv,
)
from .splits import SPLIT_NAMES, deduplicate_pairs, filter_pairs, prepare_splits, split_pairs

#: Names of `translation_datasets`, which imports `datasets` (the ``[train]`` extra): loaded on first use, so that
#: reading pairs and words (`vaswani_inspect`, the core install) does not need it.
_DATASET_NAMES = (
    "build_translation_datasets",
    "evaluation_lists",
    "load_translation_datasets",
    "tokenize_pairs",
    "write_split_tsv",
)


def __getattr__(name: str):
    if name in _DATASET_NAMES:
        from . import translation_datasets

        return getattr(translation_datasets, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
