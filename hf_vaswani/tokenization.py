"""A shared English–Spanish subword tokenizer, trained with the 🤗 `tokenizers` library.

The tokenizer follows the convention of the multilingual Marian models:

* the SOURCE sentence starts with a language token naming the language to translate INTO, and the
  tokenizer appends `</s>`: ``tokenizer(">>en<< el gato negro").input_ids == [4, ..., 2]``;
* the TARGET sentence has no language token, only the closing `</s>`:
  ``tokenizer(text_target="the black cat").input_ids == [..., 2]``;
* the decoder starts from `<s>` (id 1); the model shifts the labels right itself.

The special tokens have fixed ids, which the model configuration relies on:

======== ==
`<pad>`  0
`<s>`    1
`</s>`   2
`<unk>`  3
`>>en<<` 4
`>>es<<` 5
======== ==

Text is normalized with NFKC, runs of white space are collapsed to one space and the ends are stripped;
words are split on spaces, Metaspace style (`▁`), and the matching decoder puts the spaces back, so
``tokenizer.decode(tokenizer(text).input_ids, skip_special_tokens=True) == normalize_text(text)`` for any
text whose characters are in the vocabulary (`normalize_text(text) == text` for ordinary, single-spaced
text). Characters never seen in training become `<unk>`; the default initial alphabet makes sure ASCII and
the usual Spanish and Western European letters and punctuation are always in the vocabulary.

Special tokens typed inside the text (``>>es<<``, ``</s>``, ...) are read as those tokens, never split into
pieces; anything else, HTML such as ``</script>`` included, is plain text.

The result is a plain `transformers.PreTrainedTokenizerFast`: `save_pretrained(dir)` writes it and
`AutoTokenizer.from_pretrained(dir)` loads it back without any code from this package.
"""

from __future__ import annotations

import json
import os
import shutil
import string
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

from .languages import (
    DIRECTIONS,
    LANGUAGE_TOKEN_IDS,
    LANGUAGE_TOKENS,
    SUPPORTED_LANGUAGES,
    direction_to_languages,
    language_token,
    source_with_language,
)

__all__ = [
    "BOS_ID",
    "BOS_TOKEN",
    "DEFAULT_INITIAL_ALPHABET",
    "DEFAULT_MODEL_MAX_LENGTH",
    "DEFAULT_VOCAB_SIZE",
    "DIRECTIONS",
    "EOS_ID",
    "EOS_TOKEN",
    "LANGUAGE_TOKENS",
    "LANGUAGE_TOKEN_IDS",
    "in_canonical_order",
    "PAD_ID",
    "PAD_TOKEN",
    "SPECIAL_TOKENS",
    "SUPPORTED_LANGUAGES",
    "UNK_ID",
    "UNK_TOKEN",
    "build_tokenizer_from_pairs",
    "save_tokenizer",
    "direction_to_languages",
    "language_token",
    "normalize_text",
    "source_with_language",
    "train_tokenizer",
    "wrap_tokenizer",
]

PAD_TOKEN = "<pad>"
BOS_TOKEN = "<s>"
EOS_TOKEN = "</s>"
UNK_TOKEN = "<unk>"

PAD_ID = 0
BOS_ID = 1
EOS_ID = 2
UNK_ID = 3

#: All special tokens, in id order: the token at position i has id i.
SPECIAL_TOKENS: tuple[str, ...] = (
    PAD_TOKEN,
    BOS_TOKEN,
    EOS_TOKEN,
    UNK_TOKEN,
    LANGUAGE_TOKENS["en"],
    LANGUAGE_TOKENS["es"],
)

DEFAULT_VOCAB_SIZE = 8000
DEFAULT_MODEL_MAX_LENGTH = 512

#: Characters always put in the vocabulary, whether or not the training text has them: printable ASCII
#: (so code, HTML, "<", ">", "@", "#" round-trip) plus the letters and punctuation of Spanish and the usual
#: Western European extras.
DEFAULT_INITIAL_ALPHABET: tuple[str, ...] = tuple(
    dict.fromkeys(
        string.ascii_letters
        + string.digits
        + string.punctuation
        + "¡¿ÁÉÍÑÓÚÜáéíñóúü"
        + "ÀÂÄÇÈÊËÎÏÔÖÙÛàâäçèêëîïôöùûÿ"
        + "«»‘’“”–—€£°ºª"
    )
)

_METASPACE = "▁"


def _build_normalizer() -> normalizers.Normalizer:
    """NFKC, every run of white space to one space, then strip both ends."""
    return normalizers.Sequence(
        [
            normalizers.NFKC(),
            normalizers.Replace(Regex(r"\s+"), " "),
            normalizers.Strip(),
        ]
    )


def normalize_text(text: str) -> str:
    """Return `text` as the tokenizer normalizes it (NFKC, single spaces, no leading/trailing space).

    This is exactly what decoding the tokenization of `text` gives back (when every character of `text` is
    in the vocabulary), so it is the right form for a reference that is compared to decoded output.
    """
    return _build_normalizer().normalize_str(text)


