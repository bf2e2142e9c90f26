"""Word-level attention records: one self-attention merged to `[start slot, *words, end slot]` and stored in an
`AttentionRecord`, so that `vaswani_inspect.heads` reads BERT's heads and ours alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..record import AttentionRecord
from ..words import WORD_BOUNDARY, merge_attention
from .words import Pieces, Span, word_groups

__all__ = ["self_attention_record", "word_level_record"]


def self_attention_record(
    kind: str,
    tokens: Sequence[str],
    ids: Sequence[int],
    attention: np.ndarray,
    special_tokens: Sequence[str],
    *,
    text: str = "",
    model_name: str = "",
    level: str = "word",
    metadata: dict[str, Any] | None = None,
) -> AttentionRecord:
    """An `AttentionRecord` holding ONE self-attention, so that `vaswani_inspect.heads.head_statistics` can read it.

    `kind="encoder"` puts `attention` (layers, heads, N, N) in `record.encoder` (bidirectional: BERT, our
    encoder); `kind="decoder"` in `record.decoder` (causal: our decoder, causally masked BERT). The other two
    attention kinds are one-position placeholders (`metadata["placeholders"]` names them): only `kind` is real.
    """
    attention = np.asarray(attention, dtype=np.float32)
    layers, heads, n = attention.shape[0], attention.shape[1], attention.shape[2]
    meta = dict(metadata or {})
    if kind == "encoder":
        meta["placeholders"] = ["decoder", "cross"]
        arrays = dict(
            encoder=attention,
            decoder=np.ones((layers, heads, 1, 1), np.float32),
            cross=np.full((layers, heads, 1, n), 1.0 / n, np.float32),
        )
        sides = dict(source_tokens=list(tokens), source_ids=list(ids), target_tokens=[tokens[0]], target_ids=[ids[0]])
        texts = dict(source_text=text)
    elif kind == "decoder":
        meta["placeholders"] = ["encoder", "cross"]
        arrays = dict(
            encoder=np.ones((1, 1, 1, 1), np.float32),
            decoder=attention,
            cross=np.ones((layers, heads, n, 1), np.float32),
        )
        sides = dict(target_tokens=list(tokens), target_ids=list(ids), source_tokens=[tokens[-1]], source_ids=[ids[-1]])
        texts = dict(target_text=text)
    else:
        raise ValueError(f"kind must be 'encoder' or 'decoder' (a self-attention), got {kind!r}.")
    return AttentionRecord(
        **sides,
        **arrays,
        **texts,
        model_name=model_name,
        special_tokens=list(dict.fromkeys(special_tokens)),
        level=level,
        metadata=meta,
    )


def word_level_record(
    kind: str,
    attention: np.ndarray,
    pieces: Pieces,
    words: Sequence[Span],
    text: str,
    *,
    model_name: str = "",
) -> AttentionRecord:
    """Merge a piece-level self-attention (layers, heads, N, N) into `[start slot, *words, end slot]`.

    Attention to a word is the sum over its pieces, attention from a word the mean over its pieces' rows
    (`vaswani_inspect.words.merge_attention`); the slots merge the special tokens before / after the words. The
    word tokens are `"▁" + word text` (the convention of `vaswani_inspect.words.to_words`), the slots keep the
    model's own special token (e.g. `[CLS]` and `[SEP]`, or `>>es<<` and `</s>`).
    """
    attention = np.asarray(attention)
    if attention.ndim != 4 or attention.shape[2:] != (len(pieces), len(pieces)):
        raise ValueError(f"attention must be (layers, heads, {len(pieces)}, {len(pieces)}), got {attention.shape}.")
    groups = word_groups(pieces, words)
    merged = merge_attention(attention, groups.all(), groups.all(), attention_to="sum", attention_from="mean")
    start, end = pieces.tokens[groups.start[0]], pieces.tokens[groups.end[0]]
    tokens = [start, *(WORD_BOUNDARY + text[s:e] for s, e in words), end]
    ids = [pieces.ids[group[0]] for group in groups.all()]
    metadata = {
        "word_spans": [list(span) for span in words],
        "pieces": pieces.tokens,
        "word_pieces": groups.all(),
        "word_merge": {"attention_to": "sum", "attention_from": "mean", "special_tokens": "two slots"},
    }
    return self_attention_record(
        kind, tokens, ids, merged, [start, end], text=text, model_name=model_name, metadata=metadata
    )
