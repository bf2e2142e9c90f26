"""What is checked about the sentences before the model sees them, for every caller (commands, backends, demo).

Input problems are never silently mangled:

- Characters the tokenizer does not know (`unknown_characters`): a text most of whose characters would all be
  ``<unk>`` (emoji only, another script) or special tokens written as text (``<pad> <pad>``, ``</s>``: markers,
  not words) is refused, and unknown characters or special tokens in other texts are named in an
  `UnknownCharactersWarning` (`check_known_characters`).
- Language tokens (`check_language_tokens`, for a source as the tokenizer reads it; `check_source_ids`, for the
  ids of a direct tokenizer call): a ``>>xx<<`` that is not one of the model's languages, wherever it is, is
  refused: the tokenizer would split it into pieces (``> > f r < <``) that the model translates as text.
- Length: a source longer than the model accepts is cut to that length with a `TruncatedInputWarning` naming the
  sentences (`fitted_sources`).
- `checked_sources` runs every check of a request (sentences, labels, batch size, beam size and length through
  `hf_vaswani.limits.check_generation_settings`) and gives the sources with their language token.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

from .checked_source import unchecked
from .empty_input import check_not_empty, check_some_sentences
from .languages import LANGUAGE_TOKEN_PATTERN, direction_to_languages, source_with_language
from .limits import check_generation_settings

__all__ = [
    "MAX_UNKNOWN_SHARE",
    "TruncatedInputWarning",
    "UnknownCharacters",
    "UnknownCharactersWarning",
    "check_known_characters",
    "check_not_one_text",
    "check_language_tokens",
    "check_source_ids",
    "checked_sources",
    "cut_to_model_limit",
    "fitted_sources",
    "model_language_tokens",
    "short_repr",
    "unknown_characters",
]

_REPORTED = 5


class TruncatedInputWarning(UserWarning):
    """Some sources were longer than the model accepts and only their beginning was translated."""


class UnknownCharactersWarning(UserWarning):
    """Some sources hold characters the tokenizer does not know: the model reads each as ``<unk>``."""


def _listed(labels: Sequence[str]) -> str:
    more = f" and {len(labels) - _REPORTED} more" if len(labels) > _REPORTED else ""
    return ", ".join(labels[:_REPORTED]) + more


class UnknownCharacters(NamedTuple):
    """What `unknown_characters` finds in a text."""

    #: The distinct stretches of the text the tokenizer reads as its unknown token or as one of its special tokens
    #: (``<pad>``, ``</s>``, ...: markers, not words), in order.
    pieces: list[str]
    #: The share of the text's non-space characters inside those stretches (0 to 1).
    share: float
    #: Those of `pieces` that are special tokens written as text.
    special: tuple[str, ...] = ()


def unknown_characters(tokenizer: Any, text: str) -> UnknownCharacters:
    """The characters of `text` that `tokenizer` can only read as its unknown token (``<unk>``) or as one of its
    special tokens (``<pad>``, ``<s>``, ``</s>``, a language token: typed into a text they are markers, not words,
    and the model translates ``<pad> <pad>`` into nonsense), and their share of the text's non-space characters. A
    tokenizer without character offsets (a slow one) gives the share of such pieces among all pieces, each shown as
    its token."""
    unk_id = getattr(tokenizer, "unk_token_id", None)
    special_ids = set(getattr(tokenizer, "all_special_ids", None) or ()) - {unk_id}
    fast = bool(getattr(tokenizer, "is_fast", False))
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=fast, verbose=False)
    ids = list(encoding["input_ids"])
    spans = encoding["offset_mapping"] if fast else [None] * len(ids)
    pieces: list[str] = []
    special: list[str] = []
    unknown_size = 0
    for token_id, span in zip(ids, spans, strict=True):
        is_special = token_id in special_ids
        if not is_special and (unk_id is None or token_id != unk_id):
            continue
        piece = text[span[0] : span[1]].strip() if span else ""
        unknown_size += len(piece) if span else 1
        piece = piece or str(tokenizer.convert_ids_to_tokens(token_id) if is_special else tokenizer.unk_token)
        if piece not in pieces:
            pieces.append(piece)
            if is_special:
                special.append(piece)
    if fast:
        total = sum(not character.isspace() for character in text)
    else:  # pieces that carry text (not a bare word-boundary mark)
        tokens = tokenizer.convert_ids_to_tokens(ids)
        total = sum(
            1
            for i, token in zip(ids, tokens, strict=True)
            if i == unk_id or i in special_ids or str(token).strip("\u2581 ")
        )
    return UnknownCharacters(pieces, unknown_size / max(1, total), tuple(special))


#: A text more than this share of whose characters the tokenizer reads as ``<unk>`` is refused (the shipped
#: pipeline warns from the same share).
MAX_UNKNOWN_SHARE = 0.5


def check_known_characters(tokenizer: Any, sentences: Sequence[str], labels: Sequence[str]) -> None:
    """The rule for characters the model does not know, for every caller (commands, demo): a text more than half of
    whose non-space characters the tokenizer reads as ``<unk>`` (emoji only, another script) or as special tokens
    (``<pad> <pad>``, ``</s>``) is refused, since the model would translate next to nothing into a sentence;
    unknown characters and special tokens in any other text are named in one `UnknownCharactersWarning` (the model
    reads each as ``<unk>`` or as a marker, not a word).

    Raises:
        ValueError: naming the texts (by `labels`) that are mostly unknown characters, and those characters.
    """
    refused, warned, any_special = [], [], False
    for label, sentence in zip(labels, sentences, strict=True):
        found = unknown_characters(tokenizer, sentence)
        shown = f"{label} ({' '.join(found.pieces[:10])}{' ...' if len(found.pieces) > 10 else ''})"
        any_special = any_special or bool(found.special)
        if found.share > MAX_UNKNOWN_SHARE:
            refused.append(shown)
        elif found.pieces:
            warned.append(shown)
    read_as = "as <unk> or as special tokens (markers, not words)" if any_special else "as <unk>"
    if refused:
        raise ValueError(
            "Most characters of "
            + _listed(refused)
            + f" are unknown to the model: it would read them {read_as}, so there is next to nothing to translate. "
            "Nothing was translated."
        )
    if warned:
        warnings.warn(
            f"characters the model has never seen, read {read_as}: " + _listed(warned) + ".",
            UnknownCharactersWarning,
            stacklevel=4,  # the caller of translate()
        )


def check_not_one_text(value: Any, name: str, example: str) -> None:
    """Refuse a str (or bytes) where a list of texts is expected: it would be read one character at a time.

    Raises:
        TypeError: naming `name` and showing `example`, a call that works.
    """
    if isinstance(value, (str, bytes)):
        raise TypeError(
            f"{name} must be a list of texts, got one {type(value).__name__} ({short_repr(value)}), which would be "
            f"read one character at a time: pass a list, e.g. {example}."
        )


def short_repr(value: Any) -> str:
    """`repr(value)`, cut to 30 characters for a message."""
    text = repr(value)
    return text if len(text) <= 30 else text[:27] + "..."


def checked_sources(
    model: Any,
    tokenizer: Any,
    sentences: Sequence[str],
    direction: str,
    labels: Sequence[str],
    *,
    num_beams: int | None,
    batch_size: int,
    max_new_tokens: int | None,
) -> list[str]:
    """The sources of `sentences` (language token first), once every input and setting has been checked."""
    _, target_lang = direction_to_languages(direction)
    sentences = list(sentences)
    if len(labels) != len(sentences):
        raise ValueError(f"Got {len(labels)} labels for {len(sentences)} sentences.")
    check_some_sentences(sentences)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}.")
    check_generation_settings(model, num_beams=num_beams, max_new_tokens=max_new_tokens)
    sources = []
    for label, sentence in zip(labels, sentences, strict=True):
        if isinstance(sentence, str):
            check_not_empty(sentence, label)
        try:
            sources.append(source_with_language(sentence, target_lang))
        except (ValueError, TypeError) as error:
            raise ValueError(f"{label[:1].upper()}{label[1:]}: {error}") from None
    check_known_characters(tokenizer, *unchecked(sentences, labels, direction))
    return sources


def _max_source_tokens(model: Any, tokenizer: Any) -> int:
    """The longest source (in tokens, ``>>lang<<`` and ``</s>`` included) the model and tokenizer accept."""
    limits = [getattr(getattr(model, "config", None), "max_position_embeddings", None)]
    limits.append(getattr(tokenizer, "model_max_length", None))  # a huge sentinel when the tokenizer has none
    valid = [int(v) for v in limits if isinstance(v, int) and 0 < v < 10**9]
    return min(valid) if valid else 10**9


def fitted_sources(model: Any, tokenizer: Any, sources: Sequence[str], labels: Sequence[str]) -> tuple[list[int], int]:
    """The token count of each checked source and the longest the model accepts; warns once (naming them) about
    the sources that will be cut to that length. Shared by both backends."""
    limit = _max_source_tokens(model, tokenizer)
    lengths = [len(ids) for ids in tokenizer(list(sources), verbose=False)["input_ids"]]
    _warn_truncated(lengths, limit, labels)
    return lengths, limit


def _warn_truncated(lengths: Sequence[int], limit: int, labels: Sequence[str]) -> None:
    too_long = [i for i, n in enumerate(lengths) if n > limit]
    if too_long:
        warnings.warn(
            f"{len(too_long)} source(s) longer than the {limit} tokens the model accepts; only their first "
            f"{limit} tokens were translated: "
            + _listed([f"{labels[i]} ({lengths[i]} tokens)" for i in too_long])
            + ".",
            TruncatedInputWarning,
            stacklevel=5,
        )


def cut_to_model_limit(
    model: Any, tokenizer: Any, sentences: Sequence[Any], direction: str, labels: Sequence[str]
) -> list[Any]:
    """`sentences` cut to the text of the tokens the model reads (as `fitted_sources` cuts their sources), with
    the same `TruncatedInputWarning`, so that what works on the text before translation (the span search of
    `hf_vaswani.placeholders`) only reads what is translated. Anything that is not a source (not a text, blank,
    with a language token) is given back as it is, for `checked_sources` to refuse in its words."""
    _, target_lang = direction_to_languages(direction)
    if not getattr(tokenizer, "is_fast", False):  # no character offsets: `fitted_sources` cuts the tokens later
        return list(sentences)
    limit = _max_source_tokens(model, tokenizer)
    cut, lengths = list(sentences), [0] * len(sentences)
    for i, sentence in enumerate(sentences):
        try:
            source = source_with_language(sentence, target_lang)
        except (ValueError, TypeError):
            continue
        encoding = tokenizer(source, return_offsets_mapping=True, verbose=False)
        lengths[i] = len(encoding["input_ids"])
        if lengths[i] > limit:
            # The last source piece kept before </s>; its end, in the sentence (the source is token, space, text).
            end = max(0, encoding["offset_mapping"][limit - 2][1] - (len(source) - len(sentence.strip())))
            cut[i] = sentence.strip()[:end]
    _warn_truncated(lengths, limit, labels)
    return cut


def model_language_tokens(tokenizer: Any) -> list[str]:
    """The ``>>xx<<`` tokens `tokenizer` reads as one token each: the languages its model translates into."""
    tokens = list(getattr(tokenizer, "all_special_tokens", None) or ())
    if not any(LANGUAGE_TOKEN_PATTERN.fullmatch(token) for token in tokens):  # a vocabulary that holds them
        tokens = list(tokenizer.get_vocab())
    return sorted({token for token in tokens if LANGUAGE_TOKEN_PATTERN.fullmatch(token)})


def check_language_tokens(tokenizer: Any, source: str, label: str = "the source") -> None:
    """Refuse the language tokens a source (as given to the tokenizer, ``>>en<< El gato.``) must not hold: a
    ``>>xx<<`` that is not one of the model's languages (`model_language_tokens`), wherever it is in the text (the
    tokenizer would split it into pieces that the model translates as words), and a language token anywhere but
    at the start. `tokenizer(...)` itself does not check this (it is a plain `PreTrainedTokenizerFast`); the
    commands, the backends and `vaswani_inspect.extract` call this before they encode, and `check_source_ids`
    finds the same problems in ids a tokenizer call already made.

    Raises:
        ValueError: naming `label`, the token and the model's languages.
    """
    known = model_language_tokens(tokenizer)
    listed = ", ".join(known) or "none"
    text = source.strip()
    for found in LANGUAGE_TOKEN_PATTERN.finditer(text):
        token = found.group(0)
        if token not in known:
            raise ValueError(
                f"{label[:1].upper()}{label[1:]} contains {token!r}, which is not one of the model's languages "
                f"({listed}): the tokenizer would split it into pieces and the model would translate them as words."
            )
        if found.start() != 0:
            raise ValueError(
                f"{label[:1].upper()}{label[1:]} contains the language token {token!r} after its start: only the "
                f"first token of a source names the language to translate into ({listed})."
            )


def check_source_ids(tokenizer: Any, input_ids: Any, label: str = "the source") -> None:
    """`check_language_tokens` on the ids of a tokenizer call (``tokenizer(">>fr<< Le chat.").input_ids``, one
    sequence, or a batch of them as lists or a tensor), for code that calls the tokenizer itself: what the pieces
    spell out is checked, so a ``>>fr<<`` split into ``> > f r < <`` is found; padding and the final ``</s>`` are
    left out.

    Raises:
        ValueError: as `check_language_tokens`, naming the sequence (``label``, ``label #2`` in a batch).
    """
    rows = input_ids.tolist() if hasattr(input_ids, "tolist") else list(input_ids)
    batch = [list(row) for row in rows] if rows and not isinstance(rows[0], int) else [rows]
    for number, ids in enumerate(batch, 1):
        name = label if len(batch) == 1 else f"{label} #{number}"
        check_language_tokens(tokenizer, tokenizer.decode(ids, skip_special_tokens=False), name)
