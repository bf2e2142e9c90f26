"""The encoder-decoder Transformer of Vaswani et al. (2017), "Attention Is All You Need", as a `transformers` model.

Read top to bottom, the file follows the paper: 3.1 the layers of the encoder and decoder stacks, 3.2 attention,
3.3 the feed-forward network, 3.4 embeddings, 3.5 positional encoding; then the `transformers` classes that
assemble them into Figure 1 and train it with label smoothing (5.4). It imports only `torch`, `transformers` and
its two siblings (the configuration and two CPU training kernels), so that `save_pretrained` can ship all three
next to the weights for `trust_remote_code`.

Long because it is the whole model in one file, as the `transformers` single-model-file convention has it: a
`trust_remote_code` user gets this file (and its two siblings) copied next to the weights, not the hf_vaswani
package, and reads the paper in it from top to bottom without following imports into modules they do not have.
"""

import math
import os
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.cache_utils import Cache, DynamicCache, EncoderDecoderCache
from transformers.generation import GenerationMixin
from transformers.masking_utils import create_bidirectional_mask, create_causal_mask
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    BaseModelOutput,
    BaseModelOutputWithPastAndCrossAttentions,
    Seq2SeqLMOutput,
    Seq2SeqModelOutput,
)
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS, PreTrainedModel
from transformers.processing_utils import Unpack
from transformers.utils import TransformersKwargs, can_return_tuple, is_torchdynamo_compiling
from transformers.utils.deprecation import deprecate_kwarg
from transformers.utils.generic import merge_with_config_defaults
from transformers.utils.output_capturing import OutputRecorder, capture_outputs

from .configuration_vaswani import VaswaniConfig
from .kernels_vaswani import dropout, label_smoothed_cross_entropy

# --------------------------------------------------------------------------------------------------------------
# 3.1 Encoder and decoder stacks: N identical layers, each sub-layer wrapped in a residual connection + LayerNorm
# --------------------------------------------------------------------------------------------------------------


class VaswaniResidualLayer(GradientCheckpointingLayer):
    """What the layers of both stacks share: every sub-layer is wrapped as LayerNorm(x + Dropout(Sublayer(x)))
    (post-LN, sec. 3.1 and 5.4), or as x + Dropout(Sublayer(LayerNorm(x))) with `layer_norm_position="pre"`."""

    def __init__(self, config: VaswaniConfig):
        super().__init__()
        self.dropout = config.dropout
        self.pre_norm = config.layer_norm_position == "pre"

    def residual(self, x: torch.Tensor, norm: nn.LayerNorm, sublayer: Callable) -> torch.Tensor:
        if self.pre_norm:
            return x + dropout(sublayer(norm(x)), self.dropout, self.training)
        return norm(x + dropout(sublayer(x), self.dropout, self.training))


class VaswaniEncoderLayer(VaswaniResidualLayer):
    """An encoder layer: multi-head self-attention, then a position-wise feed-forward network."""

    def __init__(self, config: VaswaniConfig, layer_idx: int):
        super().__init__(config)
        self.self_attn = VaswaniAttention(config, config.encoder_attention_heads, layer_idx)
        self.self_attn_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.ffn = VaswaniFeedForward(config, config.encoder_ffn_dim)
        self.ffn_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> torch.Tensor:
        def self_attention(x: torch.Tensor) -> torch.Tensor:
            return self.self_attn(x, attention_mask=attention_mask, **kwargs)[0]

        hidden_states = self.residual(hidden_states, self.self_attn_layer_norm, self_attention)
        return self.residual(hidden_states, self.ffn_layer_norm, self.ffn)


