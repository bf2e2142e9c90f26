"""The encoder-decoder Transformer of Vaswani et al. (2017), "Attention Is All You Need", as a `transformers` model.

Section numbers in the docstrings refer to the paper. This file imports only `torch`, `transformers` and its
configuration (a relative import), so that `save_pretrained` can ship it for `trust_remote_code`.
"""

import math
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


def shift_tokens_right(labels: torch.Tensor, pad_token_id: int, decoder_start_token_id: int) -> torch.Tensor:
    """Decoder inputs for teacher forcing: the targets shifted one position right behind the start token."""
    shifted = labels.new_full(labels.shape, decoder_start_token_id)
    shifted[:, 1:] = labels[:, :-1]
    return shifted.masked_fill(shifted == -100, pad_token_id)


def _tracing() -> bool:
    """Under `torch.compile` or `torch.jit.trace`: the eager-only speed paths (cached tables and layouts) are off."""
    return is_torchdynamo_compiling() or torch.jit.is_tracing()


# --------------------------------------------------------------------------------------------------------------
# 3.5 Positional encoding
# --------------------------------------------------------------------------------------------------------------


class VaswaniSinusoidalPositionalEncoding(nn.Module):
    """Sec. 3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d_model)) and PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)).

    The table has no weights and is computed for the positions asked for, in float64 where the device has it, so
    that it is exact after any `from_pretrained`, dtype cast or device move. `layout="concatenated"` puts every
    sine before every cosine instead of interleaving them (Marian's layout).

    `rows(start, length, device)` returns the rows of consecutive positions from a float32 table computed once
    per device (not a buffer: no dtype cast can touch it), so that a decoding step does not recompute sines and
    cosines; under `torch.compile` it computes them in the graph instead.
    """

    def __init__(self, d_model: int, layout: str = "interleaved"):
        super().__init__()
        self.d_model = d_model
        self.layout = layout
        self._tables: dict[torch.device, torch.Tensor] = {}

    def forward(self, position_ids: torch.Tensor) -> torch.Tensor:
        dtype = torch.float32 if position_ids.device.type == "mps" else torch.float64
        frequencies = torch.arange(0, self.d_model, 2, device=position_ids.device, dtype=dtype)
        inverse_wavelengths = torch.pow(10000.0, -frequencies / self.d_model)
        angles = position_ids.to(dtype).unsqueeze(-1) * inverse_wavelengths
        if self.layout == "interleaved":
            table = torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(-2)
        else:
            table = torch.cat((angles.sin(), angles.cos()), dim=-1)
        return table.to(torch.float32)

    def rows(self, start: int, length: int, device: torch.device, max_positions: int) -> torch.Tensor:
        """The encodings of positions start .. start + length - 1 (<= max_positions), shape (length, d_model)."""
        if _tracing():
            return self(torch.arange(start, start + length, device=device))
        table = self._tables.get(device)
        if table is None or table.shape[0] < start + length:
            size = min(max_positions, max(64, 1 << (start + length - 1).bit_length()))
            # A plain tensor even when the first call runs under inference_mode, so that training can use it.
            with torch.inference_mode(False), torch.no_grad():
                table = self(torch.arange(size, device=device))
            self._tables[device] = table
        return table[start : start + length]


class VaswaniLearnedPositionalEmbedding(nn.Embedding):
    """Learned positional embeddings, the alternative of sec. 3.5 (Table 3, row E)."""

    def __init__(self, max_positions: int, d_model: int):
        super().__init__(max_positions, d_model)


def build_positional_encoding(config: VaswaniConfig) -> nn.Module | None:
    if config.position_encoding == "sinusoidal":
        return VaswaniSinusoidalPositionalEncoding(config.d_model, config.sinusoidal_layout)
    if config.position_encoding == "learned":
        return VaswaniLearnedPositionalEmbedding(config.max_position_embeddings, config.d_model)
    return None


def _mkl_packed_linear_available() -> bool:
    try:
        return torch.backends.mkl.is_available() and hasattr(torch.ops.mkl, "_mkl_reorder_linear_weight")
    except (AttributeError, RuntimeError):
        return False


_MKL_PACKED_LINEAR = _mkl_packed_linear_available()


