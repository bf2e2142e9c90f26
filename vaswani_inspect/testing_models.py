"""Tiny random-weight translation models of other architectures, saved as ordinary model folders, for the tests.

The toolkit is meant to work on any Hugging Face encoder-decoder translation model, not only on `hf_vaswani`. These
builders imitate the layout of well-known Hub checkpoints, down to the tokenizer format and the special-token
conventions, so that the tests meet the same quirks as real models, without the network and in well under a second:

- ``"marian"`` imitates Helsinki-NLP/opus-mt-es-en: a one-direction model (no ``>>xx<<`` codes) with the slow,
  SentencePiece-based `MarianTokenizer` (``source.spm``, ``target.spm``, a joint ``vocab.json``), ``</s>``=0,
  ``<unk>``=1 and the pad token *last*, which is also the decoder start token.
- ``"m2m100"`` imitates facebook/nllb-200-distilled-600M: an `M2M100ForConditionalGeneration` with the `NllbTokenizer`
  (``tokenizer.json``, SentencePiece BPE, fairseq ids ``<s>`` ``<pad>`` ``</s>`` ``<unk>`` = 0-3), language codes
  (``spa_Latn``, ``eng_Latn``, ``fra_Latn``) as special tokens after the pieces, then ``<mask>``; the source code
  comes first in every source, the target language is chosen with ``forced_bos_token_id`` and decoding starts with
  ``</s>``.
- ``"mbart"`` imitates facebook/mbart-large-50-many-to-many-mmt: `MBartForConditionalGeneration` with the
  `MBart50Tokenizer` (SentencePiece Unigram, the 52 mBART-50 codes such as ``es_XX`` / ``en_XX`` and ``<mask>``
  at the end of the vocabulary); the target language is chosen with ``forced_bos_token_id``.
- ``"bart"`` imitates a BART fine-tuned for one direction (es->en): a byte-level BPE tokenizer (``vocab.json``,
  ``merges.txt``, ``tokenizer.json``; ``Ġ`` marks a space), ``<s>`` ``<pad>`` ``</s>`` ``<unk>`` = 0-3, decoding
  starts with ``</s>`` and ``<s>`` is forced first, as in facebook/bart-base.
- ``"t5"`` imitates t5-small: `T5ForConditionalGeneration` with the `T5Tokenizer` (SentencePiece Unigram, ``▁``,
  ``<pad>``=0 ``</s>``=1 ``<unk>``=2, no sentinel tokens), translation chosen by a task prefix from the config's
  ``task_specific_params``, and a model vocabulary larger than the tokenizer's (as 32128 vs 32100 in t5-small).

Each builder registers itself under its architecture's name in `hf_vaswani.architectures.ARCHITECTURES`
(`tiny_model`): `TINY_MODELS` holds them, `ARCHITECTURES` is their names. Every model has d_model 32, 2 encoder and
2 decoder layers, 4 heads and a vocabulary of a few hundred pieces trained offline on the tiny corpus
(`hf_vaswani.testing.TINY_PAIRS`, through `vaswani_inspect.testing.sentence_pairs`); weights are random from
`torch.manual_seed(seed)`. Each folder has a ``generation_config.json`` with a short ``max_length``, so that
generation on random weights stops quickly.

Quirks worth knowing (transformers 5): every tokenizer but Marian's is backed by `tokenizers` (the "Fast" names are
aliases; `BartTokenizerFast` is `RobertaTokenizer`) and gives ``return_offsets_mapping``; the slow `MarianTokenizer`
silently returns no ``offset_mapping`` and warns "Recommended: pip install sacremoses" when sacremoses is missing.
"""

from __future__ import annotations

import functools
import io
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hf_vaswani import architectures as registry

#: Writes a tiny model of one architecture into an existing folder.
Writer = Callable[[Path], None]
#: The tiny model of each architecture, by the architecture's name (`tiny_model` adds one).
TINY_MODELS: dict[str, Writer] = {}
#: The architectures that have a tiny model, in registration order (a view of `TINY_MODELS`: it sees later ones).
ARCHITECTURES = TINY_MODELS.keys()

