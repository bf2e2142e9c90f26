"""convert_marian: a Marian (OPUS-MT) checkpoint becomes a VaswaniForConditionalGeneration computing the same function.

Everything runs on randomly initialised MarianMTModels with non-default sizes (d_model 32, 3 encoder vs 2 decoder
layers, 4 heads, FFN 64/48, vocabulary 120, swish, random LayerNorms, biases and final_logits_bias), in three
embedding layouts: shared, separate decoder vocabulary, and shared vocabulary with an untied output projection.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from huggingface_hub import ModelCard
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from transformers import (
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    BertConfig,
    BertModel,
    GenerationConfig,
    MarianConfig,
    MarianModel,
    MarianMTModel,
    MarianTokenizer,
    pipeline,
)
from transformers.models.marian.modeling_marian import shift_tokens_right

from hf_vaswani import VaswaniForConditionalGeneration
from hf_vaswani.cli import main
from hf_vaswani.marian.convert import MarianConversionError, convert_marian
from tests.helpers import PROCESS_TIMEOUT, run_without_our_packages

pytestmark = pytest.mark.filterwarnings("ignore:Recommended. pip install sacremoses")

ATOL = 1e-5
PAD = 119

VARIANTS = {
    "shared": {},
    "separate-vocab": dict(
        share_encoder_decoder_embeddings=False, decoder_vocab_size=90, pad_token_id=89, decoder_start_token_id=89
    ),
    "untied-head": dict(tie_word_embeddings=False),
}


def marian_config(**overrides) -> MarianConfig:
    values = dict(
        vocab_size=120,
        d_model=32,
        encoder_layers=3,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=48,
        activation_function="swish",
        max_position_embeddings=64,
        scale_embedding=True,
        pad_token_id=PAD,
        decoder_start_token_id=PAD,
        eos_token_id=0,
        bos_token_id=None,
        init_std=0.3,
        attn_implementation="eager",
    )
    values.update(overrides)
    return MarianConfig(**values)


def random_marian(seed: int = 5, **overrides) -> MarianMTModel:
    """A MarianMTModel whose LayerNorms, biases and final_logits_bias are random too, so no mix-up goes unseen."""
    torch.manual_seed(seed)
    model = MarianMTModel(marian_config(**overrides))
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "embed_positions" in name:
                continue
            noise = torch.randn(parameter.shape, generator=generator)
            if "layer_norm" in name and name.endswith("weight"):
                parameter.copy_(1 + 0.2 * noise)
            elif name.endswith("bias"):
                parameter.copy_(0.2 * noise)
        bias = model.final_logits_bias
        bias.copy_(0.5 * torch.randn(bias.shape, generator=generator))
    return model.eval()


def batch(config: MarianConfig, seed: int = 2) -> dict[str, torch.Tensor]:
    """Three sources (the second padded after 4 tokens) and right-padded decoder inputs with their labels."""
    generator = torch.Generator().manual_seed(seed)
    pad, vocab = config.pad_token_id, min(config.vocab_size, config.decoder_vocab_size)
    input_ids = torch.randint(1, vocab - 1, (3, 9), generator=generator)
    input_ids[input_ids == pad] = 1
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 4:] = 0
    input_ids[1, 4:] = pad
    labels = torch.randint(1, vocab - 1, (3, 6), generator=generator)
    labels[labels == pad] = 1
    labels[2, 4:] = -100
    decoder_input_ids = shift_tokens_right(labels, pad, config.decoder_start_token_id)
    decoder_attention_mask = torch.ones_like(labels)
    decoder_attention_mask[:, 1:] = (labels[:, :-1] != -100).long()
    return dict(
        input_ids=input_ids,
        attention_mask=attention_mask,
        decoder_input_ids=decoder_input_ids,
        decoder_attention_mask=decoder_attention_mask,
        labels=labels,
    )


@pytest.fixture(scope="module", params=list(VARIANTS))
def converted(request, tmp_path_factory) -> tuple[MarianMTModel, VaswaniForConditionalGeneration, Path]:
    """Marian and the converted model, both with eager attention (the one that returns attention weights)."""
    marian = random_marian(**VARIANTS[request.param])
    folder = convert_marian(marian, tmp_path_factory.mktemp(request.param) / "converted")
    model = AutoModelForSeq2SeqLM.from_pretrained(folder, attn_implementation="eager").eval()
    return marian, model, folder


# ----------------------------------------------------------------------------------------------------------------
# Same function: logits, loss, attentions, hidden states, generation
# ----------------------------------------------------------------------------------------------------------------


@torch.no_grad()
def test_logits_and_loss_equal_marian(converted):
    marian, model, _ = converted
    assert type(model) is VaswaniForConditionalGeneration
    inputs = batch(marian.config)
    expected, actual = marian(**inputs), model(**inputs)
    difference = (actual.logits - expected.logits).abs().max().item()
    print(f"max abs logit difference: {difference:.3g}")
    torch.testing.assert_close(actual.logits, expected.logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(actual.loss, expected.loss, atol=ATOL, rtol=0)
    torch.testing.assert_close(actual.encoder_last_hidden_state, expected.encoder_last_hidden_state, atol=ATOL, rtol=0)


@torch.no_grad()
def test_logits_equal_marian_with_sdpa_attention_too(converted):
    marian, _, folder = converted
    marian_sdpa = MarianMTModel(marian_config(**{**marian.config.to_diff_dict(), "attn_implementation": "sdpa"}))
    marian_sdpa.load_state_dict(marian.state_dict())
    model = AutoModelForSeq2SeqLM.from_pretrained(folder, attn_implementation="sdpa").eval()
    assert model.config._attn_implementation == marian_sdpa.eval().config._attn_implementation == "sdpa"
    inputs = batch(marian.config)
    expected, actual = marian_sdpa(**inputs).logits, model(**inputs).logits
    print(f"max abs logit difference (sdpa): {(actual - expected).abs().max().item():.3g}")
    torch.testing.assert_close(actual, expected, atol=ATOL, rtol=0)


@torch.no_grad()
def test_attentions_and_hidden_states_equal_layer_by_layer(converted):
    marian, model, _ = converted
    inputs = batch(marian.config)
    inputs.pop("labels")
    flags = dict(output_attentions=True, output_hidden_states=True)
    expected, actual = marian(**inputs, **flags), model(**inputs, **flags)
    for name, layers in (
        ("encoder_attentions", 3),
        ("decoder_attentions", 2),
        ("cross_attentions", 2),
        ("encoder_hidden_states", 4),
        ("decoder_hidden_states", 3),
    ):
        ours, theirs = getattr(actual, name), getattr(expected, name)
        assert len(ours) == len(theirs) == layers, name
        for index, (a, b) in enumerate(zip(ours, theirs)):
            torch.testing.assert_close(a, b, atol=ATOL, rtol=0, msg=f"{name}[{index}]")
    # The padded source positions get no attention at all.
    assert actual.cross_attentions[0][1, :, :, 4:].abs().max() == 0


@torch.no_grad()
def test_greedy_and_beam_search_give_the_same_tokens(converted):
    marian, model, _ = converted
    inputs = batch(marian.config)
    sources = dict(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
    greedy = dict(max_new_tokens=10, do_sample=False, return_dict_in_generate=True, output_logits=True)
    expected, actual = marian.generate(**sources, **greedy), model.generate(**sources, **greedy)
    assert actual.sequences.tolist() == expected.sequences.tolist()
    assert len(set(map(tuple, expected.sequences.tolist()))) > 1, "the sources should lead to different outputs"
    for step, (a, b) in enumerate(zip(actual.logits, expected.logits)):  # each step ran through the KV cache
        torch.testing.assert_close(a, b, atol=ATOL, rtol=0, msg=f"step {step}")

    beam = dict(max_new_tokens=10, num_beams=3, do_sample=False, return_dict_in_generate=True, output_scores=True)
    expected, actual = marian.generate(**sources, **beam), model.generate(**sources, **beam)
    assert actual.sequences.tolist() == expected.sequences.tolist()
    torch.testing.assert_close(actual.sequences_scores, expected.sequences_scores, atol=ATOL, rtol=0)


def test_config_and_generation_config_of_the_converted_folder(converted):
    marian, model, folder = converted
    config = json.loads((folder / "config.json").read_text())
    share = marian.config.share_encoder_decoder_embeddings and marian.config.tie_word_embeddings
    assert config["model_type"] == "vaswani"
    assert config["sinusoidal_layout"] == "concatenated"
    assert config["layer_norm_position"] == "post"
    assert config["final_logits_bias"] is True
    assert config["share_embeddings"] is share
    assert config["tie_word_embeddings"] is marian.config.tie_word_embeddings
    assert config["decoder_vocab_size"] == marian.config.decoder_vocab_size
    assert (config["pad_token_id"], config["decoder_start_token_id"], config["eos_token_id"]) == (
        marian.config.pad_token_id,
        marian.config.decoder_start_token_id,
        0,
    )
    generation = json.loads((folder / "generation_config.json").read_text())
    assert generation["decoder_start_token_id"] == marian.config.decoder_start_token_id
    assert generation["forced_eos_token_id"] == 0
    assert (folder / "configuration_vaswani.py").exists() and (folder / "modeling_vaswani.py").exists()
    assert [p.name for p in folder.glob("*.safetensors")] == ["model.safetensors"]
    card = (folder / "README.md").read_text()
    assert "hf-vaswani" in card and "see the original model card" in card
    assert model.lm_head.weight is model.model.decoder.embed_tokens.weight or not config["tie_word_embeddings"]


def test_dtype_option_stores_the_cast_weights(tmp_path):
    marian = random_marian(encoder_layers=1, decoder_layers=1)
    folder = convert_marian(marian, tmp_path / "bf16", dtype="bfloat16")
    with safe_open(folder / "model.safetensors", "pt") as weights:
        assert {weights.get_tensor(name).dtype for name in weights.keys()} == {torch.bfloat16}
        key = weights.get_tensor("model.encoder.layers.0.self_attn.k_proj.weight")
    assert torch.equal(key, marian.model.encoder.layers[0].self_attn.k_proj.weight.to(torch.bfloat16))
    assert json.loads((folder / "config.json").read_text())["dtype"] == "bfloat16"
    with pytest.raises(ValueError, match="dtype must be one of"):
        convert_marian(marian, tmp_path / "bad", dtype="float64")


# ----------------------------------------------------------------------------------------------------------------
# From a folder with a tokenizer and a model card, through the command line; trust_remote_code without hf_vaswani
# ----------------------------------------------------------------------------------------------------------------

SOURCES = ["el gato come pescado", "los perros corren en el parque", "hoy hace buen tiempo"]
TARGETS = ["the cat eats fish", "the dogs run in the park", "the weather is nice today"]


def write_marian_tokenizer(folder: Path) -> None:
    """A real MarianTokenizer on two tiny SentencePiece models, with the files OPUS-MT repositories have."""
    import sentencepiece

    folder.mkdir(parents=True, exist_ok=True)
    vocab = {"</s>": 0, "<unk>": 1}
    for side, lines in (("source", SOURCES), ("target", TARGETS)):
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(lines * 4),
            model_prefix=str(folder / side),
            vocab_size=40,
            model_type="unigram",
            character_coverage=1.0,
            hard_vocab_limit=False,
            bos_id=-1,
            eos_id=-1,
            unk_id=0,
            minloglevel=2,
            num_threads=1,
        )
        (folder / f"{side}.model").rename(folder / f"{side}.spm")
        (folder / f"{side}.vocab").unlink()
        processor = sentencepiece.SentencePieceProcessor(model_file=str(folder / f"{side}.spm"))
        for index in range(processor.get_piece_size()):
            vocab.setdefault(processor.id_to_piece(index), len(vocab))
    while len(vocab) < PAD:
        vocab[f"<extra_{len(vocab)}>"] = len(vocab)
    vocab["<pad>"] = PAD
    (folder / "vocab.json").write_text(json.dumps(vocab))
    # As on the Hub: no tokenizer_class, AutoTokenizer finds it through config.json's model_type "marian".
    (folder / "tokenizer_config.json").write_text(json.dumps({"source_lang": "es", "target_lang": "en"}))
    (folder / "special_tokens_map.json").write_text(
        json.dumps({"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"})
    )


@pytest.fixture(scope="module")
def marian_folder(tmp_path_factory) -> Path:
    """A saved MarianMTModel as an OPUS-MT repository has it: weights, Marian's generation settings, tokenizer, card."""
    folder = tmp_path_factory.mktemp("opus-mt-es-en") / "opus-mt-es-en"
    marian = random_marian(seed=3)
    marian.generation_config = GenerationConfig(
        bad_words_ids=[[PAD]],
        bos_token_id=0,
        decoder_start_token_id=PAD,
        eos_token_id=0,
        forced_eos_token_id=0,
        max_length=16,
        num_beams=4,
        pad_token_id=PAD,
        renormalize_logits=True,
    )
    marian.save_pretrained(folder)
    write_marian_tokenizer(folder)
    (folder / "README.md").write_text(
        "---\nlanguage:\n- es\n- en\nlicense: apache-2.0\ntags:\n- translation\n---\n\n# opus-mt-es-en (tiny)\n"
    )
    return folder