class VaswaniDecoderLayer(VaswaniResidualLayer):
    """A decoder layer: masked self-attention, encoder-decoder attention over the encoder output, then the FFN."""

    def __init__(self, config: VaswaniConfig, layer_idx: int):
        super().__init__(config)
        heads = config.decoder_attention_heads
        self.self_attn = VaswaniAttention(config, heads, layer_idx, is_causal=True)
        self.self_attn_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.cross_attn = VaswaniAttention(config, heads, layer_idx, is_cross_attention=True)
        self.cross_attn_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.ffn = VaswaniFeedForward(config, config.decoder_ffn_dim)
        self.ffn_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)

    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        cache: Cache | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> torch.Tensor:
        def self_attention(x: torch.Tensor) -> torch.Tensor:
            return self.self_attn(x, attention_mask=attention_mask, cache=cache, **kwargs)[0]

        def cross_attention(x: torch.Tensor) -> torch.Tensor:
            return self.cross_attn(
                x,
                attention_mask=encoder_attention_mask,
                encoder_hidden_states=encoder_hidden_states,
                cache=cache,
                **kwargs,
            )[0]

        hidden_states = self.residual(hidden_states, self.self_attn_layer_norm, self_attention)
        hidden_states = self.residual(hidden_states, self.cross_attn_layer_norm, cross_attention)
        return self.residual(hidden_states, self.ffn_layer_norm, self.ffn)


# --------------------------------------------------------------------------------------------------------------
# 3.2 Attention
# --------------------------------------------------------------------------------------------------------------


def eager_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    dropout: float = 0.0,
    **kwargs: Unpack[TransformersKwargs],
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention (sec. 3.2.1, eq. 1): softmax(Q K^T / sqrt(d_k)) V.

    Returns the output and the attention weights (float32 or wider, before attention dropout: they sum to 1 per
    row even in a bf16 model, and keep a float64 model's precision). Takes the masks `transformers` builds for any
    attention implementation (additive float, boolean "may attend", or `None` for a causal module), so that
    weights can be computed on demand for a model that runs `sdpa`.
    """
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is None and getattr(module, "is_causal", False) and query.shape[2] > 1:
        attention_mask = _causal_mask(query.shape[2], key.shape[2], query.device)
    if attention_mask is not None:
        attention_mask = attention_mask[:, :, :, : key.shape[2]]
        if attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + attention_mask
    weights = F.softmax(scores, dim=-1, dtype=torch.promote_types(scores.dtype, torch.float32))
    dropped = F.dropout(weights.to(query.dtype), p=dropout, training=module.training)
    output = torch.matmul(dropped, value).transpose(1, 2).contiguous()
    return output, weights


def _causal_mask(query_length: int, key_length: int, device: torch.device) -> torch.Tensor:
    """Boolean (1, 1, q, k): query i, the last `query_length` positions, may attend to keys 0..i (sec. 3.2.3)."""
    offset = key_length - query_length
    query_positions = torch.arange(query_length, device=device).unsqueeze(-1) + offset
    return (torch.arange(key_length, device=device) <= query_positions)[None, None]


class VaswaniAttention(nn.Module):
    """Multi-head attention (sec. 3.2.2): MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O, where
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V), with d_k = d_v = d_model / h.

    The h projections W_i^Q of all heads are the rows of one (d_model, d_model) `q_proj`, and likewise for keys and
    values. Its three uses (sec. 3.2.3): encoder self-attention, decoder self-attention with `is_causal` (a
    position attends only to earlier ones), and encoder-decoder attention with `is_cross_attention` (queries from
    the decoder, keys and values from the encoder output, computed once per source and kept in the cache).

    `head_mask` (not in the paper: Michel et al. 2019) is None, or a tensor of h factors that scale each head's
    output before the concatenation: 0 switches a head off, 1 keeps it, and a mask that requires grad measures
    how much the loss depends on each head (`vaswani_inspect.ablate_heads` sets it).
    """

    def __init__(
        self,
        config: VaswaniConfig,
        num_heads: int,
        layer_idx: int,
        is_cross_attention: bool = False,
        is_causal: bool = False,
    ):
        super().__init__()
        self.config = config
        self.num_heads = num_heads
        self.head_dim = config.d_model // num_heads
        self.scaling = self.head_dim**-0.5  # 1 / sqrt(d_k)
        self.dropout = config.attention_dropout
        self.layer_idx = layer_idx
        self.is_cross_attention = is_cross_attention
        self.is_causal = is_causal
        self.q_proj = nn.Linear(config.d_model, config.d_model)
        self.k_proj = nn.Linear(config.d_model, config.d_model)
        self.v_proj = nn.Linear(config.d_model, config.d_model)
        self.out_proj = nn.Linear(config.d_model, config.d_model)
        self.head_mask: torch.Tensor | None = None

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        cache: Cache | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Returns the output and, when the eager path ran, the weights (batch, heads, queries, keys)."""
        batch, length, _ = hidden_states.shape
        query = self._heads(self.q_proj(hidden_states))
        if self.is_cross_attention:
            key, value = self._encoder_keys_values(encoder_hidden_states, cache)
        else:
            key, value = self._heads(self.k_proj(hidden_states)), self._heads(self.v_proj(hidden_states))
            if cache is not None:
                self_cache = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
                key, value = self_cache.update(key, value, self.layer_idx)

        output, weights = self._attention_function(kwargs)(
            self,
            query,
            key,
            value,
            attention_mask,
            dropout=self.dropout if self.training else 0.0,
            scaling=self.scaling,
            **kwargs,
        )
        if self.head_mask is not None:  # output: (batch, length, heads, d_v)
            output = output * self.head_mask.to(output.dtype)[:, None]
        return self.out_proj(output.reshape(batch, length, -1)), weights

    def _heads(self, projected: torch.Tensor) -> torch.Tensor:
        """(batch, length, d_model) -> (batch, heads, length, d_k): one slice of d_k columns per head."""
        batch, length, _ = projected.shape
        return projected.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def _encoder_keys_values(self, encoder_hidden_states: torch.Tensor, cache: Cache | None) -> tuple:
        cross_cache = cache.cross_attention_cache if isinstance(cache, EncoderDecoderCache) else None
        if cross_cache is not None and cache.is_updated.get(self.layer_idx):
            layer = cross_cache.layers[self.layer_idx]
            return layer.keys, layer.values
        key, value = self._heads(self.k_proj(encoder_hidden_states)), self._heads(self.v_proj(encoder_hidden_states))
        if cross_cache is not None:
            key, value = cross_cache.update(key, value, self.layer_idx)
            cache.is_updated[self.layer_idx] = True
        return key, value

    def _attention_function(self, kwargs: dict) -> Callable:
        # Only the eager path computes the weights: when they are asked for, this call runs it whatever the
        # model's implementation, instead of handing back `None` weights.
        wants_weights = kwargs.get("output_attentions", self.config.output_attentions)
        implementation = self.config._attn_implementation
        if wants_weights or implementation in (None, "eager"):
            return eager_attention_forward
        return ALL_ATTENTION_FUNCTIONS.get_interface(implementation, eager_attention_forward)


