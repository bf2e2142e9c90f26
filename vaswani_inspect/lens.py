"""The logit lens and the decoder lens: what each layer of an encoder-decoder already "knows" about the output.

* `logit_lens` (nostalgebraist 2020, on the decoder): every decoder layer's output, at every target position, read
  as if it were the last one: through the decoder's final norm where the architecture has one (pre-norm models:
  M2M100 / NLLB, mBART, T5, ours with ``layer_norm_position="pre"``; post-norm models, Marian, BART and ours by
  default, have none, each layer's output is already normalised) and the model's own output layer
  (`architectures.output_logits`: T5's d_model^-0.5 scaling, Marian's bias). The last layer is therefore the
  model's own distribution.
* `decoder_lens` (Langedijk et al. 2023, "DecoderLens"): the decoder, unchanged, reads each encoder layer's output
  in place of the encoder's last one and writes its greedy translation. As the paper does, an intermediate
  layer's output goes through the encoder's final norm where the architecture's encoder has one (so the decoder
  reads states on the scale it was trained on); the last layer's is then exactly the encoder's output.

Layer 0 is the embeddings in both (the input of the stack's first layer: token embeddings plus positions, as the
stack computes them), layer i >= 1 the output of layer i: ``layers`` is ``["embeddings", "1", ..., "N"]``.

Positions of the logit lens follow `AttentionRecord`'s rows: the decoder reads `target_ids` (the decoder start token,
then the translation and ``</s>``) teacher-forced, and position t reads ``target_tokens[t]`` and predicts
``target_tokens[t + 1]``; there are ``len(target_ids) - 1`` positions (the last input, ``</s>``, predicts nothing).

    >>> lens = logit_lens(model, tokenizer, "Me senté en el banco de la plaza.", direction="es-en")
    >>> lens.top_tokens[-1][4]        # the model's own top-5 pieces at position 4
    >>> lens.target_probs[:, 4]       # p(the translation's piece) after each layer
    >>> decoder_lens(model, tokenizer, "Me senté en el banco de la plaza.", direction="es-en").translations
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .architectures import final_norm, output_logits, position_limit, stack_layers
from .extract import (
    _decode_output,
    _device,
    _direction,
    _eval_mode,
    _generate,
    _generate_settings,
    _source_ids,
    _target_ids,
)
from .pieces import piece_labels

__all__ = [
    "DecoderLens",
    "LogitLens",
    "decoder_lens",
    "decoder_lens_from_ids",
    "layer_states",
    "logit_lens",
    "logit_lens_from_ids",
]


@dataclass(frozen=True, eq=False)
class LogitLens:
    """What each decoder layer would predict at each target position (`logit_lens`).

    Attributes:
        layers: the layer names, ``"embeddings"`` then ``"1"`` .. ``"N"`` (the last is the model's own output).
        top_tokens: ``top_tokens[layer][position]``: the k most probable pieces (the tokenizer's piece labels), most
            probable first.
        top_ids: (layers, positions, k) their ids.
        top_probs: (layers, positions, k) their probabilities, non-increasing along k.
        target_probs: (layers, positions) the probability of the piece the translation has next,
            ``target_ids[position + 1]``.
        kl_to_final: (layers, positions) KL(final || layer) in nats: how far the layer's distribution is from the
            model's own (0 at the last layer).
        target_ids: the decoder inputs (start token, translation, ``</s>``), as in `AttentionRecord`.
        target_tokens: their piece labels.
        source_ids, source_tokens: the source as the encoder read it.
        target_text: the translation read (the model's own when no target was given).
        direction: the direction asked for, if any.
    """

    layers: list[str]
    top_tokens: list[list[list[str]]]
    top_ids: np.ndarray
    top_probs: np.ndarray
    target_probs: np.ndarray
    kl_to_final: np.ndarray
    target_ids: list[int]
    target_tokens: list[str]
    source_ids: list[int]
    source_tokens: list[str]
    target_text: str = ""
    direction: str | None = None

    @property
    def positions(self) -> int:
        """How many target positions are read: ``len(target_ids) - 1``."""
        return len(self.target_ids) - 1

    def first_top_layer(self, position: int) -> int | None:
        """The index of the first layer from which on the translation's next piece at `position` stays top-1
        (None when the last layer does not rank it first: a translation the model did not write)."""
        hits = self.top_ids[:, position, 0] == self.target_ids[position + 1]
        if not hits[-1]:
            return None
        misses = np.flatnonzero(~hits)
        return 0 if misses.size == 0 else int(misses[-1]) + 1

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready copy of every field (arrays as nested lists)."""
        return {
            "layers": self.layers,
            "source_tokens": self.source_tokens,
            "source_ids": self.source_ids,
            "target_tokens": self.target_tokens,
            "target_ids": self.target_ids,
            "target_text": self.target_text,
            "direction": self.direction,
            "top_tokens": self.top_tokens,
            "top_ids": self.top_ids.tolist(),
            "top_probs": self.top_probs.tolist(),
            "target_probs": self.target_probs.tolist(),
            "kl_to_final": self.kl_to_final.tolist(),
        }


@dataclass(frozen=True, eq=False)
class DecoderLens:
    """The greedy translation the decoder writes from each encoder layer's output (`decoder_lens`).

    Attributes:
        layers: ``"embeddings"`` then ``"1"`` .. ``"N"``; the last translation is ``generate(num_beams=1)``'s.
        translations: the text written from each layer's output.
        token_ids: the decoder ids of each (start token, pieces, ``</s>`` when it ended).
        source_ids: the source as the encoder read it.
        direction: the direction asked for, if any.
    """

    layers: list[str]
    translations: list[str]
    token_ids: list[list[int]]
    source_ids: list[int]
    direction: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready copy of every field."""
        return {
            "layers": self.layers,
            "translations": self.translations,
            "token_ids": self.token_ids,
            "source_ids": self.source_ids,
            "direction": self.direction,
        }


def _layer_names(count: int) -> list[str]:
    return ["embeddings", *(str(i) for i in range(1, count + 1))]


def _first(value: Any) -> torch.Tensor:
    return value if isinstance(value, torch.Tensor) else value[0]


@contextlib.contextmanager
def layer_states(layers: Sequence[torch.nn.Module]) -> Iterator[list[torch.Tensor]]:
    """Inside the block, every forward of the stack of `layers` fills the yielded list with the first layer's input
    (the embeddings) and each layer's output (the hidden states, not the attention weights), in order."""
    found: list[torch.Tensor] = []

    def before(module: Any, args: tuple, kwargs: dict) -> None:
        found.append(args[0] if args else kwargs["hidden_states"])

    def after(module: Any, args: tuple, output: Any) -> None:
        found.append(_first(output))

    handles = [layers[0].register_forward_pre_hook(before, with_kwargs=True)]
    handles += [layer.register_forward_hook(after) for layer in layers]
    try:
        yield found
    finally:
        for handle in handles:
            handle.remove()


def _normed(model: Any, side: str, states: torch.Tensor) -> torch.Tensor:
    norm = final_norm(model, side)
    return states if norm is None else norm(states)


def _check_k(k: Any) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}.")


def logit_lens(
    model: Any,
    tokenizer: Any,
    source: str,
    *,
    direction: str | None = None,
    target: str | None = None,
    k: int = 5,
) -> LogitLens:
    """What each decoder layer would predict at each target position (module docstring).

    Args:
        model: an encoder-decoder model of a supported architecture (`vaswani_inspect.architectures`); it runs in
            eval mode, its training flag restored afterwards.
        tokenizer: its tokenizer.
        source: the sentence to translate (the direction's language token, code or prefix added as `extract` does).
        direction: e.g. ``"es-en"``.
        target: a translation to read teacher-forced; None reads the model's own translation, made as `extract`
            makes it (the model's generation settings).
        k: how many top pieces to keep per layer and position.

    Raises:
        ValueError: `k` not a positive integer (or larger than the vocabulary), a source or target `extract`
            refuses, a direction the model does not translate.
        UnsupportedModelError: a model whose layers this toolkit cannot find.
    """
    _check_k(k)
    how = _direction(model, tokenizer, direction)
    limit = position_limit(model.config)
    source_ids = _source_ids(model, tokenizer, [source], how, limit, False)[0]
    if target is not None:
        target_ids = _target_ids(model, tokenizer, [target], how, limit, False)[0]
    else:
        with _eval_mode(model), torch.inference_mode():
            settings = _generate_settings(model, None, [source_ids], limit, how)
            target_ids = _generate(model, tokenizer, [source_ids], settings)[0]
    return logit_lens_from_ids(
        model,
        tokenizer,
        source_ids,
        target_ids,
        k=k,
        target_text=target if target is not None else _decode_output(tokenizer, target_ids),
        direction=direction,
    )


def logit_lens_from_ids(
    model: Any,
    tokenizer: Any,
    source_ids: Sequence[int],
    target_ids: Sequence[int],
    *,
    k: int = 5,
    target_text: str = "",
    direction: str | None = None,
) -> LogitLens:
    """`logit_lens` of given ids: `source_ids` as the encoder reads them and `target_ids` the decoder inputs
    (start token, translation, ``</s>``), e.g. an `AttentionRecord`'s; `target_text` and `direction` are only
    recorded."""
    _check_k(k)
    source_ids, target_ids = list(source_ids), list(target_ids)
    if not source_ids or len(target_ids) < 2:
        raise ValueError("The logit lens needs a source and a translation of at least one piece after the start.")
    device = _device(model)
    layers = stack_layers(model, "decoder")
    with _eval_mode(model), torch.inference_mode():
        with layer_states(layers) as states:
            model(
                input_ids=torch.tensor([source_ids], device=device),
                decoder_input_ids=torch.tensor([target_ids[:-1]], device=device),
                use_cache=False,
            )
        hidden = torch.stack([state[0] for state in states[: len(layers) + 1]])  # (layers + 1, positions, d)
        log_p = torch.log_softmax(output_logits(model, _normed(model, "decoder", hidden)).float(), dim=-1)
        if k > log_p.shape[-1]:
            raise ValueError(f"k={k} is more than the vocabulary's {log_p.shape[-1]} pieces.")
        top_log_p, top_ids = log_p.topk(k, dim=-1)  # sorted, most probable first
        labels = torch.tensor(target_ids[1:], device=log_p.device)
        target_log_p = log_p.gather(-1, labels.expand(log_p.shape[0], -1)[..., None])[..., 0]
        final = log_p[-1]
        kl = (final.exp() * (final - log_p)).sum(-1).clamp_min(0.0)
    ids = top_ids.cpu().numpy()
    return LogitLens(
        layers=_layer_names(len(layers)),
        top_tokens=[[piece_labels(tokenizer, row.tolist()) for row in layer] for layer in ids],
        top_ids=ids,
        top_probs=top_log_p.exp().cpu().numpy().astype(np.float64),
        target_probs=target_log_p.exp().cpu().numpy().astype(np.float64),
        kl_to_final=kl.cpu().numpy().astype(np.float64),
        target_ids=target_ids,
        target_tokens=piece_labels(tokenizer, target_ids),
        source_ids=source_ids,
        source_tokens=piece_labels(tokenizer, source_ids),
        target_text=target_text,
        direction=direction,
    )


def _greedy_settings(model: Any, source_ids: list[int], direction: Any, max_new_tokens: int | None) -> dict[str, Any]:
    """The generation settings `extract` uses for `source_ids` (the direction's forced tokens, the length limit),
    made greedy: ``num_beams=1`` and no sampling."""
    settings = {"num_beams": 1, "do_sample": False}
    if max_new_tokens is not None:
        settings["max_new_tokens"] = max_new_tokens
    return _generate_settings(model, settings, [source_ids], position_limit(model.config), direction)


def decoder_lens(
    model: Any,
    tokenizer: Any,
    source: str,
    *,
    direction: str | None = None,
    max_new_tokens: int | None = None,
) -> DecoderLens:
    """The greedy translation the decoder writes from each encoder layer's output (module docstring).

    The generation settings are `extract`'s (the model's generation config, the direction's forced tokens, its
    length limit or `max_new_tokens`), with ``num_beams=1`` and ``do_sample=False``: the last layer's translation
    is ``model.generate(input_ids, num_beams=1, do_sample=False, ...)``'s.

    Raises:
        ValueError: a source `extract` refuses, a direction the model does not translate.
        UnsupportedModelError: a model whose layers this toolkit cannot find.
    """
    how = _direction(model, tokenizer, direction)
    source_ids = _source_ids(model, tokenizer, [source], how, position_limit(model.config), False)[0]
    return decoder_lens_from_ids(model, tokenizer, source_ids, direction=direction, max_new_tokens=max_new_tokens)


def decoder_lens_from_ids(
    model: Any,
    tokenizer: Any,
    source_ids: Sequence[int],
    *,
    direction: str | None = None,
    max_new_tokens: int | None = None,
) -> DecoderLens:
    """`decoder_lens` of given source ids (as the encoder reads them, e.g. an `AttentionRecord`'s); `direction`
    gives the generation settings it forces (a first target-language token)."""
    from transformers.modeling_outputs import BaseModelOutput

    source_ids = list(source_ids)
    how = _direction(model, tokenizer, direction)
    settings = _greedy_settings(model, source_ids, how, max_new_tokens)
    device = _device(model)
    layers = stack_layers(model, "encoder")
    with _eval_mode(model), torch.inference_mode():
        ids = torch.tensor([source_ids], device=device)
        with layer_states(layers) as states:
            model.get_encoder()(input_ids=ids, attention_mask=torch.ones_like(ids))
        outputs = []
        for state in states[: len(layers) + 1]:
            encoded = BaseModelOutput(last_hidden_state=_normed(model, "encoder", state))
            outputs += _generate(model, tokenizer, [source_ids], {**settings, "encoder_outputs": encoded})
    return DecoderLens(
        layers=_layer_names(len(layers)),
        translations=[_decode_output(tokenizer, output) for output in outputs],
        token_ids=outputs,
        source_ids=source_ids,
        direction=direction,
    )