class VaswaniLinear(nn.Linear):
    """`nn.Linear` (the projections of sec. 3.2-3.4) with a faster inference path on the CPU.

    A decoding step multiplies only a few rows (batch x beams) by each weight, and for such small products the CPU
    BLAS spends much of its time re-arranging W on every call. So in eval mode without autograd the layer keeps a
    pre-arranged copy of its weight: W^T contiguous (any number of rows), and, once it sees the same number of
    rows twice in a row in float32 (the steps of a `generate()` loop), MKL's packed GEMM format for that row count
    (`torch.ops.mkl`, the kernel `torch.compile` uses for frozen CPU linears); a single row (one sentence, greedy)
    keeps the row-major weight, the best layout for a matrix-vector product. `generate()` on 32 sentences runs
    1.09-1.19x as fast as with `nn.Linear` (`benchmarks/bench_decoding.py`). The copies are made again whenever
    the weight changes (in-place updates bump its version) and dropped by `train(True)`, but not by `eval()`,
    which evaluation and translation loops call before every batch (re-making them costs 5-10 % of a
    `generate()` call). Training products have thousands of rows and gain nothing from them, and under
    `torch.compile` or on an accelerator the plain `F.linear` is used. The state dict and saved files are those of
    `nn.Linear`; the cost is memory: while the model runs inference on the CPU, up to two more copies of a
    projection's weight (W^T, and the packed one for the layers that decode in float32).
    """

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if self.training or torch.is_grad_enabled() or self.weight.device.type != "cpu" or _tracing():
            return F.linear(input, self.weight, self.bias)
        return self._inference_forward(input)

    def _inference_forward(self, input: torch.Tensor) -> torch.Tensor:
        weight = self.weight
        rows = input.numel() // input.shape[-1] if input.shape[-1] else 0
        if rows <= 1:  # a matrix-vector product: the row-major weight is the fastest layout (1-sentence greedy)
            return F.linear(input, weight, self.bias)
        version = weight._version if not weight.is_inference() else 0  # inference tensors cannot change
        key = (weight.data_ptr(), version, weight.dtype, weight.shape)
        cached = self.__dict__.get("_inference_weights")
        if cached is None or cached["key"] != key:
            cached = {"key": key, "rows": None, "packed": None, "column_major": None}
            self.__dict__["_inference_weights"] = cached
        # Each entry is read once into a local and replaced whole, so that threads sharing the model (a demo
        # serving requests) never pair a packed weight with another row count.
        packed = cached["packed"]  # (rows, packed weight) or None
        packable = _MKL_PACKED_LINEAR and weight.dtype == torch.float32 and input.dtype == torch.float32
        if packable and (packed is None or packed[0] != rows) and cached["rows"] == rows:
            # The same row count twice in a row: a decoding loop. The W^T copy stays for other row counts, so that
            # varying encoder shapes do not re-pack or re-transpose on every call.
            packed = (rows, torch.ops.mkl._mkl_reorder_linear_weight(weight.detach(), rows))
            cached["packed"] = packed
        cached["rows"] = rows
        if packable and packed is not None and packed[0] == rows:
            return torch.ops.mkl._mkl_linear(input, packed[1], weight, self.bias, rows)
        column_major = cached["column_major"]
        if column_major is None:
            # The same (out, in) matrix with W^T contiguous in memory; kept out of the state dict on purpose.
            column_major = weight.detach().t().contiguous().t()
            cached["column_major"] = column_major
        return F.linear(input, column_major, self.bias)

    def train(self, mode: bool = True) -> "VaswaniLinear":
        if mode:  # training makes the copies useless; `eval()` keeps them for the next inference call
            self.__dict__.pop("_inference_weights", None)
        return super().train(mode)


