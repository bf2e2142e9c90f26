"""Positions: the model's positional encoding, read from its own module, and the order-blindness of attention.

* `positional_encoding(model)`: what the encoder's positional module gives (`PositionalEncoding`). For a sinusoidal
  (ours, Marian, M2M100/NLLB) or learned (BART, mBART, ours with ``position_encoding="learned"``) encoding, the table
  added to the embeddings, one row per position, and the cosine similarity of its rows; for T5, the relative
  position bias that the first layer's table adds to each head's scores, per (query, key) pair and per distance.
  The numbers are the module's output while the encoder runs (a forward hook), not a formula recomputed here: the
  BART/mBART table starts at row 2 of its weight, M2M100's at row ``padding_idx + 1``, and that is read too
  (`PositionalEncoding.offset`).
* `order_blindness(model, tokenizer, source)`: self-attention is a weighted sum over a set, so without positions
  the encoder gives each token the same vector whatever the order of the others. The sentence and a shuffle of its
  words (or of its pieces; special tokens in place) are encoded twice, as the model does and with the positional
  module's output zeroed; per encoder layer, how far each token's vector in the shuffle is from its vector in the
  sentence (`OrderBlindness`): without positions only float error, with positions clearly more.

Which module holds the positions, and what kind it is, is `vaswani_inspect.architectures.position_module`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .architectures import architecture_of, position_limit, position_module

__all__ = ["DEFAULT_POSITIONS", "OrderBlindness", "PositionalEncoding", "order_blindness", "positional_encoding"]

#: Positions read by `positional_encoding` when none are asked for (fewer when the model has fewer).
DEFAULT_POSITIONS = 50


@dataclass(frozen=True, eq=False)
class PositionalEncoding:
    """The positional encoding of a model's encoder (`positional_encoding`).

    Attributes:
        kind: "sinusoidal", "learned" (a table added to the embeddings) or "relative" (T5: a bias on the scores).
        architecture: the model's architecture (`vaswani_inspect.architectures.architecture_of`), e.g. "vaswani".
        positions: the positions read, 0 .. n - 1.
        table: (n, d_model) the vector added to the embedding at each position; None for "relative".
        similarity: (n, n) cosine similarity of the table's rows (position to position); None for "relative".
        bias: (heads, n, n) for "relative": what head h adds to the score of query i and key j; else None.
        distances: for "relative", the key-minus-query distances -(n - 1) .. n - 1 (keys after the query are
            positive); else None.
        bias_by_distance: (heads, 2n - 1) for "relative": the bias of each head at each distance; else None.
        offset: the row of the module's weight table that holds position 0 (2 for BART and mBART, 0 for Marian);
            None when the module has no table (ours computes the sinusoids) or for "relative".
    """

    kind: str
    architecture: str
    positions: np.ndarray
    table: np.ndarray | None = None
    similarity: np.ndarray | None = None
    bias: np.ndarray | None = None
    distances: np.ndarray | None = None
    bias_by_distance: np.ndarray | None = None
    offset: int | None = None


def positional_encoding(model: Any, *, positions: int | None = None) -> PositionalEncoding:
    """The positional encoding of `model`'s encoder for positions 0 .. `positions` - 1 (`PositionalEncoding`).

    Args:
        model: an encoder-decoder model of a supported architecture (`vaswani_inspect.architectures`).
        positions: how many positions to read; default `DEFAULT_POSITIONS`, or the model's limit when lower.

    Raises:
        ValueError: `positions` below 1 or beyond the model's position limit; a model without positional encoding.
        UnsupportedModelError: the model's positional module is not where its architecture's entry says.
    """
    limit = position_limit(model.config)
    if positions is None:
        positions = DEFAULT_POSITIONS if limit is None else min(DEFAULT_POSITIONS, limit)
    if not isinstance(positions, int) or isinstance(positions, bool) or positions < 1:
        raise ValueError(f"positions must be a whole number of at least 1, got {positions!r}.")
    if limit is not None and positions > limit:
        raise ValueError(f"positions={positions} is beyond the model's {limit} positions (max_position_embeddings).")
    module, kind = position_module(model)
    output = _module_output(model, module, positions).double().cpu()
    name = architecture_of(model).name
    steps = np.arange(positions)
    if kind == "relative":
        bias = output.permute(2, 0, 1).numpy()  # (queries, keys, heads) -> (heads, queries, keys)
        # Row n - 1 holds the distances -(n - 1) .. 0 (keys before the last query), row 0 the distances 0 .. n - 1.
        by_distance = np.concatenate([bias[:, -1, :], bias[:, 0, 1:]], axis=1)
        distances = np.arange(-(positions - 1), positions)
        return PositionalEncoding(kind, name, steps, bias=bias, distances=distances, bias_by_distance=by_distance)
    table = output.reshape(-1, positions, output.shape[-1])[0].numpy()
    return PositionalEncoding(kind, name, steps, table, _cosine_matrix(table), offset=_table_offset(module, table))


def _cosine_matrix(table: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(table, axis=-1, keepdims=True)
    unit = table / np.maximum(norms, 1e-12)
    return unit @ unit.T


class _Captured(Exception):
    """Raised by the capturing hook once the positional module has run: the rest of the encoder is not needed."""


def _module_output(model: Any, module: torch.nn.Module, length: int) -> torch.Tensor:
    """What `module` outputs while the encoder reads `length` tokens (one token repeated: absolute positions do
    not depend on the tokens; M2M100 numbers only the tokens that are not padding, so it is not the pad token)."""
    from .extract import _device, _eval_mode

    captured: list[torch.Tensor] = []

    def capture(_module: torch.nn.Module, _inputs: Any, output: Any) -> None:
        captured.append(output.detach())
        raise _Captured

    pad = getattr(model.config, "pad_token_id", None)
    token = 1 if pad == 0 else 0
    ids = torch.full((1, length), token, dtype=torch.long, device=_device(model))
    handle = module.register_forward_hook(capture)
    try:
        with _eval_mode(model), torch.inference_mode(), contextlib.suppress(_Captured):
            model.get_encoder()(input_ids=ids)
    finally:
        handle.remove()
    if not captured:
        raise RuntimeError(f"The positional module {type(module).__name__} did not run when the encoder read tokens.")
    return captured[0]


def _table_offset(module: torch.nn.Module, table: np.ndarray) -> int | None:
    """The row of the module's own (positions, d_model) weight or buffer where `table` starts, if it has one."""
    tensors = [*module.parameters(recurse=False), *module.buffers(recurse=False)]
    for tensor in tensors:
        if tensor.dim() != 2 or tensor.shape[1] != table.shape[1] or tensor.shape[0] < len(table):
            continue
        weights = tensor.detach().double().cpu().numpy()
        for start in range(weights.shape[0] - len(table) + 1):
            if np.allclose(weights[start], table[0], atol=1e-6) and np.allclose(
                weights[start : start + len(table)], table, atol=1e-6
            ):
                return start
    return None


