"""Faithfulness by deletion (DeYoung et al. 2020, ERASER): does removing what a method points at change the output?

For each target word j of a record and each k (default 1, 2, 3), the k source words an attribution ranks highest
in row j are taken away, and the model is run again, teacher-forced on the **same** target:

* **comprehensiveness** = log p(word j | full source) - log p(word j | source without those k words): how much the
  word's probability falls when they are gone (higher is more faithful);
* **sufficiency** = log p(word j | full source) - log p(word j | only those k words): what is lost when only they
  are kept (lower is more faithful).

A word's log-probability is the sum of its pieces' log-probabilities (piece p predicted at decoder row p - 1, as
in `vaswani_inspect.attribution.pooling`). **The deletion baseline**, one for every method: a deleted source word's
pieces are *removed* from the source sequence (the language token and ``</s>`` always stay), so the model reads a
shorter sentence rather than an out-of-distribution filler token (``<unk>``, ``<pad>``) in its place. Only source
words with pieces of their own take part (a punctuation mark glued into another word's piece cannot be removed
alone); a k at or above their number removes (or keeps) them all, the same for every ranking. Target words without
pieces of their own are left out.

Every perturbed source of a record (for every ranking, k and target word) runs in one padded batch, identical
sources once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..alignment.links import word_lists
from ..record import AttentionRecord
from ..words import DEFAULT_SPECIAL_TOKENS, is_special
from .inputs import device_of, eval_mode

#: The numbers of top-ranked source words removed (or kept), as in ERASER's AOPC.
DEFAULT_KS: tuple[int, ...] = (1, 2, 3)


@dataclass(frozen=True)
class Faithfulness:
    """One ranking's deletion scores on one record: `comprehensiveness` and `sufficiency` (len(ks), target words
    scored), in nats, row i for `ks[i]`; `words` the target word indices scored."""

    ks: tuple[int, ...]
    words: list[int]
    comprehensiveness: np.ndarray
    sufficiency: np.ndarray

    def means(self) -> dict[str, float]:
        """Mean over the words scored and over k (ERASER's AOPC), and per k."""
        found: dict[str, float] = {}
        for name in ("comprehensiveness", "sufficiency"):
            values = getattr(self, name)
            found[name] = float(values.mean()) if values.size else float("nan")
            for i, k in enumerate(self.ks):
                found[f"{name}@{k}"] = float(values[i].mean()) if values.size else float("nan")
        return found


def rankings_of(matrix: np.ndarray, record: AttentionRecord) -> dict[int, list[int]]:
    """Per target word with pieces (its index -> source word indices, best first): the source words with pieces of
    their own, sorted by the row of `matrix` (target words x source words), ties by position."""
    source, target = word_lists(record)
    removable = [i for i, pieces in enumerate(source.pieces) if pieces]
    found = {}
    for j, pieces in enumerate(target.pieces):
        if any(p >= 1 for p in pieces):
            row = np.asarray(matrix[j], dtype=np.float64)
            found[j] = sorted(removable, key=lambda i: (-row[i], i))
    return found


def random_rankings(record: AttentionRecord, rng: np.random.Generator) -> dict[int, list[int]]:
    """A random ranking per target word (the baseline every method must beat)."""
    source, _ = word_lists(record)
    shape = (len(word_lists(record)[1].words), len(source.words))
    rankings = rankings_of(np.zeros(shape), record)
    return {j: [int(i) for i in rng.permutation(order)] for j, order in rankings.items()}


def _source_without(record: AttentionRecord, removed: set[int]) -> tuple[int, ...]:
    """The record's source ids without the pieces of the source words `removed` (special tokens stay)."""
    source, _ = word_lists(record)
    pieces = {p for i in removed for p in source.pieces[i]}
    return tuple(token_id for p, token_id in enumerate(record.source_ids) if p not in pieces)


def word_log_probabilities(
    model: Any, record: AttentionRecord, sources: Sequence[Sequence[int]], batch_size: int = 64
) -> np.ndarray:
    """(len(sources), target words): log p(target word | each source), teacher-forced on the record's target; NaN
    for a word without pieces. Sources of different lengths are padded (and masked)."""
    _, target = word_lists(record)
    device = device_of(model)
    labels = torch.tensor(record.target_ids[1:], device=device)
    decoder = torch.tensor([record.target_ids[:-1]], device=device)
    pad = int(getattr(model.config, "pad_token_id", 0) or 0)
    rows = []
    with eval_mode(model), torch.no_grad():
        for start in range(0, len(sources), batch_size):
            chunk = sources[start : start + batch_size]
            width = max(len(s) for s in chunk)
            ids = torch.full((len(chunk), width), pad, dtype=torch.long, device=device)
            mask = torch.zeros((len(chunk), width), dtype=torch.long, device=device)
            for b, sequence in enumerate(chunk):
                ids[b, : len(sequence)] = torch.tensor(sequence, device=device)
                mask[b, : len(sequence)] = 1
            logits = model(
                input_ids=ids, attention_mask=mask, decoder_input_ids=decoder.expand(len(chunk), -1), use_cache=False
            ).logits.float()
            pieces = torch.log_softmax(logits, dim=-1).gather(-1, labels.expand(len(chunk), -1)[..., None])[..., 0]
            rows.append(pieces.double().cpu().numpy())
    per_piece = np.concatenate(rows)  # (sources, T - 1)
    result = np.full((len(sources), len(target.words)), np.nan)
    for j, word_pieces in enumerate(target.pieces):
        predicted = [p - 1 for p in word_pieces if p >= 1]
        if predicted:
            result[:, j] = per_piece[:, predicted].sum(axis=1)
    return result


def deletion_scores(
    model: Any,
    record: AttentionRecord,
    rankings: Mapping[str, Mapping[int, Sequence[int]]],
    ks: Sequence[int] = DEFAULT_KS,
    batch_size: int = 64,
) -> dict[str, Faithfulness]:
    """Comprehensiveness and sufficiency (module docstring) of several rankings of one record at once.

    Args:
        model: the encoder-decoder model the record comes from.
        record: a token-level record (its target is the one teacher-forced).
        rankings: name -> (target word -> source words best first), e.g. `rankings_of(attribution.matrix, record)`
            or `random_rankings(record, rng)`.
        ks: how many top-ranked words are removed / kept.

    Returns:
        name -> `Faithfulness`, the same target words for every name.
    """
    if record.level != "token":
        raise ValueError("deletion_scores needs a token-level record (one from extract, before to_words).")
    ks = tuple(int(k) for k in ks)
    if not ks or min(ks) < 1:
        raise ValueError(f"ks must be positive numbers of words, got {ks}.")
    source, _ = word_lists(record)
    every = {i for i, pieces in enumerate(source.pieces) if pieces}
    full = tuple(record.source_ids)
    index: dict[tuple[int, ...], int] = {full: 0}
    plans: dict[str, list[tuple[int, int, int, int]]] = {}  # name -> (k index, word, deleted row, kept row)
    for name, ranking in rankings.items():
        plan = []
        for j, order in sorted(ranking.items()):
            for position, k in enumerate(ks):
                top = set(order[:k])
                deleted = index.setdefault(_source_without(record, top), len(index))
                kept = index.setdefault(_source_without(record, every - top), len(index))
                plan.append((position, j, deleted, kept))
        plans[name] = plan
    specials = record.special_tokens or DEFAULT_SPECIAL_TOKENS
    if not any(not is_special(token, specials) for token in record.source_tokens):
        raise ValueError("The record's source has no words to remove.")
    log_p = word_log_probabilities(model, record, list(index), batch_size=batch_size)
    found = {}
    for name, plan in plans.items():
        words = sorted({j for _, j, _, _ in plan})
        column = {j: c for c, j in enumerate(words)}
        comprehensiveness = np.zeros((len(ks), len(words)))
        sufficiency = np.zeros((len(ks), len(words)))
        for position, j, deleted, kept in plan:
            comprehensiveness[position, column[j]] = log_p[0, j] - log_p[deleted, j]
            sufficiency[position, column[j]] = log_p[0, j] - log_p[kept, j]
        found[name] = Faithfulness(ks, words, comprehensiveness, sufficiency)
    return found


__all__ = [
    "DEFAULT_KS",
    "Faithfulness",
    "deletion_scores",
    "random_rankings",
    "rankings_of",
    "word_log_probabilities",
]