# Sizes shared by all the tiny models.
_D_MODEL = 32
_LAYERS = 2
_HEADS = 4
_FFN = 64
_MAX_POSITIONS = 64
_MAX_LENGTH = 32
_VOCAB_SIZE = 300  # pieces asked of the trainers (SentencePiece may stop short on the small corpus)

NLLB_LANGUAGE_CODES = ("spa_Latn", "eng_Latn", "fra_Latn")
T5_TASK_SPECIFIC_PARAMS = {
    "translation_es_to_en": {"prefix": "translate Spanish to English: "},
    "translation_en_to_es": {"prefix": "translate English to Spanish: "},
}


def corpus_pairs() -> list[tuple[str, str]]:
    """(Spanish, English) pairs the tiny tokenizers are trained on: the tiny corpus `hf_vaswani.testing.TINY_PAIRS`."""
    from vaswani_inspect.testing import sentence_pairs

    return sentence_pairs()


def tiny_model(architecture: str) -> Callable[[Writer], Writer]:
    """Register the decorated writer as the tiny model of `architecture`, a name of
    `hf_vaswani.architectures.ARCHITECTURES`.

    Raises:
        ValueError: the architecture is not registered, or already has a tiny model.
    """

    def register(writer: Writer) -> Writer:
        if architecture not in registry.ARCHITECTURES:
            raise ValueError(f"{architecture!r} is no architecture of hf_vaswani.architectures.ARCHITECTURES.")
        if architecture in TINY_MODELS:
            raise ValueError(f"The architecture {architecture!r} already has a tiny model.")
        TINY_MODELS[architecture] = writer
        return writer

    return register


def _corpus(side: str = "both") -> list[str]:
    pairs = corpus_pairs()
    if side == "es":
        return [spanish for spanish, _ in pairs]
    if side == "en":
        return [english for _, english in pairs]
    return [sentence for pair in pairs for sentence in pair]


@functools.cache
def _train_sentencepiece(side: str, model_type: str, extra_sentences: tuple[str, ...] = ()) -> bytes:
    """Train a SentencePiece model (``<unk>``=0 ``<s>``=1 ``</s>``=2, nmt_nfkc normalisation) and return its bytes."""
    import sentencepiece

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter((_corpus(side) + list(extra_sentences)) * 4),
        model_writer=model,
        model_type=model_type,
        vocab_size=_VOCAB_SIZE,
        hard_vocab_limit=False,
        character_coverage=1.0,
        minloglevel=2,
        num_threads=1,
    )
    return model.getvalue()


def _sentencepiece_proto(model: bytes) -> Any:
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model)
    return proto


def _generation_config(**kwargs: Any) -> Any:
    from transformers import GenerationConfig

    return GenerationConfig(max_length=_MAX_LENGTH, **kwargs)


def _bart_like_sizes() -> dict[str, Any]:
    """Sizes in the names shared by the BART family configs (Marian, M2M100, mBART, BART)."""
    return {
        "d_model": _D_MODEL,
        "encoder_layers": _LAYERS,
        "decoder_layers": _LAYERS,
        "encoder_attention_heads": _HEADS,
        "decoder_attention_heads": _HEADS,
        "encoder_ffn_dim": _FFN,
        "decoder_ffn_dim": _FFN,
        "max_position_embeddings": _MAX_POSITIONS,
        "dropout": 0.0,
        "attention_dropout": 0.0,
        "activation_dropout": 0.0,
    }


def _save(model: Any, tokenizer: Any, folder: Path) -> None:
    model.eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


# --- Marian (Helsinki-NLP/opus-mt-es-en) --------------------------------------------------------------------------


