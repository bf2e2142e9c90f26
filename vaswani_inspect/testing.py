"""Tiny, offline stand-ins for the shipped checkpoint: a Metaspace tokenizer and a small random model.

Used by the tests and the benchmarks where the shipped checkpoint (`hf_vaswani.paths.default_model_path()`) is not
there or too slow. The tokenizer has the project's special tokens, in the project's order:
`<pad>`=0 `<s>`=1 `</s>`=2 `<unk>`=3 `>>en<<`=4 `>>es<<`=5, and appends `</s>` to every sequence. `tiny_model` is
`hf_vaswani.testing.tiny_model` (d_model 32, 2+2 layers, 4 heads, random weights from a seed, in eval mode).
"""

from __future__ import annotations

import functools
from typing import Any

# The small random model and the tiny corpus, shared with hf_vaswani's own test helpers.
from hf_vaswani.testing import TINY_PAIRS, tiny_model, tiny_sentences

SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>", ">>en<<", ">>es<<")


def training_sentences() -> list[str]:
    """The small bilingual corpus the test tokenizer is trained on: both sides of `hf_vaswani.testing.TINY_PAIRS`."""
    return tiny_sentences()


def sentence_pairs() -> list[tuple[str, str]]:
    """(Spanish, English) pairs of the corpus `hf_vaswani.testing.TINY_PAIRS`."""
    return [(spanish, english) for english, spanish in TINY_PAIRS]


@functools.cache
def tiny_tokenizer(vocab_size: int = 200) -> Any:
    """Train a Unigram + Metaspace tokenizer on the corpus above and wrap it in `PreTrainedTokenizerFast`.

    Cached: every call with the same `vocab_size` returns the same object (treat it as read-only).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    from hf_vaswani.tokenization import in_canonical_order

    backend = Tokenizer(models.Unigram())
    backend.pre_tokenizer = pre_tokenizers.Metaspace()
    backend.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), unk_token="<unk>", show_progress=False
    )
    backend.train_from_iterator(training_sentences() * 4, trainer)
    backend = in_canonical_order(backend)  # the trainer's ids vary from run to run; a tiny model must not
    for expected_id, token in enumerate(SPECIAL_TOKENS):
        if backend.token_to_id(token) != expected_id:
            raise RuntimeError(f"special token {token} got id {backend.token_to_id(token)}, expected {expected_id}")
    eos_id = backend.token_to_id("</s>")
    backend.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A $B </s>", special_tokens=[("</s>", eos_id)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        additional_special_tokens=[">>en<<", ">>es<<"],
    )


__all__ = ["SPECIAL_TOKENS", "sentence_pairs", "tiny_model", "tiny_tokenizer", "training_sentences"]
