"""Compare our Transformer's attention heads with a pretrained BERT's (Clark et al. 2019, "What Does BERT Look At?").

Question: does a small translation Transformer learn the same kinds of heads as BERT? Both models read the same
English sentences: our ENCODER in the en->es direction (source `>>es<< sentence </s>`), BERT as is
(`[CLS] sentence [SEP]`). With `decoder=True` our DECODER self-attention is compared too: the decoder reads the
English sentence with teacher forcing (es->en, `<s> sentence </s>`, the source being the Spanish side of the file or
our model's own en->es translation) and BERT reads it with a causal mask (each token sees only itself and the tokens
before it, as in the decoder).

Words (identical for both models):
    1. the sentence is NFC-normalised and split into words once, with character offsets (`split_words`): runs of
       non-space characters, with punctuation and symbols (Unicode categories P* and S*) at the START or END of a
       run split off as one-character words. Inner punctuation stays: "don't", "3.5", "1,000", "e-mail" are words;
       "cat." is "cat" + "."; "café" and "niño" are one word each.
    2. every model's subword pieces are mapped to those words through the tokenizers' character offsets
       (`return_offsets_mapping`); a piece that straddles two words (e.g. a Metaspace piece "o." for "gato.")
       merges them, for both models, so that every piece lies in exactly one word (`shared_words`). A word that
       some tokenizer gives no piece for (a character it drops) joins the previous word. Pieces that cover only
       white space (a lone Metaspace "▁") belong to the next word.
    3. attention is merged with `vaswani_inspect.words.merge_attention`: attention TO a word is the SUM over its
       pieces, attention FROM a word the MEAN over its pieces' rows; rows stay distributions.

Special tokens: each model's structural tokens become two "slots" around the words, `start` ([CLS] / `>>es<<` /
`<s>`) and `end` ([SEP] / `</s>`), merged like words. The per-head statistics (`vaswani_inspect.heads`) keep them
(the `special` statistic is the attention to the two slots, as Clark et al. count [CLS] and [SEP]). For the
head-to-head distance (`specials="drop"`, the default) the slots are removed from both axes and every word row is
renormalised over the words: two heads are compared on where they look *among the words*, and the "no-op"
attention to special tokens is left to the `special` statistic. A row that gave all its weight to the slots
becomes uniform over the words it may see. `specials="keep"` compares the full rows instead, matching
start<->start and end<->end.

Distance: the Jensen-Shannon divergence (base 2, in [0, 1]) between two heads' word-level rows, averaged over every
informative word row of every sentence (a row that may see only one word is skipped: all heads agree on it).
`HeadComparison.distance` is our heads x BERT heads, `distance_all` all heads x all heads (ours first), from which
each of our heads' nearest BERT head and a 2-D multidimensional-scaling map (Clark et al. Fig. 6) are computed.

Too-long sentences (more tokens than either model's `max_position_embeddings`, special tokens included) are NOT
truncated: truncation would give the two models different words. They are rejected: skipped with a warning and
listed in the report (`on_long="skip"`, default), or the run stops with an error (`on_long="error"`).

Command line (registered in `hf-vaswani`)::

    hf-vaswani compare-bert --bert bert-base-uncased --sentences FILE --out report/ [--model PATH] [--decoder]

Attention weights show where a head reads from, not why the model decides what it decides: similar attention
patterns are a description, not an explanation.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import platform
import re
import time
import unicodedata
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .heads import HeadStats, head_statistics, head_statistics_table
from .record import AttentionRecord
from .words import WORD_BOUNDARY, merge_attention, renormalize_rows

DEFAULT_BERT = "bert-base-uncased"
#: `config.model_type` values accepted by `load_bert` (BERT checkpoints: bert-base/large, MiniLM-in-BERT form...).
BERT_MODEL_TYPES: tuple[str, ...] = ("bert",)
#: Our direction for the encoder pass: English source, Spanish target (source text `>>es<< sentence`).
ENCODER_DIRECTION = "en-es"
#: Our direction for the decoder pass: Spanish source, English target read by the decoder.
DECODER_DIRECTION = "es-en"
#: Statistics drawn side by side in `plot_head_statistics` (fields of `vaswani_inspect.heads.HeadStats`).
STATISTICS: tuple[str, ...] = ("special", "previous", "same", "next", "punctuation", "normalized_entropy")
#: Decimals of the distance matrices and MDS coordinates in report.json (the JS sums carry ~1e-6 rounding anyway).
JSON_DECIMALS = 6

Specials = Literal["drop", "keep"]
OnLong = Literal["skip", "error"]
Span = tuple[int, int]


class CompareInputError(ValueError):
    """Bad input to the comparison (wrong kind of model, empty sentence file, too-long sentence...)."""


# ----------------------------------------------------------------------------------------------------------------
# Words shared by both models
# ----------------------------------------------------------------------------------------------------------------


def _is_edge_character(character: str) -> bool:
    """Punctuation or symbol (Unicode categories P*, S*): split off at the start and end of a word."""
    return unicodedata.category(character)[0] in ("P", "S")


def split_words(text: str) -> list[Span]:
    """The words of `text` as (start, end) character offsets (see the module docstring, step 1).

    >>> [text[s:e] for text in ["I don't like café, niño!"] for s, e in split_words(text)]
    ['I', "don't", 'like', 'café', ',', 'niño', '!']
    """
    spans: list[Span] = []
    for match in re.finditer(r"\S+", text):
        start, end = match.span()
        leading: list[Span] = []
        while start < end and _is_edge_character(text[start]):
            leading.append((start, start + 1))
            start += 1
        trailing: list[Span] = []
        while end > start and _is_edge_character(text[end - 1]):
            trailing.append((end - 1, end))
            end -= 1
        spans += leading
        if start < end:
            spans.append((start, end))
        spans += reversed(trailing)
    return spans


@dataclass
class Pieces:
    """One model's tokenization of one sentence, with the character span of every piece in the sentence.

    Attributes:
        tokens / ids: the pieces as the model reads them, special tokens included.
        spans: per piece, `None` for a structural special token ([CLS], `>>es<<`, `</s>`, `<s>`...) or its
            (start, end) offsets in the sentence with surrounding white space trimmed; an empty span (start == end)
            is a piece made of white space only (a lone Metaspace "▁").
    """

    tokens: list[str]
    ids: list[int]
    spans: list[Span | None]

    def __len__(self) -> int:
        return len(self.ids)


def special_ids(tokenizer: Any) -> set[int]:
    """Ids of the tokenizer's structural special tokens (the unknown token excluded: it stands for real text)."""
    unk = getattr(tokenizer, "unk_token_id", None)
    return {int(i) for i in getattr(tokenizer, "all_special_ids", []) if i is not None and i != unk}


def encode_pieces(tokenizer: Any, text: str, prefix: str = "") -> Pieces:
    """Tokenize `prefix + text` with character offsets and express them in `text` coordinates.

    `prefix` is our language token and a space (`">>es<< "`); its pieces must be special tokens.

    Raises:
        CompareInputError: the tokenizer cannot return offsets (not a "fast" tokenizer).
    """
    try:
        encoding = tokenizer(prefix + text, add_special_tokens=True, return_offsets_mapping=True)
    except (NotImplementedError, ValueError) as error:
        raise CompareInputError(
            f"{type(tokenizer).__name__} cannot return character offsets ({error}); the comparison needs a fast "
            "(Rust `tokenizers`) tokenizer to map pieces to words."
        ) from None
    ids = [int(i) for i in encoding["input_ids"]]
    specials = special_ids(tokenizer)
    tokens = tokenizer.convert_ids_to_tokens(ids)
    spans: list[Span | None] = []
    for token_id, (start, end) in zip(ids, encoding["offset_mapping"]):
        if token_id in specials:
            spans.append(None)
            continue
        start, end = max(start - len(prefix), 0), max(end - len(prefix), 0)
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        spans.append((start, end))
    return Pieces(tokens=list(tokens), ids=ids, spans=spans)


