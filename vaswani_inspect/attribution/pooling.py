"""Subword-to-word pooling shared by every attribution method (`pool_to_words`, `pool_rows`).

A method scores, for each *predicted* target piece, every source piece: a token-level matrix of shape
(T - 1, S) whose row t explains the prediction of `record.target_tokens[t + 1]` (row t is computed at decoder input
t, the convention of `vaswani_inspect.record`; the record's last row, at input `</s>`, predicts nothing and is not
part of it). The words are those of `vaswani_inspect.alignment.source_words` / `target_words` (special tokens left
out, every punctuation mark a word of its own), so an attribution matrix lines up with `alignment_matrix` cell for
cell. Pooling, in this order:

1. **special columns out, token rows normalised**: the columns of special tokens (language token, `</s>`) are
   removed and each token row is divided by its sum, so that every predicted piece weighs the same whatever the
   scale of its scores (gradient norms differ a lot from one position to the next);
2. **source pieces summed** into their word: attributions are additive (a word's contribution is what its pieces
   contribute together, and attention to a word is the attention to its pieces), and a sum keeps a row a
   distribution; a max would make a word split into many pieces look as strong as its strongest piece only;
3. **target pieces averaged**: the row of a target word is the mean of the rows that predict its pieces (piece p
   is predicted at row p - 1), as `alignment_matrix` reads attention with ``shift=False``; the mean of
   distributions is a distribution. A target word without pieces of its own (a punctuation mark glued into
   another word's piece: "." of "▁dog.") takes the row of the word it is glued to (`TextWords.glued_to`): the
   prediction that wrote "▁dog." wrote the "." too (`glued_rows` does the same for the attention methods'
   matrices);
4. rows renormalised to sum to 1 over the source words. Only a word whose scores are all zero gets a zero row; a
   source word without pieces of its own gets a zero column (its glued piece counts once, for its word).

Scores must be non-negative (norms, absolute values, distances): every method here gives such scores.
"""

from __future__ import annotations

import numpy as np

from ..alignment.links import word_lists
from ..record import AttentionRecord
from ..words import DEFAULT_SPECIAL_TOKENS, is_special, renormalize_rows


def _predicted_rows(record: AttentionRecord) -> int:
    """How many decoder rows predict a target piece: every decoder input but the last."""
    return len(record.target_tokens) - 1


def check_token_scores(token_scores: np.ndarray, record: AttentionRecord) -> np.ndarray:
    """`token_scores` as float64, checked: (T - 1, S) or (T, S) (the record's last row is then ignored), finite and
    non-negative."""
    scores = np.asarray(token_scores, dtype=np.float64)
    rows, columns = _predicted_rows(record), len(record.source_tokens)
    if scores.ndim != 2 or scores.shape[1] != columns or scores.shape[0] not in (rows, rows + 1):
        raise ValueError(
            f"token scores must have shape ({rows}, {columns}) (one row per predicted target piece, one column per "
            f"source piece), got {scores.shape}."
        )
    if not np.all(np.isfinite(scores)) or np.any(scores < 0):
        raise ValueError("token scores must be finite and non-negative (norms, absolute values or distances).")
    return scores[:rows]


def pool_rows(values: np.ndarray, record: AttentionRecord) -> np.ndarray:
    """Per-target-word values from per-predicted-piece values (..., T - 1): the mean over the rows that predict the
    word's pieces, or for a glued punctuation mark those of the word it is glued to (step 3 of the module
    docstring); NaN for a word no piece writes."""
    values = np.asarray(values, dtype=np.float64)
    _, target = word_lists(record)
    result = np.full((*values.shape[:-1], len(target.words)), np.nan)
    for j, pieces in enumerate(target.pieces):
        holder = target.glued_to[j]
        rows = [p - 1 for p in (pieces if holder is None else target.pieces[holder]) if p >= 1]
        if rows:
            result[..., j] = values[..., rows].mean(axis=-1)
    return result


def pool_to_words(token_scores: np.ndarray, record: AttentionRecord) -> np.ndarray:
    """The word-level source-attribution matrix (target words x source words) of token-level scores.

    Args:
        token_scores: (T - 1, S) non-negative scores, row t explaining the prediction of `record.target_tokens[t +
            1]` (a (T, S) array, shaped like `record.cross[l, h]`, is accepted: its last row is ignored).
        record: the token-level record the scores belong to (its words are the matrix's).

    Returns:
        (len(target_words(record)), len(source_words(record))) float64, each row summing to 1 (a zero row only
        for a word without any score); see the module docstring for the four steps.
    """
    if record.level != "token":
        raise ValueError("pool_to_words needs a token-level record (one from extract, before to_words).")
    scores = check_token_scores(token_scores, record).copy()
    specials = record.special_tokens or DEFAULT_SPECIAL_TOKENS
    scores[:, [is_special(token, specials) for token in record.source_tokens]] = 0.0
    scores = renormalize_rows(scores)
    source, _ = word_lists(record)
    columns = np.zeros((len(record.source_tokens), len(source.words)))
    for i, pieces in enumerate(source.pieces):
        columns[pieces, i] = 1.0
    pooled = pool_rows((scores @ columns).T, record).T
    return renormalize_rows(np.nan_to_num(pooled, nan=0.0))


def glued_rows(matrix: np.ndarray, record: AttentionRecord) -> np.ndarray:
    """A word-level matrix (target words x source words) whose glued punctuation marks, left with zero rows by
    `vaswani_inspect.alignment.alignment_matrix`, take the row of the word they are glued to (as `pool_rows`)."""
    _, target = word_lists(record)
    result = np.array(matrix, dtype=np.float64, copy=True)
    for j, holder in enumerate(target.glued_to):
        if holder is not None:
            result[j] = result[holder]
    return result


def source_shares(source_scores: np.ndarray, prefix_scores: np.ndarray, record: AttentionRecord) -> np.ndarray:
    """The share of each target word that comes from the source rather than the target prefix.

    Per predicted piece (row t): the sum of its source scores over every source token (special tokens included:
    the language token and `</s>` are inputs too) divided by that plus the sum of its prefix scores (decoder inputs
    0..t, `<s>` included); a word's share is the mean over its pieces' rows (`pool_rows`); NaN for a word no piece
    writes, 0.5 for a row without any score.
    """
    source = np.asarray(source_scores, dtype=np.float64).sum(axis=-1)
    prefix = np.asarray(prefix_scores, dtype=np.float64).sum(axis=-1)
    total = source + prefix
    share = np.divide(source, total, out=np.full_like(source, 0.5), where=total > 0)
    return pool_rows(share, record)


__all__ = ["check_token_scores", "glued_rows", "pool_rows", "pool_to_words", "source_shares"]