def vaswani_dropout(hidden_states: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Dropout as in sec. 5.4 (inverted: kept values are scaled by 1 / (1 - p)), with a faster mask on the CPU.

    PyTorch's CPU dropout draws one 32-bit Mersenne-Twister number per element (~2.7 ms for 1024 x 512 on one
    thread); this draws one per two elements, from the same generator (so `torch.manual_seed` and activation
    checkpointing replay it), and keeps an element when 15 of its bits are >= round(p * 2^15): forward and backward
    together run ~1.8x faster (`benchmarks/bench_dropout.py` gives the training-step figure). The drop probability is
    thus rounded to a multiple of 2^-15 (0.1 -> 0.100006) and the scale uses that exact value. The mask autograd
    saves is in the input's dtype, not booleans. On accelerators, under `torch.compile` (which generates its own
    mask), or where p rounds to 0 or 1: `F.dropout`.
    """
    if not training or p == 0.0:
        return hidden_states
    threshold = round(p * 32768)
    if hidden_states.device.type != "cpu" or not 0 < threshold < 32768 or _tracing():
        return F.dropout(hidden_states, p=p, training=True)
    count = hidden_states.numel()
    pairs = torch.empty((count + 1) // 2, dtype=torch.int32).random_()  # 31 random bits each
    bits = pairs.view(torch.int16)[:count].view(hidden_states.shape).bitwise_and_(0x7FFF)
    keep = (bits >= threshold).to(hidden_states.dtype).mul_(32768 / (32768 - threshold))
    return hidden_states * keep


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
    """Scaled dot-product attention, sec. 3.2.1: softmax(Q K^T / sqrt(d_k)) V, returning the weights too.

    Returns the output and the attention probabilities (float32, before attention dropout). Accepts the masks
    `transformers` builds for any implementation (additive float, boolean "may attend", or
    `None` with a causal module), so that attention weights can be computed on demand while the model runs `sdpa`.
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
    probabilities = F.softmax(scores, dim=-1, dtype=torch.float32)
    weights = F.dropout(probabilities.to(query.dtype), p=dropout, training=module.training)
    output = torch.matmul(weights, value).transpose(1, 2).contiguous()
    # The weights handed out for inspection are the float32 probabilities (before dropout): in a bf16/fp16 model
    # they still sum to 1 per row, and keeping them costs nothing (softmax's backward holds them anyway).
    return output, probabilities


def _causal_mask(query_length: int, key_length: int, device: torch.device) -> torch.Tensor:
    """Boolean (1, 1, q, k) mask: query i (the last `query_length` positions) may attend keys 0..i."""
    offset = key_length - query_length
    query_positions = torch.arange(query_length, device=device).unsqueeze(-1) + offset
    return (torch.arange(key_length, device=device) <= query_positions)[None, None]