HUB_ID = "Helsinki-NLP/opus-mt-es-en"


@pytest.fixture(scope="module")
def converted_folder(marian_folder, tmp_path_factory) -> Path:
    """Converted in memory from the folder path."""
    return convert_marian(str(marian_folder), tmp_path_factory.mktemp("converted") / "opus-mt-es-en-vaswani")


@pytest.fixture(scope="module")
def converted_from_hub_id(marian_folder, tmp_path_factory) -> Path:
    """`python -m hf_vaswani.cli convert-marian Helsinki-NLP/opus-mt-es-en OUT` in a child process, offline, with the
    repository laid out as huggingface_hub's cache does (models--org--name/snapshots/<commit>, refs/main)."""
    root = tmp_path_factory.mktemp("hub")
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = root / "hf_home" / "hub" / "models--Helsinki-NLP--opus-mt-es-en"
    shutil.copytree(marian_folder, repo / "snapshots" / commit)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    out = root / "opus-mt-es-en-vaswani"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(root / "hf_home"), "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "hf_vaswani.cli", "convert-marian", HUB_ID, str(out)],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=PROCESS_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Converted {HUB_ID} into {out}" in result.stdout
    return out


def test_folder_conversion_keeps_tokenizer_generation_settings_and_license(marian_folder, converted_folder):
    tokenizer = AutoTokenizer.from_pretrained(converted_folder)
    source_tokenizer = MarianTokenizer.from_pretrained(marian_folder)
    assert type(tokenizer) is MarianTokenizer
    encoded = tokenizer(SOURCES, text_target=TARGETS, padding=True)
    assert encoded == source_tokenizer(SOURCES, text_target=TARGETS, padding=True)
    assert tokenizer.decode(encoded["labels"][0], skip_special_tokens=True) == TARGETS[0]

    generation = GenerationConfig.from_pretrained(converted_folder)
    assert (generation.num_beams, generation.max_length, generation.bad_words_ids) == (4, 16, [[PAD]])
    assert (generation.decoder_start_token_id, generation.pad_token_id, generation.forced_eos_token_id) == (PAD, PAD, 0)
    assert generation.renormalize_logits is True

    card = (converted_folder / "README.md").read_text()
    assert "license: apache-2.0" in card
    assert "carried over from the original model card" in card
    assert str(marian_folder) in card and "hf-vaswani" in card
    assert "base_model" not in card  # a local folder is no Hub id

    marian = MarianMTModel.from_pretrained(marian_folder).eval()
    model = AutoModelForSeq2SeqLM.from_pretrained(converted_folder).eval()
    inputs = tokenizer(SOURCES, text_target=TARGETS, padding=True, return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(model(**inputs).logits, marian(**inputs).logits, atol=ATOL, rtol=0)


@pytest.mark.slow
def test_hub_id_conversion_names_its_base_model(marian_folder, converted_from_hub_id):
    card = ModelCard.load(converted_from_hub_id / "README.md")
    assert card.data.base_model == HUB_ID
    assert card.data.license == "apache-2.0"
    assert card.data.language == ["es", "en"]
    assert f"`{HUB_ID}`" in card.text
    copied = {"source.spm", "target.spm", "vocab.json", "tokenizer_config.json", "special_tokens_map.json"}
    assert copied <= {path.name for path in converted_from_hub_id.iterdir()}
    for name in ("source.spm", "target.spm", "vocab.json", "special_tokens_map.json"):
        assert (converted_from_hub_id / name).read_bytes() == (marian_folder / name).read_bytes()
    tokenizer_config = json.loads((converted_from_hub_id / "tokenizer_config.json").read_text())
    assert tokenizer_config == {"source_lang": "es", "target_lang": "en", "tokenizer_class": "MarianTokenizer"}


def test_the_converted_folder_translates_with_its_pipeline_once_re_saved_too(marian_folder, converted_folder, tmp_path):
    """Like our model folders, the converted one declares the translation pipeline (config.json's custom_pipelines,
    pipeline_vaswani.py next to it; transformers 5 has no built-in one), for a model with one target language and a
    SentencePiece MarianTokenizer too; so does a copy saved with save_pretrained."""
    from hf_vaswani import pipeline_vaswani

    re_saved = tmp_path / "re-saved"
    AutoModelForSeq2SeqLM.from_pretrained(converted_folder).save_pretrained(re_saved)
    AutoTokenizer.from_pretrained(converted_folder).save_pretrained(re_saved)
    marian = MarianMTModel.from_pretrained(marian_folder).eval()
    tokenizer = MarianTokenizer.from_pretrained(marian_folder)
    greedy = dict(num_beams=1, max_new_tokens=6)  # and the rest of Marian's generation settings (<pad> banned)
    with torch.no_grad():
        output = marian.generate(**tokenizer(SOURCES[:1], return_tensors="pt"), **greedy)
    expected = [{"translation_text": tokenizer.decode(output[0], skip_special_tokens=True).strip()}]
    assert expected[0]["translation_text"]
    for folder in (converted_folder, re_saved):
        pipelines = json.loads((folder / "config.json").read_text())["custom_pipelines"]
        assert pipelines["translation"]["impl"] == "pipeline_vaswani.VaswaniTranslationPipeline"
        assert (folder / "pipeline_vaswani.py").read_bytes() == Path(pipeline_vaswani.__file__).read_bytes()
        translator = pipeline("translation", model=str(folder), trust_remote_code=True)
        assert type(translator).__name__ == "VaswaniTranslationPipeline"
        assert translator(SOURCES[0], **greedy) == expected
        assert translator(SOURCES[0], tgt_lang="en", **greedy) == expected  # the tokenizer's target_lang
        with pytest.raises(ValueError, match="translates into 'en' only"):
            translator(SOURCES[0], tgt_lang="fr")


def test_generation_settings_of_a_legacy_config_json_are_carried(tmp_path):
    """Older OPUS-MT repositories keep num_beams, max_length, bad_words_ids in config.json, with no
    generation_config.json: MarianMTModel reads them from there, and so does the conversion."""
    folder = tmp_path / "legacy"
    tiny_marian().save_pretrained(folder)
    (folder / "generation_config.json").unlink()
    config = json.loads((folder / "config.json").read_text())
    config.update(num_beams=4, max_length=16, bad_words_ids=[[PAD]])
    (folder / "config.json").write_text(json.dumps(config))
    out = convert_marian(folder, tmp_path / "out")
    generation = json.loads((out / "generation_config.json").read_text())
    assert (generation["num_beams"], generation["max_length"], generation["bad_words_ids"]) == (4, 16, [[PAD]])
    assert "num_beams" not in json.loads((out / "config.json").read_text())


#: Run by `run_without_our_packages` (json and sys are imported).
REMOTE_CODE_SCRIPT = """
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    # Without hf_vaswani the folder's config.json is remote code, which AutoTokenizer reads too: trust it here as well.
    tokenizer = AutoTokenizer.from_pretrained(sys.argv[1], trust_remote_code=True)
    model = AutoModelForSeq2SeqLM.from_pretrained(sys.argv[1], trust_remote_code=True).eval()
    batch = tokenizer(json.loads(sys.argv[2]), return_tensors="pt", padding=True)
    tokens = model.generate(**batch, max_new_tokens=8)  # num_beams, bad_words_ids... from generation_config.json
    assert not any(m.split(".")[0] == "hf_vaswani" for m in sys.modules)
    print(json.dumps({"class": type(model).__name__, "tokenizer": type(tokenizer).__name__, "tokens": tokens.tolist()}))
    """


@pytest.mark.slow
def test_trust_remote_code_loads_the_converted_folder_without_our_package(
    marian_folder, converted_from_hub_id, tmp_path
):
    marian = MarianMTModel.from_pretrained(marian_folder).eval()
    batch = MarianTokenizer.from_pretrained(marian_folder)(SOURCES, return_tensors="pt", padding=True)
    expected = marian.generate(**batch, max_new_tokens=8).tolist()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home"), "OMP_NUM_THREADS": "1"}
    output = run_without_our_packages(REMOTE_CODE_SCRIPT, str(converted_from_hub_id), json.dumps(SOURCES), env=env)
    assert output == {"class": "VaswaniForConditionalGeneration", "tokenizer": "MarianTokenizer", "tokens": expected}


# ----------------------------------------------------------------------------------------------------------------
# Refusals
# ----------------------------------------------------------------------------------------------------------------


def tiny_marian(**overrides) -> MarianMTModel:
    return random_marian(encoder_layers=1, decoder_layers=1, **overrides)


@pytest.mark.parametrize(
    "option, value",
    [
        ("normalize_before", True),
        ("add_final_layer_norm", True),
        ("normalize_embedding", True),
        ("layernorm_embedding", True),
        ("static_position_embeddings", False),
        ("add_bias_logits", True),
        ("activation_function", "tanh"),
    ],
)
def test_unmappable_option_is_refused_by_name(tmp_path, option, value):
    model = tiny_marian(**{option: value})  # MarianConfig keeps any field; MarianMTModel ignores the legacy ones
    assert getattr(model.config, option) == value
    with pytest.raises(MarianConversionError, match=rf"{option}={value!r}"):
        convert_marian(model, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_legacy_fields_with_their_harmless_values_convert(tmp_path):
    """Old OPUS-MT config.json files carry these fields with the values MarianMTModel computes: accepted."""
    legacy = dict(
        normalize_before=False,
        add_final_layer_norm=False,
        normalize_embedding=False,
        static_position_embeddings=True,
        add_bias_logits=False,
        extra_pos_embeddings=121,
    )
    convert_marian(tiny_marian(**legacy), tmp_path / "out")
    assert (tmp_path / "out" / "model.safetensors").exists()


def test_unmappable_option_in_a_folder_is_refused_before_loading_weights(tmp_path):
    folder = tmp_path / "marian"
    tiny_marian().save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    config["normalize_before"] = True
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "model.safetensors").unlink()
    with pytest.raises(MarianConversionError, match="normalize_before=True"):
        convert_marian(str(folder), tmp_path / "out")


def test_non_marian_folder_is_refused_naming_its_type(tmp_path):
    folder = tmp_path / "bert"
    BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2)).save_pretrained(
        folder
    )
    with pytest.raises(MarianConversionError, match=r"'bert' model \(BertModel\), not a Marian one"):
        convert_marian(folder, tmp_path / "out")