@dataclass(frozen=True, eq=False)
class OrderBlindness:
    """The sentence and a shuffle of it through the encoder, with and without positions (`order_blindness`).

    Distances are cosine distances (1 - cosine similarity) between a token's vector in the shuffled sentence and
    the same token's vector in the sentence; entry 0 is the encoder's input (embeddings, plus positions where the
    model adds them to the embeddings), entry i the output of encoder layer i, as ``output_hidden_states`` gives them.

    Attributes:
        source: the sentence as given.
        tokens: the pieces the encoder read (special tokens included).
        shuffled_tokens: the same pieces shuffled (whole words, or pieces), special tokens in their places.
        shuffled_source: the shuffled sentence as text (special tokens left out).
        permutation: ``shuffled_tokens[k] == tokens[permutation[k]]``.
        kind: the kind of positional encoding switched off (`PositionalEncoding.kind`).
        architecture: the model's architecture name.
        with_positions / without_positions: (encoder layers + 1,) the mean distance over the tokens, as the model
            runs and with its positional module's output zeroed (T5: no relative bias); rounding below 0 is 0.
        with_positions_max / without_positions_max: the same, the largest distance of a token.
    """

    source: str
    tokens: list[str]
    shuffled_tokens: list[str]
    shuffled_source: str
    permutation: list[int]
    kind: str
    architecture: str
    with_positions: np.ndarray
    without_positions: np.ndarray
    with_positions_max: np.ndarray
    without_positions_max: np.ndarray


