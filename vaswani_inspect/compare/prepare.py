"""Before any forward pass: tokenize every sentence for both models, find the words they share, and set aside the
sentences that cannot be compared (too long for either model, no shared words), never truncating one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hf_vaswani.directions import Direction, source_language_settings, target_language_settings
from hf_vaswani.languages import leading_language_token

from .errors import CompareInputError
from .sentences import Sentence
from .words import Pieces, Span, encode_pieces, shared_words, split_words, word_groups

__all__ = ["OnLong", "PreparedSentence", "prepare_sentences", "with_start"]

#: What to do with a sentence longer than either model accepts: skip it (with a warning) or stop with an error.
OnLong = Literal["skip", "error"]


@dataclass
class PreparedSentence:
    """A sentence both models can read: its shared words and every tokenization of it (`ours_target`, the
    English as our decoder reads it, only for the decoder comparison)."""

    sentence: Sentence
    words: list[Span]
    bert: Pieces
    ours_source: Pieces
    ours_target: Pieces | None


class _Skipped(Exception):
    """A sentence that cannot be compared; the message is the reason."""


def prepare_sentences(
    sentences: Sequence[Sentence],
    tokenizer: Any,
    bert_tokenizer: Any,
    *,
    ours_limit: int | None,
    bert_limit: int | None,
    decoder: bool,
    on_long: OnLong,
    directions: tuple[Direction, Direction | None],
) -> tuple[list[PreparedSentence], list[dict[str, Any]], int]:
    """Tokenize every sentence for both models, find the shared words and reject what cannot be compared.
    `directions`: how our model reads the English as a source (the encoder pass) and as a translation (the decoder
    pass, None without it; `vaswani_inspect.directions.resolve_direction`).

    Returns the prepared sentences, the skipped ones (`{"line", "text", "reason"}`) and how many sentences had
    words merged because a piece straddled them.

    Raises:
        CompareInputError: a too-long sentence with `on_long="error"`, or a tokenizer without character offsets.
    """
    items: list[PreparedSentence] = []
    skipped: list[dict[str, Any]] = []
    merged = 0
    for sentence in sentences:
        try:
            item = _prepare(sentence, tokenizer, bert_tokenizer, (ours_limit, bert_limit), on_long, directions)
        except _Skipped as reason:
            skipped.append({"line": sentence.line, "text": sentence.text, "reason": str(reason)})
            continue
        if len(item.words) < len(split_words(sentence.text)):
            merged += 1
        items.append(item)
    return items, skipped, merged


def _prepare(
    sentence: Sentence,
    tokenizer: Any,
    bert_tokenizer: Any,
    limits: tuple[int | None, int | None],
    on_long: OnLong,
    directions: tuple[Direction, Direction | None],
) -> PreparedSentence:
    text = sentence.text
    encoder_how, decoder_how = directions
    bert_pieces = encode_pieces(bert_tokenizer, text)
    with source_language_settings(tokenizer, encoder_how):
        source = encode_pieces(tokenizer, text, encoder_how.source_prefix)
    target = None
    if decoder_how is not None:
        with target_language_settings(tokenizer, decoder_how):
            target = with_start(_without_leading_specials(encode_pieces(tokenizer, text, target=True)), decoder_how)
    too_long = _length_problems(sentence, tokenizer, (bert_pieces, source, target), limits, decoder_how)
    if leading_language_token(text):
        raise _Skipped("starts with a language token (>>xx<<)")
    if too_long:
        reason = "too long: " + "; ".join(too_long)
        if on_long == "error":
            raise CompareInputError(
                f"line {sentence.line} is {reason}. Shorten or remove it, or skip such lines "
                "(on_long='skip', --on-long skip); sentences are never truncated, so that both models read "
                "the same words."
            )
        raise _Skipped(reason)
    tokenizations = [p for p in (bert_pieces, source, target) if p is not None]
    try:
        words = shared_words(text, tokenizations)
        for pieces in tokenizations:
            word_groups(pieces, words)  # raises if the pieces cannot be mapped to the words
    except CompareInputError as error:
        raise _Skipped(f"no shared words: {error}") from None
    return PreparedSentence(sentence, words, bert_pieces, source, target)


def _length_problems(
    sentence: Sentence,
    tokenizer: Any,
    pieces: tuple[Pieces, Pieces, Pieces | None],
    limits: tuple[int | None, int | None],
    decoder_how: Direction | None,
) -> list[str]:
    """What exceeds a model's position limit: BERT's input, our encoder's or decoder's, the Spanish source."""
    bert_pieces, source, target = pieces
    ours_limit, bert_limit = limits
    problems = []
    if bert_limit is not None and len(bert_pieces) > bert_limit:
        problems.append(f"{len(bert_pieces)} BERT tokens (BERT accepts {bert_limit})")
    if ours_limit is not None and len(source) > ours_limit:
        problems.append(f"{len(source)} tokens for our encoder (our model accepts {ours_limit})")
    if ours_limit is not None and target is not None and len(target) > ours_limit:
        problems.append(f"{len(target)} tokens for our decoder (our model accepts {ours_limit})")
    if decoder_how is not None and sentence.spanish and ours_limit is not None:
        with source_language_settings(tokenizer, decoder_how):
            spanish = len(tokenizer(decoder_how.source_prefix + sentence.spanish)["input_ids"])
        if spanish > ours_limit:
            problems.append(f"its Spanish source has {spanish} tokens (our model accepts {ours_limit})")
    return problems


def _without_leading_specials(pieces: Pieces) -> Pieces:
    """The pieces after the special tokens a tokenizer puts in front of a translation (`<s>`, a language code):
    `with_start` puts the ones the decoder reads."""
    start = 0
    while start < len(pieces.spans) - 1 and pieces.spans[start] is None:
        start += 1
    return Pieces(pieces.tokens[start:], pieces.ids[start:], pieces.spans[start:])


def with_start(pieces: Pieces, direction: Direction | None = None, start_token: str = "<s>") -> Pieces:
    """Our target pieces as the decoder reads them: the decoder start slot in front (its id is the record's, -1
    here), then the target language's code where the model's direction starts every translation with one."""
    codes = list(direction.target_start) if direction is not None else []
    labels = [start_token, *([direction.target] if codes else [])]
    return Pieces([*labels, *pieces.tokens], [-1, *codes, *pieces.ids], [None] * len(labels) + list(pieces.spans))