def shared_words(text: str, tokenizations: Sequence[Pieces]) -> list[Span]:
    """The words of `text` that every tokenization in `tokenizations` respects (module docstring, step 2).

    Starts from `split_words(text)`, merges neighbouring words that a piece straddles, then merges a word that some
    tokenization gives no piece for into the previous word (the next one for the first word).

    Raises:
        CompareInputError: the sentence has no words, or a tokenization has no piece for any of them.
    """
    units = split_words(text)
    if not units:
        raise CompareInputError("the sentence has no words (empty or white space only)")
    join = [False] * (len(units) - 1)  # join[i]: units i and i + 1 belong to the same word
    for pieces in tokenizations:
        for span in pieces.spans:
            if span is None or span[0] == span[1]:
                continue
            covered = [u for u, (start, end) in enumerate(units) if start < span[1] and span[0] < end]
            for u in range(min(covered, default=0), max(covered, default=0)):
                join[u] = True
    words: list[Span] = []
    for u, (start, end) in enumerate(units):
        if u > 0 and join[u - 1]:
            words[-1] = (words[-1][0], end)
        else:
            words.append((start, end))
    while True:
        missing = _first_word_without_piece(words, tokenizations)
        if missing is None:
            return words
        if len(words) == 1:
            raise CompareInputError(f"a tokenizer gives no piece for any word of {text!r}")
        if missing == 0:
            words[0:2] = [(words[0][0], words[1][1])]
        else:
            words[missing - 1 : missing + 1] = [(words[missing - 1][0], words[missing][1])]


def _word_of(words: Sequence[Span], position: int) -> int:
    for index, (start, end) in enumerate(words):
        if start <= position < end:
            return index
    raise CompareInputError(f"character {position} of the sentence is in no word")


def _first_word_without_piece(words: Sequence[Span], tokenizations: Sequence[Pieces]) -> int | None:
    for pieces in tokenizations:
        covered = {_word_of(words, span[0]) for span in pieces.spans if span is not None and span[0] < span[1]}
        for index in range(len(words)):
            if index not in covered:
                return index
    return None


@dataclass
class WordGroups:
    """Which pieces make each word of one tokenization: `start`/`end` are the special tokens before/after the words
    (the two slots), `words[i]` the piece positions of word i."""

    start: list[int]
    words: list[list[int]]
    end: list[int]

    def all(self) -> list[list[int]]:
        """`[start, *words, end]`: the groups of the word-level sequence."""
        return [self.start, *self.words, self.end]


def word_groups(pieces: Pieces, words: Sequence[Span]) -> WordGroups:
    """Map every piece of `pieces` to one of `words` (white-space-only pieces join the next word) and the special
    tokens to the start and end slots.

    Raises:
        CompareInputError: a special token sits between words, there is no special token before or after the
            words, or a word gets no piece.
    """
    groups: list[list[int]] = [[] for _ in words]
    start: list[int] = []
    end: list[int] = []
    pending: list[int] = []
    for position, span in enumerate(pieces.spans):
        if span is None:
            if any(groups) or pending:
                end.append(position)
            else:
                start.append(position)
            continue
        if end:
            raise CompareInputError(f"special token {pieces.tokens[end[0]]!r} sits between words: {pieces.tokens}")
        if span[0] == span[1]:
            pending.append(position)
            continue
        groups[_word_of(words, span[0])] += [*pending, position]
        pending = []
    if pending:
        groups[-1] += pending
    if not start or not end:
        raise CompareInputError(
            f"expected special tokens before and after the words ([CLS] ... [SEP], >>es<< ... </s> or "
            f"<s> ... </s>), got {pieces.tokens}"
        )
    empty = [i for i, group in enumerate(groups) if not group]
    if empty:
        raise CompareInputError(f"word {empty[0]} has no piece in {pieces.tokens}")
    return WordGroups(start=start, words=[sorted(g) for g in groups], end=end)


# ----------------------------------------------------------------------------------------------------------------
# Word-level records
# ----------------------------------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------------------------------
# Jensen-Shannon distances
# ----------------------------------------------------------------------------------------------------------------


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence in bits (base 2, in [0, 1]) between distributions along the last axis."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    m = 0.5 * (p + q)
    return 0.5 * (_kl_bits(p, m) + _kl_bits(q, m))


def _kl_bits(p: np.ndarray, m: np.ndarray) -> np.ndarray:
    """sum_k p log2(p / m) along the last axis, with 0 log 0 = 0 (m > 0 wherever p > 0)."""
    p, m = np.broadcast_arrays(p, m)
    ratio = np.divide(p, m, out=np.ones_like(p), where=p > 0)
    return (p * np.log2(ratio)).sum(-1)


def pairwise_js_sums(rows: np.ndarray, block: int = 16) -> np.ndarray:
    """(heads, heads) sums over rows of JS(rows[i, r], rows[j, r]) for `rows` of shape (heads, rows, keys).

    Computed as JS(p, q) = H((p + q) / 2) - (H(p) + H(q)) / 2 (bits), for the upper triangle only, then mirrored:
    symmetric, and exactly 0 for identical rows (the mixture is then the row itself). The weights and their
    mixtures are float32 (attention weights are float32 to begin with), the sums float64: about 1e-6 absolute
    error per row, tiny negatives from rounding clipped to 0.
    """
    rows = np.asarray(rows, dtype=np.float32)
    heads = rows.shape[0]
    negative_entropy = _xlog2x(rows).sum(-1, dtype=np.float64)  # (heads, R): sum_k p log2 p
    sums = np.zeros((heads, heads))
    half = np.float32(0.5)
    for first in range(0, heads, block):
        last = min(first + block, heads)
        mixture = half * (rows[first:last, None] + rows[None, first:])  # (b, heads - first, R, K)
        mixed = _xlog2x(mixture).sum(-1, dtype=np.float64)
        values = 0.5 * (negative_entropy[first:last, None] + negative_entropy[None, first:]) - mixed
        sums[first:last, first:] = np.maximum(values, 0.0).sum(-1)
    return np.triu(sums) + np.triu(sums, 1).T


def _xlog2x(values: np.ndarray) -> np.ndarray:
    """x log2 x elementwise, 0 for x = 0."""
    logs = np.log2(values, out=np.zeros_like(values), where=values > 0)
    return values * logs


def comparable_rows(record: AttentionRecord, kind: str, specials: Specials = "drop") -> np.ndarray:
    """The word-level rows of `record`'s `kind` attention that enter the distance: (layers * heads, rows, keys).

    `specials="drop"`: the two slots are removed from both axes and rows renormalised over the words (a row with
    no weight left becomes uniform over the words it may see); `"keep"`: full rows. Rows that may see a single key
    (a one-word sentence, the first word of a causal row) are left out.
    """
    if specials not in ("drop", "keep"):
        raise ValueError(f"specials must be 'drop' or 'keep', got {specials!r}.")
    attention = record.attention(kind).astype(np.float64)
    layers, heads, n, _ = attention.shape
    attention = attention.reshape(layers * heads, n, n)
    causal = kind == "decoder"
    if specials == "drop":
        attention = renormalize_rows(attention[:, 1:-1, 1:-1])
        n -= 2
        allowed = np.tril(np.ones((n, n))) if causal else np.ones((n, n))
        empty = attention.sum(-1) == 0
        if empty.any():
            uniform = allowed / allowed.sum(-1, keepdims=True)
            attention = np.where(empty[..., None], uniform[None], attention)
    available = np.arange(1, n + 1) if causal else np.full(n, n)
    return attention[:, available >= 2]


class DistanceAccumulator:
    """Running sums of `pairwise_js_sums` over sentences; `mean()` is the average over every row added."""

    def __init__(self, heads: int):
        self.sums = np.zeros((heads, heads))
        self.rows = 0

    def add(self, rows: np.ndarray) -> None:
        """Add (heads, rows, keys) word rows of all heads for one sentence."""
        if rows.shape[0] != self.sums.shape[0]:
            raise ValueError(f"expected {self.sums.shape[0]} heads, got {rows.shape[0]}.")
        if rows.shape[1]:
            self.sums += pairwise_js_sums(rows)
            self.rows += rows.shape[1]

    def mean(self) -> np.ndarray:
        """The mean JS divergence matrix (symmetrised, zero diagonal); NaN when no row was added."""
        if not self.rows:
            return np.full_like(self.sums, np.nan)
        mean = self.sums / self.rows
        mean = 0.5 * (mean + mean.T)
        np.fill_diagonal(mean, 0.0)
        return np.maximum(mean, 0.0)


