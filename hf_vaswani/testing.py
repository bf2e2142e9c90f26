"""Tiny random-weight models for tests and benchmarks: fast on a CPU, meaningless as translators.

`tiny_config` is the one small `VaswaniConfig` the test helpers build on (d_model 32, 2 encoder and 2 decoder
layers of 4 heads, feed-forward 64, at most 64 positions, no dropout); `tiny_model` builds a seeded random model
from it, in eval mode. `vaswani_demo.testing` (the demo's model folder), `vaswani_inspect.testing` and the
tests' ``tiny_config`` use them. Nothing heavy is imported until they are called.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TINY_SETTINGS", "tiny_config", "tiny_model"]

#: The tiny model's settings, besides its vocabulary size.
TINY_SETTINGS: dict[str, Any] = dict(
    d_model=32,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=64,
    decoder_ffn_dim=64,
    max_position_embeddings=64,
    dropout=0.0,
)


def tiny_config(vocab_size: int, **overrides: Any) -> Any:
    """A `VaswaniConfig` with `TINY_SETTINGS` and `vocab_size`; keyword arguments override any field."""
    from .configuration_vaswani import VaswaniConfig

    return VaswaniConfig(**{**TINY_SETTINGS, "vocab_size": vocab_size, **overrides})


def tiny_model(vocab_size: int, seed: int = 0, **overrides: Any) -> Any:
    """A small random `VaswaniForConditionalGeneration` (`tiny_config(vocab_size, **overrides)`), weights drawn
    after ``torch.manual_seed(seed)``, in eval mode."""
    import torch

    from .modeling_vaswani import VaswaniForConditionalGeneration

    config = tiny_config(vocab_size, **overrides)
    torch.manual_seed(seed)
    return VaswaniForConditionalGeneration(config).eval()
