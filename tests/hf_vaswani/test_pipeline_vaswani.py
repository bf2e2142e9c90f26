"""A model saved with `save_pretrained` (after loading the shipped one, or after a PEFT merge) keeps the shipped
folder's translation pipeline: config.json's ``custom_pipelines`` and the ``pipeline_vaswani.py`` it names
(issue 27: the file was left behind, so ``pipeline("translation", model=saved, trust_remote_code=True)`` failed)."""

import json
import os

import pytest
from transformers import AutoModelForSeq2SeqLM, PreTrainedTokenizerFast

from hf_vaswani import VaswaniForConditionalGeneration
from tests.helpers import CHECKPOINT, run_without_our_packages, tiny_config

needs_checkpoint = pytest.mark.skipif(not CHECKPOINT.is_dir(), reason="the shipped checkpoint is not in this checkout")

SENTENCE = "El gato se comió el ratón."

#: Run by `run_without_our_packages` (json and sys are imported): every folder named on the command line is loaded
#: with only its own remote code and translates SENTENCE with its pipeline.
PIPELINE_SCRIPT = """
    from transformers import pipeline

    texts = {}
    for folder in sys.argv[2:]:
        translator = pipeline("translation", model=folder, trust_remote_code=True)
        texts[folder] = translator(sys.argv[1], tgt_lang="en")[0]["translation_text"]
    assert not any(m.split(".")[0] == "hf_vaswani" for m in sys.modules)
    print(json.dumps(texts))
    """

#: Run by `run_without_our_packages`: a user without our packages loads the shipped model through its remote code,
#: saves it as it is, and saves a PEFT LoRA model merged into it.
SAVE_SCRIPT = """
    import peft
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    shipped, plain, merged = sys.argv[1:4]
    tokenizer = AutoTokenizer.from_pretrained(shipped, trust_remote_code=True)
    model = AutoModelForSeq2SeqLM.from_pretrained(shipped, trust_remote_code=True)
    model.save_pretrained(plain)
    tokenizer.save_pretrained(plain)
    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
    peft.get_peft_model(model, config).merge_and_unload().save_pretrained(merged)
    tokenizer.save_pretrained(merged)
    print(json.dumps("saved"))
    """


def _environment(tmp_path):
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home"), "OMP_NUM_THREADS": "1"}


@pytest.mark.slow
@needs_checkpoint
def test_saved_and_peft_merged_folders_keep_the_translation_pipeline(tmp_path):
    pytest.importorskip("peft")
    import peft

    tokenizer = PreTrainedTokenizerFast.from_pretrained(CHECKPOINT)
    model = AutoModelForSeq2SeqLM.from_pretrained(CHECKPOINT)
    folders = {name: tmp_path / name for name in ("plain", "merged", "remote-plain", "remote-merged")}
    model.save_pretrained(folders["plain"])
    lora = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
    peft.get_peft_model(model, lora).merge_and_unload().save_pretrained(folders["merged"])
    for name in ("plain", "merged"):
        tokenizer.save_pretrained(folders[name])
    env = _environment(tmp_path)
    remote = [str(CHECKPOINT), str(folders["remote-plain"]), str(folders["remote-merged"])]
    assert run_without_our_packages(SAVE_SCRIPT, *remote, env=env) == "saved"
    for folder in folders.values():
        assert (folder / "pipeline_vaswani.py").read_bytes() == (CHECKPOINT / "pipeline_vaswani.py").read_bytes()
        config = json.loads((folder / "config.json").read_text())
        assert "translation" in config["custom_pipelines"]
        assert config["auto_map"]["AutoModel"] == "modeling_vaswani.VaswaniModel"  # bertviz's entry stays too
    texts = run_without_our_packages(PIPELINE_SCRIPT, SENTENCE, *map(str, folders.values()), env=env)
    # LoRA's B matrices start at zero: the merged model is the shipped one, and so is its translation.
    assert texts == {str(folder): "The cat ate the mouse." for folder in folders.values()}


class _Unregistered(VaswaniForConditionalGeneration):
    _auto_class = None  # transformers writes the code of a class registered for an auto class only


def test_a_model_whose_code_is_not_saved_drops_its_pipeline_entry(tmp_path):
    """Without the model's code in the folder (a class not registered for the auto classes), config.json must not
    name a pipeline file that is not there."""
    model = _Unregistered(tiny_config()).eval()
    model.config.custom_pipelines = {"translation": {"impl": "pipeline_vaswani.VaswaniTranslationPipeline"}}
    model.save_pretrained(tmp_path / "model")
    assert not (tmp_path / "model" / "pipeline_vaswani.py").exists()
    assert "custom_pipelines" not in json.loads((tmp_path / "model" / "config.json").read_text())
    assert model.config.custom_pipelines  # the model in memory keeps it
