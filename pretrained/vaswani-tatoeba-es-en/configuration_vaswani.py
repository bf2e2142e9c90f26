"""Configuration of the Transformer of Vaswani et al. (2017), "Attention Is All You Need".

This file imports only `transformers` so that `trust_remote_code` can copy it next to a checkpoint.
"""

from typing import Any

from transformers import PreTrainedConfig

POSITION_ENCODINGS = ("sinusoidal", "learned", "none")
SINUSOIDAL_LAYOUTS = ("interleaved", "concatenated")
LAYER_NORM_POSITIONS = ("post", "pre")
ACTIVATIONS = ("relu", "gelu", "silu", "swish")


class VaswaniConfig(PreTrainedConfig):
    r"""Hyperparameters of the encoder-decoder Transformer (paper, sec. 3 and Table 3).

    The defaults are the paper's *base* model; `VaswaniConfig.base()` and `VaswaniConfig.big()` give the two
    rows of Table 3. Every option that departs from the paper defaults to the paper's choice.

    Args:
        vocab_size: size of the shared source/target vocabulary (37,000 BPE pieces for English-German in sec. 5.1).
        decoder_vocab_size: vocabulary of the decoder when it differs from the encoder's
            (needs `share_embeddings=False`); `None` means the same as `vocab_size`.
        d_model: width of every sub-layer output and embedding, d_model (sec. 3.1).
        encoder_layers / decoder_layers: number of identical layers N in each stack (sec. 3.1).
        encoder_attention_heads / decoder_attention_heads: number of heads h (sec. 3.2.2); d_k = d_v = d_model / h.
        encoder_ffn_dim / decoder_ffn_dim: inner width d_ff of the position-wise feed-forward network (sec. 3.3).
        activation_function: the FFN non-linearity: `"relu"` (paper) or `"gelu"`, `"silu"`/`"swish"` (Marian).
        dropout: residual dropout P_drop, applied to each sub-layer output and to the embedding sums (sec. 5.4).
        attention_dropout: dropout on the attention weights (not in the paper: 0.0).
        activation_dropout: dropout inside the FFN after the activation (not in the paper: 0.0).
        label_smoothing: epsilon_ls of the training loss (sec. 5.4).
        max_position_embeddings: longest sequence the model accepts (and size of the learned position table).
        position_encoding: `"sinusoidal"` (sec. 3.5), `"learned"` (the variant of Table 3, row E) or `"none"`
            (no order information at all: useful to show that attention alone is permutation-equivariant).
        sinusoidal_layout: `"interleaved"` puts sin and cos of each frequency at dimensions 2i and 2i+1, as the
            paper's formula; `"concatenated"` puts all sines first and all cosines after (Marian, tensor2tensor).
        layer_norm_position: `"post"` computes LayerNorm(x + Sublayer(x)) as the paper (sec. 3.1); `"pre"` computes
            x + Sublayer(LayerNorm(x)) and adds a final LayerNorm to each stack.
        layer_norm_eps: epsilon of every LayerNorm.
        scale_embedding: multiply token embeddings by sqrt(d_model) (sec. 3.4).
        share_embeddings: one embedding matrix for encoder and decoder inputs (sec. 3.4, shared vocabulary).
        tie_word_embeddings: the pre-softmax linear transformation reuses the decoder's input embedding (sec. 3.4).
        final_logits_bias: add a learned bias to the output logits (not in the paper; Marian checkpoints have one).
        init_std: standard deviation of the token embedding init; `None` means d_model ** -0.5.
        alignment: how to read word alignments off this model's encoder-decoder attention, as found by
            `vaswani_inspect.alignment.search_alignments` or set by guided-alignment training: a plain dict such as
            ``{"layer": 2, "heads": [1], "shift": False}`` (`layer` a decoder layer or `"mean"`, `heads` a list of
            heads or `"all"`, `shift` as in `vaswani_inspect.alignment.alignment_matrix`), optionally with
            ``"average_with"``: a list of more such readings averaged with it. `None`: the mean over all layers and
            heads. Not used by the model, and not checked here: `vaswani_inspect.alignment.config` checks it where
            it reads and writes it.
        pad_token_id / bos_token_id / eos_token_id / decoder_start_token_id: special token ids.
    """

    model_type = "vaswani"
    keys_to_ignore_at_inference = ["cache"]
    attribute_map = {
        "hidden_size": "d_model",
        "num_attention_heads": "encoder_attention_heads",
        "num_hidden_layers": "encoder_layers",
    }

    vocab_size: int = 37000
    decoder_vocab_size: int | None = None
    d_model: int = 512
    encoder_layers: int = 6
    decoder_layers: int = 6
    encoder_attention_heads: int = 8
    decoder_attention_heads: int = 8
    encoder_ffn_dim: int = 2048
    decoder_ffn_dim: int = 2048
    activation_function: str = "relu"
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    label_smoothing: float = 0.1
    max_position_embeddings: int = 1024
    position_encoding: str = "sinusoidal"
    sinusoidal_layout: str = "interleaved"
    layer_norm_position: str = "post"
    layer_norm_eps: float = 1e-5
    scale_embedding: bool = True
    share_embeddings: bool = True
    tie_word_embeddings: bool = True
    final_logits_bias: bool = False
    init_std: float | None = None
    alignment: dict | None = None
    use_cache: bool = True
    is_encoder_decoder: bool = True
    pad_token_id: int | None = 0
    bos_token_id: int | None = 1
    eos_token_id: int | list[int] | None = 2
    decoder_start_token_id: int | None = 1

    def __post_init__(self, **kwargs: Any) -> None:
        self.decoder_vocab_size = self.decoder_vocab_size or self.vocab_size
        super().__post_init__(**kwargs)
        self._check()

    @classmethod
    def base(cls, **overrides: Any) -> "VaswaniConfig":
        """The paper's base model (Table 3): N=6, d_model=512, d_ff=2048, h=8, P_drop=0.1, eps_ls=0.1."""
        return cls(**overrides)

    @classmethod
    def big(cls, **overrides: Any) -> "VaswaniConfig":
        """The paper's big model (Table 3): N=6, d_model=1024, d_ff=4096, h=16, P_drop=0.3, eps_ls=0.1."""
        big = dict(
            d_model=1024,
            encoder_ffn_dim=4096,
            decoder_ffn_dim=4096,
            encoder_attention_heads=16,
            decoder_attention_heads=16,
            dropout=0.3,
        )
        return cls(**{**big, **overrides})

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> "VaswaniConfig":
        model_type = config_dict.get("model_type", cls.model_type)
        if model_type != cls.model_type:
            raise ValueError(
                f"This checkpoint is a {model_type!r} model, not a {cls.model_type!r} one: load it with its own "
                f"class (AutoModel picks it), or convert it first (Marian: `hf-vaswani convert-marian`)."
            )
        return super().from_dict(config_dict, **kwargs)

    def _check(self) -> None:
        """Refuse configurations that cannot build the model, with a message naming the field."""
        _one_of("position_encoding", self.position_encoding, POSITION_ENCODINGS)
        _one_of("sinusoidal_layout", self.sinusoidal_layout, SINUSOIDAL_LAYOUTS)
        _one_of("layer_norm_position", self.layer_norm_position, LAYER_NORM_POSITIONS)
        _one_of("activation_function", self.activation_function, ACTIVATIONS)
        for name in (
            "vocab_size",
            "decoder_vocab_size",
            "d_model",
            "encoder_layers",
            "decoder_layers",
            "encoder_attention_heads",
            "decoder_attention_heads",
            "encoder_ffn_dim",
            "decoder_ffn_dim",
            "max_position_embeddings",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"VaswaniConfig.{name} must be a positive integer, got {value!r}.")
        for side in ("encoder", "decoder"):
            heads = getattr(self, f"{side}_attention_heads")
            if self.d_model % heads:
                raise ValueError(
                    f"d_model ({self.d_model}) must be divisible by {side}_attention_heads ({heads}): "
                    "each head gets d_model / h dimensions (sec. 3.2.2)."
                )
        if self.position_encoding == "sinusoidal" and self.d_model % 2:
            raise ValueError(f"Sinusoidal positions pair sin and cos: d_model must be even, got {self.d_model}.")
        for name in ("dropout", "attention_dropout", "activation_dropout", "label_smoothing"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(f"VaswaniConfig.{name} must be in [0, 1), got {value!r}.")
        if self.share_embeddings and self.decoder_vocab_size != self.vocab_size:
            raise ValueError(
                f"share_embeddings=True needs one vocabulary, but vocab_size={self.vocab_size} and "
                f"decoder_vocab_size={self.decoder_vocab_size}."
            )
        for name in ("pad_token_id", "bos_token_id", "decoder_start_token_id"):
            value = getattr(self, name)
            if value is not None and not 0 <= value < self.decoder_vocab_size:
                raise ValueError(f"{name}={value} is outside the vocabulary [0, {self.decoder_vocab_size}).")


def _one_of(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"VaswaniConfig.{name}={value!r} is not supported; choose one of {', '.join(allowed)}.")


__all__ = ["VaswaniConfig"]