class VaswaniAttention(nn.Module):
    """Multi-head attention, sec. 3.2.2: Concat(head_1, ..., head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).

    The h query, key and value projections are stored as one matrix (`qkv_proj`, rows: all queries, all keys,
    all values) for self-attention, and as `q_proj` plus `kv_proj` for the decoder's encoder-decoder attention
    (sec. 3.2.3), whose keys and values are computed once per source sentence and kept in the cache.
    Returns the output and, when the eager path ran, the attention weights (batch, heads, queries, keys).
    """

    def __init__(
        self,
        config: VaswaniConfig,
        num_heads: int,
        layer_idx: int | None = None,
        is_cross_attention: bool = False,
        is_causal: bool = False,
    ):
        super().__init__()
        self.config = config
        self.num_heads = num_heads
        self.head_dim = config.d_model // num_heads
        self.scaling = self.head_dim**-0.5
        self.dropout = config.attention_dropout
        self.layer_idx = layer_idx
        self.is_cross_attention = is_cross_attention
        self.is_causal = is_causal
        d_model = config.d_model
        if is_cross_attention:
            self.q_proj = VaswaniLinear(d_model, d_model)
            self.kv_proj = VaswaniLinear(d_model, 2 * d_model)
        else:
            self.qkv_proj = VaswaniLinear(d_model, 3 * d_model)
        self.out_proj = VaswaniLinear(d_model, d_model)

    def _split_heads(self, projected: torch.Tensor, parts: int) -> tuple[torch.Tensor, ...]:
        """(batch, length, parts * d_model) -> `parts` views of shape (batch, heads, length, head_dim), no copy.

        Unbinding dimension 2 before moving the heads forward (rather than unbinding a permuted tensor) gives the
        same views, but makes the backward stack the query/key/value gradients straight into the projection's
        (batch, length, parts * d_model) layout: one copy instead of a stack plus a `contiguous()`.
        """
        batch, length, _ = projected.shape
        heads = projected.view(batch, length, parts, self.num_heads, self.head_dim)
        return tuple(part.transpose(1, 2) for part in heads.unbind(2))

    def _cross_keys_values(
        self, encoder_hidden_states: torch.Tensor, cache: Cache | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if isinstance(cache, EncoderDecoderCache) and cache.is_updated.get(self.layer_idx):
            layer = cache.cross_attention_cache.layers[self.layer_idx]
            return layer.keys, layer.values
        key, value = self._split_heads(self.kv_proj(encoder_hidden_states), 2)
        if isinstance(cache, EncoderDecoderCache):
            key, value = cache.cross_attention_cache.update(key, value, self.layer_idx)
            cache.is_updated[self.layer_idx] = True
        return key, value

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        cache: Cache | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        batch, length, _ = hidden_states.shape
        if self.is_cross_attention:
            (query,) = self._split_heads(self.q_proj(hidden_states), 1)
            key, value = self._cross_keys_values(encoder_hidden_states, cache)
        else:
            query, key, value = self._split_heads(self.qkv_proj(hidden_states), 3)
            if cache is not None:
                self_cache = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
                key, value = self_cache.update(key, value, self.layer_idx)

        output, weights = self._attention_function(kwargs, query)(
            self,
            query,
            key,
            value,
            attention_mask,
            dropout=self.dropout if self.training else 0.0,
            scaling=self.scaling,
            **kwargs,
        )
        output = output.reshape(batch, length, -1)
        return self.out_proj(output), weights

    def _attention_function(self, kwargs: dict, query: torch.Tensor) -> Callable:
        # Attention weights exist only on the eager path: when they are asked for, this call runs eager whatever
        # the model's implementation, instead of returning `None` weights.
        wants_weights = kwargs.get("output_attentions")
        if wants_weights is None:
            wants_weights = self.config.output_attentions
        implementation = self.config._attn_implementation
        if wants_weights or implementation in (None, "eager"):
            return eager_attention_forward
        # PyTorch's CPU flash-attention backward in bf16/fp16 is several times slower than two matmuls and a
        # softmax for sentence-length inputs (a whole training step ~1.7x slower), so reduced-precision CPU
        # training takes the math path; same result. In float32 sdpa is the faster one (1-2 % a step).
        if (
            implementation == "sdpa"
            and query.device.type == "cpu"
            and query.dtype in (torch.bfloat16, torch.float16)
            and torch.is_grad_enabled()
            and self.training
        ):
            return eager_attention_forward
        return ALL_ATTENTION_FUNCTIONS.get_interface(implementation, eager_attention_forward)


# --------------------------------------------------------------------------------------------------------------
# 3.3 Position-wise feed-forward networks and 3.1 the layers of both stacks
# --------------------------------------------------------------------------------------------------------------


class VaswaniFeedForward(nn.Module):
    """Sec. 3.3: FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, applied to each position separately."""

    def __init__(self, config: VaswaniConfig, inner_dim: int):
        super().__init__()
        self.fc1 = VaswaniLinear(config.d_model, inner_dim)
        self.fc2 = VaswaniLinear(inner_dim, config.d_model)
        self.activation = ACT2FN[config.activation_function]
        self.activation_dropout = config.activation_dropout

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = self.activation(self.fc1(hidden_states))
        hidden_states = vaswani_dropout(hidden_states, self.activation_dropout, self.training)
        return self.fc2(hidden_states)


class VaswaniResidualLayer(GradientCheckpointingLayer):
    """Shared by both stacks: each sub-layer is wrapped in a residual connection and layer normalization.

    Post-LN (the paper, sec. 3.1 and 5.4): LayerNorm(x + Dropout(Sublayer(x))).
    Pre-LN: x + Dropout(Sublayer(LayerNorm(x))).
    """

    def __init__(self, config: VaswaniConfig):
        super().__init__()
        self.dropout = config.dropout
        self.pre_norm = config.layer_norm_position == "pre"

    def residual(self, hidden_states: torch.Tensor, norm: nn.LayerNorm, sublayer: Callable) -> torch.Tensor:
        if self.pre_norm:
            return hidden_states + vaswani_dropout(sublayer(norm(hidden_states)), self.dropout, self.training)
        return norm(hidden_states + vaswani_dropout(sublayer(hidden_states), self.dropout, self.training))


class VaswaniEncoderLayer(VaswaniResidualLayer):
    """One of the N encoder layers (sec. 3.1): multi-head self-attention, then a position-wise FFN."""

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
    """One of the N decoder layers (sec. 3.1): masked self-attention, encoder-decoder attention, then the FFN."""

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
# The stacks (3.1) with their embeddings (3.4)
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
        """Xavier-uniform projections with zero biases, N(0, d_model^-0.5) embeddings (the paper leaves this open;
        these are tensor2tensor's choices)."""
        std = self.config.init_std or self.config.d_model**-0.5
        if isinstance(module, nn.Linear):
            _xavier_uniform_per_block(module.weight, self.config.d_model)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=std)
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, nn.LayerNorm):
            init.ones_(module.weight)
            init.zeros_(module.bias)
        elif isinstance(module, VaswaniForConditionalGeneration) and module.final_logits_bias is not None:
            init.zeros_(module.final_logits_bias)

    def get_expanded_tied_weights_keys(self, all_submodels: bool = False) -> dict:
        # `transformers` ties nothing at all when `tie_word_embeddings` is False; here the encoder/decoder
        # embedding sharing (`share_embeddings`) and the output projection tying are two separate choices.
        if all_submodels:
            return super().get_expanded_tied_weights_keys(all_submodels=True)
        return dict(self._tied_weights_keys or {})

    def _check_token_ids(self, input_ids: torch.Tensor, vocab_size: int, name: str) -> None:
        if input_ids.dim() != 2:
            raise ValueError(f"{name} must have shape (batch, sequence_length), got {tuple(input_ids.shape)}.")
        if is_torchdynamo_compiling() or input_ids.numel() == 0:
            return
        low, high = (int(value) for value in torch.aminmax(input_ids))
        if low < 0 or high >= vocab_size:
            bad = low if low < 0 else high
            raise ValueError(f"{name} contains the id {bad}, outside the vocabulary [0, {vocab_size}).")