# --------------------------------------------------------------------------------------------------------------
# 3.3 Position-wise feed-forward networks
# --------------------------------------------------------------------------------------------------------------


class VaswaniFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 (eq. 2), the same at every position, d_model -> d_ff -> d_model."""

    def __init__(self, config: VaswaniConfig, inner_dim: int):
        super().__init__()
        self.fc1 = nn.Linear(config.d_model, inner_dim)
        self.fc2 = nn.Linear(inner_dim, config.d_model)
        self.activation = ACT2FN[config.activation_function]
        self.activation_dropout = config.activation_dropout

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = self.activation(self.fc1(hidden_states))
        hidden_states = dropout(hidden_states, self.activation_dropout, self.training)
        return self.fc2(hidden_states)


# --------------------------------------------------------------------------------------------------------------
# 3.4 Embeddings and softmax
# --------------------------------------------------------------------------------------------------------------


class VaswaniScaledEmbedding(nn.Embedding):
    """Learned token embeddings of size d_model, multiplied by sqrt(d_model) (`scale_embedding`).

    With one shared vocabulary, the encoder, the decoder and the pre-softmax linear transformation use the same
    weight matrix (`share_embeddings`, `tie_word_embeddings`; the tying is declared in the model classes below).
    """

    def __init__(self, vocab_size: int, config: VaswaniConfig):
        super().__init__(vocab_size, config.d_model, padding_idx=config.pad_token_id)
        self.scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return super().forward(input_ids) * self.scale


# --------------------------------------------------------------------------------------------------------------
# 3.5 Positional encoding
# --------------------------------------------------------------------------------------------------------------


class VaswaniSinusoidalPositionalEncoding(nn.Module):
    """PE(pos, 2i) = sin(pos / 10000^(2i / d_model)), PE(pos, 2i + 1) = cos(pos / 10000^(2i / d_model)).

    No weights: the rows are computed for the positions asked for, in float64 where the device has it, so they are
    exact after any dtype cast or `from_pretrained`. `layout="concatenated"` puts all sines before all cosines
    instead of interleaving them (Marian's layout).
    """

    def __init__(self, d_model: int, layout: str = "interleaved"):
        super().__init__()
        self.d_model = d_model
        self.layout = layout

    def forward(self, position_ids: torch.Tensor) -> torch.Tensor:
        dtype = torch.float32 if position_ids.device.type == "mps" else torch.float64
        two_i = torch.arange(0, self.d_model, 2, device=position_ids.device, dtype=dtype)
        angles = position_ids.to(dtype).unsqueeze(-1) * torch.pow(10000.0, -two_i / self.d_model)
        if self.layout == "interleaved":
            table = torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(-2)
        else:
            table = torch.cat((angles.sin(), angles.cos()), dim=-1)
        return table.to(torch.float32)


class VaswaniLearnedPositionalEmbedding(nn.Embedding):
    """Learned positional embeddings, the alternative the paper compares in Table 3, row (E)."""

    def __init__(self, max_positions: int, d_model: int):
        super().__init__(max_positions, d_model)


def build_positional_encoding(config: VaswaniConfig) -> nn.Module | None:
    if config.position_encoding == "sinusoidal":
        return VaswaniSinusoidalPositionalEncoding(config.d_model, config.sinusoidal_layout)
    if config.position_encoding == "learned":
        return VaswaniLearnedPositionalEmbedding(config.max_position_embeddings, config.d_model)
    return None  # "none": attention alone cannot tell the order of its inputs


# --------------------------------------------------------------------------------------------------------------
# The `transformers` classes: the two stacks, the encoder-decoder of Figure 1, and its output layer
# --------------------------------------------------------------------------------------------------------------


class VaswaniPreTrainedModel(PreTrainedModel):
    config: VaswaniConfig
    config_class = VaswaniConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = True
    _no_split_modules = ["VaswaniEncoderLayer", "VaswaniDecoderLayer"]
    _supports_sdpa = True
    _supports_attention_backend = True
    _can_compile_fullgraph = True

    def _init_weights(self, module: nn.Module) -> None:
        """Xavier-uniform projections with zero biases and N(0, d_model^-0.5) embeddings: the paper leaves the
        initialization open; these are tensor2tensor's choices."""
        if isinstance(module, nn.Linear):
            init.xavier_uniform_(module.weight)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=self.config.init_std or self.config.d_model**-0.5)
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, nn.LayerNorm):
            init.ones_(module.weight)
            init.zeros_(module.bias)
        elif isinstance(module, VaswaniForConditionalGeneration) and module.final_logits_bias is not None:
            init.zeros_(module.final_logits_bias)

    def save_pretrained(self, save_directory: str | os.PathLike, *args: Any, **kwargs: Any) -> Any:
        """`PreTrainedModel.save_pretrained`, and the saved folder serves the translation pipeline that config.json's
        ``custom_pipelines`` names, as the shipped folder does (after `from_pretrained`, a PEFT merge, training).

        transformers writes a model file's relative imports with it, into the folder (and into its module cache
        when it loads remote code), so the import below puts ``pipeline_vaswani.py`` next to this file wherever the
        model's code is written. When it is not (the class is registered for no auto class), the pipeline entry is
        left out of the saved config.json rather than naming a file that is not there.

        With the code, config.json's ``auto_map`` names the bare encoder-decoder for ``AutoModel`` too (transformers
        writes the saved class's entry alone): bertviz and other tools load it that way with ``trust_remote_code``."""
        from .pipeline_vaswani import VaswaniTranslationPipeline

        ours = f"pipeline_vaswani.{VaswaniTranslationPipeline.__name__}"
        pipelines = getattr(self.config, "custom_pipelines", None)
        if type(self)._auto_class is not None:  # as transformers decides
            bare = f"{VaswaniModel.__module__.rsplit('.', 1)[-1]}.{VaswaniModel.__name__}"
            self.config.auto_map = {"AutoModel": bare, **(getattr(self.config, "auto_map", None) or {})}
        if type(self)._auto_class is not None or not isinstance(pipelines, dict):
            return super().save_pretrained(save_directory, *args, **kwargs)
        kept = {
            task: entry
            for task, entry in pipelines.items()
            if not (isinstance(entry, dict) and entry.get("impl") == ours)
        }
        if kept:
            self.config.custom_pipelines = kept
        else:
            del self.config.custom_pipelines
        try:
            return super().save_pretrained(save_directory, *args, **kwargs)
        finally:
            self.config.custom_pipelines = pipelines

    def get_expanded_tied_weights_keys(self, all_submodels: bool = False) -> dict:
        # `transformers` ties nothing when `tie_word_embeddings` is False, but here sharing the encoder and decoder
        # embeddings (`share_embeddings`) and tying the output projection are two separate choices.
        if all_submodels:
            return super().get_expanded_tied_weights_keys(all_submodels=True)
        return dict(self._tied_weights_keys or {})