def order_blindness(
    model: Any, tokenizer: Any, source: str, *, direction: str | None = None, seed: int = 0, words: bool = True
) -> OrderBlindness:
    """Encode `source` and a shuffle of its pieces, with and without the model's positions (`OrderBlindness`).

    Args:
        model, tokenizer: an encoder-decoder model of a supported architecture and its tokenizer.
        source: one sentence, read as `vaswani_inspect.extract` reads it (`direction` adds the language token).
        seed: the shuffle's random seed (the shuffle is never the sentence itself).
        words: shuffle whole words, each keeping its pieces in order (`vaswani_inspect.words.word_spans`), so that
            the shuffle reads as the same words in another order; False shuffles the pieces themselves.

    Raises:
        ValueError: what `extract` refuses in a source; fewer than two different words (pieces) to shuffle; a model
            without positional encoding.
    """
    from .extract import _check_model, _device, _direction, _eval_mode, _source_ids, _special_tokens
    from .pieces import piece_labels
    from .words import is_special, word_spans

    if not isinstance(source, str):
        raise ValueError(f"source must be one sentence (a string), got {type(source).__name__}.")
    config = _check_model(model)
    module, kind = position_module(model)
    (ids,) = _source_ids(
        model, tokenizer, [source], _direction(model, tokenizer, direction), position_limit(config), False
    )
    tokens = piece_labels(tokenizer, ids)
    specials = _special_tokens(tokenizer)
    units = word_spans(tokens, specials) if words else [[i] for i in range(len(tokens))]
    movable = [k for k, unit in enumerate(units) if not (len(unit) == 1 and is_special(tokens[unit[0]], specials))]
    permutation = _shuffle(ids, units, movable, seed, "words" if words else "pieces")
    shuffled = [ids[i] for i in permutation]
    device = _device(model)
    batch = torch.tensor([ids, shuffled], dtype=torch.long, device=device)
    with _eval_mode(model), torch.inference_mode():
        states = _hidden_states(model, batch)
        with _zeroed(module):
            blind = _hidden_states(model, batch)
    with_mean, with_max = _distances(states, permutation)
    without_mean, without_max = _distances(blind, permutation)
    return OrderBlindness(
        source=source.strip(),
        tokens=tokens,
        shuffled_tokens=[tokens[i] for i in permutation],
        shuffled_source=tokenizer.decode(shuffled, skip_special_tokens=True).strip(),
        permutation=permutation,
        kind=kind,
        architecture=architecture_of(model).name,
        with_positions=with_mean,
        without_positions=without_mean,
        with_positions_max=with_max,
        without_positions_max=without_max,
    )


def _shuffle(ids: list[int], units: list[list[int]], movable: list[int], seed: int, what: str) -> list[int]:
    """A permutation of the positions that moves the `movable` units (each a run of positions, in order) among
    their places, keeps the others in place, and changes the sequence of ids."""
    if len({tuple(ids[i] for i in units[k]) for k in movable}) < 2:
        raise ValueError(f"order_blindness() needs a sentence of at least two different {what} to shuffle.")
    generator = np.random.default_rng(seed)
    while True:  # two different units are swapped by half of the shuffles at least: this ends quickly
        order = list(range(len(units)))
        for place, taken in zip(movable, generator.permutation(movable)):
            order[place] = int(taken)
        permutation = [position for k in order for position in units[k]]
        if [ids[i] for i in permutation] != ids:
            return permutation


def _hidden_states(model: Any, batch: torch.Tensor) -> np.ndarray:
    """(2, layers + 1, tokens, d_model): the encoder's hidden states of both rows, in float64."""
    output = model.get_encoder()(input_ids=batch, output_hidden_states=True, return_dict=True)
    return torch.stack(tuple(output.hidden_states), dim=1).double().cpu().numpy()


@contextlib.contextmanager
def _zeroed(module: torch.nn.Module) -> Iterator[None]:
    """Inside, `module` outputs zeros: no positions added to the embeddings, or no relative bias on the scores."""
    handle = module.register_forward_hook(lambda _module, _inputs, output: torch.zeros_like(output))
    try:
        yield
    finally:
        handle.remove()


def _distances(states: np.ndarray, permutation: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Per layer, the mean and the largest cosine distance between each token in the shuffle and in the sentence."""
    original, shuffled = states[0][:, permutation], states[1]  # token k of the shuffle is token permutation[k]
    dot = (original * shuffled).sum(-1)
    norms = np.linalg.norm(original, axis=-1) * np.linalg.norm(shuffled, axis=-1)
    distance = np.maximum(0.0, 1.0 - dot / np.maximum(norms, 1e-12))
    return distance.mean(axis=-1), distance.max(axis=-1)
