"""A tiny random-weight stand-in for the shipped checkpoint, for the demo's tests and benchmark.

`write_tiny_model(folder)` saves a `VaswaniForConditionalGeneration` with a tiny config and random weights,
together with a tokenizer trained by `hf_vaswani.tokenization.train_tokenizer` on the tiny corpus of the tests,
as a model folder that `hf-vaswani demo --model FOLDER` (or any `from_pretrained`) loads. Its "translations" are
random pieces: it exercises the plumbing (generation, attention extraction, views, limits), not the quality.

`demo_model_for_tests(tmp_dir)` prefers the real checkpoint when it exists (or the folder named by the
``VASWANI_DEMO_TEST_MODEL`` environment variable) and writes the tiny model otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path

from transformers import GenerationConfig

from hf_vaswani import paths
from hf_vaswani.testing import tiny_model, tiny_sentences
from hf_vaswani.tokenization import LANGUAGE_TOKEN_IDS, PAD_ID, UNK_ID, train_tokenizer

__all__ = [
    "TEST_MODEL_ENV",
    "TINY_SENTENCES",
    "demo_model_for_tests",
    "is_tiny_model",
    "shipped_checkpoint",
    "write_tiny_model",
]

#: Environment variable naming a model folder (or Hub id) that the demo tests and benchmark should use.
TEST_MODEL_ENV = "VASWANI_DEMO_TEST_MODEL"

#: The sentences the tiny tokenizer is trained on: both sides of the tiny corpus `hf_vaswani.testing.TINY_PAIRS`.
TINY_SENTENCES: tuple[str, ...] = tuple(tiny_sentences())

#: Marks the tiny model's config so that tests can tell it from a trained checkpoint.
_TINY_MARK = "vaswani-demo-tiny-random"
#: The file that marks a folder written by `write_tiny_model`.
_MARK_FILE = "TINY_RANDOM_MODEL.txt"


def write_tiny_model(folder: str | os.PathLike[str], *, seed: int = 0, vocab_size: int = 400) -> Path:
    """Save a random-weight tiny model and its tokenizer to `folder` (created if missing); returns the folder.

    The model: `hf_vaswani.testing.tiny_model` (d_model 32, 2 encoder and 2 decoder layers of 4 heads, at most 64
    positions). Its generation config asks for at least 2 new tokens, never repeats a piece and never generates
    `<pad>`, `<unk>` or a language token, so that the random output is a non-empty "translation" of several words
    (greedy, at most 12 tokens by default).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(list(TINY_SENTENCES) * 4, vocab_size=vocab_size, model_max_length=64)
    model = tiny_model(len(tokenizer), seed=seed)
    config = model.config
    config.name_or_path = _TINY_MARK
    model.generation_config = GenerationConfig(
        num_beams=1,
        max_length=13,
        min_new_tokens=2,
        no_repeat_ngram_size=1,  # a different piece at every step, so the random output has several words
        suppress_tokens=[PAD_ID, UNK_ID, *LANGUAGE_TOKEN_IDS.values()],
        bos_token_id=config.bos_token_id,
        eos_token_id=config.eos_token_id,
        pad_token_id=config.pad_token_id,
        decoder_start_token_id=config.decoder_start_token_id,
    )
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / _MARK_FILE).write_text(
        "Random weights, for tests only: written by vaswani_demo.testing.write_tiny_model.\n", encoding="utf-8"
    )
    return folder


def is_tiny_model(folder: str | os.PathLike[str]) -> bool:
    """True when `folder` holds a model written by `write_tiny_model`."""
    return (Path(folder) / _MARK_FILE).is_file()


def shipped_checkpoint() -> str | None:
    """The shipped checkpoint's folder (`hf_vaswani.paths.default_model_path`), or None where it is missing."""
    try:
        shipped = Path(paths.default_model_path())
    except FileNotFoundError:
        return None
    return str(shipped) if (shipped / "config.json").is_file() else None


def demo_model_for_tests(tmp_dir: str | os.PathLike[str]) -> str:
    """The model the demo tests use: ``$VASWANI_DEMO_TEST_MODEL``, else the shipped checkpoint when it exists,
    else a tiny random model written into `tmp_dir`."""
    return (
        os.environ.get(TEST_MODEL_ENV) or shipped_checkpoint() or str(write_tiny_model(Path(tmp_dir) / "tiny-vaswani"))
    )