def mds_embedding(distance: np.ndarray, random_state: int = 0) -> tuple[np.ndarray, float]:
    """2-D metric multidimensional scaling of a precomputed distance matrix (`sklearn.manifold.MDS`).

    Returns (coordinates, Kruskal's stress-1: sqrt(sum (d - d_2D)^2 / sum d^2), 0 = distances kept exactly, above
    ~0.2 = a rough picture). scikit-learn >= 1.8 names the option `metric="precomputed"` (the older
    `dissimilarity="precomputed"` is deprecated there) and starts from classical MDS; older versions get
    `dissimilarity="precomputed"` with 4 random starts.
    """
    try:
        from sklearn.manifold import MDS
    except ImportError as error:  # pragma: no cover - scikit-learn is a dependency of this feature
        raise ImportError("The MDS map needs scikit-learn: pip install scikit-learn") from error
    distance = np.asarray(distance, dtype=np.float64)
    if distance.shape[0] < 3:
        return np.zeros((distance.shape[0], 2)), 0.0
    parameters = inspect.signature(MDS).parameters
    if "metric_mds" in parameters:
        mds = MDS(n_components=2, metric="precomputed", init="classical_mds", n_init=1, random_state=random_state)
    else:  # pragma: no cover - scikit-learn < 1.8
        mds = MDS(n_components=2, dissimilarity="precomputed", n_init=4, random_state=random_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        coordinates = np.asarray(mds.fit_transform(distance))
    embedded = np.linalg.norm(coordinates[:, None] - coordinates[None], axis=-1)
    total = float((distance**2).sum())
    stress = math.sqrt(float(((distance - embedded) ** 2).sum()) / total) if total > 0 else 0.0
    return coordinates, stress


# ----------------------------------------------------------------------------------------------------------------
# Head-to-head comparison of two sets of word-level records
# ----------------------------------------------------------------------------------------------------------------


def head_label(layer: int, head: int) -> str:
    """`"L{layer}H{head}"`, 0-based like `HeadStats`."""
    return f"L{layer}H{head}"


@dataclass
class HeadComparison:
    """Two models' heads compared on the same sentences (see `compare_records`).

    Heads are numbered layer-major (`index = layer * heads_per_layer + head`, 0-based) in `stats_*`, the rows and
    columns of `distance`, and `labels_*`; `distance_all`, `mds` and `labels_all` list model A's heads first.
    """

    kind: str
    names: tuple[str, str]
    model_names: tuple[str, str]
    kinds: tuple[str, str]
    shapes: tuple[tuple[int, int], tuple[int, int]]
    stats_a: list[HeadStats]
    stats_b: list[HeadStats]
    distance: np.ndarray
    distance_all: np.ndarray
    mds: np.ndarray
    mds_stress: float
    rows: int
    sentences: int
    words: int
    specials: str

    @property
    def labels_a(self) -> list[str]:
        return [head_label(s.layer, s.head) for s in self.stats_a]

    @property
    def labels_b(self) -> list[str]:
        return [head_label(s.layer, s.head) for s in self.stats_b]

    @property
    def labels_all(self) -> list[str]:
        return [f"{self.names[0]}:{x}" for x in self.labels_a] + [f"{self.names[1]}:{x}" for x in self.labels_b]

    def nearest(self, top: int = 3) -> list[dict[str, Any]]:
        """For each head of model A, its nearest heads of model B (smallest mean JS divergence first)."""
        result = []
        for i, stats in enumerate(self.stats_a):
            order = np.argsort(self.distance[i], kind="stable")[:top]
            best = self.stats_b[int(order[0])]
            result.append(
                {
                    "head": self.labels_a[i],
                    "layer": stats.layer,
                    "index": stats.head,
                    "tag": stats.tag,
                    "focus": stats.focus,
                    "nearest": self.labels_b[int(order[0])],
                    "nearest_layer": best.layer,
                    "nearest_index": best.head,
                    "nearest_tag": best.tag,
                    "nearest_focus": best.focus,
                    "distance": float(self.distance[i, order[0]]),
                    "same_tag": (stats.tag, stats.focus) == (best.tag, best.focus),
                    "top": [{"head": self.labels_b[int(j)], "distance": float(self.distance[i, j])} for j in order],
                }
            )
        return result

    def tag_counts(self) -> dict[str, dict[str, int]]:
        """Per model, how many heads carry each tag (`"positional/previous"` etc., see `heads.tag_head`)."""
        counts: dict[str, dict[str, int]] = {}
        for name, stats in zip(self.names, (self.stats_a, self.stats_b)):
            tally: dict[str, int] = {}
            for s in stats:
                key = f"{s.tag}/{s.focus}" if s.focus and s.tag == "positional" else s.tag
                tally[key] = tally.get(key, 0) + 1
            counts[name] = dict(sorted(tally.items()))
        return counts

    def summary(self) -> dict[str, Any]:
        """A few numbers that help read `distance`: how close A's heads get to B's, compared with how close B's
        heads are to each other."""
        na = len(self.stats_a)
        within_b = self.distance_all[na:, na:].copy()
        np.fill_diagonal(within_b, np.inf)
        within_a = self.distance_all[:na, :na].copy()
        np.fill_diagonal(within_a, np.inf)
        nearest = self.nearest(top=1)
        return {
            "a_to_nearest_b_median": _finite_median(self.distance.min(axis=1)),
            "b_to_nearest_b_median": _finite_median(within_b.min(axis=1)) if within_b.shape[0] > 1 else None,
            "a_to_nearest_a_median": _finite_median(within_a.min(axis=1)) if na > 1 else None,
            "mean_distance": float(np.nanmean(self.distance)),
            "same_tag_as_nearest": sum(n["same_tag"] for n in nearest),
            "heads_a": na,
            "heads_b": len(self.stats_b),
        }

    def to_dict(self) -> dict[str, Any]:
        """Every number, JSON-ready (NaN becomes null)."""
        return _json_ready(
            {
                "kind": self.kind,
                "names": list(self.names),
                "model_names": list(self.model_names),
                "attention_kinds": list(self.kinds),
                "layers_heads": [list(self.shapes[0]), list(self.shapes[1])],
                "sentences": self.sentences,
                "words": self.words,
                "rows": self.rows,
                "specials": self.specials,
                "distance_measure": "mean Jensen-Shannon divergence (bits) over word rows",
                "summary": self.summary(),
                "tag_counts": self.tag_counts(),
                "nearest": self.nearest(),
                "labels_a": self.labels_a,
                "labels_b": self.labels_b,
                "labels_all": self.labels_all,
                "statistics_a": [asdict(s) for s in self.stats_a],
                "statistics_b": [asdict(s) for s in self.stats_b],
                "distance": np.round(self.distance, JSON_DECIMALS).tolist(),
                "distance_all": np.round(self.distance_all, JSON_DECIMALS).tolist(),
                "mds": {"coordinates": np.round(self.mds, JSON_DECIMALS).tolist(), "stress": self.mds_stress},
            }
        )


def _finite_median(values: np.ndarray) -> float | None:
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    return float(np.median(values)) if values.size else None


def _json_ready(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if isinstance(value, np.generic):
        return _json_ready(value.item())
    return value


def compare_records(
    records_a: Sequence[AttentionRecord],
    records_b: Sequence[AttentionRecord],
    kind_a: str = "encoder",
    kind_b: str = "encoder",
    *,
    specials: Specials = "drop",
    names: tuple[str, str] = ("ours", "bert"),
    model_names: tuple[str, str] | None = None,
    kind: str | None = None,
    mds: bool = True,
) -> HeadComparison:
    """Compare the heads of two models on the same sentences.

    Args:
        records_a / records_b: word-level records (`word_level_record`), one per sentence, in the same order, with
            the same words: `[start slot, *words, end slot]`.
        kind_a / kind_b: which self-attention of each record ("encoder" or "decoder"; "decoder" is causal).
        specials: how the two slots enter the distance (module docstring); the statistics always keep them.
        names: short names of the two models (labels, JSON keys); model_names: where they came from.
        kind: name of this comparison (default: `kind_a`).
        mds: compute the 2-D MDS map (else zeros).

    Returns:
        A `HeadComparison` with Clark et al. statistics and tags per head (`vaswani_inspect.heads`), the mean JS
        divergence matrices and the MDS map.
    """
    if len(records_a) != len(records_b):
        raise ValueError(f"Got {len(records_a)} records for {names[0]} but {len(records_b)} for {names[1]}.")
    if not records_a:
        raise ValueError("compare_records() needs at least one sentence.")
    shape_a = records_a[0].attention(kind_a).shape[:2]
    shape_b = records_b[0].attention(kind_b).shape[:2]
    heads_a = shape_a[0] * shape_a[1]
    accumulator = DistanceAccumulator(heads_a + shape_b[0] * shape_b[1])
    words = 0
    for index, (a, b) in enumerate(zip(records_a, records_b)):
        if a.query_tokens(kind_a)[1:-1] != b.query_tokens(kind_b)[1:-1]:
            raise ValueError(
                f"sentence {index}: the two models have different words ({a.query_tokens(kind_a)} vs "
                f"{b.query_tokens(kind_b)}); build both records from the same `shared_words`."
            )
        rows_a = comparable_rows(a, kind_a, specials)
        rows_b = comparable_rows(b, kind_b, specials)
        accumulator.add(np.concatenate([rows_a, rows_b], axis=0))
        words += len(a.query_tokens(kind_a)) - 2
    distance_all = accumulator.mean()
    stats_a = head_statistics(list(records_a), kind_a)
    stats_b = head_statistics(list(records_b), kind_b)
    if mds and accumulator.rows:
        coordinates, stress = mds_embedding(distance_all)
    else:
        coordinates, stress = np.zeros((distance_all.shape[0], 2)), math.nan
    return HeadComparison(
        kind=kind or kind_a,
        names=names,
        model_names=model_names or (records_a[0].model_name, records_b[0].model_name),
        kinds=(kind_a, kind_b),
        shapes=(tuple(shape_a), tuple(shape_b)),
        stats_a=stats_a,
        stats_b=stats_b,
        distance=distance_all[:heads_a, heads_a:],
        distance_all=distance_all,
        mds=coordinates,
        mds_stress=stress,
        rows=accumulator.rows,
        sentences=len(records_a),
        words=words,
        specials=specials,
    )


# ----------------------------------------------------------------------------------------------------------------
# Sentences
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class Sentence:
    """One English sentence of the input file (NFC-normalised, stripped), with its 1-based line number and the
    Spanish side when the file is a TSV (English<TAB>Spanish)."""

    text: str
    line: int
    spanish: str | None = None


def read_sentences(path: str | Path, max_sentences: int | None = None) -> list[Sentence]:
    """Read English sentences, one per line (blank lines skipped). A TSV line's first column is the English
    sentence and its second column, if any, the Spanish one (used as the source of the decoder comparison), as in
    `runs/.../splits/test.tsv`. At most `max_sentences` (the first ones).

    Raises:
        FileNotFoundError: no such file. CompareInputError: no sentence in it, or `max_sentences` < 1.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Sentence file {path} does not exist (or is not a file).")
    if max_sentences is not None and max_sentences < 1:
        raise CompareInputError(f"max_sentences must be >= 1, got {max_sentences}.")
    sentences: list[Sentence] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            columns = line.rstrip("\r\n").split("\t")
            english = unicodedata.normalize("NFC", columns[0]).strip()
            if not english:
                continue
            spanish = unicodedata.normalize("NFC", columns[1]).strip() if len(columns) > 1 else ""
            sentences.append(Sentence(english, number, spanish or None))
            if max_sentences is not None and len(sentences) >= max_sentences:
                break
    if not sentences:
        raise CompareInputError(
            f"{path} contains no sentences (it is empty or has only blank lines): write one English sentence per "
            "line (or English<TAB>Spanish)."
        )
    return sentences


# ----------------------------------------------------------------------------------------------------------------
# Loading the models
# ----------------------------------------------------------------------------------------------------------------


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "/", "~")) or name.count("/") > 1 or "\\" in name


def _config_dict(name: str, what: str) -> dict[str, Any]:
    """The raw config.json of a local folder or Hub id (no model class needed to read it)."""
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise CompareInputError(f"{what} {name} is a file, not a model folder (or Hub id).")
        config_file = path / "config.json"
        if not config_file.is_file():
            raise CompareInputError(f"{what} {name} has no config.json: it is not a transformers model folder.")
        return json.loads(config_file.read_text(encoding="utf-8"))
    if _looks_like_path(name):
        raise FileNotFoundError(f"{what} {name}: no such folder.")
    from transformers import PretrainedConfig

    try:
        config, _ = PretrainedConfig.get_config_dict(name)
    except (OSError, ValueError) as error:
        raise CompareInputError(
            f"Could not load the config of {what} {name!r} from the Hugging Face Hub ({type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else ''}). Offline? Pass a local model folder instead."
        ) from None
    return config


def check_bert(name: str) -> dict[str, Any]:
    """The config dict of `name` if it is a BERT encoder, else a `CompareInputError` saying what it is."""
    config = _config_dict(str(name), "--bert")
    model_type = config.get("model_type")
    architectures = ", ".join(config.get("architectures") or []) or "no architectures listed"
    if model_type == "vaswani":
        raise CompareInputError(
            f"--bert {name} is an hf_vaswani translation checkpoint (model_type 'vaswani', {architectures}), not a "
            "BERT: pass it as --model, and a BERT (e.g. bert-base-uncased) as --bert."
        )
    if model_type not in BERT_MODEL_TYPES:
        raise CompareInputError(
            f"--bert {name} is not a BERT model: its config says model_type {model_type!r} ({architectures}). "
            f"compare-bert needs a BERT encoder (model_type {' or '.join(map(repr, BERT_MODEL_TYPES))}), e.g. "
            f"{DEFAULT_BERT}."
        )
    if config.get("is_encoder_decoder"):
        raise CompareInputError(f"--bert {name} is an encoder-decoder model; compare-bert needs a BERT encoder.")
    return config


def load_bert(name: str = DEFAULT_BERT, *, device: str | None = None) -> tuple[Any, Any]:
    """Load a BERT (Hub id or local folder) as (model, tokenizer), with eager attention (returns its weights).

    Raises:
        CompareInputError: not a BERT (e.g. our own checkpoint, a GPT-2), unreachable Hub id, no fast tokenizer.
        FileNotFoundError: a path that does not exist.
    """
    check_bert(name)
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(name))
        model = AutoModel.from_pretrained(str(name), attn_implementation="eager")
    except OSError as error:
        raise CompareInputError(f"Could not load BERT {name!r}: {error}") from None
    finally:
        hf_logging.set_verbosity(verbosity)
    if not getattr(tokenizer, "is_fast", False):
        raise CompareInputError(f"BERT {name!r} has no fast tokenizer (tokenizer.json): offsets are needed.")
    if device is not None:
        model = model.to(device)
    return model.eval(), tokenizer


def load_ours(path: str | Path | None = None, *, device: str | None = None) -> tuple[Any, Any]:
    """Load our translation checkpoint (default `vaswani_inspect.DEFAULT_MODEL_PATH`) as (model, tokenizer).

    Raises:
        CompareInputError: the folder holds another kind of model (e.g. a BERT).
        FileNotFoundError: no such folder (or the default checkpoint is not there yet).
    """
    from .extract import load_model_and_tokenizer

    if path is not None and Path(path).is_dir():
        config = _config_dict(str(path), "--model")
        if config.get("model_type") != "vaswani":
            raise CompareInputError(
                f"--model {path} is not an hf_vaswani translation checkpoint (model_type "
                f"{config.get('model_type')!r}): --model takes our model, --bert the BERT."
            )
    model, tokenizer = load_model_and_tokenizer(path, device=device)
    return model, tokenizer


def _max_positions(model: Any, tokenizer: Any = None) -> int | None:
    limits = [getattr(model.config, "max_position_embeddings", None)]
    if tokenizer is not None:
        limits.append(getattr(tokenizer, "model_max_length", None))
    limits = [int(x) for x in limits if isinstance(x, int) and 0 < x < 1_000_000]
    return min(limits) if limits else None


# ----------------------------------------------------------------------------------------------------------------
# Running both models
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class _Item:
    sentence: Sentence
    words: list[Span]
    bert: Pieces
    ours_source: Pieces
    ours_target: Pieces | None


@contextmanager
def _causal(bert: Any, causal: bool) -> Iterator[None]:
    """BERT with a causal mask (`config.is_decoder=True`) inside, the original setting restored afterwards."""
    previous = bool(getattr(bert.config, "is_decoder", False))
    bert.config.is_decoder = causal
    try:
        yield
    finally:
        bert.config.is_decoder = previous


def bert_attention(bert: Any, pieces: Sequence[Pieces], *, causal: bool = False) -> list[np.ndarray]:
    """BERT's self-attention (layers, heads, N, N) for each tokenized sentence, padding stripped.

    `causal=True` masks every token's attention to the tokens after it (like our decoder's self-attention).
    """
    import torch

    width = max(len(p) for p in pieces)
    pad = getattr(bert.config, "pad_token_id", 0) or 0
    input_ids = torch.full((len(pieces), width), pad, dtype=torch.long)
    mask = torch.zeros((len(pieces), width), dtype=torch.long)
    for row, p in enumerate(pieces):
        input_ids[row, : len(p)] = torch.tensor(p.ids)
        mask[row, : len(p)] = 1
    device = next(bert.parameters()).device
    with torch.inference_mode(), _causal(bert, causal):
        outputs = bert(
            input_ids=input_ids.to(device),
            attention_mask=mask.to(device),
            token_type_ids=torch.zeros_like(input_ids).to(device),
            output_attentions=True,
            use_cache=False,
            return_dict=True,
        )
    attentions = getattr(outputs, "attentions", None)
    if not attentions or any(a is None for a in attentions):
        from .extract import AttentionUnavailableError

        raise AttentionUnavailableError(
            "BERT returned no attention weights (load it with attn_implementation='eager')."
        )
    stacked = torch.stack(tuple(attentions)).float().cpu().numpy()  # (L, B, H, W, W)
    result = []
    for row, p in enumerate(pieces):
        n = len(p)
        array = np.ascontiguousarray(stacked[:, row, :, :n, :n])
        if causal and np.abs(np.triu(array, k=1)).max(initial=0.0) > 1e-6:
            raise RuntimeError("BERT's causal mask did not apply: its attention reaches tokens to the right.")
        result.append(array)
    return result


@dataclass
class CompareResult:
    """The outcome of `compare_bert`: one `HeadComparison` per compared attention ("encoder", and "decoder" with
    `decoder=True`), the sentences used and skipped, settings and timings (seconds)."""

    comparisons: dict[str, HeadComparison]
    sentences: list[Sentence]
    skipped: list[dict[str, Any]]
    settings: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Everything, JSON-ready."""
        return _json_ready(
            {
                "format": "vaswani_inspect.compare_bert",
                "version": 1,
                "settings": self.settings,
                "sentences_compared": len(self.sentences),
                "sentences_skipped": self.skipped,
                "notes": self.notes,
                "timings_s": self.timings,
                "machine": machine_description(),
                "comparisons": {kind: c.to_dict() for kind, c in self.comparisons.items()},
            }
        )


def machine_description() -> dict[str, Any]:
    """Platform, CPU count, torch threads and load average: the context of the timings."""
    import os

    import torch

    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.is_available(),
    }
    try:
        info["load_average_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on every platform
        pass
    return info


def _prepare(
    sentences: Sequence[Sentence],
    tokenizer: Any,
    bert_tokenizer: Any,
    *,
    ours_limit: int | None,
    bert_limit: int | None,
    decoder: bool,
    on_long: OnLong,
) -> tuple[list[_Item], list[dict[str, Any]], int]:
    """Tokenize every sentence for both models, find the shared words and reject what cannot be compared."""
    items: list[_Item] = []
    skipped: list[dict[str, Any]] = []
    merged = 0
    prefix = f">>{ENCODER_DIRECTION.split('-')[1]}<< "
    for sentence in sentences:
        text = sentence.text
        bert_pieces = encode_pieces(bert_tokenizer, text)
        source = encode_pieces(tokenizer, text, prefix)
        target = _with_start(encode_pieces(tokenizer, text), tokenizer) if decoder else None
        too_long = []
        if bert_limit is not None and len(bert_pieces) > bert_limit:
            too_long.append(f"{len(bert_pieces)} BERT tokens (BERT accepts {bert_limit})")
        if ours_limit is not None and len(source) > ours_limit:
            too_long.append(f"{len(source)} tokens for our encoder (our model accepts {ours_limit})")
        if ours_limit is not None and target is not None and len(target) > ours_limit:
            too_long.append(f"{len(target)} tokens for our decoder (our model accepts {ours_limit})")
        if decoder and sentence.spanish and ours_limit is not None:
            spanish = len(tokenizer(f">>{DECODER_DIRECTION.split('-')[1]}<< {sentence.spanish}")["input_ids"])
            if spanish > ours_limit:
                too_long.append(f"its Spanish source has {spanish} tokens (our model accepts {ours_limit})")
        if re.match(r"^>>[A-Za-z0-9_\-]+<<", text):
            skipped.append({"line": sentence.line, "text": text, "reason": "starts with a language token (>>xx<<)"})
            continue
        if too_long:
            reason = "too long: " + "; ".join(too_long)
            if on_long == "error":
                raise CompareInputError(
                    f"line {sentence.line} is {reason}. Shorten or remove it, or skip such lines "
                    "(on_long='skip', --on-long skip); sentences are never truncated, so that both models read "
                    "the same words."
                )
            skipped.append({"line": sentence.line, "text": text, "reason": reason})
            continue
        try:
            words = shared_words(text, [p for p in (bert_pieces, source, target) if p is not None])
            for pieces in (bert_pieces, source, target):
                if pieces is not None:
                    word_groups(pieces, words)  # raises if the pieces cannot be mapped to the words
        except CompareInputError as error:
            skipped.append({"line": sentence.line, "text": text, "reason": f"no shared words: {error}"})
            continue
        if len(words) < len(split_words(text)):
            merged += 1
        items.append(_Item(sentence, words, bert_pieces, source, target))
    return items, skipped, merged


def _with_start(pieces: Pieces, tokenizer: Any) -> Pieces:
    """Our target pieces as the decoder reads them: the decoder start token `<s>` in front (the start slot)."""
    token = getattr(tokenizer, "bos_token", None) or "<s>"
    token_id = getattr(tokenizer, "bos_token_id", None)
    return Pieces(
        [token, *pieces.tokens], [-1 if token_id is None else int(token_id), *pieces.ids], [None, *pieces.spans]
    )


def _check_same_ids(expected: Sequence[int], got: Sequence[int], what: str) -> None:
    if list(expected) != list(got):
        raise RuntimeError(f"{what}: extract() tokenized the sentence differently from the offsets pass.")


def _translate_missing(
    model: Any, tokenizer: Any, items: Sequence[_Item], batch_size: int, progress: bool, notes: list[str]
) -> list[str]:
    """The Spanish source of each item for the decoder pass: the file's, else our model's en->es translation."""
    from .extract import extract

    sources = [item.sentence.spanish for item in items]
    missing = [i for i, s in enumerate(sources) if not s]
    if missing:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(missing), desc="translating en->es", unit="sentence", disable=not progress)
        fallback = 0
        for start in range(0, len(missing), batch_size):
            chunk = missing[start : start + batch_size]
            # The translation becomes a source (`>>en<< ... </s>`): keep it within the position limit.
            wanted = max(len(items[i].ours_source) for i in chunk) + 16
            limit = _max_positions(model)
            records = extract(
                model,
                tokenizer,
                [items[i].sentence.text for i in chunk],
                direction=ENCODER_DIRECTION,
                generate_kwargs={"max_new_tokens": max(1, wanted if limit is None else min(wanted, limit - 2))},
                batch_size=batch_size,
            )
            for i, record in zip(chunk, records):
                if record.target_text.strip():
                    sources[i] = record.target_text
                else:  # an empty translation: let the decoder read the English with the English as source
                    sources[i] = items[i].sentence.text
                    fallback += 1
            bar.update(len(chunk))
        bar.close()
        notes.append(f"decoder: {len(missing)} Spanish sources were our model's own en->es translations")
        if fallback:
            notes.append(f"decoder: {fallback} translations were empty; those sentences used the English as source")
    return [s or "" for s in sources]


