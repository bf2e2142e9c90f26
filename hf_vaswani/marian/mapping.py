"""The one mapping between hf_vaswani's weights and Marian's, read in both directions.

`hf_vaswani.marian.convert` reads it from Marian's side to ours, `hf_vaswani.marian.export` from ours to Marian's,
so a name can only change in one place. Each row is (our name, Marian's name); most rows are the same name on both
sides, and the table says so rather than leaving the reader to guess which ones differ. The differences:
`final_layer_norm` is our `ffn_layer_norm`, `encoder_attn*` is our `cross_attn*`, `fc1`/`fc2` sit in our `ffn`.

What is in neither column: Marian's sinusoidal position tables (fixed, built by both models, so checked rather than
copied) and Marian's `model.shared.weight` (an alias of the encoder embeddings).
"""

from __future__ import annotations

__all__ = [
    "DECODER_LAYER",
    "ENCODER_LAYER",
    "MARIAN_LAYER_NORM_EPS",
    "MARIAN_POSITION_TABLES",
    "MARIAN_SHARED_ALIAS",
    "MODEL_WEIGHTS",
    "weight_names",
]

#: Marian's LayerNorms are built with PyTorch's default epsilon, whatever the config says; both directions hold
#: our model to it.
MARIAN_LAYER_NORM_EPS = 1e-5

#: The weights outside the layers: (ours, Marian's).
MODEL_WEIGHTS: tuple[tuple[str, str], ...] = (
    ("model.encoder.embed_tokens.weight", "model.encoder.embed_tokens.weight"),
    ("model.decoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"),
    ("lm_head.weight", "lm_head.weight"),
    ("final_logits_bias", "final_logits_bias"),
)

#: The sub-modules of an encoder layer, (ours, Marian's), relative to ``model.encoder.layers.<i>.``; each one has a
#: ``weight`` and a ``bias``.
ENCODER_LAYER: tuple[tuple[str, str], ...] = (
    ("self_attn.q_proj", "self_attn.q_proj"),
    ("self_attn.k_proj", "self_attn.k_proj"),
    ("self_attn.v_proj", "self_attn.v_proj"),
    ("self_attn.out_proj", "self_attn.out_proj"),
    ("self_attn_layer_norm", "self_attn_layer_norm"),
    ("ffn.fc1", "fc1"),
    ("ffn.fc2", "fc2"),
    ("ffn_layer_norm", "final_layer_norm"),
)

#: The sub-modules of a decoder layer, relative to ``model.decoder.layers.<i>.``: an encoder layer's, with the
#: attention over the encoder's output (Marian's ``encoder_attn``, our ``cross_attn``) between self-attention and FFN.
DECODER_LAYER: tuple[tuple[str, str], ...] = (
    *ENCODER_LAYER[:5],
    ("cross_attn.q_proj", "encoder_attn.q_proj"),
    ("cross_attn.k_proj", "encoder_attn.k_proj"),
    ("cross_attn.v_proj", "encoder_attn.v_proj"),
    ("cross_attn.out_proj", "encoder_attn.out_proj"),
    ("cross_attn_layer_norm", "encoder_attn_layer_norm"),
    *ENCODER_LAYER[5:],
)

#: Marian's fixed sinusoidal tables: checked on import, left out on export (`MarianMTModel` builds its own).
MARIAN_POSITION_TABLES: tuple[str, str] = (
    "model.encoder.embed_positions.weight",
    "model.decoder.embed_positions.weight",
)

#: Marian's alias of the encoder embeddings, which `MarianMTModel.forward` never reads.
MARIAN_SHARED_ALIAS = "model.shared.weight"


def weight_names(encoder_layers: int, decoder_layers: int) -> list[tuple[str, str]]:
    """Every weight the two models have in common, as (our state-dict name, Marian's), for a model with these
    numbers of layers: `MODEL_WEIGHTS`, then each layer's `ENCODER_LAYER` / `DECODER_LAYER` rows with their
    ``weight`` and ``bias``."""
    names = list(MODEL_WEIGHTS)
    for side, layers, modules in (
        ("encoder", encoder_layers, ENCODER_LAYER),
        ("decoder", decoder_layers, DECODER_LAYER),
    ):
        for index in range(layers):
            prefix = f"model.{side}.layers.{index}."
            names += [
                (f"{prefix}{ours}.{kind}", f"{prefix}{theirs}.{kind}")
                for ours, theirs in modules
                for kind in ("weight", "bias")
            ]
    return names
