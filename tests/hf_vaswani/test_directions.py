"""`hf_vaswani.directions` on M2M100 saved with its own tokenizer (facebook/m2m100_*: `M2M100Tokenizer`, codes
``es``/``en`` whose tokens are ``__es__``/``__en__``), which NLLB's and mBART-50's codes do not cover: the direction
resolves to those tokens, and extract, attribute and the commands run on a tiny random model of that format."""

from __future__ import annotations

import json
import warnings

import pytest

from hf_vaswani.directions import resolve_direction, scheme_of
from vaswani_inspect import directions as inspect_directions

SOURCE, TARGET = "el gato negro", "the black cat"


def _write_m2m100(folder):
    """A tiny random M2M100 in facebook/m2m100_418M's format: ``vocab.json`` (fairseq ids ``<s> <pad> </s> <unk>``
    = 0-3, then the pieces) and ``sentencepiece.bpe.model``; the tokenizer adds the ``__xx__`` codes after them."""
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration, M2M100Tokenizer

    from vaswani_inspect import testing_models as tiny

    torch.manual_seed(0)
    model_bytes = tiny._train_sentencepiece("both", "bpe")
    (folder / "sentencepiece.bpe.model").write_bytes(model_bytes)
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for piece in tiny._sentencepiece_proto(model_bytes).pieces:
        if piece.type == 1:
            vocab.setdefault(piece.piece, len(vocab))
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    tokenizer = M2M100Tokenizer(
        vocab_file=str(folder / "vocab.json"), spm_file=str(folder / "sentencepiece.bpe.model"), model_max_length=1024
    )
    size = tokenizer.encoder_size + len(tokenizer.lang_code_to_id) + tokenizer.num_madeup_words
    config = M2M100Config(
        vocab_size=size,
        bos_token_id=0,
        pad_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=2,
        scale_embedding=True,
        **tiny._bart_like_sizes(),
    )
    model = M2M100ForConditionalGeneration(config)
    model.generation_config = tiny._generation_config(
        bos_token_id=0, pad_token_id=1, eos_token_id=2, decoder_start_token_id=2
    )
    tiny._save(model, tokenizer, folder)
    return folder


@pytest.fixture(scope="module")
def m2m100_folder(tmp_path_factory):
    return _write_m2m100(tmp_path_factory.mktemp("m2m100"))


@pytest.fixture(scope="module")
def m2m100(m2m100_folder):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    model = AutoModelForSeq2SeqLM.from_pretrained(m2m100_folder, attn_implementation="eager")
    return model.eval(), AutoTokenizer.from_pretrained(m2m100_folder)


def test_its_directions_name_the_code_tokens_in_iso_codes_or_its_own(m2m100):
    model, tokenizer = m2m100
    assert type(tokenizer).__name__ == "M2M100Tokenizer" and tokenizer.tgt_lang is None
    assert scheme_of(model, tokenizer) == "language_codes"
    english = tokenizer.convert_tokens_to_ids("__en__")
    assert english == tokenizer.lang_code_to_id["en"] != tokenizer.unk_token_id
    for name in ("es-en", "__es__-__en__"):
        direction = resolve_direction(model, tokenizer, name)
        assert (direction.source, direction.target, direction.target_start) == ("es", "en", [english])
        assert direction.generate_settings == {"forced_bos_token_id": english}
    assert inspect_directions.resolve_direction is resolve_direction  # the toolkit's name for the same function


def test_extract_and_attribute_read_its_codes(m2m100):
    from vaswani_inspect import attribute, extract

    model, tokenizer = m2m100
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        forced = extract(model, tokenizer, SOURCE, TARGET, direction="es-en")
        translated = extract(model, tokenizer, SOURCE, direction="en-es", generate_kwargs={"max_new_tokens": 3})
        attribution = attribute(model, tokenizer, SOURCE, TARGET, direction="es-en", method="attention")
    assert forced.source_tokens[0] == "__es__" and forced.source_tokens[-1] == "</s>"
    assert forced.target_tokens[:3] == ["</s>", "__en__", "\u2581the"]  # the code once, then the reference
    assert translated.source_tokens[0] == "__en__" and translated.target_tokens[1] == "__es__"
    assert (attribution.source_words, attribution.target_words) == (
        SOURCE.split(),
        TARGET.split(),
    )  # codes are no words


def test_the_commands_run_on_it(m2m100_folder, tmp_path, capsys):
    from hf_vaswani.cli import main

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(f"{TARGET}\t{SOURCE}\n", encoding="utf-8")
    runs = [
        ["inspect", SOURCE, "--target", TARGET, "--out", str(tmp_path / "inspect"), "--format", "svg"],
        ["explain", "--pairs", str(pairs), "--out", str(tmp_path / "explain")],
        ["head-importance", "--pairs", str(pairs), "--no-pruning", "--max-new-tokens", "2", "--no-progress"],
    ]
    runs[-1] += ["--out", str(tmp_path / "importance")]
    for argv in runs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = main([*argv, "--model", str(m2m100_folder), "--direction", "es-en"])
        assert code == 0, (argv[0], capsys.readouterr().err)
    assert (tmp_path / "importance" / "index.md").is_file() and (tmp_path / "explain" / "table.md").is_file()