@tiny_model("marian")
def _write_marian(folder: Path) -> None:
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    source_model = _train_sentencepiece("es", "unigram")
    target_model = _train_sentencepiece("en", "unigram")
    (folder / "source.spm").write_bytes(source_model)
    (folder / "target.spm").write_bytes(target_model)
    # One joint vocabulary for both sides, in OPUS-MT's order: </s>, <unk>, the pieces, and <pad> last.
    vocab = {"</s>": 0, "<unk>": 1}
    for model in (source_model, target_model):
        for piece in _sentencepiece_proto(model).pieces:
            if piece.type == 1:  # normal pieces only (not <unk>, <s>, </s>)
                vocab.setdefault(piece.piece, len(vocab))
    vocab["<pad>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False, indent=2), encoding="utf-8")

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Recommended: pip install sacremoses")
        tokenizer = MarianTokenizer(
            source_spm=str(folder / "source.spm"),
            target_spm=str(folder / "target.spm"),
            vocab=str(folder / "vocab.json"),
            source_lang="es",
            target_lang="en",
            model_max_length=512,
        )
    pad_id = vocab["<pad>"]
    config = MarianConfig(
        vocab_size=len(vocab),
        decoder_vocab_size=len(vocab),
        pad_token_id=pad_id,
        eos_token_id=0,
        decoder_start_token_id=pad_id,
        forced_eos_token_id=0,
        scale_embedding=True,
        activation_function="swish",
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
        **_bart_like_sizes(),
    )
    model = MarianMTModel(config)
    model.generation_config = _generation_config(
        decoder_start_token_id=pad_id,
        eos_token_id=0,
        forced_eos_token_id=0,
        pad_token_id=pad_id,
        bad_words_ids=[[pad_id]],
        num_beams=4,
    )
    _save(model, tokenizer, folder)


# --- NLLB (facebook/nllb-200-distilled-600M) ----------------------------------------------------------------------


@tiny_model("m2m100")
def _write_nllb(folder: Path) -> None:
    from transformers import M2M100Config, M2M100ForConditionalGeneration, NllbTokenizer
    from transformers.tokenization_utils_base import generate_merges

    proto = _sentencepiece_proto(_train_sentencepiece("both", "bpe"))
    # fairseq order, as NLLB: <s> <pad> </s> <unk>, then SentencePiece's normal pieces shifted by one.
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for index, piece in enumerate(proto.pieces):
        if piece.type == 1:
            vocab[piece.piece] = index + 1
    merges = generate_merges({piece: index for piece, index in vocab.items() if index > 3})
    for code in NLLB_LANGUAGE_CODES:  # the codes follow the pieces, and <mask> (added by the tokenizer) comes last
        vocab[code] = len(vocab)
    tokenizer = NllbTokenizer(
        vocab=vocab,
        merges=merges,
        src_lang="spa_Latn",
        additional_special_tokens=list(NLLB_LANGUAGE_CODES),
        _spm_precompiled_charsmap=proto.normalizer_spec.precompiled_charsmap,
        model_max_length=1024,
    )
    config = M2M100Config(
        vocab_size=len(tokenizer),
        bos_token_id=0,
        pad_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=2,
        scale_embedding=True,
        activation_function="relu",
        **_bart_like_sizes(),
    )
    model = M2M100ForConditionalGeneration(config)
    model.generation_config = _generation_config(
        bos_token_id=0, pad_token_id=1, eos_token_id=2, decoder_start_token_id=2
    )
    _save(model, tokenizer, folder)


# --- mBART-50 (facebook/mbart-large-50-many-to-many-mmt) ----------------------------------------------------------


@tiny_model("mbart")
def _write_mbart(folder: Path) -> None:
    from transformers import MBart50Tokenizer, MBartConfig, MBartForConditionalGeneration

    proto = _sentencepiece_proto(_train_sentencepiece("both", "unigram"))
    # SentencePiece order (<unk> <s> </s> first); MBart50Tokenizer reorders to fairseq's and appends the codes.
    pieces = [(piece.piece, piece.score) for piece in proto.pieces]
    tokenizer = MBart50Tokenizer(
        vocab=pieces,
        _spm_precompiled_charsmap=proto.normalizer_spec.precompiled_charsmap,
        src_lang="es_XX",
        tgt_lang="en_XX",
        model_max_length=1024,
    )
    config = MBartConfig(
        vocab_size=len(tokenizer),
        bos_token_id=0,
        pad_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=2,
        forced_eos_token_id=2,
        scale_embedding=True,
        **_bart_like_sizes(),
    )
    model = MBartForConditionalGeneration(config)
    model.generation_config = _generation_config(
        bos_token_id=0, pad_token_id=1, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=2
    )
    _save(model, tokenizer, folder)


# --- BART, byte-level BPE ------------------------------------------------------------------------------------------


@tiny_model("bart")
def _write_bart(folder: Path) -> None:
    from tokenizers import ByteLevelBPETokenizer
    from transformers import BartConfig, BartForConditionalGeneration, BartTokenizer

    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(
        _corpus() * 4,
        vocab_size=_VOCAB_SIZE + 256,  # the 256 byte symbols come first
        min_frequency=2,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
        show_progress=False,
    )
    trained = json.loads(trainer._tokenizer.to_str())["model"]
    vocab = dict(trained["vocab"])
    merges = [tuple(merge.split(" ")) if isinstance(merge, str) else tuple(merge) for merge in trained["merges"]]
    vocab["<mask>"] = len(vocab)
    tokenizer = BartTokenizer(vocab=vocab, merges=merges, model_max_length=1024)
    # transformers 5 saves only tokenizer.json; BART checkpoints also ship the GPT-2 style vocabulary files.
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    lines = ["#version: 0.2"] + [" ".join(merge) for merge in merges]
    (folder / "merges.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = BartConfig(
        vocab_size=len(tokenizer),
        bos_token_id=0,
        pad_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=2,
        forced_bos_token_id=0,
        forced_eos_token_id=2,
        **_bart_like_sizes(),
    )
    model = BartForConditionalGeneration(config)
    model.generation_config = _generation_config(
        bos_token_id=0,
        pad_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=2,
        forced_bos_token_id=0,
        forced_eos_token_id=2,
        num_beams=4,
    )
    _save(model, tokenizer, folder)


# --- T5 (t5-small) ---------------------------------------------------------------------------------------------------


@tiny_model("t5")
def _write_t5(folder: Path) -> None:
    from transformers import T5Config, T5ForConditionalGeneration, T5Tokenizer

    prefixes = tuple(params["prefix"] for params in T5_TASK_SPECIFIC_PARAMS.values())
    model_bytes = _train_sentencepiece("both", "unigram", prefixes)
    proto = _sentencepiece_proto(model_bytes)
    # T5's order: <pad>=0 </s>=1 <unk>=2, then SentencePiece's normal pieces.
    pieces = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    pieces += [(piece.piece, piece.score) for piece in proto.pieces if piece.type == 1]
    tokenizer = T5Tokenizer(
        vocab=pieces,
        extra_ids=0,
        _spm_precompiled_charsmap=proto.normalizer_spec.precompiled_charsmap,
        model_max_length=512,
    )
    config = T5Config(
        vocab_size=(len(tokenizer) // 16 + 1) * 16,  # larger than the tokenizer, as 32128 vs 32100 in t5-small
        d_model=_D_MODEL,
        d_kv=_D_MODEL // _HEADS,
        d_ff=_FFN,
        num_layers=_LAYERS,
        num_decoder_layers=_LAYERS,
        num_heads=_HEADS,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=32,
        dropout_rate=0.0,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
        task_specific_params=T5_TASK_SPECIFIC_PARAMS,
    )
    model = T5ForConditionalGeneration(config)
    model.generation_config = _generation_config(pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    _save(model, tokenizer, folder)


def write_tiny_architecture(architecture: str, folder: str | Path, *, seed: int = 0) -> Path:
    """Save a tiny random model of `architecture` and its tokenizer in `folder`; return the folder.

    `architecture` is one of `ARCHITECTURES`; see the module docstring for the checkpoint each one imitates. The
    folder is created if needed; files of the same names in it are overwritten. The weights are random from
    `torch.manual_seed(seed)`; the tokenizer does not depend on the seed.
    """
    import torch

    if architecture not in TINY_MODELS:
        raise ValueError(f"unknown architecture {architecture!r}; expected one of {', '.join(ARCHITECTURES)}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    TINY_MODELS[architecture](folder)
    return folder