def _xavier_uniform_per_block(weight: torch.Tensor, d_model: int) -> None:
    """Xavier-uniform init that treats a fused (k*d_model, d_model) projection as k separate square matrices."""
    fan_out, fan_in = weight.shape
    if fan_out == fan_in or fan_out % d_model or fan_in != d_model:
        init.xavier_uniform_(weight)
        return
    bound = math.sqrt(6.0 / (2 * d_model))
    init.uniform_(weight, -bound, bound)


class VaswaniStack(VaswaniPreTrainedModel):
    """What the encoder and decoder stacks share: token embeddings x sqrt(d_model) (sec. 3.4) plus positional
    encodings (sec. 3.5), dropout on the sum (sec. 5.4), and the final LayerNorm of the pre-LN variant."""

    def __init__(self, config: VaswaniConfig, vocab_size: int):
        super().__init__(config)
        self.embed_tokens = nn.Embedding(vocab_size, config.d_model, padding_idx=config.pad_token_id)
        self.embed_positions = build_positional_encoding(config)
        self.embed_scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        self.dropout = config.dropout
        pre_norm = config.layer_norm_position == "pre"
        self.layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if pre_norm else None

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embed_tokens

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embed_tokens = value

    def embed(
        self, input_ids: torch.Tensor | None, inputs_embeds: torch.Tensor | None, past_length: int = 0
    ) -> torch.Tensor:
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("Pass exactly one of input_ids and inputs_embeds.")
        if inputs_embeds is None:
            self._check_token_ids(input_ids, self.embed_tokens.num_embeddings, "input_ids")
            inputs_embeds = self.embed_tokens(input_ids)
        elif inputs_embeds.dim() != 3 or inputs_embeds.shape[-1] != self.config.d_model:
            raise ValueError(
                f"inputs_embeds must have shape (batch, sequence_length, {self.config.d_model}), "
                f"got {tuple(inputs_embeds.shape)}."
            )
        length = inputs_embeds.shape[1]
        if past_length + length > self.config.max_position_embeddings:
            raise ValueError(
                f"Sequence of {past_length + length} positions is longer than max_position_embeddings="
                f"{self.config.max_position_embeddings}: truncate the input (tokenizer(..., truncation=True))."
            )
        hidden_states = inputs_embeds * self.embed_scale
        if self.embed_positions is not None:
            if isinstance(self.embed_positions, VaswaniSinusoidalPositionalEncoding):
                table = self.embed_positions.rows(
                    past_length, length, hidden_states.device, self.config.max_position_embeddings
                )
            else:
                table = self.embed_positions(
                    torch.arange(past_length, past_length + length, device=hidden_states.device)
                )
            hidden_states = hidden_states + table.to(hidden_states.dtype)
        return vaswani_dropout(hidden_states, self.dropout, self.training)

    def finish(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return hidden_states if self.layer_norm is None else self.layer_norm(hidden_states)


class VaswaniEncoder(VaswaniStack):
    """The encoder (sec. 3.1): a stack of N identical self-attention + feed-forward layers."""

    _can_record_outputs = {
        "hidden_states": VaswaniEncoderLayer,
        "attentions": VaswaniAttention,
    }

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
        mask = create_bidirectional_mask(config=self.config, inputs_embeds=hidden_states, attention_mask=attention_mask)
        for layer in self.layers:
            hidden_states = layer(hidden_states, mask, **kwargs)
        return BaseModelOutput(last_hidden_state=self.finish(hidden_states))


class VaswaniDecoder(VaswaniStack):
    """The decoder (sec. 3.1): N layers of masked self-attention, encoder-decoder attention and feed-forward.

    The self-attention mask keeps position i from attending to positions after i, so that the prediction for
    position i depends only on the known outputs before it.
    """

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
        if attention_mask is not None and attention_mask.shape[-1] == length and past_length:
            attention_mask = torch.cat([attention_mask.new_ones(batch, past_length), attention_mask], dim=-1)
        _check_mask_shape(attention_mask, (batch, past_length + length), "decoder_attention_mask")
        if encoder_hidden_states is not None:
            _check_mask_shape(encoder_attention_mask, encoder_hidden_states.shape[:2], "attention_mask")

        self_cache = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
        if attention_mask is None and length == 1:
            causal_mask = None  # one new position may attend to every earlier one: nothing to mask
        else:
            causal_mask = create_causal_mask(
                config=self.config, inputs_embeds=hidden_states, attention_mask=attention_mask, cache=self_cache
            )
        cross_mask = self._cross_attention_mask(encoder_attention_mask, hidden_states, encoder_hidden_states)
        for layer in self.layers:
            hidden_states = layer(
                hidden_states,
                causal_mask,
                encoder_hidden_states,
                encoder_attention_mask=cross_mask,
                cache=cache,
                **kwargs,
            )
        return BaseModelOutputWithPastAndCrossAttentions(last_hidden_state=self.finish(hidden_states), cache=cache)

    def _cross_attention_mask(
        self,
        encoder_attention_mask: torch.Tensor | None,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor | None,
    ) -> torch.Tensor | None:
        """The padding mask of the encoder-decoder attention: boolean (batch, 1, 1, source_length), or None.

        For eager and sdpa attention it is built here with one comparison, because `create_bidirectional_mask`
        costs more than the attention itself in a decoding step (one query per sentence); other attention
        implementations get their own mask format from `create_bidirectional_mask`."""
        if (
            encoder_attention_mask is None
            or encoder_attention_mask.dim() != 2
            or self.config._attn_implementation not in ("eager", "sdpa")
        ):
            return create_bidirectional_mask(
                config=self.config,
                inputs_embeds=hidden_states,
                attention_mask=encoder_attention_mask,
                encoder_hidden_states=encoder_hidden_states,
            )
        keep = encoder_attention_mask.to(device=hidden_states.device, dtype=torch.bool)
        if not is_torchdynamo_compiling() and bool(keep.all()):
            return None
        return keep[:, None, None, :]


def _check_mask_shape(mask: torch.Tensor | None, expected: tuple[int, ...], name: str) -> None:
    if mask is not None and tuple(mask.shape) != tuple(expected):
        raise ValueError(f"{name} must have shape {tuple(expected)}, got {tuple(mask.shape)}.")


# --------------------------------------------------------------------------------------------------------------
# The encoder-decoder model and its output layer
# --------------------------------------------------------------------------------------------------------------


class VaswaniModel(VaswaniPreTrainedModel):
    """The encoder-decoder of Figure 1, without the final linear + softmax."""

    def __init__(self, config: VaswaniConfig):
        super().__init__(config)
        self.encoder = VaswaniEncoder(config)
        self.decoder = VaswaniDecoder(config)
        if config.share_embeddings:
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
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds, **kwargs
            )
        elif not isinstance(encoder_outputs, BaseModelOutput):
            encoder_outputs = BaseModelOutput(
                last_hidden_state=encoder_outputs[0],
                hidden_states=encoder_outputs[1] if len(encoder_outputs) > 1 else None,
                attentions=encoder_outputs[2] if len(encoder_outputs) > 2 else None,
            )
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


