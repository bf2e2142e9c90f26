"""Word alignments read off the cross-attention, and their evaluation against gold alignments.

Word indices count the words of the sentences without special tokens: for the source `>>en<< el gato negro </s>`
the words are 0 "el", 1 "gato", 2 "negro"; for the target `<s> the black cat </s>` they are 0 "the", 1 "black",
2 "cat". A word is a Metaspace word (pieces from one "▁" to the next), i.e. a whitespace-separated word of the
text, which is how gold alignments (Pharaoh `i-j`: source word i, target word j) are usually indexed.

Which cross-attention row belongs to a target word (`shift`):

* `shift=False` (default): the rows that *predict* the word's pieces. Piece p of the target is predicted at decoder
  row p - 1 (row t reads input token t and predicts token t + 1, see `vaswani_inspect.record`).
* `shift=True`: the variant of Chen et al. (2020, "Accurate Word Alignment Induction from Neural Machine
  Translation"): the rows where the word's pieces are the decoder *input*, i.e. one row later, which often align
  better because the decoder already knows which word it has produced.

The word-level matrix averages the rows of a word's pieces, sums the columns of a source word's pieces, leaves out
the special tokens' columns and renormalises each row to sum to 1.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple

import numpy as np

from .record import AttentionRecord
from .words import DEFAULT_SPECIAL_TOKENS, is_special, renormalize_rows, word_spans, word_text

Pair = tuple[int, int]
Method = Literal["argmax", "threshold"]
#: Default weight a (source word, target word) cell needs with `method="threshold"`.
DEFAULT_THRESHOLD = 0.5


class AlignmentScores(NamedTuple):
    """Alignment error rate (Och & Ney 2003) with precision and recall, all in [0, 1]."""

    aer: float
    precision: float
    recall: float


@dataclass
class GoldAlignment:
    """Gold alignment of one sentence pair: `sure` links and `possible` links (`possible` includes `sure`)."""

    sure: set[Pair] = field(default_factory=set)
    possible: set[Pair] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.sure = {(int(i), int(j)) for i, j in self.sure}
        self.possible = {(int(i), int(j)) for i, j in self.possible} | self.sure


@dataclass
class LayerSearch:
    """Result of `best_layer`: the decoder layer with the lowest AER and the scores of every layer."""

    best_layer: int
    best: AlignmentScores
    scores: dict[int, AlignmentScores]


def _content_words(tokens: Sequence[str], specials: Iterable[str]) -> list[list[int]]:
    specials = set(specials)
    return [s for s in word_spans(tokens, specials) if not (len(s) == 1 and is_special(tokens[s[0]], specials))]


def source_words(record: AttentionRecord) -> list[str]:
    """The source words that alignments index (special tokens left out)."""
    specials = record.special_tokens or DEFAULT_SPECIAL_TOKENS
    return [word_text(record.source_tokens, s) for s in _content_words(record.source_tokens, specials)]


def target_words(record: AttentionRecord) -> list[str]:
    """The target words that alignments index (special tokens left out)."""
    specials = record.special_tokens or DEFAULT_SPECIAL_TOKENS
    return [word_text(record.target_tokens, s) for s in _content_words(record.target_tokens, specials)]


def _head_mean(record: AttentionRecord, layer: int | str, heads: int | str | Sequence[int]) -> np.ndarray:
    cross = record.cross
    if layer == "mean":
        per_layer = cross
    else:
        per_layer = cross[record.layer_index("cross", layer)][None]
    if isinstance(heads, str):
        if heads != "all":
            raise ValueError(f"heads must be 'all', a head index or a list of head indices, got {heads!r}.")
        chosen = list(range(record.num_heads("cross")))
    elif isinstance(heads, (int, np.integer)):
        chosen = [record.head_index("cross", heads)]
    else:
        chosen = [record.head_index("cross", h) for h in heads]
        if not chosen:
            raise ValueError("heads is an empty list: choose at least one head.")
    return per_layer[:, chosen].mean(axis=(0, 1))


def alignment_matrix(
    record: AttentionRecord,
    layer: int | str = "mean",
    heads: int | str | Sequence[int] = "all",
    *,
    shift: bool = False,
) -> np.ndarray:
    """Word-level cross-attention (target words x source words) used by `align`; rows sum to 1.

    Args:
        record: a token-level record, or a word-level one that kept its special tokens.
        layer: a decoder layer index, or `"mean"` over all layers.
        heads: `"all"`, one head index, or a list of head indices (averaged).
        shift: read each target word at the rows where it is the decoder input (Chen et al. 2020) instead of the
            rows that predict it (see the module docstring).
    """
    matrix = _head_mean(record, layer, heads)
    specials = record.special_tokens or DEFAULT_SPECIAL_TOKENS
    if not shift and not is_special(record.target_tokens[0], specials):
        raise ValueError(
            "The first target token is not the decoder start token (<s>): rows cannot be matched to the tokens they "
            "predict. Use a token-level record, or to_words(..., special_tokens='keep')."
        )
    source_spans = _content_words(record.source_tokens, specials)
    target_spans = _content_words(record.target_tokens, specials)
    if not source_spans or not target_spans:
        raise ValueError("The record has no source or no target words besides special tokens: nothing to align.")
    offset = 0 if shift else -1
    rows = np.stack([matrix[[p + offset for p in span]].mean(axis=0) for span in target_spans])
    columns = np.stack([rows[:, span].sum(axis=1) for span in source_spans], axis=1)
    return renormalize_rows(columns)


def align(
    record: AttentionRecord,
    layer: int | str = "mean",
    heads: int | str | Sequence[int] = "all",
    method: Method = "argmax",
    threshold: float = DEFAULT_THRESHOLD,
    shift: bool = False,
) -> list[Pair]:
    """Word alignment pairs `(source_word_idx, target_word_idx)` read off the cross-attention, sorted.

    Args:
        record: one `AttentionRecord`.
        layer: decoder layer index or `"mean"` over layers. heads: `"all"`, an index or a list (averaged).
        method: `"argmax"`: each target word is linked to its most attended source word (exactly one link per
            target word); `"threshold"`: every cell of `alignment_matrix` with weight >= `threshold` is a link
            (a target word may get zero or several links).
        threshold: used by `method="threshold"`, in (0, 1].
        shift: `False` reads the rows that predict each target word, `True` the rows one later (Chen et al. 2020).
    """
    matrix = alignment_matrix(record, layer, heads, shift=shift)
    if method == "argmax":
        pairs = [(int(np.argmax(row)), j) for j, row in enumerate(matrix)]
    elif method == "threshold":
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}.")
        targets, sources = np.nonzero(matrix >= threshold)
        pairs = [(int(i), int(j)) for j, i in zip(targets, sources)]
    else:
        raise ValueError(f"method must be 'argmax' or 'threshold', got {method!r}.")
    return sorted(pairs)


def to_pharaoh(pairs: Iterable[Pair], one_based: bool = False) -> str:
    """Pharaoh format: `"i-j"` links (source-target) separated by spaces, sorted; 0-based unless `one_based`."""
    shift = 1 if one_based else 0
    return " ".join(f"{i + shift}-{j + shift}" for i, j in sorted({(int(i), int(j)) for i, j in pairs}))


_LINK = re.compile(r"^(\d+)([-pP?])(\d+)$")
_INDEX_DECLARATION = re.compile(
    r"index[\s_-]*base\s*[:=]?\s*(?P<a>[01])\b|\b(?P<b>[01])[\s_-]*(?:indexed|based)\b", re.IGNORECASE
)


def read_gold(path: str | Path, index_base: int | None = None) -> list[GoldAlignment]:
    """Read a gold alignment file: one line per sentence pair, links separated by whitespace.

    `i-j` is a sure link, `ipj` (or `i?j`) a possible one; an empty line is a sentence without links. Lines
    starting with `#` are comments; a comment before the first link line may declare the indexing, e.g.
    `# index-base: 1`, `# 1-indexed` or `# 0-based`.

    Args:
        path: the file.
        index_base: 0 or 1; `None` takes the file's declaration, or 0 when it declares none. A value that
            contradicts the file's declaration raises ValueError.

    Returns:
        One `GoldAlignment` per sentence, with 0-based indices.
    """
    if index_base not in (None, 0, 1):
        raise ValueError(f"index_base must be 0, 1 or None (read it from the file), got {index_base!r}.")
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    declared: int | None = None
    sentences: list[GoldAlignment] = []
    started = False
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.startswith("#"):
            match = _INDEX_DECLARATION.search(stripped)
            if match and not started:
                value = int(match.group("a") or match.group("b"))
                if declared is not None and declared != value:
                    raise ValueError(f"{path}:{number}: the header declares both 0- and 1-based indices.")
                declared = value
            continue
        started = True
        sentences.append(_parse_links(stripped, path, number))
    if declared is not None and index_base is not None and declared != index_base:
        raise ValueError(f"{path} declares {declared}-based indices but index_base={index_base} was passed.")
    base = index_base if index_base is not None else (declared if declared is not None else 0)
    if base == 1:
        for number, gold in enumerate(sentences, start=1):
            if any(min(i, j) < 1 for i, j in gold.possible):
                raise ValueError(f"{path}: sentence {number} has index 0 but the file is 1-based.")
        sentences = [
            GoldAlignment({(i - 1, j - 1) for i, j in g.sure}, {(i - 1, j - 1) for i, j in g.possible})
            for g in sentences
        ]
    return sentences


def _parse_links(line: str, path: str | Path, number: int) -> GoldAlignment:
    sure: set[Pair] = set()
    possible: set[Pair] = set()
    for item in line.split():
        match = _LINK.match(item)
        if match is None:
            raise ValueError(f"{path}:{number}: {item!r} is not an alignment link ('i-j' sure, 'ipj' possible).")
        pair = (int(match.group(1)), int(match.group(3)))
        (sure if match.group(2) == "-" else possible).add(pair)
    return GoldAlignment(sure, possible)


def _is_pair(item: object) -> bool:
    return (
        isinstance(item, (tuple, list))
        and len(item) == 2
        and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in item)
    )


def _as_corpus(value: object, name: str) -> list[set[Pair]]:
    items = list(value)  # type: ignore[call-overload]
    if not items or all(_is_pair(x) for x in items):
        return [{(int(i), int(j)) for i, j in items}]
    if all(not _is_pair(x) for x in items):
        return [{(int(i), int(j)) for i, j in sentence} for sentence in items]
    raise ValueError(f"{name} mixes pairs and lists of pairs: pass one sentence's pairs, or one set per sentence.")


def alignment_error_rate(
    predicted: Iterable[Pair] | Sequence[Iterable[Pair]],
    sure: Iterable[Pair] | Sequence[Iterable[Pair]],
    possible: Iterable[Pair] | Sequence[Iterable[Pair]] | None = None,
) -> AlignmentScores:
    """AER = 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|), precision = |A ∩ P| / |A|, recall = |A ∩ S| / |S|.

    `predicted` (A), `sure` (S) and `possible` (P) are either the pairs of one sentence or one collection of pairs
    per sentence (counts are then summed over the corpus). P always includes S (`possible=None` means P = S).
    Precision is 0 when nothing is predicted, recall 0 when there are no sure links; with neither predicted nor
    sure links the score is undefined and a ValueError is raised.
    """
    predicted_sets = _as_corpus(predicted, "predicted")
    sure_sets = _as_corpus(sure, "sure")
    possible_sets = _as_corpus(possible, "possible") if possible is not None else [set() for _ in sure_sets]
    if not len(predicted_sets) == len(sure_sets) == len(possible_sets):
        raise ValueError(
            f"predicted ({len(predicted_sets)}), sure ({len(sure_sets)}) and possible ({len(possible_sets)}) "
            "must cover the same number of sentences."
        )
    a_total = s_total = a_and_s = a_and_p = 0
    for a, s, p in zip(predicted_sets, sure_sets, possible_sets):
        p = p | s
        a_total += len(a)
        s_total += len(s)
        a_and_s += len(a & s)
        a_and_p += len(a & p)
    if a_total + s_total == 0:
        raise ValueError("AER is undefined with no predicted and no sure links.")
    aer = 1.0 - (a_and_s + a_and_p) / (a_total + s_total)
    precision = a_and_p / a_total if a_total else 0.0
    recall = a_and_s / s_total if s_total else 0.0
    return AlignmentScores(aer, precision, recall)


def best_layer(
    records: Sequence[AttentionRecord],
    gold: Sequence[GoldAlignment] | str | Path,
    *,
    heads: int | str | Sequence[int] = "all",
    method: Method = "argmax",
    threshold: float = DEFAULT_THRESHOLD,
    shift: bool = False,
    index_base: int | None = None,
) -> LayerSearch:
    """The decoder layer whose cross-attention alignments have the lowest corpus AER on `gold`.

    Args:
        records: one record per gold sentence, in the same order.
        gold: `GoldAlignment`s or a gold file (read with `read_gold(gold, index_base)`).
        heads, method, threshold, shift: as in `align`.
    Ties go to the lower layer.
    """
    if isinstance(gold, (str, Path)):
        gold = read_gold(gold, index_base)
    records = list(records)
    if not records:
        raise ValueError("best_layer() needs at least one record.")
    if len(records) != len(gold):
        raise ValueError(f"Got {len(records)} records but {len(gold)} gold sentences: they must correspond 1:1.")
    layers = {r.num_layers("cross") for r in records}
    if len(layers) != 1:
        raise ValueError(f"The records come from models with different decoder depths: {sorted(layers)}.")
    scores = {}
    for layer in range(layers.pop()):
        predicted = [align(r, layer, heads, method, threshold, shift) for r in records]
        scores[layer] = alignment_error_rate(predicted, [g.sure for g in gold], [g.possible for g in gold])
    chosen = min(scores, key=lambda layer: (scores[layer].aer, layer))
    return LayerSearch(chosen, scores[chosen], scores)


__all__ = [
    "DEFAULT_THRESHOLD",
    "AlignmentScores",
    "GoldAlignment",
    "LayerSearch",
    "align",
    "alignment_error_rate",
    "alignment_matrix",
    "best_layer",
    "read_gold",
    "source_words",
    "target_words",
    "to_pharaoh",
]
