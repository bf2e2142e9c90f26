"""`AttentionRecord`: every attention matrix of one translation, with its tokens, in plain numpy.

Conventions (used by every other module of this package):

* `source_tokens` are the encoder inputs, e.g. `[">>en<<", "▁el", "▁gato", "▁negro", "</s>"]` (S tokens).
* `target_tokens` are the decoder *inputs* of the teacher-forced pass: the decoder start token `<s>` followed by
  the output tokens, e.g. `["<s>", "▁the", "▁black", "▁cat", "</s>"]` (T tokens). Row `t` of `decoder` and of
  `cross` is computed at decoder input token `t` and is the attention used to *predict* `target_tokens[t + 1]`;
  the last row (input `</s>`) predicts nothing the translation contains.
* `encoder` has shape (L_enc, H_enc, S, S), `decoder` (L_dec, H_dec, T, T) and `cross` (L_dec, H_dec, T, S);
  every row (last axis) is a softmax distribution that sums to 1.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np

Kind = Literal["encoder", "decoder", "cross"]
KINDS: tuple[str, ...] = get_args(Kind)
FORMAT_VERSION = 1
#: Default number of decimals kept by `AttentionRecord.to_json` (`None` keeps every float32 bit).
JSON_DECIMALS = 6


@dataclass(eq=False)
class AttentionRecord:
    """The attention weights of one source/target pair, as returned by `vaswani_inspect.extract`.

    Attributes:
        source_tokens: encoder input pieces (S), special tokens included.
        target_tokens: decoder input pieces (T): `<s>` followed by the output pieces (see the module docstring:
            row t predicts token t + 1).
        source_ids / target_ids: the ids of those tokens.
        encoder: (L_enc, H_enc, S, S) encoder self-attention, float32.
        decoder: (L_dec, H_dec, T, T) decoder (masked) self-attention, float32, lower-triangular.
        cross: (L_dec, H_dec, T, S) encoder-decoder attention, float32.
        source_text / target_text: the source sentence and the translation (or reference) as text.
        model_name: where the model came from (`config._name_or_path` or a path).
        direction: e.g. `"es-en"` (source-target languages) or `None` when unknown.
        generate_kwargs: the `generate()` settings that produced the output, or `None` when the target was given
            (teacher forcing on a reference).
        special_tokens: the structural special tokens (language tokens, `<s>`, `</s>`, `<pad>`) that the word-level
            functions keep as their own "words" or drop. `<unk>` is not one of them: it stands for real text.
        level: `"token"` (subword pieces) or `"word"` (after `vaswani_inspect.to_words`).
        metadata: anything else (word merge settings, truncation notes, ...); must be JSON-serialisable.
        alignment: the model's alignment configuration (`VaswaniConfig.alignment`: ``{"layer": 2, "heads": [1],
            "shift": False}``), which `vaswani_inspect.align` uses by default; `None` when the model has none (then
            the mean of all layers and heads). Records saved without it load with `None`.
    """

    source_tokens: list[str]
    target_tokens: list[str]
    source_ids: list[int]
    target_ids: list[int]
    encoder: np.ndarray
    decoder: np.ndarray
    cross: np.ndarray
    source_text: str = ""
    target_text: str = ""
    model_name: str = ""
    direction: str | None = None
    generate_kwargs: dict[str, Any] | None = None
    special_tokens: list[str] = field(default_factory=list)
    level: str = "token"
    metadata: dict[str, Any] = field(default_factory=dict)
    alignment: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.source_tokens = [str(t) for t in self.source_tokens]
        self.target_tokens = [str(t) for t in self.target_tokens]
        self.source_ids = [int(i) for i in self.source_ids]
        self.target_ids = [int(i) for i in self.target_ids]
        self.encoder = np.asarray(self.encoder, dtype=np.float32)
        self.decoder = np.asarray(self.decoder, dtype=np.float32)
        self.cross = np.asarray(self.cross, dtype=np.float32)
        self.alignment = check_alignment(self.alignment)
        self._validate()

    # ------------------------------------------------------------------------------------------------------------
    # Checks and accessors
    # ------------------------------------------------------------------------------------------------------------

    def _validate(self) -> None:
        s, t = len(self.source_tokens), len(self.target_tokens)
        if s == 0 or t == 0:
            raise ValueError(f"An AttentionRecord needs tokens on both sides, got {s} source and {t} target tokens.")
        if len(self.source_ids) != s or len(self.target_ids) != t:
            raise ValueError(
                f"source_ids/target_ids ({len(self.source_ids)}/{len(self.target_ids)}) must match the tokens "
                f"({s}/{t})."
            )
        for name in KINDS:
            array = getattr(self, name)
            if array.ndim != 4 or array.size == 0:
                raise ValueError(
                    f"AttentionRecord.{name} must be a non-empty (layers, heads, queries, keys) array, "
                    f"got shape {array.shape}."
                )
        expected = {"encoder": (s, s), "decoder": (t, t), "cross": (t, s)}
        for name, (rows, cols) in expected.items():
            shape = getattr(self, name).shape
            if shape[2:] != (rows, cols):
                raise ValueError(
                    f"AttentionRecord.{name} has {shape[2]}x{shape[3]} query/key positions, but the tokens give "
                    f"{rows}x{cols}."
                )
        if self.decoder.shape[:2] != self.cross.shape[:2]:
            raise ValueError(
                f"decoder {self.decoder.shape[:2]} and cross {self.cross.shape[:2]} attention must have the same "
                "(layers, heads): both live in the decoder layers."
            )

    def attention(self, kind: str) -> np.ndarray:
        """The (layers, heads, queries, keys) array of `kind` ("encoder", "decoder" or "cross")."""
        return getattr(self, check_kind(kind))

    def num_layers(self, kind: str) -> int:
        """Number of layers of `kind` attention."""
        return self.attention(kind).shape[0]

    def num_heads(self, kind: str) -> int:
        """Number of heads per layer of `kind` attention."""
        return self.attention(kind).shape[1]

    def query_tokens(self, kind: str) -> list[str]:
        """Tokens labelling the rows of `kind` attention (the target side for decoder and cross)."""
        return self.source_tokens if check_kind(kind) == "encoder" else self.target_tokens

    def key_tokens(self, kind: str) -> list[str]:
        """Tokens labelling the columns of `kind` attention (the source side for encoder and cross)."""
        return self.target_tokens if check_kind(kind) == "decoder" else self.source_tokens

    def layer_index(self, kind: str, layer: int) -> int:
        """Validate a layer index of `kind` (negative indices count from the end) and return it non-negative."""
        return _check_index("layer", layer, self.num_layers(kind), kind)

    def head_index(self, kind: str, head: int) -> int:
        """Validate a head index of `kind` (negative indices count from the end) and return it non-negative."""
        return _check_index("head", head, self.num_heads(kind), kind)

    def select(self, kind: str, layer: int | str = "mean", head: int | str = "mean") -> np.ndarray:
        """One (queries, keys) matrix: a layer index or `"mean"` over layers, a head index or `"mean"` over heads."""
        array = self.attention(kind)
        if layer == "mean":
            array = array.mean(axis=0)
        else:
            array = array[self.layer_index(kind, _as_int(layer, "layer"))]
        if head == "mean":
            return array.mean(axis=0)
        return array[self.head_index(kind, _as_int(head, "head"))]

    # ------------------------------------------------------------------------------------------------------------
    # Equality
    # ------------------------------------------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AttentionRecord):
            return NotImplemented
        return self.allclose(other, atol=0.0)

    __hash__ = None  # type: ignore[assignment]  # mutable, like every dataclass with eq

    def allclose(self, other: AttentionRecord, atol: float = 1e-6) -> bool:
        """True when both records have the same tokens, ids, metadata and attention arrays within `atol`."""
        same_meta = all(getattr(self, name) == getattr(other, name) for name in _META_FIELDS)
        same_arrays = all(
            getattr(self, name).shape == getattr(other, name).shape
            and np.allclose(getattr(self, name), getattr(other, name), atol=atol, rtol=0.0)
            for name in KINDS
        )
        return same_meta and same_arrays

    # ------------------------------------------------------------------------------------------------------------
    # JSON
    # ------------------------------------------------------------------------------------------------------------

    def to_dict(self, decimals: int | None = JSON_DECIMALS) -> dict[str, Any]:
        """A JSON-ready dict; the arrays become nested lists rounded to `decimals` (see `to_json`)."""
        data: dict[str, Any] = {"format": "vaswani_inspect.AttentionRecord", "version": FORMAT_VERSION}
        for name in _META_FIELDS:
            data[name] = getattr(self, name)
        data["decimals"] = decimals
        for name in KINDS:
            data[name] = _array_to_lists(getattr(self, name), decimals)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AttentionRecord:
        """Rebuild a record from `to_dict` output."""
        if data.get("format") != "vaswani_inspect.AttentionRecord":
            raise ValueError("This JSON is not a vaswani_inspect AttentionRecord (no matching 'format' field).")
        if int(data.get("version", 0)) > FORMAT_VERSION:
            raise ValueError(f"AttentionRecord format version {data['version']} is newer than {FORMAT_VERSION}.")
        kwargs = {name: data[name] for name in _META_FIELDS if name in data}
        for name in KINDS:
            kwargs[name] = np.asarray(data[name], dtype=np.float32)
        return cls(**kwargs)

    def to_json(self, decimals: int | None = JSON_DECIMALS, indent: int | None = None) -> str:
        """Serialise to JSON.

        Rounding: with `decimals=None` every float32 value is written exactly, and `from_json(to_json())` equals the
        record bit for bit. With an integer (default 6) each weight is written as `round(w, decimals)`, so the
        round trip differs from the original by at most `0.5 * 10**-decimals` plus float32 rounding (about 6e-8
        for weights in [0, 1]); tokens, ids and metadata always round-trip exactly.
        """
        return json.dumps(self.to_dict(decimals), ensure_ascii=False, indent=indent, allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> AttentionRecord:
        """Inverse of `to_json`."""
        return cls.from_dict(json.loads(text))

    def save(self, path: str | Path, decimals: int | None = JSON_DECIMALS) -> Path:
        """Write `to_json(decimals)` to `path` (gzip-compressed when the name ends in `.gz`); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = self.to_json(decimals)
        if path.suffix == ".gz":
            with gzip.open(path, "wt", encoding="utf-8") as handle:
                handle.write(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> AttentionRecord:
        """Read a record written by `save`."""
        path = Path(path)
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                return cls.from_json(handle.read())
        return cls.from_json(path.read_text(encoding="utf-8"))

    def __repr__(self) -> str:
        return (
            f"AttentionRecord(level={self.level!r}, direction={self.direction!r}, source={len(self.source_tokens)} "
            f"tokens, target={len(self.target_tokens)} tokens, encoder={self.encoder.shape}, "
            f"decoder={self.decoder.shape}, cross={self.cross.shape})"
        )


_META_FIELDS = (
    "source_tokens",
    "target_tokens",
    "source_ids",
    "target_ids",
    "source_text",
    "target_text",
    "model_name",
    "direction",
    "generate_kwargs",
    "special_tokens",
    "level",
    "metadata",
    "alignment",
)


def check_kind(kind: str) -> str:
    """Return `kind` if it names an attention type, else raise a ValueError listing the valid ones."""
    if kind not in KINDS:
        raise ValueError(f"Unknown attention kind {kind!r}: choose one of {', '.join(KINDS)}.")
    return kind


def check_alignment(alignment: Any) -> dict[str, Any] | None:
    """A JSON-ready copy of an alignment configuration (`AttentionRecord.alignment`), None for None, or a
    ValueError when it is not one. Layer and head indices are checked against the attention when it is used."""
    if alignment is None:
        return None
    if isinstance(alignment, dict) and set(alignment) in ({"layer", "heads", "shift"}, _AVERAGED_KEYS):
        checked = _checked_reading(alignment)
        extra = alignment.get("average_with", [])
        readings = [_checked_reading(r) if isinstance(r, dict) and set(r) == _READING_KEYS else None for r in extra]
        if checked is not None and all(readings) and ("average_with" not in alignment or readings):
            return {**checked, "average_with": readings} if readings else checked
    raise ValueError(
        "AttentionRecord.alignment must be None or {'layer': int or 'mean', 'heads': a list of ints or 'all', "
        "'shift': bool}, optionally with 'average_with': a non-empty list of such readings (without "
        f"'average_with'), got {alignment!r}."
    )


_READING_KEYS = {"layer", "heads", "shift"}
_AVERAGED_KEYS = {"layer", "heads", "shift", "average_with"}


def _checked_reading(reading: dict[str, Any]) -> dict[str, Any] | None:
    """A JSON-ready copy of one reading ``{"layer", "heads", "shift"}``, or None when it is not one."""
    layer, heads, shift = reading["layer"], reading["heads"], reading["shift"]
    layer_ok = layer == "mean" or (isinstance(layer, (int, np.integer)) and not isinstance(layer, bool))
    heads_ok = heads == "all" or (
        isinstance(heads, (list, tuple))
        and bool(heads)
        and all(isinstance(h, (int, np.integer)) and not isinstance(h, bool) for h in heads)
    )
    if not (layer_ok and heads_ok and isinstance(shift, (bool, np.bool_))):
        return None
    return {
        "layer": layer if layer == "mean" else int(layer),
        "heads": heads if heads == "all" else [int(h) for h in heads],
        "shift": bool(shift),
    }


def _as_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer index or 'mean', got {value!r}.")
    return int(value)


def _check_index(name: str, index: Any, count: int, kind: str) -> int:
    index = _as_int(index, name)
    if not -count <= index < count:
        raise ValueError(
            f"{name} {index} does not exist: the {kind} attention has {count} {name}s (valid: 0..{count - 1}, "
            f"or negative from the end)."
        )
    return index % count


def _array_to_lists(array: np.ndarray, decimals: int | None) -> list:
    if not np.all(np.isfinite(array)):
        raise ValueError("Attention arrays contain NaN or infinite values; they cannot be written as JSON.")
    if decimals is None:
        # float32 -> float64 is exact and Python's repr round-trips float64, so the float32 value is recovered.
        return array.astype(np.float64).tolist()
    if decimals < 0:
        raise ValueError(f"decimals must be >= 0 or None, got {decimals}.")
    return np.round(array.astype(np.float64), decimals).tolist()


def rounding_tolerance(decimals: int | None) -> float:
    """The largest difference `to_json(decimals)` can introduce in a weight in [0, 1] (see `to_json`)."""
    return 0.0 if decimals is None else 0.5 * 10.0**-decimals + 2.0 * float(np.finfo(np.float32).eps)


__all__ = ["AttentionRecord", "KINDS", "JSON_DECIMALS", "check_alignment", "check_kind", "rounding_tolerance"]