class VaswaniStack(VaswaniPreTrainedModel):
    """What the encoder and decoder share: the input of the first layer is the token embeddings (sec. 3.4) plus the
    positional encodings (sec. 3.5), with dropout on the sum (sec. 5.4); the pre-LN variant adds a final LayerNorm."""

    def __init__(self, config: VaswaniConfig, vocab_size: int):
        super().__init__(config)
        self.embed_tokens = VaswaniScaledEmbedding(vocab_size, config)
        self.embed_positions = build_positional_encoding(config)
        pre_norm = config.layer_norm_position == "pre"
        self.layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if pre_norm else None

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embed_tokens

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embed_tokens = value

    def embed(self, input_ids: torch.Tensor | None, inputs_embeds: torch.Tensor | None, past_length: int = 0):
        """Token embeddings (or the given `inputs_embeds`, already scaled) + positional encodings, then dropout."""
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("Pass exactly one of input_ids and inputs_embeds.")
        if inputs_embeds is None:
            _check_token_ids(input_ids, self.embed_tokens.num_embeddings, past_length)
            inputs_embeds = self.embed_tokens(input_ids)
        elif inputs_embeds.dim() != 3 or inputs_embeds.shape[-1] != self.config.d_model:
            raise ValueError(
                f"inputs_embeds must have shape (batch, sequence_length, {self.config.d_model}), "
                f"got {tuple(inputs_embeds.shape)}."
            )
        length = inputs_embeds.shape[1]
        if not is_torchdynamo_compiling() and past_length + length > self.config.max_position_embeddings:
            raise ValueError(
                f"Sequence of {past_length + length} positions is longer than max_position_embeddings="
                f"{self.config.max_position_embeddings}: truncate the input (tokenizer(..., truncation=True))."
            )
        hidden_states = inputs_embeds
        if self.embed_positions is not None:
            # arange(length) + past rather than arange(past, past + length): a static cache's length is a tensor
            positions = torch.arange(length, device=hidden_states.device) + past_length
            hidden_states = hidden_states + self.embed_positions(positions).to(hidden_states.dtype)
        return dropout(hidden_states, self.config.dropout, self.training)

    def finish(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return hidden_states if self.layer_norm is None else self.layer_norm(hidden_states)


def _check_token_ids(input_ids: torch.Tensor, vocab_size: int, past_length: int | torch.Tensor = 0) -> None:
    """Shape always; the range of the ids only when nothing is cached yet (the source, a decoder's first step): a
    later decoding step feeds back the model's own predictions, and reading their range would cost a host sync on
    every step on a GPU. (A static cache's length is a tensor once it holds something.)"""
    if input_ids.dim() != 2:
        raise ValueError(f"input ids must have shape (batch, sequence_length), got {tuple(input_ids.shape)}.")
    if input_ids.is_floating_point() or input_ids.is_complex() or input_ids.dtype == torch.bool:
        raise ValueError(f"input ids must be whole token ids (torch.long), got a tensor of {input_ids.dtype}.")
    if input_ids.shape[1] == 0:
        raise ValueError("input ids hold no token (shape (batch, 0)): every sequence needs at least one.")
    if is_torchdynamo_compiling() or input_ids.numel() == 0 or isinstance(past_length, torch.Tensor) or past_length:
        return
    low, high = (int(value) for value in torch.aminmax(input_ids))
    if low < 0 or high >= vocab_size:
        raise ValueError(
            f"input ids contain the id {low if low < 0 else high}, outside the vocabulary [0, {vocab_size})."
        )


def _check_mask_shape(mask: torch.Tensor | None, expected: tuple[int, ...], name: str) -> None:
    """A 2-D padding mask must match its sequence; 4-D masks (built by `generate` for a static cache) pass."""
    if mask is not None and mask.dim() != 4 and tuple(mask.shape) != tuple(expected):
        raise ValueError(f"{name} must have shape {tuple(expected)}, got {tuple(mask.shape)}.")


def _check_source_visible(mask: torch.Tensor | None) -> None:
    """A source row whose padding mask hides every position leaves attention nothing to read: the softmax then
    spreads over the masked positions, and the model translates padding without a word."""
    if mask is None or mask.dim() != 2 or is_torchdynamo_compiling():
        return
    hidden = ~mask.bool().any(dim=-1)
    if bool(hidden.any()):
        row = int(hidden.nonzero()[0, 0])
        raise ValueError(f"attention_mask masks every position of source row {row}: nothing is left to translate.")


class VaswaniEncoder(VaswaniStack):
    """The encoder: a stack of N identical layers of self-attention and feed-forward network (sec. 3.1)."""

    _can_record_outputs = {"hidden_states": VaswaniEncoderLayer, "attentions": VaswaniAttention}

    def __init__(self, config: VaswaniConfig):
        super().__init__(config, config.vocab_size)
        self.layers = nn.ModuleList([VaswaniEncoderLayer(config, i) for i in range(config.encoder_layers)])
        self.post_init()

    @merge_with_config_defaults
    @capture_outputs
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> BaseModelOutput:
        hidden_states = self.embed(input_ids, inputs_embeds)
        _check_mask_shape(attention_mask, hidden_states.shape[:2], "attention_mask")
        _check_source_visible(attention_mask)
        mask = create_bidirectional_mask(config=self.config, inputs_embeds=hidden_states, attention_mask=attention_mask)
        for layer in self.layers:
            hidden_states = layer(hidden_states, mask, **kwargs)
        return BaseModelOutput(last_hidden_state=self.finish(hidden_states))


class VaswaniDecoder(VaswaniStack):
    """The decoder: N identical layers of masked self-attention, encoder-decoder attention and feed-forward
    network (sec. 3.1). Masking keeps position i from attending to later positions, so that the prediction for
    position i depends only on the outputs before it."""

    _can_record_outputs = {
        "hidden_states": VaswaniDecoderLayer,
        "attentions": OutputRecorder(VaswaniAttention, index=1, layer_name="self_attn"),
        "cross_attentions": OutputRecorder(VaswaniAttention, index=1, layer_name="cross_attn"),
    }

    def __init__(self, config: VaswaniConfig):
        super().__init__(config, config.decoder_vocab_size)
        self.layers = nn.ModuleList([VaswaniDecoderLayer(config, i) for i in range(config.decoder_layers)])
        self.post_init()

    @merge_with_config_defaults
    @capture_outputs
    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> BaseModelOutputWithPastAndCrossAttentions:
        if use_cache and cache is None:
            cache = EncoderDecoderCache(DynamicCache(config=self.config), DynamicCache(config=self.config))
        past_length = cache.get_seq_length() if cache is not None else 0
        hidden_states = self.embed(input_ids, inputs_embeds, past_length)
        batch, length = hidden_states.shape[:2]
        if encoder_hidden_states is not None and encoder_hidden_states.shape[0] != batch:
            raise ValueError(
                f"The decoder batch ({batch}) and the encoder batch ({encoder_hidden_states.shape[0]}) differ."
            )
        _check_mask_shape(attention_mask, (batch, past_length + length), "decoder_attention_mask")
        if encoder_hidden_states is not None:
            _check_mask_shape(encoder_attention_mask, encoder_hidden_states.shape[:2], "attention_mask")

        self_cache = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
        causal_mask = create_causal_mask(
            config=self.config, inputs_embeds=hidden_states, attention_mask=attention_mask, cache=self_cache
        )
        cross_mask = create_bidirectional_mask(
            config=self.config,
            inputs_embeds=hidden_states,
            attention_mask=encoder_attention_mask,
            encoder_hidden_states=encoder_hidden_states,
        )
        for layer in self.layers:
            hidden_states = layer(hidden_states, causal_mask, encoder_hidden_states, cross_mask, cache=cache, **kwargs)
        return BaseModelOutputWithPastAndCrossAttentions(last_hidden_state=self.finish(hidden_states), cache=cache)


class VaswaniModel(VaswaniPreTrainedModel):
    """The encoder-decoder of Figure 1, without the final linear transformation and softmax."""

    def __init__(self, config: VaswaniConfig):
        super().__init__(config)
        self.encoder = VaswaniEncoder(config)
        self.decoder = VaswaniDecoder(config)
        if config.share_embeddings:  # sec. 3.4: one embedding matrix for both stacks
            self._tied_weights_keys = {"decoder.embed_tokens.weight": "encoder.embed_tokens.weight"}
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.embed_tokens

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.encoder.embed_tokens = value
        if self.config.share_embeddings:
            self.decoder.embed_tokens = value

    def get_encoder(self, modality: str | None = None) -> VaswaniEncoder:
        return self.encoder

    def get_decoder(self) -> VaswaniDecoder:
        return self.decoder

    @can_return_tuple
    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: tuple[torch.Tensor] | BaseModelOutput | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> Seq2SeqModelOutput:
        r"""Encode the source (`input_ids`, `attention_mask`: 1 for tokens, 0 for padding) unless `encoder_outputs`
        is given, then decode `decoder_input_ids` (the targets shifted right behind `decoder_start_token_id`)."""
        if (decoder_input_ids is None) == (decoder_inputs_embeds is None):  # checked before the encoder's work
            raise ValueError(
                "Pass exactly one of decoder_input_ids and decoder_inputs_embeds, or labels to "
                "VaswaniForConditionalGeneration (which then feeds the decoder the labels shifted right)."
            )
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds, **kwargs
            )
        elif not isinstance(encoder_outputs, BaseModelOutput):
            encoder_outputs = BaseModelOutput(*encoder_outputs)
        decoder_outputs = self.decoder(
            input_ids=decoder_input_ids,
            attention_mask=decoder_attention_mask,
            encoder_hidden_states=encoder_outputs.last_hidden_state,
            encoder_attention_mask=attention_mask,
            cache=cache,
            inputs_embeds=decoder_inputs_embeds,
            use_cache=use_cache,
            **kwargs,
        )
        return Seq2SeqModelOutput(
            last_hidden_state=decoder_outputs.last_hidden_state,
            cache=decoder_outputs.cache,
            decoder_hidden_states=decoder_outputs.hidden_states,
            decoder_attentions=decoder_outputs.attentions,
            cross_attentions=decoder_outputs.cross_attentions,
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
            encoder_hidden_states=encoder_outputs.hidden_states,
            encoder_attentions=encoder_outputs.attentions,
        )