def compare_bert(
    sentences: Sequence[Sentence | str],
    model: Any,
    tokenizer: Any,
    bert: Any,
    bert_tokenizer: Any,
    *,
    decoder: bool = False,
    specials: Specials = "drop",
    batch_size: int = 16,
    on_long: OnLong = "skip",
    progress: bool = True,
    model_name: str = "ours",
    bert_name: str = "bert",
) -> CompareResult:
    """Run our model and BERT on the same English sentences and compare their heads at the word level.

    Args:
        sentences: `Sentence`s (`read_sentences`) or plain strings.
        model / tokenizer: our translation model (`load_ours`); bert / bert_tokenizer: a BERT (`load_bert`).
        decoder: also compare our decoder's self-attention (English teacher-forced, es->en) with causally masked
            BERT.
        specials: "drop" (default) or "keep": the special-token slots in the distance (module docstring).
        batch_size: sentences per forward pass.
        on_long: "skip" (warn, list in the result) or "error" for sentences longer than either model accepts.
        progress: show a tqdm progress bar over the sentences.
        model_name / bert_name: stored in the records and the report.

    Raises:
        CompareInputError: no sentences, or none left to compare; a too-long one with `on_long="error"`.
    """
    from tqdm.auto import tqdm

    from .extract import extract

    if on_long not in ("skip", "error"):
        raise ValueError(f"on_long must be 'skip' or 'error', got {on_long!r}.")
    if specials not in ("drop", "keep"):
        raise ValueError(f"specials must be 'drop' or 'keep', got {specials!r}.")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
    sentences = [
        s if isinstance(s, Sentence) else Sentence(unicodedata.normalize("NFC", s).strip(), i + 1)
        for i, s in enumerate(sentences)
    ]
    if not sentences:
        raise CompareInputError("No sentences to compare.")
    for tok, what in ((tokenizer, "our tokenizer"), (bert_tokenizer, "the BERT tokenizer")):
        if not getattr(tok, "is_fast", False):
            raise CompareInputError(f"{what} is not a fast tokenizer: character offsets are needed to find words.")
    timings: dict[str, float] = {}
    notes: list[str] = []
    clock = time.perf_counter()
    items, skipped, merged = _prepare(
        sentences,
        tokenizer,
        bert_tokenizer,
        ours_limit=_max_positions(model),
        bert_limit=_max_positions(bert, bert_tokenizer),
        decoder=decoder,
        on_long=on_long,
    )
    for entry in skipped:
        warnings.warn(f"compare-bert: skipping line {entry['line']} ({entry['reason']}).", stacklevel=2)
    if not items:
        raise CompareInputError(f"None of the {len(sentences)} sentences can be compared (all were skipped).")
    timings["tokenize_and_align"] = time.perf_counter() - clock
    if merged:
        notes.append(
            f"words: in {merged} of {len(items)} sentences a piece of one tokenizer spans two words (e.g. our piece "
            "'▁him.'), so those words were merged into one for both models"
        )

    spanish: list[str] = []
    if decoder:
        clock = time.perf_counter()
        spanish = _translate_missing(model, tokenizer, items, batch_size, progress, notes)
        timings["translate_for_decoder"] = time.perf_counter() - clock

    kinds = ["encoder", "decoder"] if decoder else ["encoder"]
    ours_records: dict[str, list[AttentionRecord]] = {k: [] for k in kinds}
    bert_records: dict[str, list[AttentionRecord]] = {k: [] for k in kinds}
    timings.update(ours_forward=0.0, bert_forward=0.0, word_merge=0.0)
    truncated_sources = 0
    bar = tqdm(total=len(items), desc="compare-bert", unit="sentence", disable=not progress)
    for start in range(0, len(items), batch_size):
        batch = items[start : start + batch_size]
        texts = [item.sentence.text for item in batch]
        for kind in kinds:
            clock = time.perf_counter()
            if kind == "encoder":
                # The target only feeds the decoder, which this comparison does not read: the sentence's first
                # word keeps that pass (and its vocabulary projection) short, and always fits.
                first_words = [text.split()[0] for text in texts]
                records = extract(
                    model, tokenizer, texts, first_words, direction=ENCODER_DIRECTION, batch_size=batch_size
                )
            else:
                # A Spanish source (our own translation, re-tokenized) may exceed the position limit by a token
                # or two: it is cut (it only feeds the cross-attention); the English decoder side was checked.
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    records = extract(
                        model,
                        tokenizer,
                        spanish[start : start + batch_size],
                        texts,
                        direction=DECODER_DIRECTION,
                        batch_size=batch_size,
                        truncation=True,
                    )
                for warning in caught:
                    if "truncated" in str(warning.message) and str(warning.message).startswith("source"):
                        truncated_sources += 1
                    else:
                        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
            timings["ours_forward"] += time.perf_counter() - clock
            clock = time.perf_counter()
            bert_arrays = bert_attention(bert, [item.bert for item in batch], causal=kind == "decoder")
            timings["bert_forward"] += time.perf_counter() - clock
            clock = time.perf_counter()
            for item, record, bert_array in zip(batch, records, bert_arrays):
                if kind == "encoder":
                    pieces = item.ours_source
                    _check_same_ids(pieces.ids, record.source_ids, f"line {item.sentence.line}")
                    ours_attention = record.encoder
                else:
                    target = item.ours_target
                    assert target is not None
                    _check_same_ids(target.ids[1:], record.target_ids[1:], f"line {item.sentence.line}")
                    pieces = Pieces(record.target_tokens, record.target_ids, target.spans)
                    ours_attention = record.decoder
                ours_records[kind].append(
                    word_level_record(
                        kind, ours_attention, pieces, item.words, item.sentence.text, model_name=model_name
                    )
                )
                bert_records[kind].append(
                    word_level_record(kind, bert_array, item.bert, item.words, item.sentence.text, model_name=bert_name)
                )
            timings["word_merge"] += time.perf_counter() - clock
        bar.update(len(batch))
    bar.close()
    if truncated_sources:
        notes.append(f"decoder: {truncated_sources} Spanish sources were cut to our model's position limit")

    comparisons = {}
    clock = time.perf_counter()
    for kind in kinds:
        comparisons[kind] = compare_records(
            ours_records[kind],
            bert_records[kind],
            kind,
            kind,
            specials=specials,
            names=("ours", "bert"),
            model_names=(model_name, bert_name),
            kind=kind,
        )
    timings["distances_and_mds"] = time.perf_counter() - clock
    settings = {
        "model": model_name,
        "bert": bert_name,
        "decoder": decoder,
        "specials": specials,
        "batch_size": batch_size,
        "on_long": on_long,
        "sentences_read": len(sentences),
        "encoder_direction": f"{ENCODER_DIRECTION} (source '>>es<< sentence')",
        "decoder_direction": f"{DECODER_DIRECTION} (decoder reads '<s> sentence </s>')" if decoder else None,
        "words": "split_words + shared_words (see vaswani_inspect.compare)",
        "word_merge": "to a word: sum over pieces; from a word: mean over pieces",
    }
    return CompareResult(
        comparisons=comparisons,
        sentences=[item.sentence for item in items],
        skipped=skipped,
        settings=settings,
        timings=timings,
        notes=notes,
    )


