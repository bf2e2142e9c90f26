"""What each head does, in the spirit of Clark et al. (2019, "What Does BERT Look At?", sec. 3), and attention
rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

`head_statistics` averages, for every layer and head, over the query rows of one or more records:

* `special`: attention to special tokens (language token, `<s>`, `</s>`);
* `previous`, `same`, `next`: attention to the token one to the left, the token itself, one to the right
  (self-attention only; NaN for cross-attention; `next` is always 0 in the causal decoder);
* `punctuation`: attention to punctuation pieces (every character Unicode category P*, "▁" ignored);
* `entropy`: entropy of the row in nats, and `normalized_entropy`: entropy / log(number of keys the row may attend),
  1.0 for a uniform row.

Rows that may attend a single key (the first decoder row) carry no information and are skipped.

Each head gets one tag, the first that applies, with these thresholds:

1. `"positional"`: max(previous, same, next) >= `POSITIONAL_THRESHOLD` (0.5); `focus` says which;
2. `"special-token"`: special >= `SPECIAL_THRESHOLD` (0.5);
3. `"broad"`: normalized_entropy >= `BROAD_THRESHOLD` (0.8), attention spread over most tokens;
4. `"other"`.
"""

from __future__ import annotations

import csv
import io
import math
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields

import numpy as np

from .record import KINDS, AttentionRecord, check_kind
from .words import DEFAULT_SPECIAL_TOKENS, WORD_BOUNDARY, is_special

POSITIONAL_THRESHOLD = 0.5
SPECIAL_THRESHOLD = 0.5
BROAD_THRESHOLD = 0.8


@dataclass
class HeadStats:
    """Average behaviour of one head (see the module docstring for each field)."""

    kind: str
    layer: int
    head: int
    special: float
    previous: float
    same: float
    next: float
    punctuation: float
    entropy: float
    normalized_entropy: float
    rows: int
    tag: str
    focus: str


def is_punctuation(token: str) -> bool:
    """True when the piece, without "▁", is non-empty and made only of Unicode punctuation (categories P*)."""
    text = token.replace(WORD_BOUNDARY, "")
    return bool(text) and all(unicodedata.category(ch).startswith("P") for ch in text)


def head_statistics(
    records: AttentionRecord | Sequence[AttentionRecord],
    kind: str = "all",
) -> list[HeadStats]:
    """Per-(kind, layer, head) statistics averaged over every informative query row of `records`.

    Args:
        records: one record or several (from the same model).
        kind: `"encoder"`, `"decoder"`, `"cross"` or `"all"`.
    """
    records = [records] if isinstance(records, AttentionRecord) else list(records)
    if not records:
        raise ValueError("head_statistics() needs at least one record.")
    kinds = list(KINDS) if kind == "all" else [check_kind(kind)]
    result = []
    for k in kinds:
        shapes = {r.attention(k).shape[:2] for r in records}
        if len(shapes) != 1:
            raise ValueError(f"The records have different {k} (layers, heads): {sorted(shapes)}.")
        totals: dict[str, np.ndarray] = {}
        rows = 0
        for record in records:
            sums, count = _sums(record, k)
            for name, value in sums.items():
                totals[name] = totals.get(name, 0.0) + value
            rows += count
        layers, heads = shapes.pop()
        for layer in range(layers):
            for head in range(heads):
                values = {
                    name: float(total[layer, head] / rows) if rows else math.nan for name, total in totals.items()
                }
                if k == "cross":
                    values.update(previous=math.nan, same=math.nan, next=math.nan)
                tag, focus = tag_head(values)
                result.append(HeadStats(kind=k, layer=layer, head=head, rows=rows, tag=tag, focus=focus, **values))
    return result