def shift_tokens_right(labels: torch.Tensor, pad_token_id: int, decoder_start_token_id: int) -> torch.Tensor:
    """Decoder inputs for teacher forcing: the targets shifted one position right behind the start token."""
    shifted = labels.new_full(labels.shape, decoder_start_token_id)
    shifted[:, 1:] = labels[:, :-1]
    return shifted.masked_fill(shifted == -100, pad_token_id)


class VaswaniForConditionalGeneration(VaswaniPreTrainedModel, GenerationMixin):
    """The whole model of Figure 1: the encoder-decoder plus the pre-softmax linear transformation (sec. 3.4),
    trained with label smoothing (sec. 5.4). `generate()` decodes with greedy search, beam search or sampling."""

    def __init__(self, config: VaswaniConfig):
        super().__init__(config)
        self.model = VaswaniModel(config)
        self.lm_head = nn.Linear(config.d_model, config.decoder_vocab_size, bias=False)
        bias = torch.zeros(1, config.decoder_vocab_size) if config.final_logits_bias else None
        self.final_logits_bias = nn.Parameter(bias) if bias is not None else None
        tied = {}
        if config.share_embeddings:
            tied["model.decoder.embed_tokens.weight"] = "model.encoder.embed_tokens.weight"
        if config.tie_word_embeddings:  # sec. 3.4: the output projection is the (decoder's) embedding matrix
            source = "model.encoder" if config.share_embeddings else "model.decoder"
            tied["lm_head.weight"] = f"{source}.embed_tokens.weight"
        self._tied_weights_keys = tied
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.model.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.model.set_input_embeddings(value)

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def set_output_embeddings(self, value: nn.Linear) -> None:
        self.lm_head = value

    def get_encoder(self, modality: str | None = None) -> VaswaniEncoder:
        return self.model.encoder

    def get_decoder(self) -> VaswaniDecoder:
        return self.model.decoder

    @can_return_tuple
    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: tuple[torch.Tensor] | BaseModelOutput | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> Seq2SeqLMOutput:
        r"""As `VaswaniModel.forward`, plus `labels` (batch, target_length): the target ids, -100 where no loss is
        wanted (padding). With `labels` alone, `decoder_input_ids` are the labels shifted right. The loss is
        label-smoothed with `config.label_smoothing` and averaged over the target tokens (or divided by
        `num_items_in_batch`, which `Trainer` passes when it accumulates gradients)."""
        num_items_in_batch = kwargs.pop("num_items_in_batch", None)
        if labels is not None:
            use_cache = False
            if decoder_input_ids is None and decoder_inputs_embeds is None:
                decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
        outputs = self.model(
            input_ids,
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=decoder_attention_mask,
            encoder_outputs=encoder_outputs,
            cache=cache,
            inputs_embeds=inputs_embeds,
            decoder_inputs_embeds=decoder_inputs_embeds,
            use_cache=use_cache,
            **kwargs,
        )
        logits = self.lm_head(outputs.last_hidden_state)
        if self.final_logits_bias is not None:
            logits = logits + self.final_logits_bias
        loss = None
        if labels is not None:
            if labels.shape != logits.shape[:2]:
                raise ValueError(f"labels have shape {tuple(labels.shape)}, logits {tuple(logits.shape[:2])}.")
            loss = label_smoothed_cross_entropy(logits, labels, self.config.label_smoothing, num_items_in_batch)
        return Seq2SeqLMOutput(
            loss=loss,
            logits=logits,
            cache=outputs.cache,
            decoder_hidden_states=outputs.decoder_hidden_states,
            decoder_attentions=outputs.decoder_attentions,
            cross_attentions=outputs.cross_attentions,
            encoder_last_hidden_state=outputs.encoder_last_hidden_state,
            encoder_hidden_states=outputs.encoder_hidden_states,
            encoder_attentions=outputs.encoder_attentions,
        )

    def resize_token_embeddings(self, *args, **kwargs) -> nn.Embedding:
        """`PreTrainedModel.resize_token_embeddings`, keeping the decoder vocabulary (one with the encoder's when
        `share_embeddings`) and `final_logits_bias` the size of the output layer, so the resized model saves and
        loads again."""
        embeddings = super().resize_token_embeddings(*args, **kwargs)
        size = self.get_output_embeddings().weight.shape[0]
        self.config.decoder_vocab_size = size
        if self.final_logits_bias is not None and self.final_logits_bias.shape[-1] != size:
            bias = self.final_logits_bias.new_zeros(1, size)
            bias[:, : min(size, self.final_logits_bias.shape[-1])] = self.final_logits_bias[:, :size]
            self.final_logits_bias = nn.Parameter(bias)
        return embeddings

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: `decoder_start_token_id` followed by the labels without their last position."""
        return shift_tokens_right(labels, self.config.pad_token_id, self.config.decoder_start_token_id)


__all__ = [
    "VaswaniEncoder",
    "VaswaniDecoder",
    "VaswaniModel",
    "VaswaniForConditionalGeneration",
    "VaswaniPreTrainedModel",
]