# ----------------------------------------------------------------------------------------------------------------
# Figures
# ----------------------------------------------------------------------------------------------------------------


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def plot_distance_heatmap(comparison: HeadComparison) -> Any:
    """Our heads (rows) x BERT heads (columns), mean JS divergence; a white dot marks each row's nearest head."""
    (la, ha), (lb, hb) = comparison.shapes
    figure = _figure(min(4 + 0.09 * lb * hb, 22), 2 + 0.28 * la * ha)
    ax = figure.add_subplot()
    image = ax.imshow(comparison.distance, cmap="magma_r", aspect="auto", interpolation="nearest", vmin=0.0)
    nearest = np.nanargmin(np.where(np.isnan(comparison.distance), np.inf, comparison.distance), axis=1)
    ax.scatter(nearest, range(len(nearest)), s=14, c="white", edgecolors="black", linewidths=0.5, zorder=3)
    ax.set_yticks(range(la * ha), comparison.labels_a, fontsize=7)
    ax.set_xticks([layer * hb + (hb - 1) / 2 for layer in range(lb)], [f"L{layer}" for layer in range(lb)], fontsize=8)
    for layer in range(1, lb):
        ax.axvline(layer * hb - 0.5, color="white", linewidth=0.6)
    for layer in range(1, la):
        ax.axhline(layer * ha - 0.5, color="white", linewidth=0.6)
    ax.set_xlabel(f"{comparison.names[1]} heads ({comparison.model_names[1]}; layer blocks of {hb} heads)")
    ax.set_ylabel(f"{comparison.names[0]} heads ({comparison.kinds[0]})")
    ax.set_title(f"{comparison.kind}: mean Jensen-Shannon divergence between heads (bits; lower = more alike)")
    figure.colorbar(image, ax=ax, shrink=0.9, label="mean JS divergence")
    return figure