def _loss_chunk_rows(logits: torch.Tensor) -> int:
    """Rows of logits the loss handles at a time. On the CPU about 1 MB of float32 (at least 16 rows), so that the
    log-softmax, the picked and summed log-probabilities and the gradient of a chunk are all computed while it sits
    in the core's cache, instead of in several passes over a (tokens, vocab) array; on accelerators 256 MB, which
    bounds the float32 work buffers; under compilation all rows at once (the compiler fuses the passes itself)."""
    rows, vocab = logits.shape
    if _tracing():
        return max(rows, 1)
    elements = 1 << 18 if logits.device.type == "cpu" else 1 << 26
    return max(16, elements // max(vocab, 1))


def _label_smoothed_chunks(
    logits: torch.Tensor, targets: torch.Tensor, scale: torch.Tensor, smoothing: float, with_gradient: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """log p_y and sum_j log p_j of every row (float32), and, `with_gradient`, the gradient of
    sum_rows scale_row * loss_row with respect to the logits: scale_row * (p - eps / V - (1 - eps) one-hot(y))."""
    rows, vocab = logits.shape
    chunk_rows = _loss_chunk_rows(logits)
    float32 = {"dtype": torch.float32, "device": logits.device}
    picked, summed = torch.empty(rows, 1, **float32), torch.empty(rows, **float32)
    grad = torch.empty_like(logits) if with_gradient else None
    cast = logits.dtype != torch.float32
    work = torch.empty(min(chunk_rows, rows), vocab, **float32)
    log_probs = torch.empty_like(work)
    for start in range(0, rows, chunk_rows):
        part = slice(start, start + chunk_rows)
        chunk = logits[part]
        if cast:
            chunk = work[: chunk.shape[0]].copy_(chunk)
        chunk_log_probs = torch.log_softmax(chunk, dim=1, out=log_probs[: chunk.shape[0]])
        torch.gather(chunk_log_probs, 1, targets[part, None], out=picked[part])
        torch.sum(chunk_log_probs, dim=1, out=summed[part])
        if grad is None:
            continue
        chunk_grad = chunk if cast else grad[part]  # the float32 copy is not needed any more: reuse it
        torch.exp(chunk_log_probs, out=chunk_grad).mul_(scale[part]).sub_(scale[part] * (smoothing / vocab))
        chunk_grad.scatter_add_(1, targets[part, None], scale[part] * -(1.0 - smoothing))
        if cast:
            grad[part].copy_(chunk_grad)
    return picked.squeeze(1), summed, grad


class _LabelSmoothedCrossEntropySum(torch.autograd.Function):
    """The label-smoothed cross-entropy summed over the rows whose label is not -100, divided by `divisor`, with
    a hand-written backward.

    Row loss: -(1 - eps) log p_y - (eps / V) sum_j log p_j, the same as `F.cross_entropy(..., label_smoothing=eps)`.
    Autograd through `F.cross_entropy` builds a dense (rows, V) gradient for the smoothing term and then runs the
    log-softmax backward on it: with a large vocabulary that is most of the loss's cost. Here the gradient,
    p - (1 - eps) one-hot(y) - eps / V on the rows that count, is written by the forward itself, chunk by chunk
    while each chunk of log-probabilities is still in cache (`_label_smoothed_chunks`), and the backward only
    scales it by the incoming gradient (nothing to do for `loss.backward()` of a mean, where that is 1). A
    second backward through the same graph recomputes it from the logits. No float32 (rows, V) array is kept.
    """

    @staticmethod
    def forward(
        ctx: Any,
        logits: torch.Tensor,
        labels: torch.Tensor,
        smoothing: float,
        divisor: torch.Tensor,
        grad_enabled: bool,
    ) -> torch.Tensor:
        valid = labels != -100
        targets = labels.masked_fill(~valid, 0)
        scale = torch.where(valid, 1.0 / divisor, 0.0).to(torch.float32)[:, None]
        with_gradient = grad_enabled and ctx.needs_input_grad[0]  # (forward itself always runs without grad mode)
        picked, summed, grad = _label_smoothed_chunks(logits, targets, scale, smoothing, with_gradient)
        row_loss = -(1.0 - smoothing) * picked - (smoothing / logits.shape[1]) * summed
        ctx.save_for_backward(logits, targets, scale)
        ctx.smoothing, ctx.grad = smoothing, grad
        return torch.where(valid, row_loss, 0.0).sum() / divisor

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, None, None, None, None]:
        grad, ctx.grad = ctx.grad, None  # a second backward (retain_graph) must not reuse a gradient handed out
        if grad is None:
            logits, targets, scale = ctx.saved_tensors
            scale = scale * grad_output.to(torch.float32)
            return _label_smoothed_chunks(logits, targets, scale, ctx.smoothing, True)[2], None, None, None, None
        if grad_output.device.type == "cpu" and not _tracing() and grad_output.item() == 1.0:
            return grad, None, None, None, None
        if _tracing():
            return grad * grad_output.to(grad.dtype), None, None, None, None
        return grad.mul_(grad_output.to(grad.dtype)), None, None, None, None  # nobody else holds it yet


def label_smoothed_cross_entropy(
    logits: torch.Tensor,
    labels: torch.Tensor,
    smoothing: float,
    num_items_in_batch: int | torch.Tensor | None = None,
) -> torch.Tensor:
    """Sec. 5.4: cross-entropy against (1 - eps) one-hot + eps uniform, over the tokens whose label is not -100.

    The per-token losses are summed and divided by the number of target tokens of the *whole* batch: when
    `Trainer` accumulates gradients it passes that count as `num_items_in_batch`, so k accumulated micro-batches
    give the same gradient as one batch k times larger. Computed in float32 whatever the logits' dtype.
    """
    labels = labels.reshape(-1).to(logits.device)
    if num_items_in_batch is None:
        num_items_in_batch = (labels != -100).sum()
    divisor = torch.as_tensor(num_items_in_batch, dtype=torch.float32, device=logits.device)
    return _LabelSmoothedCrossEntropySum.apply(
        logits.reshape(-1, logits.shape[-1]), labels, float(smoothing), divisor, torch.is_grad_enabled()
    )


# What `generate` passes to `prepare_inputs_for_generation` besides the ids, cache and masks in the common case.
_GENERATION_STEP_KWARGS = frozenset(
    {"encoder_outputs", "use_cache", "output_attentions", "output_hidden_states", "decoder_attention_mask", "labels"}
)


class VaswaniForConditionalGeneration(VaswaniPreTrainedModel, GenerationMixin):
    """The full model of Figure 1: encoder-decoder plus the pre-softmax linear transformation (sec. 3.4), trained
    with label smoothing (sec. 5.4). Works with `generate()` (greedy, beam search, sampling, KV cache)."""

    def __init__(self, config: VaswaniConfig):
        super().__init__(config)
        self.model = VaswaniModel(config)
        self.lm_head = VaswaniLinear(config.d_model, config.decoder_vocab_size, bias=False)
        bias = torch.zeros(1, config.decoder_vocab_size) if config.final_logits_bias else None
        self.final_logits_bias = nn.Parameter(bias) if bias is not None else None
        tied = {}
        if config.share_embeddings:
            tied["model.decoder.embed_tokens.weight"] = "model.encoder.embed_tokens.weight"
        if config.tie_word_embeddings:
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
        r"""As `VaswaniModel.forward`, plus `labels` (batch, target_length): the target ids, -100 where no loss
        is wanted (padding). When only `labels` are given, `decoder_input_ids` are the labels shifted right.
        The loss is label-smoothed with `config.label_smoothing`."""
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

    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
    def prepare_inputs_for_generation(
        self,
        input_ids: torch.LongTensor,
        next_sequence_length: int | None = None,
        cache: Cache | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        is_first_iteration: bool | None = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """The inputs of one decoding step: the decoder ids not yet in the cache, plus what `generate` carries.

        Same result as `GenerationMixin.prepare_inputs_for_generation` for this model, which is called for
        everything but the common case. That one asks `inspect.signature(self.forward)` on every step for classes
        registered for the auto classes (this one is, for `trust_remote_code`) and walks the parameters twice for
        the device; here a step costs a slice and a clone.
        """
        if (
            inputs_embeds is not None
            or (isinstance(cache, Cache) and cache.is_compileable)
            or not _GENERATION_STEP_KWARGS.issuperset(kwargs)
            or input_ids.device != self.lm_head.weight.device
        ):
            return super().prepare_inputs_for_generation(
                input_ids,
                next_sequence_length=next_sequence_length,
                cache=cache,
                attention_mask=attention_mask,
                inputs_embeds=inputs_embeds,
                is_first_iteration=is_first_iteration,
                **kwargs,
            )
        if next_sequence_length is not None:
            input_ids = input_ids[:, -next_sequence_length:]
        model_inputs: dict[str, Any] = {"decoder_input_ids": input_ids.clone(memory_format=torch.contiguous_format)}
        if cache is not None:
            model_inputs["cache"] = cache
        for key, value in kwargs.items():
            if key != "labels" and not (key == "decoder_attention_mask" and value is None):
                model_inputs[key] = value
        if attention_mask is not None:
            model_inputs["attention_mask"] = attention_mask
        return model_inputs

    def _reorder_cache(self, cache: Cache, beam_idx: torch.LongTensor) -> Cache:
        """Beam search: keep the self-attention K/V of the beams that survive. The encoder-decoder attention K/V
        are left as they are: a beam only ever replaces a beam of the same sentence, and all beams of a sentence
        share one encoder output, so those rows would be copied onto equal rows."""
        if isinstance(cache, EncoderDecoderCache):
            cache.self_attention_cache.reorder_cache(beam_idx)
        else:
            cache.reorder_cache(beam_idx)
        return cache

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
