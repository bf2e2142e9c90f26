"""The standard `transformers` paths a user of the ecosystem takes: the translation pipeline, bertviz's
`AutoModel` recipe, static cache and compiled generation, resized vocabularies, PEFT LoRA, and the loading defaults of
the shipped checkpoint."""

import json
import logging
import os
import shutil
import warnings

import pytest
import torch
from transformers import AutoModel, AutoModelForSeq2SeqLM, PreTrainedTokenizerFast, pipeline
from transformers.dynamic_module_utils import get_class_from_dynamic_module

from hf_vaswani import VaswaniForConditionalGeneration
from hf_vaswani.pipeline_vaswani import VaswaniTranslationPipeline, add_pipeline_to_folder
from tests.helpers import CHECKPOINT, run_without_our_packages, tiny_config

needs_checkpoint = pytest.mark.skipif(not CHECKPOINT.is_dir(), reason="the shipped checkpoint is not in this checkout")


@pytest.fixture(scope="module")
def shipped_float32():
    tokenizer = PreTrainedTokenizerFast.from_pretrained(CHECKPOINT)
    return AutoModelForSeq2SeqLM.from_pretrained(CHECKPOINT).eval(), tokenizer


# ---------------------------------------------------------------------------------------------- pipeline


@needs_checkpoint
def test_translation_pipeline_with_remote_code_and_with_the_package(tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(CHECKPOINT, folder)
    add_pipeline_to_folder(folder)
    assert json.loads((folder / "config.json").read_text())["custom_pipelines"]["translation"]["impl"] == (
        "pipeline_vaswani.VaswaniTranslationPipeline"
    )
    remote = pipeline("translation", model=str(folder), trust_remote_code=True)
    assert type(remote).__name__ == "VaswaniTranslationPipeline"
    assert remote("El gato se comió el ratón.", tgt_lang="en") == [{"translation_text": "The cat ate the mouse."}]
    local = pipeline("translation", model=str(folder), pipeline_class=VaswaniTranslationPipeline)
    both = local(["El gato se comió el ratón.", "Tengo hambre."], tgt_lang="en", num_beams=2)
    assert [item[0]["translation_text"] for item in both] == ["The cat ate the mouse.", "I'm hungry."]
    with pytest.raises(ValueError, match="tgt_lang='en' or 'es'"):
        local("Hola.")
    with pytest.raises(ValueError, match=r"not a language of this model: choose one of \['en', 'es'\]"):
        local("Hola.", tgt_lang="fr")
    with pytest.raises(ValueError, match="language token"):
        local(">>fr<< Bonjour.", tgt_lang="en")
    with pytest.warns(UserWarning, match="outside the model's vocabulary"):
        local("😀😀😀 🎉🎉", tgt_lang="en")


# ---------------------------------------------------------------------------------------------- AutoModel (bertviz)

#: bertviz's README recipe for an encoder-decoder, run by `run_without_our_packages` (json and sys are imported): the
#: bare encoder-decoder through the folder's own code, with every attention matrix.
AUTOMODEL_SCRIPT = """
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(sys.argv[1], output_attentions=True, trust_remote_code=True).eval()
    with torch.no_grad():
        outputs = model(**{name: torch.tensor(ids) for name, ids in json.loads(sys.argv[2]).items()})
    assert not any(m.split(".")[0] == "hf_vaswani" for m in sys.modules)
    kinds = ("encoder_attentions", "decoder_attentions", "cross_attentions")
    print(json.dumps([type(model).__name__, [[a.tolist() for a in getattr(outputs, kind)] for kind in kinds]]))
    """

ATTENTION_KINDS = ("encoder_attentions", "decoder_attentions", "cross_attentions")


def assert_same_attentions(found: list, expected) -> None:
    """Attentions as the script prints them (lists) against a model's output."""
    for kind, layers in zip(ATTENTION_KINDS, found, strict=True):
        assert len(layers) == len(getattr(expected, kind)), kind
        for got, want in zip(layers, getattr(expected, kind)):
            torch.testing.assert_close(torch.tensor(got), want, atol=1e-6, rtol=0)


@pytest.mark.slow
@needs_checkpoint
def test_automodel_gives_bertviz_the_shipped_attentions_without_our_package(tmp_path):
    """``AutoModel.from_pretrained(folder, output_attentions=True, trust_remote_code=True)``, as bertviz's README
    has it, loads our bare encoder-decoder (config.json's auto_map names it) in a process that cannot import
    hf_vaswani; the attentions are those of the model we load."""
    assert json.loads((CHECKPOINT / "config.json").read_text())["auto_map"]["AutoModel"] == (
        "modeling_vaswani.VaswaniModel"
    )
    inputs = {"input_ids": [[4, 50, 60, 70, 2]], "decoder_input_ids": [[1, 33, 44]]}
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home"), "OMP_NUM_THREADS": "1"}
    name, attentions = run_without_our_packages(AUTOMODEL_SCRIPT, str(CHECKPOINT), json.dumps(inputs), env=env)
    assert name == "VaswaniModel"
    with torch.no_grad():
        expected = AutoModel.from_pretrained(CHECKPOINT, output_attentions=True).eval()(
            **{key: torch.tensor(ids) for key, ids in inputs.items()}
        )
    assert_same_attentions(attentions, expected)


def test_a_newly_saved_model_names_its_bare_encoder_decoder_for_automodel(tmp_path):
    """transformers writes the saved class's auto_map entry alone; ours adds AutoModel, which loads the bare
    encoder-decoder through the folder's code, with the weights of the model saved."""
    model = VaswaniForConditionalGeneration(tiny_config()).eval()
    model.save_pretrained(tmp_path / "saved")
    auto_map = json.loads((tmp_path / "saved" / "config.json").read_text())["auto_map"]
    assert auto_map["AutoModel"] == "modeling_vaswani.VaswaniModel"
    # What AutoModel does with trust_remote_code where hf_vaswani is not imported (here its registration wins).
    bare_class = get_class_from_dynamic_module(auto_map["AutoModel"], str(tmp_path / "saved"))
    assert bare_class.__name__ == "VaswaniModel" and bare_class.__module__.startswith("transformers_modules.")
    bare = bare_class.from_pretrained(tmp_path / "saved").eval()
    inputs = dict(input_ids=torch.tensor([[4, 50, 60, 2]]), decoder_input_ids=torch.tensor([[1, 33]]))
    with torch.no_grad():
        torch.testing.assert_close(bare(**inputs).last_hidden_state, model.model(**inputs).last_hidden_state)


# ---------------------------------------------------------------------------------------------- generation


@pytest.mark.slow
def test_static_cache_and_compiled_generation_give_the_dynamic_cache_tokens(tiny_model, source_batch):
    input_ids, attention_mask = source_batch
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=8, min_new_tokens=8)
    dynamic = tiny_model.generate(**inputs)
    static = tiny_model.generate(**inputs, cache_implementation="static")
    assert torch.equal(static, dynamic)
    # The whole forward as one graph (the model declares _can_compile_fullgraph): dynamo must trace every step.
    tiny_model.forward = torch.compile(tiny_model.forward, backend="eager", fullgraph=True, dynamic=False)
    compiled = tiny_model.generate(**inputs, cache_implementation="static")
    assert torch.equal(compiled, dynamic)


