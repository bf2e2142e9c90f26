"""Agreement with head ablation: does a method rank first the source words whose cross-attention heads matter?

**The ablation view of a record** (`ablation_view`). The record's target is teacher-forced with the model intact,
then once with each cross-attention head (decoder layer l, head h) switched off alone (`vaswani_inspect.ablation`:
its output zeroed before the output projection). The **drop** of head (l, h) for target word j is
log p(word j) intact minus log p(word j) without the head, a word's log-probability being the sum over its pieces
(`faithfulness.word_log_probabilities`). The heads that *matter* for word j are those with a positive drop: the
word became less likely without them. The view's row j is the attention rows of those heads, each pooled to words
the way every attribution is (`pool_to_words`: the rows that *predict* the word's pieces, source pieces summed,
special tokens out), averaged with the drops as weights. So it says where the heads the prediction needs were
looking, each head counted as much as the prediction needs it: an explanation built from interventions on the
model's own heads, not from one more reading of its attention or gradients. A word no head matters for (every drop
zero or negative: no single head's loss makes it less likely) has a zero row; its **total drop**, the sum of the
positive drops, is returned so that a reader can leave such words out or weigh by it.

**Agreement of a method** (`ablation_agreement`), on each target word with pieces and a positive total drop:

* **top-1**: 1 when the method's top-ranked source word is the view's top source word, else 0 (ties by position,
  the ranking `faithfulness.rankings_of` gives the deletion test): "does the method rank first the source words
  whose heads matter?" read literally;
* **Spearman**: the rank correlation of the method's row and the view's row over the candidate source words (the
  whole ranking, not only its head; NaN with fewer than two candidates or a constant row).

The candidates are the source words with pieces of their own (the others have a zero column in every matrix);
``skip_punctuation=True`` leaves punctuation words out on both sides, as AER does, so that the attention a head
parks on a final "." does not decide which content word it points at.

The view is made of attention rows, so the attention readings start closer to it than the gradient methods do;
what the ablation adds is *which* heads count for each word and how much. Switching off one head at a time reads
each head's own effect, not their interactions (two heads that back each other up both show a small drop); the
shipped model has 3 x 4 = 12 cross-attention heads, so a view costs 13 teacher-forced forwards.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ablation import Head, ablate_heads, head_counts
from ..alignment.links import word_lists
from ..record import AttentionRecord
from .evaluation import without_punctuation
from .faithfulness import rankings_of, word_log_probabilities
from .pooling import pool_to_words
from .result import Attribution


@dataclass(frozen=True, eq=False)
class AblationView:
    """Which source words the cross-attention heads that matter look at, per target word (module docstring).

    Attributes:
        record: the token-level record (its target teacher-forced, its cross-attention the heads' rows).
        heads: the cross-attention heads switched off, `drops[l, h]` belonging to `Head("cross", l, h)`.
        log_probability: (target words,) log p(word) with the model intact, NaN for a word without pieces.
        drops: (layers, heads, target words) log p(word) intact minus without head (l, h), in nats; NaN for a word
            without pieces.
        head_matrices: (layers, heads, target words, source words) each head's attention pooled to words.
        matrix: (target words, source words) the view: the rows of the heads with a positive drop averaged with
            the drops as weights; rows sum to 1, a zero row where no head matters.
    """

    record: AttentionRecord
    heads: list[Head]
    log_probability: np.ndarray
    drops: np.ndarray
    head_matrices: np.ndarray
    matrix: np.ndarray

    @property
    def total_drop(self) -> np.ndarray:
        """(target words,) the sum of the positive drops: how much the heads that matter matter (0 where none
        does, NaN for a word without pieces)."""
        return np.where(np.isnan(self.drops), np.nan, np.clip(self.drops, 0.0, None)).sum(axis=(0, 1))


@dataclass(frozen=True)
class AblationAgreement:
    """One method's agreement with an `AblationView`, per target word (NaN where a word is not scored).

    Attributes:
        words: the target words scored: with pieces, a positive total drop (and not punctuation, with
            ``skip_punctuation``).
        top1: (target words,) 1.0 where the method's top source word is the view's, 0.0 where not.
        spearman: (target words,) the rank correlation of the two rows over the candidate source words.
        total_drop: (target words,) the view's total positive drop (`AblationView.total_drop`).
    """

    words: list[int]
    top1: np.ndarray
    spearman: np.ndarray
    total_drop: np.ndarray

    def means(self) -> dict[str, float]:
        """Mean top-1 agreement and mean Spearman over the words scored (NaN when none is; Spearman over the
        words where it is defined), and how many words each mean is over."""
        top1 = self.top1[self.words]
        spearman = self.spearman[self.words]
        spearman = spearman[np.isfinite(spearman)]
        return {
            "top1": float(top1.mean()) if top1.size else float("nan"),
            "spearman": float(spearman.mean()) if spearman.size else float("nan"),
            "words": len(self.words),
            "spearman_words": int(spearman.size),
        }


def ablation_view(model: Any, record: AttentionRecord, batch_size: int = 64) -> AblationView:
    """The ablation view of `record` (module docstring): each cross-attention head of `model` switched off alone.

    Args:
        model: the Vaswani encoder-decoder model the record comes from (its heads take a `head_mask`).
        record: a token-level record from `extract`, teacher-forced on its own target.
        batch_size: passed on to `word_log_probabilities`.

    Raises:
        ValueError: a word-level record, or one whose cross-attention does not have the model's layers and heads.
        TypeError: a model without head masks (`vaswani_inspect.ablation.attention_modules`).
    """
    if record.level != "token":
        raise ValueError("ablation_view needs a token-level record (one from extract, before to_words).")
    layers, heads_per_layer = head_counts(model)["cross"]
    if record.cross.shape[:2] != (layers, heads_per_layer):
        raise ValueError(
            f"The record's cross-attention has {record.cross.shape[:2]} layers x heads, the model "
            f"({layers}, {heads_per_layer})."
        )
    heads = [Head("cross", layer, head) for layer in range(layers) for head in range(heads_per_layer)]
    source = [record.source_ids]
    intact = word_log_probabilities(model, record, source, batch_size)[0]
    ablated = []
    # One forward per head: a head_mask is one factor per head for the whole batch, so heads cannot share one.
    for head in heads:
        with ablate_heads(model, [head]):
            ablated.append(word_log_probabilities(model, record, source, batch_size)[0])
    drops = (intact[None] - np.stack(ablated)).reshape(layers, heads_per_layer, -1)
    head_matrices = np.stack(
        [
            np.stack([pool_to_words(record.cross[layer, head], record) for head in range(heads_per_layer)])
            for layer in range(layers)
        ]
    )
    return AblationView(record, heads, intact, drops, head_matrices, _weighted_rows(drops, head_matrices))


def _weighted_rows(drops: np.ndarray, head_matrices: np.ndarray) -> np.ndarray:
    """Per target word, the head rows averaged with the positive drops as weights (zero row without any)."""
    weights = np.clip(np.nan_to_num(drops, nan=0.0), 0.0, None)  # (layers, heads, target words)
    summed = np.einsum("lhj,lhji->ji", weights, head_matrices)
    total = weights.sum(axis=(0, 1))[:, None]
    return np.divide(summed, total, out=np.zeros_like(summed), where=total > 0)


def ablation_agreement(
    attribution: Attribution | np.ndarray, view: AblationView, *, skip_punctuation: bool = False
) -> AblationAgreement:
    """How far a method's word-level matrix agrees with the ablation view (module docstring).

    Args:
        attribution: an `Attribution` of the view's record, or its matrix (target words x source words, the words
            of `alignment_matrix(view.record)`).
        view: `ablation_view(model, record)`.
        skip_punctuation: leave punctuation words out, source and target.

    Raises:
        ValueError: a matrix of another shape than the view's, or an attribution of another translation.
    """
    record = view.record
    matrix, reference = _checked_matrix(attribution, view), view.matrix
    source, target = word_lists(record)
    source_skipped, target_skipped = [False] * len(source.words), [False] * len(target.words)
    if skip_punctuation:
        matrix, reference = without_punctuation(matrix, record), without_punctuation(reference, record)
        source_skipped, target_skipped = source.punctuation(), target.punctuation()
    candidates = [i for i, pieces in enumerate(source.pieces) if pieces and not source_skipped[i]]
    top, reference_top = _top_candidates(matrix, record, candidates), _top_candidates(reference, record, candidates)
    total = view.total_drop
    words = [j for j in top if total[j] > 0 and not target_skipped[j]]
    top1 = np.full(len(target.words), np.nan)
    spearman = np.full(len(target.words), np.nan)
    for j in words:
        top1[j] = float(top[j] == reference_top[j])
        spearman[j] = _spearman(matrix[j, candidates], reference[j, candidates])
    return AblationAgreement(words, top1, spearman, total)


def _checked_matrix(attribution: Attribution | np.ndarray, view: AblationView) -> np.ndarray:
    record = view.record
    if isinstance(attribution, Attribution):
        if (attribution.record.source_ids, attribution.record.target_ids) != (record.source_ids, record.target_ids):
            raise ValueError("The attribution explains another translation than the ablation view's record.")
        attribution = attribution.matrix
    matrix = np.asarray(attribution, dtype=np.float64)
    if matrix.shape != view.matrix.shape:
        raise ValueError(f"The matrix has shape {matrix.shape}; the ablation view's words need {view.matrix.shape}.")
    return matrix


def _top_candidates(matrix: np.ndarray, record: AttentionRecord, candidates: list[int]) -> dict[int, int]:
    """Per target word with pieces, its top-ranked candidate source word (ranked as the deletion test ranks);
    empty without candidates."""
    allowed = set(candidates)
    if not allowed:
        return {}
    return {j: next(i for i in order if i in allowed) for j, order in rankings_of(matrix, record).items()}


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    from scipy.stats import spearmanr

    if len(x) < 2:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant row has no rank correlation: NaN, which is what it reports
        return float(spearmanr(x, y).statistic)


__all__ = ["AblationAgreement", "AblationView", "ablation_agreement", "ablation_view"]
