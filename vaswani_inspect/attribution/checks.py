"""The checks `attribute` runs on its arguments before any work: option values, and a record's ids against its
tokens and the model's vocabulary. Each failure is a ValueError that names the argument and what it accepts."""

from __future__ import annotations

import numbers
from typing import Any

from ..record import AttentionRecord

#: The most (interpolation steps x positions) integrated gradients runs in one forward pass: every step is a batch
#: row holding the source and the target prefix, and the backward graph keeps every layer's activations of every
#: row, so memory grows with this product. 100,000 allows 3,333 steps on a 30-position course sentence pair, 66
#: times the default.
MAX_STEP_POSITIONS = 100_000


def check_positive_int(name: str, value: Any) -> int:
    """`value` as an int when it is a whole number >= 1 (not a bool, not a float), else a ValueError naming
    `name`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)


def check_step_cost(n_steps: int, record: AttentionRecord) -> None:
    """Refuse integrated gradients whose one forward pass would hold more than `MAX_STEP_POSITIONS`
    (steps x (source tokens + decoder inputs)) positions, before anything is allocated."""
    positions = len(record.source_tokens) + len(record.target_tokens) - 1
    if n_steps * positions > MAX_STEP_POSITIONS:
        most = max(1, MAX_STEP_POSITIONS // positions)
        raise ValueError(
            f"n_steps={n_steps} is too many for this translation: integrated gradients runs n_steps x "
            f"{positions} positions (source tokens + decoder inputs) in one pass, and the limit is "
            f"{MAX_STEP_POSITIONS:,} (MAX_STEP_POSITIONS); at most {most} steps here."
        )


def check_record_ids(model: Any, tokenizer: Any, record: AttentionRecord) -> None:
    """Refuse a record whose ids are outside the model's vocabulary or, when `tokenizer` is given, do not spell its
    tokens (a record of another tokenizer, or one edited by hand): its attributions would explain other text."""
    from ..pieces import piece_labels

    size = _vocabulary_size(model)
    for side in ("source", "target"):
        ids = getattr(record, f"{side}_ids")
        if size is not None and any(i < 0 or i >= size for i in ids):
            raise ValueError(
                f"The record's {side} ids are not all in the model's vocabulary (0..{size - 1}): a record of "
                "another model?"
            )
        if tokenizer is None:
            continue
        tokens = getattr(record, f"{side}_tokens")
        labels = piece_labels(tokenizer, ids)
        # A task prefix's pieces are labelled as special tokens, "⟨▁translate⟩" (`pieces.mark_task_prefix`).
        wrong = [n for n, (label, token) in enumerate(zip(labels, tokens)) if token not in (label, f"⟨{label}⟩")]
        if wrong:
            first = wrong[0]
            raise ValueError(
                f"The record's {side} ids are not its tokens: id {ids[first]} at position {first} is "
                f"{labels[first]!r} for this tokenizer, the record says {tokens[first]!r}. Extract the record "
                "again with this model's tokenizer."
            )


def _vocabulary_size(model: Any) -> int | None:
    try:
        return int(model.get_input_embeddings().num_embeddings)
    except (AttributeError, TypeError):
        return None


__all__ = ["MAX_STEP_POSITIONS", "check_positive_int", "check_record_ids", "check_step_cost"]