def _non_empty(texts: Iterable[str]) -> Iterator[str]:
    for text in texts:
        if text and not text.isspace():
            yield text


def wrap_tokenizer(
    tokenizer: Tokenizer,
    model_max_length: int = DEFAULT_MODEL_MAX_LENGTH,
) -> PreTrainedTokenizerFast:
    """Wrap a `tokenizers.Tokenizer` that has our special tokens at their fixed ids as a transformers one.

    Sets pad/bos/eos/unk, the language tokens as extra special tokens, right padding and `model_max_length`.

    Raises:
        ValueError: if a special token is missing or does not have its fixed id.
    """
    for expected_id, token in enumerate(SPECIAL_TOKENS):
        actual_id = tokenizer.token_to_id(token)
        if actual_id != expected_id:
            raise ValueError(f"Special token {token!r} must have id {expected_id}, but has id {actual_id}.")
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token=PAD_TOKEN,
        bos_token=BOS_TOKEN,
        eos_token=EOS_TOKEN,
        unk_token=UNK_TOKEN,
        additional_special_tokens=[LANGUAGE_TOKENS[lang] for lang in SUPPORTED_LANGUAGES],
        model_max_length=model_max_length,
        padding_side="right",
        truncation_side="right",
    )


def train_tokenizer(
    texts: Iterable[str],
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    *,
    model_type: str = "unigram",
    model_max_length: int = DEFAULT_MODEL_MAX_LENGTH,
    initial_alphabet: Sequence[str] = DEFAULT_INITIAL_ALPHABET,
    max_piece_length: int = 16,
    show_progress: bool = False,
) -> PreTrainedTokenizerFast:
    """Train one shared subword vocabulary on `texts` (English and Spanish sentences mixed).

    Args:
        texts: the training sentences; pass BOTH sides of the training pairs (empty strings are skipped).
            Do not pass validation or test sentences.
        vocab_size: size of the vocabulary, special tokens included. The Unigram trainer may stop below it
            on a very small corpus.
        model_type: ``"unigram"`` (SentencePiece-style, the default) or ``"bpe"``.
        model_max_length: the longest sequence the model takes; `truncation=True` cuts to it.
        initial_alphabet: characters that are always in the vocabulary (see `DEFAULT_INITIAL_ALPHABET`).
        max_piece_length: longest subword piece, in characters (Unigram only).
        show_progress: show the trainer's progress bar.

    Returns:
        A `PreTrainedTokenizerFast` with ``<pad>=0, <s>=1, </s>=2, <unk>=3, >>en<<=4, >>es<<=5`` that appends
        `</s>` to every sequence.
    """
    if model_type not in ("unigram", "bpe"):
        raise ValueError(f"model_type must be 'unigram' or 'bpe', got {model_type!r}.")
    alphabet = list(dict.fromkeys(initial_alphabet))
    if vocab_size < len(SPECIAL_TOKENS) + len(alphabet):
        raise ValueError(
            f"vocab_size={vocab_size} is too small: it must hold the {len(SPECIAL_TOKENS)} special tokens "
            f"and the {len(alphabet)} characters of the initial alphabet."
        )
    special_tokens = list(SPECIAL_TOKENS)
    if model_type == "unigram":
        tokenizer = Tokenizer(models.Unigram())
        trainer: trainers.Trainer = trainers.UnigramTrainer(
            vocab_size=vocab_size,
            special_tokens=special_tokens,
            unk_token=UNK_TOKEN,
            initial_alphabet=alphabet,
            max_piece_length=max_piece_length,
            show_progress=show_progress,
        )
    else:
        tokenizer = Tokenizer(models.BPE(unk_token=UNK_TOKEN))
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=special_tokens,
            initial_alphabet=alphabet,
            show_progress=show_progress,
        )
    tokenizer.normalizer = _build_normalizer()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement=_METASPACE, prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement=_METASPACE, prepend_scheme="always")
    tokenizer.train_from_iterator(_non_empty(texts), trainer=trainer)
    if model_type == "unigram":
        tokenizer = in_canonical_order(tokenizer)
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"$A {EOS_TOKEN}",
        pair=f"$A $B {EOS_TOKEN}",
        special_tokens=[(EOS_TOKEN, EOS_ID)],
    )
    return wrap_tokenizer(tokenizer, model_max_length=model_max_length)


#: The gap the Unigram trainer leaves between the scores of initial-alphabet characters absent from the corpus.
_UNSEEN_CHARACTER_STEP = 1e-4


def _steps_down_by_at_most_the_unseen_gap(score: float, next_score: float) -> bool:
    gap = score - next_score
    return abs(gap) < 1e-9 or abs(gap - _UNSEEN_CHARACTER_STEP) < 1e-7