def plot_mds(comparison: HeadComparison) -> Any:
    """Clark et al. Fig. 6: every head of both models placed by MDS on the distance matrix; circles = ours (blue
    shades by layer), triangles = BERT (orange shades by layer); grey lines join each of our heads to its nearest
    BERT head."""
    import matplotlib

    (la, ha), (lb, hb) = comparison.shapes
    na = la * ha
    xy = comparison.mds
    figure = _figure(8.5, 7)
    ax = figure.add_subplot()
    nearest = comparison.nearest(top=1)
    for i, entry in enumerate(nearest):
        j = na + entry["nearest_layer"] * hb + entry["nearest_index"]
        ax.plot([xy[i, 0], xy[j, 0]], [xy[i, 1], xy[j, 1]], color="0.7", linewidth=0.6, zorder=1)
    blues, oranges = matplotlib.colormaps["Blues"], matplotlib.colormaps["Oranges"]
    layers_a = np.repeat(np.arange(la), ha)
    layers_b = np.repeat(np.arange(lb), hb)
    shade = lambda layers, count: 0.35 + 0.65 * layers / max(count - 1, 1)  # noqa: E731
    ax.scatter(
        xy[na:, 0],
        xy[na:, 1],
        c=oranges(shade(layers_b, lb)),
        marker="^",
        s=28,
        edgecolors="0.3",
        linewidths=0.3,
        zorder=2,
        label=f"{comparison.names[1]} ({comparison.model_names[1]})",
    )
    ax.scatter(
        xy[:na, 0],
        xy[:na, 1],
        c=blues(shade(layers_a, la)),
        marker="o",
        s=48,
        edgecolors="black",
        linewidths=0.6,
        zorder=3,
        label=f"{comparison.names[0]} ({comparison.kinds[0]})",
    )
    if na <= 64:
        for i, label in enumerate(comparison.labels_a):
            ax.annotate(label, xy[i], fontsize=6, xytext=(3, 3), textcoords="offset points", zorder=4)
    ax.legend(loc="best", fontsize=8)
    for cmap, count, name in ((blues, la, comparison.names[0]), (oranges, lb, comparison.names[1])):
        mappable = matplotlib.cm.ScalarMappable(
            norm=matplotlib.colors.Normalize(-0.5, count - 0.5),
            cmap=matplotlib.colors.ListedColormap([cmap(shade(np.array(layer), count)) for layer in range(count)]),
        )
        bar = figure.colorbar(mappable, ax=ax, shrink=0.6, pad=0.01)
        bar.set_label(f"{name} layer")
        bar.set_ticks(range(count))
    ax.set_title(
        f"{comparison.kind}: heads of both models, MDS on mean JS divergence (stress-1 {comparison.mds_stress:.2f})"
    )
    ax.set_xticks([])
    ax.set_yticks([])
    return figure


