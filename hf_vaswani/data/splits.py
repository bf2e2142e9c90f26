"""Cleaning and splitting sentence pairs: exact repeats out, length filters, a leak-free train/validation/test split.

`prepare_splits` runs the three steps in the order that keeps the held-out data stable: `deduplicate_pairs`, then
`split_pairs` (deterministic, independent of the order of the lines, never putting "the same" sentence in two
splits), then `filter_pairs` (length filters) on the training split only.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from .pairs import SentencePair

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

__all__ = ["SPLIT_NAMES", "deduplicate_pairs", "filter_pairs", "prepare_splits", "split_pairs"]

SPLIT_NAMES: tuple[str, str, str] = ("train", "validation", "test")


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
