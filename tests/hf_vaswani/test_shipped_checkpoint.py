"""The checkpoint we ship: a Hub-ready folder that loads with the Auto classes (also without our package),
translates the course sentences, and carries its model card, scores and curves."""

import json
import os

import pytest
import torch
from huggingface_hub import ModelCard
from safetensors import safe_open
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from tests.helpers import CHECKPOINT, PROCESS_TIMEOUT, ROOT, run_without_our_packages

pytestmark = pytest.mark.skipif(not CHECKPOINT.is_dir(), reason="the shipped checkpoint is not in this checkout")


def translate(shipped, sources: list[str], target: str) -> list[str]:
    model, tokenizer = shipped
    batch = tokenizer([f">>{target}<< {s}" for s in sources], return_tensors="pt", padding=True)
    with torch.no_grad():
        output = model.generate(**batch)
    return tokenizer.batch_decode(output, skip_special_tokens=True)


def test_folder_is_hub_ready():
    names = {p.name for p in CHECKPOINT.iterdir()}
    assert {
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "configuration_vaswani.py",
        "modeling_vaswani.py",
        "kernels_vaswani.py",
        "pipeline_vaswani.py",
        "README.md",
        "training_curves.png",
        "eval_results.json",
    } <= names
    assert (CHECKPOINT / "model.safetensors").stat().st_size < 25 * 2**20
    config = json.loads((CHECKPOINT / "config.json").read_text())
    assert config["model_type"] == "vaswani" and config["dtype"] == "float32"  # loaded in float32 by default ...
    with safe_open(CHECKPOINT / "model.safetensors", "pt") as weights:  # ... from weights stored in bfloat16
        assert {weights.get_tensor(name).dtype for name in weights.keys()} == {torch.bfloat16}
    assert config["auto_map"]["AutoModelForSeq2SeqLM"] == "modeling_vaswani.VaswaniForConditionalGeneration"


def test_model_card_reports_the_measured_scores():
    card = ModelCard.load(CHECKPOINT / "README.md")
    scores = json.loads((CHECKPOINT / "eval_results.json").read_text())["scores"]
    results = card.data.to_dict()["model-index"][0]["results"]
    bleu = {r["dataset"]["config"]: r["metrics"][0]["value"] for r in results if r["metrics"][0]["type"] == "bleu"}
    assert bleu == {d: round(scores[d]["bleu"], 2) for d in ("es-en", "en-es")}
    assert card.data.license == "cc-by-2.0"
    assert "tatoeba.org" in card.text and "manythings.org/anki" in card.text


def test_course_sentences(shipped):
    assert translate(shipped, ["El gato se comió el ratón."], "en") == ["The cat ate the mouse."]
    spanish = translate(shipped, ["The cat ate the mouse."], "es")[0]
    assert "gato" in spanish and "ratón" in spanish
    assert "bank" in translate(shipped, ["El banco aprobó el crédito"], "en")[0]


def test_noun_phrases_stay_phrases(shipped):
    # Mined noun phrases (data.noun_phrases) taught the model fragments; the casual copies keep an unpunctuated
    # sentence whole instead of cutting it down to its noun phrase.
    assert translate(shipped, ["el gato negro"], "en")[0].lower().rstrip(".") == "the black cat"
    assert translate(shipped, ["the black cat"], "es")[0].lower().rstrip(".") == "el gato negro"
    assert "sleep" in translate(shipped, ["el gato negro duerme"], "en")[0]


@pytest.mark.slow
def test_loads_with_trust_remote_code_without_our_package(shipped, tmp_path):
    script = """
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained(sys.argv[1], trust_remote_code=True)
        model = AutoModelForSeq2SeqLM.from_pretrained(sys.argv[1], trust_remote_code=True).eval()
        batch = tokenizer([">>en<< Tengo un gato negro."], return_tensors="pt")
        print(json.dumps(tokenizer.batch_decode(model.generate(**batch), skip_special_tokens=True)))
    """
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home")}
    assert run_without_our_packages(script, str(CHECKPOINT), env=env) == translate(
        shipped, ["Tengo un gato negro."], "en"
    )


def test_the_copied_model_code_is_the_package_code():
    """`trust_remote_code` users run the files next to the weights: they must be the package's, byte for byte."""
    package = ROOT / "hf_vaswani"
    for name in ("configuration_vaswani.py", "modeling_vaswani.py", "kernels_vaswani.py", "pipeline_vaswani.py"):
        assert (CHECKPOINT / name).read_bytes() == (package / name).read_bytes(), name


@pytest.mark.slow
def test_weights_edited_in_place_change_the_next_translation():
    """PEFT's `merge_and_unload()` writes merged weights through `.data`, which moves no version counter: an eval
    model must compute with the edited weights at once, not with a copy of the old ones."""
    tokenizer = AutoTokenizer.from_pretrained(CHECKPOINT)
    model = AutoModelForSeq2SeqLM.from_pretrained(CHECKPOINT, dtype=torch.float32).eval()
    shipped = (model, tokenizer)
    for _ in range(2):  # twice: anything cached on the first call is in place
        assert translate(shipped, ["El gato se comió el ratón."], "en") == ["The cat ate the mouse."]
    for module in model.model.decoder.modules():
        if isinstance(module, torch.nn.Linear):
            module.weight.data.zero_()
    assert translate(shipped, ["El gato se comió el ratón."], "en") != ["The cat ate the mouse."]


@pytest.mark.slow
def test_model_card_snippet_runs_as_written_without_our_package(tmp_path):
    """The card's Python block, verbatim, in a process that cannot import hf_vaswani, with the checkpoint in an
    offline Hugging Face cache under the card's model id: it must finish (no prompt for remote code) and translate."""
    import re
    import shutil
    import subprocess
    import sys

    from tests.helpers import REFUSE_OUR_PACKAGES

    card = (CHECKPOINT / "README.md").read_text(encoding="utf-8")
    snippet = re.search(r"```python\n(.*?)```", card, flags=re.S).group(1)
    model_id = re.search(r'from_pretrained\("([^"]+)"', snippet).group(1)
    repo = tmp_path / "hf_home" / "hub" / f"models--{model_id.replace('/', '--')}"
    commit = "0123456789abcdef0123456789abcdef01234567"
    shutil.copytree(CHECKPOINT, repo / "snapshots" / commit, ignore=shutil.ignore_patterns("ctranslate2-*"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home")}
    result = subprocess.run(
        [sys.executable, "-c", REFUSE_OUR_PACKAGES + snippet],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,  # a prompt for remote code would read EOF and fail, not hang
        timeout=PROCESS_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "cat" in result.stdout and "translation_text" in result.stdout