def test_resized_vocabulary_saves_and_loads_again(tmp_path, source_batch):
    torch.manual_seed(0)
    for overrides in ({}, {"final_logits_bias": True}):
        model = VaswaniForConditionalGeneration(tiny_config(**overrides)).eval()
        model.resize_token_embeddings(105, mean_resizing=False)
        assert model.config.vocab_size == model.config.decoder_vocab_size == 105
        if model.final_logits_bias is not None:
            assert model.final_logits_bias.shape == (1, 105)
        model.save_pretrained(tmp_path / str(len(overrides)))
        loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / str(len(overrides))).eval()
        decoder_input_ids = torch.tensor([[1, 100], [1, 104]])
        torch.testing.assert_close(
            loaded(input_ids=source_batch[0], decoder_input_ids=decoder_input_ids).logits,
            model(input_ids=source_batch[0], decoder_input_ids=decoder_input_ids).logits,
        )


# ---------------------------------------------------------------------------------------------- PEFT


def test_lora_on_the_attention_projections_trains_and_merges_exactly(source_batch):
    peft = pytest.importorskip("peft")
    torch.manual_seed(0)
    model = VaswaniForConditionalGeneration(tiny_config(dropout=0.0))
    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
    lora = peft.get_peft_model(model, config)
    adapted = {name.rsplit(".", 1)[0] for name, _ in lora.named_parameters() if "lora_A" in name}
    layers = model.config.encoder_layers + 2 * model.config.decoder_layers  # self-attention, and cross-attention
    assert len(adapted) == 2 * layers  # every query and value projection: no fused matrix hides one
    input_ids, attention_mask = source_batch
    labels = torch.randint(6, 97, (2, 5))
    optimizer = torch.optim.AdamW([p for p in lora.parameters() if p.requires_grad], lr=1e-2)
    losses = []
    for _ in range(15):
        optimizer.zero_grad()
        loss = lora(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    lora.eval()
    decoder_input_ids = torch.tensor([[1, 7, 8], [1, 9, 10]])
    with torch.no_grad():
        adapter_logits = lora(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids)
        merged = lora.merge_and_unload()  # writes W + BA into the weights in place
        merged_logits = merged(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids)
    torch.testing.assert_close(merged_logits.logits, adapter_logits.logits, atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------------------------------------- shipped defaults


@needs_checkpoint
def test_shipped_checkpoint_loads_in_float32_and_in_bfloat16_on_request(shipped_float32):
    model, _ = shipped_float32
    assert model.dtype == torch.float32
    assert AutoModelForSeq2SeqLM.from_pretrained(CHECKPOINT, dtype=torch.bfloat16).dtype == torch.bfloat16


@needs_checkpoint
def test_shipped_configs_are_what_generate_needs(shipped_float32):
    model, tokenizer = shipped_float32
    assert model.config.use_cache is True
    assert tokenizer.model_max_length == model.config.max_position_embeddings
    assert len(tokenizer(">>en<< " + "hola " * 300, truncation=True).input_ids) == model.config.max_position_embeddings
    saved = json.loads((CHECKPOINT / "generation_config.json").read_text())
    assert "max_length" not in saved and saved["max_new_tokens"] == 64 and saved["num_beams"] == 4
    assert "top_k" not in saved  # only what differs from transformers' defaults


@needs_checkpoint
def test_generate_with_max_or_min_new_tokens_warns_nothing(shipped_float32, caplog):
    model, tokenizer = shipped_float32
    batch = tokenizer([">>en<< Tengo hambre."], return_tensors="pt")
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING):
        warnings.simplefilter("always")
        model.generate(**batch, max_new_tokens=10)
        model.generate(**batch, min_new_tokens=2, max_new_tokens=10)
        model.generate(**batch, num_beams=1, max_new_tokens=5)
    messages = [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "max_length" in m or "min_length" in m or "new_tokens" in m], messages


@needs_checkpoint
def test_an_unknown_language_token_in_the_text_is_refused_by_the_commands(capsys):
    from hf_vaswani.cli import main

    assert main(["translate", "--backend", "torch", ">>fr<< Bonjour."]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "unknown language token, '>>fr<<'" in error
