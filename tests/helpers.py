"""What the tests share: paths, a tiny model configuration, the tiny corpus's sentence pairs and a tokenizer, a
tiny training corpus and run configuration, and a way to run a script in a process that cannot import our
packages. Fixtures built on these live in tests/conftest.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from transformers import PreTrainedTokenizerFast

from hf_vaswani import VaswaniConfig, testing
from hf_vaswani.tokenization import train_tokenizer

ROOT = Path(__file__).resolve().parent.parent
#: The checkpoint shipped in the repository.
CHECKPOINT = ROOT / "pretrained" / "vaswani-tatoeba-es-en"
#: How long a test waits for a process it started before it calls the process hung (seconds). Only a hang may fail
#: a test on time: on a 2-core machine loaded by other jobs, a process that imports torch and transformers took over
#: 120 s to do what it does in 5 s alone, so the limit is far above the slowest process of the suite (a wheel install
#: or a notebook run, a few minutes alone).
PROCESS_TIMEOUT = 1800


def unwritable_folder(tmp_path: Path) -> Path:
    """A folder in which nothing can be created: read-only for a user; for root (who may write anywhere), /sys
    (skips the test when there is none)."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o500)
        return folder
    if not Path("/sys").is_dir():
        pytest.skip("running as root without /sys: no folder root cannot write into")
    return Path("/sys")


def tiny_config(**overrides: Any) -> VaswaniConfig:
    """A model small enough for fast tests, with different encoder/decoder depths to catch index mix-ups."""
    values = dict(vocab_size=97, decoder_layers=3, decoder_attention_heads=2, decoder_ffn_dim=48)
    values.update(overrides)
    return testing.tiny_config(**values)


# ----------------------------------------------------------------------------------------------------------------
# The tiny corpus (`hf_vaswani.testing.TINY_PAIRS`) and a tokenizer trained on it
# ----------------------------------------------------------------------------------------------------------------

#: The tiny corpus's (English, Spanish) pairs, as a list.
PAIRS: list[tuple[str, str]] = list(testing.TINY_PAIRS)

TINY_VOCAB_SIZE = 300


@lru_cache(maxsize=1)
def tiny_tokenizer() -> PreTrainedTokenizerFast:
    """A Unigram tokenizer with a vocabulary of at most 300 pieces, trained on both sides of `PAIRS`.

    Cached: do not modify the returned tokenizer in a test.
    """
    return train_tokenizer(testing.tiny_sentences(), vocab_size=TINY_VOCAB_SIZE)


# ----------------------------------------------------------------------------------------------------------------
# A tiny generated corpus and run configuration for `hf-vaswani train`
# ----------------------------------------------------------------------------------------------------------------

TINY_CONFIG = {
    "data": {"validation_size": 12, "test_size": 12, "max_length": 24, "eval_samples": 8},
    "tokenizer": {"vocab_size": 260},
    "model": {
        "d_model": 32,
        "encoder_layers": 1,
        "decoder_layers": 1,
        "encoder_attention_heads": 2,
        "decoder_attention_heads": 2,
        "encoder_ffn_dim": 64,
        "decoder_ffn_dim": 64,
        "max_position_embeddings": 64,
        "dropout": 0.0,
    },
    "training": {
        "batch_size": 16,
        "max_steps": 12,
        "warmup_steps": 3,
        "learning_rate": 0.005,
        "logging_steps": 1,
        "eval_steps": 6,
        "save_steps": 6,
        "eval_batch_size": 8,
        "max_new_tokens": 12,
        "average_last": 2,
        "disable_tqdm": True,
    },
}


def training_corpus() -> str:
    subjects = [("the cat", "el gato"), ("the dog", "el perro"), ("my friend", "mi amigo"), ("the child", "el niño")]
    verbs = [("eats", "come"), ("sees", "ve"), ("wants", "quiere")]
    objects = [("the apple", "la manzana"), ("the house", "la casa"), ("the book", "el libro"), ("bread", "pan")]
    adverbs = [("", ""), (" today", " hoy"), (" now", " ahora")]
    lines = [
        f"{s[0].capitalize()} {v[0]} {o[0]}{a[0]}.\t{s[1].capitalize()} {v[1]} {o[1]}{a[1]}.\n"
        for s in subjects
        for v in verbs
        for o in objects
        for a in adverbs
    ]
    return "".join(lines)


# ----------------------------------------------------------------------------------------------------------------
# Pinning a model's output only where the beam chooses it clearly
# ----------------------------------------------------------------------------------------------------------------

#: How much higher the beam's score (its length-normalised log-probability) of a pinned translation must be than
#: that of the beam's next hypothesis for the translation to be pinned as the one output. Two machines, or PyTorch
#: and CTranslate2, compute the scores a few hundredths apart: "The mouse ate the cat." scores 0.04 higher as
#: "El ratón comió al gato." than as "... el gato." and machines differ on it, while the course examples pinned to
#: one translation win by 0.15 or more.
CLEAR_MARGIN = 0.1


def beam_hypotheses(model: Any, tokenizer: Any, text: str, direction: str) -> list[tuple[str, float]]:
    """(translation, score) of each finished hypothesis of the beam for `text` in `direction` ("es-en"), best
    first, with the model's own decoding settings (its generation config)."""
    import torch

    target = direction.split("-")[1]
    batch = tokenizer([f">>{target}<< {text}"], return_tensors="pt")
    beams = model.generation_config.num_beams
    with torch.no_grad():
        out = model.generate(**batch, num_return_sequences=beams, output_scores=True, return_dict_in_generate=True)
    translations = tokenizer.batch_decode(out.sequences, skip_special_tokens=True)
    return list(zip(translations, out.sequences_scores.tolist(), strict=True))


def near_ties(model: Any, tokenizer: Any, text: str, direction: str) -> set[str]:
    """The translations of `text` that another machine or backend may choose: the beam's best hypothesis and those
    that score within `CLEAR_MARGIN` of it. A translation may be pinned as the one output where this is only it."""
    (best, best_score), *others = beam_hypotheses(model, tokenizer, text, direction)
    return {best} | {other for other, score in others if best_score - score < CLEAR_MARGIN}


# ----------------------------------------------------------------------------------------------------------------
# Loading saved folders without our packages, as a `trust_remote_code` user does
# ----------------------------------------------------------------------------------------------------------------

#: The lines run first: importing hf_vaswani or vaswani_inspect then fails. They also import json and sys.
REFUSE_OUR_PACKAGES = textwrap.dedent(
    """
    import importlib.abc, json, sys

    class RefuseOurPackage(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in ("hf_vaswani", "vaswani_inspect"):
                raise ImportError("this process must not import " + name)

    sys.meta_path.insert(0, RefuseOurPackage())
    """
)


def run_without_our_packages(script: str, *args: str, env: dict[str, str]) -> dict[str, Any]:
    """Run `script` after `REFUSE_OUR_PACKAGES` in a fresh Python process (arguments `args`, environment `env`,
    working directory ``/``); fails the test on a non-zero exit status, else returns its last line of output,
    read as JSON."""
    result = subprocess.run(
        [sys.executable, "-c", REFUSE_OUR_PACKAGES + textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        stdin=subprocess.DEVNULL,
        timeout=PROCESS_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def finish(process: subprocess.Popen, timeout: float) -> subprocess.CompletedProcess:
    """Wait for a process started with ``stdout=PIPE, stderr=PIPE`` (at most `timeout` seconds, then it is killed
    and the timeout raised) and return what `subprocess.run` would: for tests that run processes side by side."""
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
