import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from hf_vaswani import VaswaniConfig, VaswaniForConditionalGeneration, testing  # noqa: E402

#: The vaswani_inspect tests' tokenizer, model and record fixtures.
pytest_plugins = ["tests.inspect_fixtures"]


def tiny_config(**overrides) -> VaswaniConfig:
    """A model small enough for fast tests, with different encoder/decoder depths to catch index mix-ups."""
    values = dict(vocab_size=97, decoder_layers=3, decoder_attention_heads=2, decoder_ffn_dim=48)
    values.update(overrides)
    return testing.tiny_config(**values)


@pytest.fixture
def tiny_model() -> VaswaniForConditionalGeneration:
    torch.manual_seed(0)
    return VaswaniForConditionalGeneration(tiny_config()).eval()


@pytest.fixture
def source_batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Two sources, the second one padded (pad id 0) after 5 tokens."""
    generator = torch.Generator().manual_seed(1)
    input_ids = torch.randint(6, 97, (2, 8), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 5:] = 0
    input_ids[0, -1] = 2
    input_ids[1, 4] = 2
    input_ids[1, 5:] = 0
    return input_ids, attention_mask