def test_cli_subcommand_reports_refusals(tmp_path, capsys):
    folder = tmp_path / "bert"
    BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2)).save_pretrained(
        folder
    )
    assert main(["convert-marian", str(folder), str(tmp_path / "out"), "--dtype", "float16"]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]  # after the progress bars of the model saves
    assert error.startswith("hf-vaswani convert-marian: error:") and "'bert' model" in error


def test_marian_without_lm_head_is_refused(tmp_path):
    with pytest.raises(MarianConversionError, match="only a MarianMTModel"):
        convert_marian(MarianModel(marian_config(encoder_layers=1, decoder_layers=1)), tmp_path / "out")


@pytest.mark.parametrize("edit", ["extra", "missing"])
def test_unexpected_or_missing_weights_are_listed(tmp_path, edit):
    folder = tmp_path / "marian"
    tiny_marian().save_pretrained(folder)
    weights = load_file(folder / "model.safetensors")
    if edit == "extra":
        weights["model.encoder.layer_norm.weight"] = torch.ones(32)
        expected = "unexpected weights.*model.encoder.layer_norm.weight"
    else:
        del weights["model.decoder.layers.0.fc2.bias"]
        expected = "missing weights.*model.decoder.layers.0.fc2.bias"
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(MarianConversionError, match=expected):
        convert_marian(folder, tmp_path / "out")