def _stat_grid(stats: Sequence[HeadStats], name: str, layers: int, heads: int) -> np.ndarray:
    grid = np.full((layers, heads), np.nan)
    for s in stats:
        grid[s.layer, s.head] = getattr(s, name)
    return grid


def plot_head_statistics(comparison: HeadComparison) -> Any:
    """Clark et al. statistics per head, ours (left) and BERT (right), one row per statistic (layers x heads)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    (la, ha), (lb, hb) = comparison.shapes
    figure = Figure(figsize=(11, 1.9 * len(STATISTICS) + 0.8))
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(STATISTICS), 2, squeeze=False, gridspec_kw={"width_ratios": [max(ha, 4), hb]})
    figure.subplots_adjust(left=0.05, right=0.9, top=0.94, bottom=0.04, hspace=0.75, wspace=0.12)
    image = None
    for row, name in enumerate(STATISTICS):
        for column, (stats, layers, heads, model) in enumerate(
            ((comparison.stats_a, la, ha, comparison.names[0]), (comparison.stats_b, lb, hb, comparison.names[1]))
        ):
            ax = axes[row, column]
            values = _stat_grid(stats, name, layers, heads)
            image = ax.imshow(values, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
            ax.set_title(f"{model}: {name}", fontsize=9)
            ax.set_xticks(range(heads), [str(h) for h in range(heads)], fontsize=6)
            ax.set_yticks(range(layers), [str(layer) for layer in range(layers)], fontsize=6)
            ax.set_xlabel("head", fontsize=7, labelpad=1)
            ax.set_ylabel("layer", fontsize=7)
            if heads * layers <= 32:
                for (i, j), value in np.ndenumerate(values):
                    if not np.isnan(value):
                        color = "white" if value < 0.5 else "black"
                        ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=6, color=color)
    figure.colorbar(image, cax=figure.add_axes((0.92, 0.3, 0.015, 0.4)))
    figure.suptitle(f"{comparison.kind}: per-head statistics (word level, special slots kept; 0-based layers)")
    return figure


def plot_tag_counts(comparison: HeadComparison) -> Any:
    """Share of heads per tag (heads.tag_head), ours vs BERT."""
    counts = comparison.tag_counts()
    tags = sorted({t for c in counts.values() for t in c})
    figure = _figure(7, 3.2)
    ax = figure.add_subplot()
    width = 0.4
    for k, (name, total) in enumerate(zip(comparison.names, (len(comparison.stats_a), len(comparison.stats_b)))):
        shares = [counts[name].get(t, 0) / total for t in tags]
        ax.bar(np.arange(len(tags)) + (k - 0.5) * width, shares, width, label=f"{name} ({total} heads)")
    ax.set_xticks(range(len(tags)), tags, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("share of heads")
    ax.set_title(f"{comparison.kind}: head categories (vaswani_inspect.heads.tag_head)")
    ax.legend(fontsize=8)
    return figure


# ----------------------------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------------------------


def write_compare_report(
    result: CompareResult, out_dir: str | Path, *, image_format: str = "png", dpi: int = 110
) -> dict[str, Path]:
    """Write `report.json` (every number), figures and `index.md` (a readable summary) into `out_dir`.

    Per comparison `{kind}` ("encoder", "decoder"): `{kind}_distance.{fmt}` (heatmap), `{kind}_mds.{fmt}` (map),
    `{kind}_head_stats.{fmt}` (statistics side by side), `{kind}_tags.{fmt}`, and `{kind}_stats_ours.csv` /
    `{kind}_stats_bert.csv` (`vaswani_inspect.heads.head_statistics_table`). Returns {name: path}.
    """
    from .plots import save_figure

    if image_format not in ("png", "svg"):
        raise ValueError(f"image_format must be 'png' or 'svg', got {image_format!r}.")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    clock = time.perf_counter()
    for kind, comparison in result.comparisons.items():
        for name, plot in (
            ("distance", plot_distance_heatmap),
            ("mds", plot_mds),
            ("head_stats", plot_head_statistics),
            ("tags", plot_tag_counts),
        ):
            written[f"{kind}_{name}"] = save_figure(plot(comparison), out / f"{kind}_{name}.{image_format}", dpi=dpi)
        for side, stats in zip(comparison.names, (comparison.stats_a, comparison.stats_b)):
            path = out / f"{kind}_stats_{side}.csv"
            path.write_text(head_statistics_table(stats, "csv"), encoding="utf-8")
            written[f"{kind}_stats_{side}"] = path
    result.timings["report"] = time.perf_counter() - clock
    written["json"] = out / "report.json"
    written["json"].write_text(json.dumps(result.to_dict(), indent=1, ensure_ascii=False, allow_nan=False), "utf-8")
    written["index"] = out / "index.md"
    written["index"].write_text(_markdown(result, written, out), encoding="utf-8")
    return written


def _markdown(result: CompareResult, written: dict[str, Path], out: Path) -> str:
    settings = result.settings
    lines = [
        "# Our Transformer's heads vs BERT's heads",
        "",
        "Clark et al. (2019), *What Does BERT Look At?*: do the heads of our small translation Transformer do the same",
        "kinds of things as a pretrained BERT's? Both models read the same English sentences; their attention is",
        "merged to the same words (to a word: sum over its pieces; from a word: mean) and compared head by head.",
        "",
        f"* our model: `{settings['model']}`; BERT: `{settings['bert']}`",
        f"* sentences compared: {len(result.sentences)} of {settings['sentences_read']} read"
        + (f" ({len(result.skipped)} skipped, see `report.json`)" if result.skipped else ""),
        f"* special tokens in the distance: `{settings['specials']}` "
        + (
            "(the start/end slots are dropped and rows renormalised over the words)"
            if settings["specials"] == "drop"
            else "(start<->start, end<->end slots kept)"
        ),
        "* distance: Jensen-Shannon divergence (bits, 0 = same rows, 1 = disjoint), mean over word rows",
    ]
    lines += [f"* note: {note}" for note in result.notes]
    for kind, comparison in result.comparisons.items():
        summary = comparison.summary()
        title = (
            "Encoder (en->es, our encoder reads `>>es<< sentence </s>`) vs BERT"
            if kind == "encoder"
            else "Decoder self-attention (es->en, our decoder reads `<s> sentence </s>`) vs causally masked BERT"
        )
        lines += ["", f"## {title}", ""]
        lines += [
            f"{comparison.sentences} sentences, {comparison.words} words, {comparison.rows} word rows compared. "
            f"For {summary['same_tag_as_nearest']} of our {summary['heads_a']} heads the nearest BERT head has the "
            "same category. Median distance from one of our heads to its nearest BERT head: "
            f"{_fmt(summary['a_to_nearest_b_median'])}; from a BERT head to its nearest other BERT head: "
            f"{_fmt(summary['b_to_nearest_b_median'])} (the scale of 'close' inside BERT).",
            "",
            "| category | ours | BERT |",
            "|---|---|---|",
        ]
        counts = comparison.tag_counts()
        for tag in sorted({t for c in counts.values() for t in c}):
            lines.append(
                f"| {tag} | {counts[comparison.names[0]].get(tag, 0)} | {counts[comparison.names[1]].get(tag, 0)} |"
            )
        lines += [
            "",
            "| our head | category | special | prev | next | entropy (norm.) | nearest BERT head | its category | JS |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for stats, entry in zip(comparison.stats_a, comparison.nearest()):
            lines.append(
                f"| {entry['head']} | {_tag(entry['tag'], entry['focus'])} | {stats.special:.2f} "
                f"| {stats.previous:.2f} | {stats.next:.2f} | {stats.normalized_entropy:.2f} | {entry['nearest']} | "
                f"{_tag(entry['nearest_tag'], entry['nearest_focus'])} | {entry['distance']:.3f} |"
            )
        lines.append("")
        for name, caption in (
            ("distance", "Distance heatmap: our heads (rows) x BERT heads (columns); dots mark the nearest."),
            (
                "mds",
                "MDS map of all heads (Clark et al. Fig. 6): near = similar attention. Circles: ours; "
                "triangles: BERT; darker = deeper layer; grey lines: nearest BERT head.",
            ),
            ("head_stats", "Per-head statistics side by side (word level, special slots kept)."),
            ("tags", "Head categories."),
        ):
            path = written.get(f"{kind}_{name}")
            if path is not None:
                lines += [f"![{caption}]({path.relative_to(out).as_posix()})", "", f"*{caption}*", ""]
    lines += [
        "## How to read this",
        "",
        "Categories come from `vaswani_inspect.heads.tag_head`: *positional* (>= 50% of the weight on the previous,",
        "same or next word), *special-token* (>= 50% on the two special slots), *broad* (normalised entropy >= 0.8),",
        "else *other*. Layers and heads are numbered from 0. All numbers are in `report.json`.",
        "",
        "Attention is not explanation: a head that looks like a BERT head reads from the same places, which says",
        "nothing certain about what the model computes from them or why it translates as it does.",
        "",
    ]
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _tag(tag: str, focus: str) -> str:
    return f"{tag}/{focus}" if tag == "positional" and focus else tag


# ----------------------------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------------------------


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the `compare-bert` subcommand to an argparse `subparsers` object (sets `func`); returns its parser."""
    from .extract import AttentionUnavailableError

    parser = subparsers.add_parser(
        "compare-bert",
        help="compare our heads with a pretrained BERT's (Clark et al. 2019)",
        description=(
            "Run our encoder (en->es) and a BERT on the same English sentences, merge their attention to the same "
            "words, and write per-head statistics, head-to-head Jensen-Shannon distances, an MDS map of all heads "
            "and a summary (index.md, report.json, PNGs) into --out."
        ),
    )
    parser.add_argument("--bert", default=DEFAULT_BERT, help=f"BERT Hub id or local folder (default: {DEFAULT_BERT})")
    parser.add_argument(
        "--sentences", required=True, type=Path, help="English sentences, one per line (or English<TAB>Spanish)"
    )
    parser.add_argument("--out", required=True, type=Path, help="output folder")
    parser.add_argument("--model", type=Path, default=None, help="our checkpoint folder (default: the shipped one)")
    parser.add_argument("--max-sentences", type=int, default=None, help="use at most the first N sentences")
    parser.add_argument(
        "--decoder",
        action="store_true",
        help="also compare our decoder self-attention (English target, es->en) with causally masked BERT",
    )
    parser.add_argument(
        "--specials",
        choices=("drop", "keep"),
        default="drop",
        help="special-token slots in the distance: drop and renormalise (default) or keep",
    )
    parser.add_argument(
        "--on-long",
        choices=("skip", "error"),
        default="skip",
        help="sentences longer than either model accepts: skip with a warning (default) or stop with an error",
    )
    parser.add_argument("--batch-size", type=int, default=16, help="sentences per forward pass (default: 16)")
    parser.add_argument("--device", default=None, help="torch device for both models (default: cpu)")
    parser.add_argument("--format", choices=("png", "svg"), default="png", help="image format (default: png)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=run_compare_bert, user_errors=(AttentionUnavailableError,))
    return parser


def run_compare_bert(args: argparse.Namespace) -> int:
    """The `compare-bert` subcommand: returns 0 after writing the report."""
    sentences = read_sentences(args.sentences, args.max_sentences)
    check_bert(str(args.bert))  # fail fast, before loading anything large
    model, tokenizer = load_ours(args.model, device=args.device)
    bert, bert_tokenizer = load_bert(str(args.bert), device=args.device)
    from hf_vaswani.paths import DEFAULT_MODEL_PATH

    result = compare_bert(
        sentences,
        model,
        tokenizer,
        bert,
        bert_tokenizer,
        decoder=args.decoder,
        specials=args.specials,
        batch_size=args.batch_size,
        on_long=args.on_long,
        progress=not args.no_progress,
        model_name=str(args.model or DEFAULT_MODEL_PATH),
        bert_name=str(args.bert),
    )
    written = write_compare_report(result, args.out, image_format=args.format)
    for kind, comparison in result.comparisons.items():
        summary = comparison.summary()
        print(
            f"{kind}: {comparison.sentences} sentences, {summary['heads_a']} of our heads vs {summary['heads_b']} "
            f"BERT heads; {summary['same_tag_as_nearest']} of ours share the category of their nearest BERT head."
        )
    if result.skipped:
        print(f"skipped {len(result.skipped)} sentence(s); see report.json")
    print(f"report: {written['index']} ({len(written)} files)")
    return 0


__all__ = [
    "BERT_MODEL_TYPES",
    "DEFAULT_BERT",
    "STATISTICS",
    "CompareInputError",
    "CompareResult",
    "DistanceAccumulator",
    "HeadComparison",
    "Pieces",
    "Sentence",
    "WordGroups",
    "add_parser",
    "bert_attention",
    "check_bert",
    "comparable_rows",
    "compare_bert",
    "compare_records",
    "encode_pieces",
    "head_label",
    "js_divergence",
    "load_bert",
    "load_ours",
    "machine_description",
    "mds_embedding",
    "pairwise_js_sums",
    "plot_distance_heatmap",
    "plot_head_statistics",
    "plot_mds",
    "plot_tag_counts",
    "read_sentences",
    "run_compare_bert",
    "self_attention_record",
    "shared_words",
    "special_ids",
    "split_words",
    "word_groups",
    "word_level_record",
    "write_compare_report",
]
