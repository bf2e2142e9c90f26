"""Tests of hf_vaswani.tokenization: fixed special ids, Marian-style conventions, round trips, save/load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hf_vaswani import tokenization
from hf_vaswani.tokenization import (
    BOS_ID,
    DIRECTIONS,
    EOS_ID,
    LANGUAGE_TOKEN_IDS,
    LANGUAGE_TOKENS,
    PAD_ID,
    SPECIAL_TOKENS,
    UNK_ID,
    build_tokenizer_from_pairs,
    direction_to_languages,
    normalize_text,
    source_with_language,
    train_tokenizer,
)
from tests.helpers import PAIRS, PROCESS_TIMEOUT, tiny_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


def test_constants_match_the_fixed_ids():
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    assert LANGUAGE_TOKENS == {"en": ">>en<<", "es": ">>es<<"}
    assert LANGUAGE_TOKEN_IDS == {"en": 4, "es": 5}
    assert SPECIAL_TOKENS == ("<pad>", "<s>", "</s>", "<unk>", ">>en<<", ">>es<<")


def test_special_tokens_have_their_fixed_ids(tokenizer):
    assert [tokenizer.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS] == [0, 1, 2, 3, 4, 5]
    assert tokenizer.pad_token == "<pad>" and tokenizer.pad_token_id == 0
    assert tokenizer.bos_token == "<s>" and tokenizer.bos_token_id == 1
    assert tokenizer.eos_token == "</s>" and tokenizer.eos_token_id == 2
    assert tokenizer.unk_token == "<unk>" and tokenizer.unk_token_id == 3
    assert {">>en<<", ">>es<<"} <= set(tokenizer.all_special_tokens)
    assert 250 <= len(tokenizer) <= 300
    assert tokenizer.model_max_length == 512


def test_source_starts_with_language_token_and_ends_with_eos(tokenizer):
    ids = tokenizer(">>en<< el gato negro").input_ids
    assert ids[0] == 4
    assert ids[-1] == 2
    assert all(i not in (0, 1, 2, 3, 4, 5) for i in ids[1:-1])
    assert tokenizer(source_with_language("the black cat", "es")).input_ids[0] == 5


def test_target_has_eos_and_no_language_token(tokenizer):
    ids = tokenizer(text_target="the black cat").input_ids
    assert ids[-1] == 2
    assert all(i not in (0, 1, 2, 3, 4, 5) for i in ids[:-1])
    # The same text as a source (without language token) tokenizes the same way.
    assert tokenizer("the black cat").input_ids == ids


@pytest.mark.parametrize(
    "text",
    [
        "¿Qué?",
        "¡Hola!",
        "¿Dónde está la estación?",
        'He said "don\'t".',
        "Tengo 3,5 euros y 12 manzanas.",
        "El pingüino y el niño están aquí, ¿verdad?",
        "ÁÉÍÓÚ áéíóú ñÑ üÜ",
        "I'm 100% sure: it's 7:45 (or 8).",
        "She said «adiós» — and left…",
    ],
)
def test_decode_of_encode_gives_the_text_back(tokenizer, text):
    ids = tokenizer(text).input_ids
    assert UNK_ID not in ids
    assert tokenizer.decode(ids, skip_special_tokens=True) == normalize_text(text)
    # The source form round-trips too: the language token and </s> are dropped on decoding.
    source_ids = tokenizer(source_with_language(text, "en")).input_ids
    assert tokenizer.decode(source_ids, skip_special_tokens=True) == normalize_text(text)


def test_normalization_is_nfkc_with_single_spaces(tokenizer):
    assert normalize_text("  hola    mundo\t ") == "hola mundo"
    assert normalize_text("ﬁn ①") == "fin 1"  # NFKC
    assert normalize_text("She said «adiós» — and left…") == "She said «adiós» — and left..."
    ids = tokenizer("  El   gato\tnegro ").input_ids
    assert tokenizer.decode(ids, skip_special_tokens=True) == "El gato negro"
    # Ordinary text is unchanged by the normalization.
    for en, es in PAIRS:
        assert normalize_text(en) == en and normalize_text(es) == es


def test_language_tokens_in_user_text_are_not_split(tokenizer):
    assert tokenizer.tokenize(">>en<<") == [">>en<<"]
    ids = tokenizer("hola >>es<< mundo >>en<<").input_ids
    assert ids.count(5) == 1 and ids.count(4) == 1
    pieces = tokenizer.convert_ids_to_tokens(ids)
    assert not any(">>" in piece and piece not in (">>en<<", ">>es<<") for piece in pieces)


def test_html_is_plain_text(tokenizer):
    text = "</script><b>bold</b> <s> & </s>"
    html = "</script><b>bold</b>"
    ids = tokenizer(html).input_ids
    assert ids.count(EOS_ID) == 1 and ids[-1] == EOS_ID
    assert UNK_ID not in ids
    assert tokenizer.decode(ids, skip_special_tokens=True) == html
    # Literal special tokens typed in text ARE special tokens (documented); still no error.
    assert BOS_ID in tokenizer(text).input_ids


def test_unknown_character_becomes_unk(tokenizer):
    ids = tokenizer("漢").input_ids
    assert ids[-1] == EOS_ID and UNK_ID in ids


def test_truncation_keeps_eos_and_padding_uses_pad_id(tokenizer):
    ids = tokenizer("The white dog runs in the park.", max_length=5, truncation=True).input_ids
    assert len(ids) == 5 and ids[-1] == EOS_ID
    batch = tokenizer(["Hello!", "The white dog runs in the park."], padding=True)
    short, long = batch.input_ids
    assert len(short) == len(long)
    assert short[-1] == PAD_ID and batch.attention_mask[0][-1] == 0
    assert short[short.index(EOS_ID) + 1 :] == [PAD_ID] * (len(short) - short.index(EOS_ID) - 1)


def test_source_with_language():
    assert source_with_language("el gato negro", "en") == ">>en<< el gato negro"
    assert source_with_language("  the cat ", "es") == ">>es<< the cat"
    with pytest.raises(ValueError, match=r"'fr'.*'en', 'es'"):
        source_with_language("bonjour", "fr")
    with pytest.raises(ValueError, match="empty"):
        source_with_language("", "en")
    with pytest.raises(ValueError, match="empty"):
        source_with_language(" \t\n", "es")


def test_direction_to_languages():
    assert direction_to_languages("es-en") == ("es", "en")
    assert direction_to_languages("en-es") == ("en", "es")
    assert set(DIRECTIONS) == {"es-en", "en-es"}
    for bad in ("fr-en", "es_en", "en-en", "", "es-en-fr"):
        with pytest.raises(ValueError, match=r"Unknown translation direction .*'es-en', 'en-es'"):
            direction_to_languages(bad)


def test_train_tokenizer_rejects_bad_arguments():
    with pytest.raises(ValueError, match="too small"):
        train_tokenizer(["hola"], vocab_size=50)
    with pytest.raises(ValueError, match="model_type"):
        train_tokenizer(["hola"], vocab_size=300, model_type="wordpiece")


def test_bpe_variant_keeps_the_fixed_ids():
    texts = [text for pair in PAIRS for text in pair]
    bpe = train_tokenizer(texts, vocab_size=260, model_type="bpe")
    assert [bpe.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS] == [0, 1, 2, 3, 4, 5]
    ids = bpe(">>en<< ¿Qué es eso?").input_ids
    assert ids[0] == 4 and ids[-1] == 2
    assert bpe.decode(ids, skip_special_tokens=True) == "¿Qué es eso?"


def test_the_same_sentences_give_the_same_ids_every_time(monkeypatch):
    """The Unigram trainer orders ties, last-bit scores and unseen characters differently from run to run; the
    vocabulary is put in one order, which changes no segmentation."""
    from vaswani_demo.testing import TINY_SENTENCES

    texts = list(TINY_SENTENCES) * 4
    probes = [*TINY_SENTENCES, "la casa roja", "¿Qué hora es? ¡Ya! 100 € ÿ"]
    runs = [train_tokenizer(texts, vocab_size=400, model_max_length=64) for _ in range(4)]
    assert len({run.backend_tokenizer.to_str() for run in runs}) == 1
    assert all(run.tokenize(">>en<< ¡Ñandú!") == runs[0].tokenize(">>en<< ¡Ñandú!") for run in runs)
    monkeypatch.setattr(tokenization, "in_canonical_order", lambda trained: trained)
    as_trained = train_tokenizer(texts, vocab_size=400, model_max_length=64)
    assert [as_trained.tokenize(text) for text in probes] == [runs[0].tokenize(text) for text in probes]
    assert runs[0].convert_ids_to_tokens(list(range(len(SPECIAL_TOKENS)))) == list(SPECIAL_TOKENS)


_LOAD_SCRIPT = """
import json, sys
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
texts = json.loads(sys.argv[2])
print(json.dumps({
    "hf_vaswani_imported": any(m == "hf_vaswani" or m.startswith("hf_vaswani.") for m in sys.modules),
    "ids": [tok(t).input_ids for t in texts],
    "targets": [tok(text_target=t).input_ids for t in texts],
    "special": [tok.pad_token_id, tok.bos_token_id, tok.eos_token_id, tok.unk_token_id],
    "extra": sorted(set(tok.all_special_tokens)),
    "max_length": tok.model_max_length,
    "decoded": [tok.decode(tok(t).input_ids, skip_special_tokens=True) for t in texts],
}))
"""


@pytest.mark.slow
def test_save_pretrained_loads_with_autotokenizer_in_a_fresh_process(tokenizer, tmp_path):
    out = tmp_path / "tokenizer"
    tokenizer.save_pretrained(str(out))
    texts = [">>en<< ¿Dónde está la estación?", ">>es<< I don't know.", 'He said "yes".', "</b> >>es<<"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""}
    result = subprocess.run(
        [sys.executable, "-c", _LOAD_SCRIPT, str(out), json.dumps(texts)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
        check=True,
    )
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded["hf_vaswani_imported"] is False
    assert loaded["ids"] == [tokenizer(t).input_ids for t in texts]
    assert loaded["targets"] == [tokenizer(text_target=t).input_ids for t in texts]
    assert loaded["special"] == [0, 1, 2, 3]
    assert {">>en<<", ">>es<<", "<pad>", "<s>", "</s>", "<unk>"} <= set(loaded["extra"])
    assert loaded["max_length"] == 512
    assert loaded["decoded"][0] == "¿Dónde está la estación?"


def test_build_tokenizer_from_pairs_trains_on_the_training_split_and_saves(tmp_path):
    corpus = tmp_path / "pairs.tsv"
    corpus.write_text("".join(f"{en}\t{es}\n" for en, es in PAIRS), encoding="utf-8")
    out = tmp_path / "tok"
    tok = build_tokenizer_from_pairs(corpus, vocab_size=280, out_dir=out, validation_size=3, test_size=3)
    assert (out / "tokenizer.json").is_file() and (out / "tokenizer_config.json").is_file()
    assert [tok.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS] == [0, 1, 2, 3, 4, 5]
    ids = tok(">>es<< The black cat sleeps.").input_ids
    assert ids[0] == 5 and ids[-1] == 2
    with pytest.raises(FileNotFoundError, match="missing.tsv"):
        build_tokenizer_from_pairs(Path(tmp_path / "missing.tsv"), vocab_size=280)