def in_canonical_order(tokenizer: Tokenizer) -> Tokenizer:
    """The trained Unigram vocabulary with its pieces in one order for a given corpus.

    The trainer sums scores on several threads and walks hash maps, so from run to run the same sentences gave
    other ids: pieces of equal score swapped, scores that differ in their last bit, and the low tail (the
    initial-alphabet characters never seen in the corpus, 1e-4 apart below the lowest learnt score, and a piece
    or two at the same score) shuffled. A model trained on one run's ids would read another's wrongly. Scores
    rounded to 1e-9, ties ordered by the piece, and the low tail sorted by piece over the same scores make the
    ids a function of the corpus; the tail's scores only ever decide between pieces nothing else competes with.
    The special tokens keep their fixed ids at the front.
    """
    data = json.loads(tokenizer.to_str())
    vocab = data["model"]["vocab"]
    specials, pieces = vocab[: len(SPECIAL_TOKENS)], vocab[len(SPECIAL_TOKENS) :]
    unseen = len(pieces) - 1
    while unseen > 0 and _steps_down_by_at_most_the_unseen_gap(pieces[unseen - 1][1], pieces[unseen][1]):
        unseen -= 1
    seen, tail = pieces[:unseen], pieces[unseen:]
    seen = sorted(([piece, round(score, 9)] for piece, score in seen), key=lambda entry: (-entry[1], entry[0]))
    tail = [[piece, round(score, 9)] for piece, (_, score) in zip(sorted(p for p, _ in tail), tail)]
    data["model"]["vocab"] = specials + seen + tail
    data["model"]["unk_id"] = UNK_ID
    return Tokenizer.from_str(json.dumps(data))


def build_tokenizer_from_pairs(
    pairs_path: str | os.PathLike[str],
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    validation_size: int | float = 2000,
    test_size: int | float = 2000,
    seed: int = 0,
    train_split_only: bool = True,
    model_type: str = "unigram",
    model_max_length: int = DEFAULT_MODEL_MAX_LENGTH,
    **read_kwargs: Any,
) -> PreTrainedTokenizerFast:
    """Read a corpus of pairs with `hf_vaswani.data.load_pairs`, train the tokenizer on it, save it.

    With `train_split_only` (the default) the tokenizer only sees the training split that
    `hf_vaswani.data.prepare_splits` makes with the same `validation_size`, `test_size` and `seed`, so the
    held-out sentences stay unseen; both sides of every training pair are used.

    Args:
        pairs_path: a file `hf_vaswani.data.read_pairs` reads (or a Hub dataset id); `read_kwargs` go to it.
        vocab_size, model_type, model_max_length: as in `train_tokenizer`.
        out_dir: where to `save_pretrained` the tokenizer; None does not save.
    """
    from .data import deduplicate_pairs, load_pairs, prepare_splits

    pairs = load_pairs(pairs_path, **read_kwargs)
    if train_split_only:
        splits = prepare_splits(pairs, validation_size=validation_size, test_size=test_size, seed=seed)
        pairs = splits["train"]
    else:
        pairs = deduplicate_pairs(pairs)
    tokenizer = train_tokenizer(
        (text for pair in pairs for text in pair),
        vocab_size,
        model_type=model_type,
        model_max_length=model_max_length,
    )
    if out_dir is not None:
        save_tokenizer(tokenizer, out_dir)
    return tokenizer


def _as_os_error(error: Exception, folder: Path) -> OSError | None:
    """An error of `save_pretrained` as an OSError naming `folder`, or None when it is not a failed write (the
    `tokenizers` library reports one as a plain Exception ending in "(os error N)")."""
    import re

    errno = error.errno if isinstance(error, OSError) else None
    if errno is None:
        match = re.search(r"\(os error (\d+)\)", str(error))
        if match is None:
            return None
        errno = int(match.group(1))
    reason = os.strerror(errno) if errno else str(error)
    return OSError(
        errno,
        f"Could not save the tokenizer into {str(folder)!r} ({reason}): nothing of it was written there; free disk "
        "space (or make the folder writable) and run again.",
    )


def save_tokenizer(tokenizer: PreTrainedTokenizerFast, folder: str | os.PathLike[str]) -> Path:
    """`tokenizer.save_pretrained(folder)` in which no file is ever half-written.

    The files are written into a temporary sibling of `folder`, flushed to disk and renamed into place (the whole
    folder when it is new, each file otherwise): a full disk or a kill part-way leaves `folder` as it was.

    Raises:
        OSError: the files could not be written (a full disk, no permission), naming `folder`.
    """
    from .outputs import make_staging_folder, publish_into

    folder = Path(folder)
    staging = make_staging_folder(folder)
    try:
        tokenizer.save_pretrained(str(staging))
        publish_into(staging, folder)
    except Exception as error:
        shutil.rmtree(staging, ignore_errors=True)
        converted = _as_os_error(error, folder)
        if converted is None:
            raise
        raise converted from error
    return folder
