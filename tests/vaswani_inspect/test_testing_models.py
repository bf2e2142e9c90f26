"""The tiny model folders of other architectures (vaswani_inspect.testing_models) load with the Auto classes, carry
the tokenizer format and special-token conventions of the checkpoints they imitate, and generate."""

import json

import pytest
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from vaswani_inspect.testing_models import ARCHITECTURES, NLLB_LANGUAGE_CODES, write_tiny_architecture

SENTENCES = ["El gato se comió el ratón.", "¿Dónde está el ratón?"]

# Tokenizer classes as transformers 5 names them: the "fast" names are aliases of the tokenizers-backed classes, and
# BartTokenizerFast is RobertaTokenizer. Marian has only the slow, SentencePiece-based class.
TOKENIZER_CLASSES = {
    "marian": "MarianTokenizer",
    "m2m100": "NllbTokenizer",
    "mbart": "MBart50Tokenizer",
    "bart": "RobertaTokenizer",
    "t5": "T5Tokenizer",
}
TOKENIZER_FILES = {
    "marian": {"source.spm", "target.spm", "vocab.json", "tokenizer_config.json"},
    "m2m100": {"tokenizer.json", "tokenizer_config.json"},
    "mbart": {"tokenizer.json", "tokenizer_config.json"},
    "bart": {"vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json"},
    "t5": {"tokenizer.json", "tokenizer_config.json"},
}


def _check_marian(tokenizer, model, folder):
    config = json.loads((folder / "tokenizer_config.json").read_text())
    assert (config["source_lang"], config["target_lang"]) == ("es", "en")
    vocab = tokenizer.get_vocab()
    assert tokenizer.pad_token_id == len(vocab) - 1 == model.config.vocab_size - 1
    assert (vocab["</s>"], vocab["<unk>"]) == (0, 1)
    assert not [token for token in vocab if token.startswith(">>")]
    generation = model.generation_config
    assert generation.decoder_start_token_id == tokenizer.pad_token_id
    assert generation.bad_words_ids == [[tokenizer.pad_token_id]]
    assert generation.num_beams == 4
    return {}, SENTENCES


def _check_language_codes(codes, source_code, target_code):
    def check(tokenizer, model, folder):
        for code in codes:
            assert tokenizer.tokenize(code) == [code]
            assert code in tokenizer.all_special_tokens
            assert tokenizer.convert_tokens_to_ids(code) != tokenizer.unk_token_id
        source_ids = tokenizer(SENTENCES[0])["input_ids"]
        assert source_ids[0] == tokenizer.convert_tokens_to_ids(source_code)
        assert source_ids[-1] == tokenizer.eos_token_id
        assert model.generation_config.decoder_start_token_id == tokenizer.eos_token_id == 2
        return {"forced_bos_token_id": tokenizer.convert_tokens_to_ids(target_code)}, SENTENCES

    return check


def _check_bart(tokenizer, model, folder):
    tokens = tokenizer.tokenize(SENTENCES[0])
    assert "Ġgato" in tokens
    assert all(token.startswith("Ġ") for token in tokens[1:-1])
    assert (tokenizer.bos_token_id, tokenizer.pad_token_id, tokenizer.eos_token_id) == (0, 1, 2)
    return {}, SENTENCES


def _check_t5(tokenizer, model, folder):
    params = model.config.task_specific_params
    prefix = params["translation_es_to_en"]["prefix"]
    assert params["translation_en_to_es"]["prefix"] == "translate English to Spanish: "
    assert model.config.vocab_size > len(tokenizer)
    assert (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id) == (0, 1, 2)
    assert model.generation_config.decoder_start_token_id == 0
    assert tokenizer.tokenize("gato")[0].startswith("▁")
    return {}, [prefix + sentence for sentence in SENTENCES]


CHECKS = {
    "marian": _check_marian,
    "m2m100": _check_language_codes(NLLB_LANGUAGE_CODES, "spa_Latn", "eng_Latn"),
    "mbart": _check_language_codes(("es_XX", "en_XX"), "es_XX", "en_XX"),
    "bart": _check_bart,
    "t5": _check_t5,
}


@pytest.mark.filterwarnings("ignore:Recommended. pip install sacremoses")
@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_tiny_architecture_loads_and_generates(architecture, tmp_path):
    folder = write_tiny_architecture(architecture, tmp_path / architecture)
    assert TOKENIZER_FILES[architecture] | {"config.json", "generation_config.json"} <= {
        path.name for path in folder.iterdir()
    }
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    assert type(tokenizer).__name__ == TOKENIZER_CLASSES[architecture]
    assert model.config.vocab_size >= len(tokenizer)
    assert model.config.d_model <= 32
    assert model.generation_config.max_length == 32

    generate_kwargs, sources = CHECKS[architecture](tokenizer, model, folder)
    batch = tokenizer(sources, return_tensors="pt", padding=True)
    output = model.generate(**batch, num_beams=2, max_new_tokens=5, **generate_kwargs)
    assert output.shape[0] == 2 and output.shape[1] <= 6
    assert output[0, 0].item() == model.generation_config.decoder_start_token_id
    if "forced_bos_token_id" in generate_kwargs:
        assert output[:, 1].tolist() == [generate_kwargs["forced_bos_token_id"]] * 2
    assert all(isinstance(text, str) for text in tokenizer.batch_decode(output, skip_special_tokens=True))


def test_weights_follow_the_seed(tmp_path):
    def weights(seed, name):
        model = AutoModelForSeq2SeqLM.from_pretrained(write_tiny_architecture("t5", tmp_path / name, seed=seed))
        return model.shared.weight

    assert weights(0, "a").equal(weights(0, "b"))
    assert not weights(0, "a").equal(weights(1, "c"))


def test_unknown_architecture_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown architecture"):
        write_tiny_architecture("gpt2", tmp_path)


def test_session_fixture_has_every_architecture(tiny_architecture_folders):
    assert set(tiny_architecture_folders) == set(ARCHITECTURES)
    assert all((folder / "config.json").is_file() for folder in tiny_architecture_folders.values())
