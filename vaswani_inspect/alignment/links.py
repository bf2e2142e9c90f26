"""Word alignments read off the cross-attention: the words alignments index, the word-level matrix of a reading
(`alignment_matrix`) and its links (`align`), written as Pharaoh (`to_pharaoh`).

**Words.** Alignments index the words of each side's text, special tokens left out (`vaswani_inspect.words`): a
word is a run of letters and digits, and every punctuation mark is a word of its own, as in gold alignment files
and in guided-alignment training (`hf_vaswani.data.word_alignment`). For the source `>>en<< ▁el ▁gato ▁come ▁rat ón .
</s>` the words are 0 "el", 1 "gato", 2 "come", 3 "ratón", 4 "."; for the target `<s> ▁¿Qué ▁es ▁eso ? </s>` they
are 0 "¿", 1 "Qué", 2 "es", 3 "eso", 4 "?". A punctuation mark glued into another word's piece ("¿" in "▁¿Qué") is
a word no piece stands for: it keeps its index, but has no attention and never gets a link.
`skip_punctuation=True` leaves every punctuation word out (`align`, `alignment_error_rate`, `search_alignments`):
the attention paid to a final "." then counts for no word, and the links of the other words are found among the
other words.

**Which rows and heads** (`layer`, `heads`, `shift`): a decoder layer or the mean over layers, a list of heads
(averaged) or all of them, and which cross-attention row belongs to a target word:

* `shift=False`: the rows that *predict* the word's pieces. Piece p of the target is predicted at decoder row
  p - 1 (row t reads input token t and predicts token t + 1, see `vaswani_inspect.record`).
* `shift=True`: the variant of Chen et al. (2020, "Accurate Word Alignment Induction from Neural Machine
  Translation"): the rows where the word's pieces are the decoder *input*, i.e. one row later, when the decoder
  already knows which word it has produced. Which of the two aligns better depends on the layer and head.

**Averaged readings** (`average_with`): a configuration can add more readings, each a layer, heads and shift of
its own, whose word-level matrices are averaged with the first one's before the links are read. Two heads that
make different mistakes align better together: the shipped checkpoint's aligner averages the head trained on
statistical alignments (layer 1, head 0, the rows that predict a word) with layer 0, head 1 read shifted.

Left out (None), the layer, heads, shift and averaged readings come from the record's model
(`vaswani_inspect.alignment.config`).

The word-level matrix averages the rows of a target word's pieces, sums the columns of a source word's pieces,
leaves out the special tokens' columns and renormalises each row to sum to 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np

from ..record import AttentionRecord
from ..words import DEFAULT_SPECIAL_TOKENS, TextWords, is_special, renormalize_rows, text_words
from .config import Heads, Layer, alignment_settings

Pair = tuple[int, int]
Method = Literal["argmax", "threshold"]
#: Default weight a (source word, target word) cell needs with `method="threshold"`.
DEFAULT_THRESHOLD = 0.5


def word_lists(record: AttentionRecord) -> tuple[TextWords, TextWords]:
    """The source and target words of `record` that alignments index, with the pieces of each."""
    specials = record.special_tokens or DEFAULT_SPECIAL_TOKENS
    return text_words(record.source_tokens, specials), text_words(record.target_tokens, specials)


def source_words(record: AttentionRecord) -> list[str]:
    """The source words that alignments index (special tokens left out, punctuation marks words of their own)."""
    return word_lists(record)[0].words


def target_words(record: AttentionRecord) -> list[str]:
    """The target words that alignments index (special tokens left out, punctuation marks words of their own)."""
    return word_lists(record)[1].words


def word_level_cross(record: AttentionRecord, shift: bool, skip_punctuation: bool) -> np.ndarray:
    """Every layer's and head's cross-attention at word level, (layers, heads, target words, source words), not
    renormalised: a target word's rows averaged, a source word's columns summed. Words without pieces, and
    punctuation words with `skip_punctuation`, get zero rows and columns."""
    specials = record.special_tokens or DEFAULT_SPECIAL_TOKENS
    if not shift and not is_special(record.target_tokens[0], specials):
        raise ValueError(
            "The first target token is not the decoder start token (<s>): rows cannot be matched to the tokens they "
            "predict. Use a token-level record, or to_words(..., special_tokens='keep')."
        )
    source, target = word_lists(record)
    if not source.words or not target.words:
        raise ValueError("The record has no source or no target words besides special tokens: nothing to align.")
    source_skipped = source.punctuation() if skip_punctuation else [False] * len(source.words)
    target_skipped = target.punctuation() if skip_punctuation else [False] * len(target.words)
    offset = 0 if shift else -1  # shift=False: piece p is predicted by row p - 1
    rows = np.zeros((len(target.words), len(record.target_tokens)), dtype=np.float64)
    for j, pieces in enumerate(target.pieces):
        if pieces and not target_skipped[j]:
            rows[j, [p + offset for p in pieces]] = 1.0 / len(pieces)
    columns = np.zeros((len(record.source_tokens), len(source.words)), dtype=np.float64)
    for i, pieces in enumerate(source.pieces):
        if pieces and not source_skipped[i]:
            columns[pieces, i] = 1.0
    return rows @ record.cross.astype(np.float64) @ columns


def head_choice(record: AttentionRecord, heads: Heads) -> list[int]:
    if isinstance(heads, str):
        if heads != "all":
            raise ValueError(f"heads must be 'all', a head index or a list of head indices, got {heads!r}.")
        return list(range(record.num_heads("cross")))
    if isinstance(heads, (int, np.integer)):
        return [record.head_index("cross", heads)]
    chosen = [record.head_index("cross", h) for h in heads]
    if not chosen:
        raise ValueError("heads is an empty list: choose at least one head.")
    return chosen


def select_heads(word_cross: np.ndarray, record: AttentionRecord, layer: Layer, heads: Heads) -> np.ndarray:
    """The mean of the chosen layer(s) and heads of `word_level_cross`, rows renormalised."""
    per_layer = word_cross if layer == "mean" else word_cross[record.layer_index("cross", layer)][None]
    return renormalize_rows(per_layer[:, head_choice(record, heads)].mean(axis=(0, 1)))


def links_of(matrix: np.ndarray, method: Method, threshold: float) -> np.ndarray:
    """Boolean links of word-level matrices (..., target words, source words); all-zero rows get none."""
    linked = matrix.sum(axis=-1, keepdims=True) > 0
    if method == "argmax":
        best = np.argmax(matrix, axis=-1)[..., None]
        return (np.arange(matrix.shape[-1]) == best) & linked
    if method == "threshold":
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}.")
        return (matrix >= threshold) & linked
    raise ValueError(f"method must be 'argmax' or 'threshold', got {method!r}.")


def alignment_matrix(
    record: AttentionRecord,
    layer: Layer | None = None,
    heads: Heads | None = None,
    *,
    shift: bool | None = None,
    skip_punctuation: bool = False,
    average_with: Sequence[dict[str, Any]] | None = None,
) -> np.ndarray:
    """Word-level cross-attention (target words x source words) used by `align`; rows sum to 1, except the rows
    of words that have no piece of their own (and of punctuation words with `skip_punctuation`), which are zero.

    Args:
        record: a token-level record, or a word-level one that kept its special tokens.
        layer: a decoder layer index, or `"mean"` over all layers.
        heads: `"all"`, one head index, or a list of head indices (averaged).
        shift: read each target word at the rows where it is the decoder input (Chen et al. 2020) instead of the
            rows that predict it (see the module docstring).
        skip_punctuation: punctuation words get zero rows and columns; the other columns are renormalised.
        average_with: more readings (``{"layer", "heads", "shift"}`` each) whose matrices are averaged with this
            one's, rows renormalised.

    Left at None, `layer`, `heads`, `shift` and `average_with` come from the record's model (`alignment_settings`).
    """
    settings = alignment_settings(record, layer, heads, shift, average_with)
    readings = [settings, *settings.get("average_with", [])]
    matrices = [
        select_heads(
            word_level_cross(record, reading["shift"], skip_punctuation), record, reading["layer"], reading["heads"]
        )
        for reading in readings
    ]
    return matrices[0] if len(matrices) == 1 else renormalize_rows(np.mean(matrices, axis=0))


def align(
    record: AttentionRecord,
    layer: Layer | None = None,
    heads: Heads | None = None,
    method: Method = "argmax",
    threshold: float = DEFAULT_THRESHOLD,
    shift: bool | None = None,
    *,
    skip_punctuation: bool = False,
    average_with: Sequence[dict[str, Any]] | None = None,
) -> list[Pair]:
    """Word alignment pairs `(source_word_idx, target_word_idx)` read off the cross-attention, sorted.

    Args:
        record: one `AttentionRecord`.
        layer: decoder layer index or `"mean"` over layers. heads: `"all"`, an index or a list (averaged).
        method: `"argmax"`: each target word is linked to its most attended source word (one link per target word
            that has pieces); `"threshold"`: every cell of `alignment_matrix` with weight >= `threshold` is a link
            (a target word may get zero or several links).
        threshold: used by `method="threshold"`, in (0, 1].
        shift: `False` reads the rows that predict each target word, `True` the rows one later (Chen et al. 2020).
            Left at None, `layer`, `heads` and `shift` come from the record's model (`alignment_settings`): with
            no argument, `align(record)` reads the alignment the model is configured for.
        skip_punctuation: punctuation words get no link, and each other target word is linked among the other
            source words.
        average_with: more readings averaged with this one before the links are read (`alignment_matrix`).
            Left at None with `layer`, `heads` and `shift`: the model's.
    """
    matrix = alignment_matrix(
        record, layer, heads, shift=shift, skip_punctuation=skip_punctuation, average_with=average_with
    )
    targets, sources = np.nonzero(links_of(matrix, method, threshold))
    return sorted((int(i), int(j)) for j, i in zip(targets, sources))


def to_pharaoh(pairs: Iterable[Pair], one_based: bool = False) -> str:
    """Pharaoh format: `"i-j"` links (source-target) separated by spaces, sorted; 0-based unless `one_based`.

    The indices are those of `source_words` / `target_words`: punctuation marks are words of their own."""
    shift = 1 if one_based else 0
    return " ".join(f"{i + shift}-{j + shift}" for i, j in sorted({(int(i), int(j)) for i, j in pairs}))


__all__ = [
    "DEFAULT_THRESHOLD",
    "Method",
    "Pair",
    "align",
    "alignment_matrix",
    "source_words",
    "target_words",
    "to_pharaoh",
]
