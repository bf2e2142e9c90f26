"""One word in two sentences: the course's "El banco aprobó el crédito." / "Me senté en el banco de la plaza."

`compare_contexts(model, tokenizer, first, second, "banco")` translates both sentences (`vaswani_inspect.extract`,
with the model's generation settings) and gives, for each, where the word is (its pieces), whom it attends to in
the encoder (its self-attention row over the sentence's words, per layer, mean of the heads), which words of the
translation attend to it (its cross-attention column), and, between the two sentences, the cosine similarity of
its contextual vectors per encoder layer (`ContextComparison`). At the input (layer 0: embedding plus absolute
position) the word is the same vector in both sentences when it has the same pieces at the same positions; each
layer mixes in its context, so a trained model's two vectors usually drift apart layer by layer.

Words are the toolkit's (`vaswani_inspect.words`): self-attention rows are over the word units of `to_words`
(special tokens kept as units of their own, so that the attention they take stays visible), cross-attention
columns over the target words that alignments index (rows that *predict* each word, special tokens left out:
`vaswani_inspect.alignment`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .alignment.links import target_words, word_level_cross
from .record import AttentionRecord
from .words import DEFAULT_SPECIAL_TOKENS, text_words, to_words, words

__all__ = ["ContextComparison", "WordInContext", "compare_contexts", "word_pieces"]


@dataclass(frozen=True, eq=False)
class WordInContext:
    """The word in one of the two sentences.

    Attributes:
        sentence: the sentence as given; translation: the model's translation of it.
        record: the token-level `AttentionRecord` of that translation (`extract`).
        pieces: the positions of the word's pieces in ``record.source_tokens``.
        source_units: the labels of the sentence's word units (`vaswani_inspect.words.words`), special tokens
            included: the columns of `self_attention`.
        unit: the index of the word among `source_units`.
        self_attention: (encoder layers, units) the word's encoder self-attention row, mean of the heads.
        target_words: the translation's words: the rows of `cross_attention`.
        cross_attention: (decoder layers, target words) how much each translation word's prediction attended to the
            word (the word's column of the word-level cross-attention, mean of the heads).
    """

    sentence: str
    translation: str
    record: AttentionRecord
    pieces: list[int]
    source_units: list[str]
    unit: int
    self_attention: np.ndarray
    target_words: list[str]
    cross_attention: np.ndarray


@dataclass(frozen=True, eq=False)
class ContextComparison:
    """The same word in two sentences (`compare_contexts`).

    Attributes:
        word: the word compared.
        first, second: the word in each sentence (`WordInContext`).
        similarity: (encoder layers + 1,) the cosine similarity of the word's contextual vectors (the mean of its
            pieces' vectors) in the two sentences: entry 0 at the encoder's input (embeddings plus positions), entry
            i after encoder layer i, as ``output_hidden_states`` gives them.
    """

    word: str
    first: WordInContext
    second: WordInContext
    similarity: np.ndarray

    @property
    def sides(self) -> tuple[WordInContext, WordInContext]:
        """(first, second)."""
        return self.first, self.second


def word_pieces(record: AttentionRecord, word: str) -> list[int]:
    """The positions of the pieces of `word` in ``record.source_tokens``: its first occurrence among the sentence's
    words (`vaswani_inspect.words.text_words`), compared as written, else ignoring case.

    Raises:
        ValueError: the sentence has no such word (the message lists its words).
    """
    found = text_words(record.source_tokens, record.special_tokens or DEFAULT_SPECIAL_TOKENS)
    for same in (lambda a, b: a == b, lambda a, b: a.casefold() == b.casefold()):
        for candidate, pieces in zip(found.words, found.pieces):
            if pieces and same(candidate, word.strip()):
                return list(pieces)
    listed = ", ".join(repr(w) for w in found.words)
    raise ValueError(f"{word!r} is not a word of {record.source_text!r}; its words are {listed}.")


def compare_contexts(
    model: Any,
    tokenizer: Any,
    first: str,
    second: str,
    word: str,
    *,
    direction: str | None = None,
    generate_kwargs: dict[str, Any] | None = None,
) -> ContextComparison:
    """`word` in the sentences `first` and `second`: translations, attention and contextual vectors (module
    docstring, `ContextComparison`).

    Args:
        model, tokenizer: an encoder-decoder model of a supported architecture and its tokenizer.
        first, second: the two sentences; direction: e.g. "es-en", as `extract` takes it.
        word: a word of both sentences (its first occurrence in each is used).
        generate_kwargs: `generate()` settings for the translations, as `extract` takes them (default: the
            model's generation config).

    Raises:
        ValueError: `word` is not a word of one of the sentences (the message names that sentence's words), or
            what `extract` refuses.
    """
    from .extract import _device, _eval_mode, extract

    if not isinstance(word, str) or not word.strip():
        raise ValueError("compare_contexts() needs a word to compare.")
    records = extract(model, tokenizer, [first, second], direction=direction, generate_kwargs=generate_kwargs)
    pieces = [word_pieces(record, word) for record in records]
    vectors = []
    with _eval_mode(model), torch.inference_mode():
        for record, own in zip(records, pieces):
            ids = torch.tensor([record.source_ids], dtype=torch.long, device=_device(model))
            output = model.get_encoder()(input_ids=ids, output_hidden_states=True, return_dict=True)
            states = torch.stack(tuple(output.hidden_states))[:, 0].double().cpu().numpy()  # (layers + 1, S, d)
            vectors.append(states[:, own].mean(axis=1))
    a, b = vectors
    similarity = (a * b).sum(-1) / np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-12)
    first_side, second_side = (_side(record, own) for record, own in zip(records, pieces))
    return ContextComparison(word.strip(), first_side, second_side, similarity)


def _side(record: AttentionRecord, pieces: list[int]) -> WordInContext:
    merged = to_words(record, special_tokens="keep")
    unit = merged.metadata["source_word_pieces"].index(pieces)
    specials = record.special_tokens or DEFAULT_SPECIAL_TOKENS
    source = text_words(record.source_tokens, specials)
    index = next(i for i, own in enumerate(source.pieces) if own == pieces)
    cross = word_level_cross(record, shift=False, skip_punctuation=False)[..., index].mean(axis=1)
    return WordInContext(
        sentence=record.source_text,
        translation=record.target_text,
        record=record,
        pieces=pieces,
        source_units=words(record.source_tokens, specials),
        unit=unit,
        self_attention=merged.encoder[:, :, unit, :].mean(axis=1),
        target_words=target_words(record),
        cross_attention=cross,
    )