def _sums(record: AttentionRecord, kind: str) -> tuple[dict[str, np.ndarray], int]:
    """Per-head sums over the informative rows of one record, and the number of rows."""
    attention = record.attention(kind).astype(np.float64)  # (L, H, Q, K)
    queries, keys = attention.shape[2:]
    specials = record.special_tokens or DEFAULT_SPECIAL_TOKENS
    key_tokens = record.key_tokens(kind)
    special_mask = np.array([is_special(t, specials) for t in key_tokens])
    punctuation_mask = np.array([is_punctuation(t) for t in key_tokens])
    available = np.arange(1, queries + 1) if kind == "decoder" else np.full(queries, keys)
    informative = available > 1
    a = attention[:, :, informative]
    with np.errstate(divide="ignore", invalid="ignore"):
        row_entropy = -np.where(a > 0, a * np.log(a), 0.0).sum(-1)
    sums = {
        "special": a[..., special_mask].sum(-1).sum(-1),
        "punctuation": a[..., punctuation_mask].sum(-1).sum(-1),
        "entropy": row_entropy.sum(-1),
        "normalized_entropy": (row_entropy / np.log(available[informative])).sum(-1),
    }
    if kind != "cross":
        index = np.arange(queries)[informative]
        sums["same"] = attention[:, :, index, index].sum(-1)
        sums["previous"] = _offset_sum(attention, index, -1, keys)
        sums["next"] = _offset_sum(attention, index, +1, keys)
    return sums, int(informative.sum())


def _offset_sum(attention: np.ndarray, rows: np.ndarray, offset: int, keys: int) -> np.ndarray:
    """Sum over `rows` of the weight on key `row + offset` (0 where that key does not exist)."""
    columns = rows + offset
    valid = (columns >= 0) & (columns < keys)
    if not valid.any():
        return np.zeros(attention.shape[:2])
    return attention[:, :, rows[valid], columns[valid]].sum(-1)


def tag_head(values: dict[str, float]) -> tuple[str, str]:
    """(tag, focus) for one head's statistics, with the thresholds of the module docstring."""
    positional = {name: values.get(name, math.nan) for name in ("previous", "same", "next")}
    positional = {name: v for name, v in positional.items() if not math.isnan(v)}
    if positional:
        focus = max(positional, key=positional.get)
        if positional[focus] >= POSITIONAL_THRESHOLD:
            return "positional", focus
    if values.get("special", 0.0) >= SPECIAL_THRESHOLD:
        return "special-token", "special"
    if values.get("normalized_entropy", 0.0) >= BROAD_THRESHOLD:
        return "broad", ""
    return "other", ""


def head_statistics_table(stats: Sequence[HeadStats], fmt: str = "markdown", digits: int = 3) -> str:
    """The statistics as a CSV (`fmt="csv"`) or Markdown (`fmt="markdown"`) table."""
    columns = [f.name for f in fields(HeadStats)]
    rows = [[_cell(asdict(s)[c], digits) for c in columns] for s in stats]
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
        return buffer.getvalue()
    if fmt == "markdown":
        lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines) + "\n"
    raise ValueError(f"fmt must be 'csv' or 'markdown', got {fmt!r}.")


def _cell(value: object, digits: int) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def attention_rollout(
    record: AttentionRecord,
    kind: str = "encoder",
    *,
    residual: bool = True,
    head_fusion: str = "mean",
) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema 2020) through the self-attention layers of `kind`.

    Each layer's attention, averaged over heads (`head_fusion="mean"`, or `"max"`/`"min"`), is corrected for
    the residual connection as 0.5 * (A + I) (`residual=True`) and re-normalised; the rollout is the product
    Ã_L ... Ã_2 Ã_1, so row i gives how much each input token flows into position i after the last layer.
    Rows sum to 1. `kind` is `"encoder"` (default) or `"decoder"` (cross-attention has no square rollout).
    """
    if check_kind(kind) == "cross":
        raise ValueError("Attention rollout needs square self-attention: use kind='encoder' or 'decoder'.")
    if head_fusion not in ("mean", "max", "min"):
        raise ValueError(f"head_fusion must be 'mean', 'max' or 'min', got {head_fusion!r}.")
    attention = getattr(np, head_fusion)(record.attention(kind).astype(np.float64), axis=1)  # (L, N, N)
    size = attention.shape[-1]
    rollout = np.eye(size)
    for layer in attention:
        if residual:
            layer = 0.5 * (layer + np.eye(size))
        layer = layer / layer.sum(axis=-1, keepdims=True)
        rollout = layer @ rollout
    return rollout


__all__ = [
    "BROAD_THRESHOLD",
    "POSITIONAL_THRESHOLD",
    "SPECIAL_THRESHOLD",
    "HeadStats",
    "attention_rollout",
    "head_statistics",
    "head_statistics_table",
    "is_punctuation",
    "tag_head",
]