def test_extra_parameter_on_an_in_memory_model_is_listed(tmp_path):
    model = tiny_marian()
    model.model.encoder.layer_norm = torch.nn.LayerNorm(32)
    with pytest.raises(MarianConversionError, match=r"unexpected weights.*'model.encoder.layer_norm.bias'"):
        convert_marian(model, tmp_path / "out")


def test_altered_position_table_is_refused(tmp_path):
    model = tiny_marian()
    with torch.no_grad():
        model.model.decoder.embed_positions.weight[3] += 0.01
    with pytest.raises(MarianConversionError, match="model.decoder.embed_positions.weight is not the sinusoidal"):
        convert_marian(model, tmp_path / "out")


# ------------------------------------------------------------------------------------------- the output folder


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _stale_model_folder(folder: Path) -> Path:
    """A model folder as a previous conversion or a trained model leaves it: another tokenizer, an old card."""
    from tests.helpers import tiny_tokenizer

    tiny_tokenizer().save_pretrained(folder)
    (folder / "README.md").write_text("# the old model card\n")
    (folder / "eval_results.json").write_text("{}\n")
    return folder


def test_non_empty_output_needs_overwrite_which_replaces_it_whole(marian_folder, tmp_path, capsys):
    """Converting into a folder that holds another model would leave its tokenizer.json next to the new weights
    (and AutoTokenizer would load it: ids outside the vocabulary): refused, or with --overwrite replaced whole."""
    out = _stale_model_folder(tmp_path / "out")
    before = _snapshot(out)
    assert main(["convert-marian", str(marian_folder), str(out)]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("hf-vaswani convert-marian: error:") and "is not empty" in error and "--overwrite" in error
    assert _snapshot(out) == before
    assert main(["convert-marian", str(marian_folder), str(out), "--overwrite"]) == 0
    assert not {"tokenizer.json", "eval_results.json"} & {p.name for p in out.iterdir()}
    assert "the old model card" not in (out / "README.md").read_text()
    assert type(AutoTokenizer.from_pretrained(out)) is MarianTokenizer
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary sibling left
    # The folder that holds the source is never replaced.
    with pytest.raises(ValueError, match="holds the input"):
        convert_marian(marian_folder, marian_folder.parent, overwrite=True)


def test_damaged_sources_are_one_line_errors(tmp_path, capsys):
    """A pickled checkpoint that torch.load(weights_only=True) refuses, and a tokenizer_config.json that is not
    UTF-8: one line naming the source, exit code 2, nothing written."""
    import datetime

    pickled = tmp_path / "pickled"
    tiny_marian().save_pretrained(pickled)
    state = load_file(pickled / "model.safetensors")
    (pickled / "model.safetensors").unlink()
    torch.save({**state, "when": datetime.date(2020, 1, 1)}, pickled / "pytorch_model.bin")
    latin1 = tmp_path / "latin1"
    tiny_marian().save_pretrained(latin1)
    write_marian_tokenizer(latin1)
    (latin1 / "tokenizer_config.json").write_bytes('{"source_lang": "español"}'.encode("latin-1"))
    cases = [
        (pickled, "refuses to run (Unsupported global: GLOBAL datetime.date"),
        (latin1, "tokenizer_config.json is not valid JSON"),
    ]
    for source, message in cases:
        assert main(["convert-marian", str(source), str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err
        error = err.strip().splitlines()[-1]
        assert error.startswith("hf-vaswani convert-marian: error:") and message in error, error
        assert str(source) in error
        assert not (tmp_path / "out").exists()


def test_a_tokenizer_that_is_not_the_models_is_refused_before_anything_is_written(
    tiny_architecture_folders, tmp_path, capsys
):
    """A Marian model carrying BART's tokenizer (its own files replaced), and one whose MarianTokenizer lacks
    source.spm: one line naming the source and what is wrong, exit code 2, no output folder."""
    bart_tokenizer = tmp_path / "with-bart-tokenizer"
    shutil.copytree(tiny_architecture_folders["marian"], bart_tokenizer)
    for name in ("source.spm", "target.spm", "vocab.json", "tokenizer_config.json"):
        (bart_tokenizer / name).unlink(missing_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"):
        shutil.copy(tiny_architecture_folders["bart"] / name, bart_tokenizer / name)
    no_spm = tmp_path / "without-source-spm"
    shutil.copytree(tiny_architecture_folders["marian"], no_spm)
    (no_spm / "source.spm").unlink()
    bart_tokens = len(AutoTokenizer.from_pretrained(tiny_architecture_folders["bart"]))
    marian_vocabulary = json.loads((tiny_architecture_folders["marian"] / "config.json").read_text())["vocab_size"]
    assert bart_tokens != marian_vocabulary
    cases = [
        (bart_tokenizer,
         f"is not its model's: the tokenizer has {bart_tokens} tokens and the model's vocabulary {marian_vocabulary}"),
        (no_spm, "cannot be loaded: its tokenizer is a MarianTokenizer, which reads source.spm, target.spm, "
                 "vocab.json, but the folder has no source.spm"),
    ]  # fmt: skip
    for source, message in cases:
        capsys.readouterr()
        assert main(["convert-marian", str(source), str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err.strip()
        assert "Traceback" not in err and len(err.splitlines()) == 1, err
        assert err.startswith(f"hf-vaswani convert-marian: error: The tokenizer of {str(source)!r} ") and message in err
        assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_full_disk_leaves_the_output_folder_as_it_was(marian_folder, converted_folder, tmp_path):
    """`convert-marian --overwrite` with a file size limit below the weights (a full disk): one error line, and the
    folder it was to replace is as it was, with no temporary sibling left."""
    import resource

    from hf_vaswani.testing import tiny_model

    out = _stale_model_folder(tmp_path / "model")  # another model: written in place, its config would change
    tiny_model(300).save_pretrained(out)
    before = _snapshot(out)
    limit = (converted_folder / "model.safetensors").stat().st_size // 2  # the config fits, the weights do not

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    env.pop("HF_VASWANI_TRACEBACK", None)
    result = subprocess.run(
        [sys.executable, "-m", "hf_vaswani.cli", "convert-marian", str(marian_folder), str(out), "--overwrite"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        preexec_fn=small_disk,
        timeout=PROCESS_TIMEOUT,
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("hf-vaswani convert-marian: error:") and "File too large" in error, error
    assert f"{str(out)!r} left as before" in error
    assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
