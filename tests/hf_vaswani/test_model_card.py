import pytest
from huggingface_hub import ModelCard

from hf_vaswani import VaswaniForConditionalGeneration
from hf_vaswani.model_card import checkpoint_card, write_model_card
from tests.helpers import CHECKPOINT, tiny_config

TRAINING = dict(
    summary="A test run.",
    data="synthetic",
    warmup=100,
    steps=1000,
    batch="64 sentences",
    averaged=3,
    hardware="2-core CPU",
    wall_time="1 min",
    test_pairs=50,
    num_beams=4,
    parameters="0.1M",
    weights_dtype="float32",
)


def test_model_card_has_metadata_results_and_attribution(tmp_path):
    VaswaniForConditionalGeneration(tiny_config()).save_pretrained(tmp_path)
    results = [dict(direction="es-en", bleu=41.234, chrf=60.0), dict(direction="en-es", bleu=35.0, chrf=55.5)]
    path = write_model_card(tmp_path, model_id="someone/vaswani-test", results=results, training=TRAINING)
    card = ModelCard.load(path)
    data = card.data.to_dict()
    assert data["license"] == "cc-by-2.0"
    assert data["language"] == ["es", "en"]
    model_index = data["model-index"][0]["results"]
    bleu = {r["dataset"]["config"]: r["metrics"][0]["value"] for r in model_index if r["metrics"][0]["type"] == "bleu"}
    assert bleu == {"es-en": 41.23, "en-es": 35.0}
    assert "| es-en | 41.2 | 60.0 |" in card.text
    assert "tatoeba.org" in card.text and "manythings.org/anki" in card.text
    assert "not an explanation" in card.text
    assert "trust_remote_code=True" in card.text


def test_model_card_says_the_notes_it_is_given(tmp_path):
    VaswaniForConditionalGeneration(tiny_config(alignment={"layer": 1, "heads": [0], "shift": False})).save_pretrained(
        tmp_path
    )
    results = [dict(direction="es-en", bleu=41.0, chrf=60.0)]
    general = write_model_card(tmp_path, model_id="someone/vaswani-test", results=results, training=TRAINING)
    assert "by `hf-vaswani align-eval --write-config`" in general.read_text(encoding="utf-8")
    notes = {"evaluation": "a second reading", "alignment": "head 0 of decoder layer 1."}
    path = write_model_card(tmp_path, model_id="someone/vaswani-test", results=results, training=TRAINING, notes=notes)
    card = path.read_text(encoding="utf-8")
    assert "beam 4; a second reading):" in card
    assert "that `alignment` in config.json names: head 0 of decoder layer 1. The model is small" in card
    assert "align-eval --write-config" not in card and card.endswith("```\n")


@pytest.mark.skipif(not CHECKPOINT.is_dir(), reason="the shipped checkpoint is not in this checkout")
def test_the_shipped_card_is_rendered_from_model_cards():
    """pretrained/vaswani-tatoeba-es-en/README.md is model_cards/vaswani.md filled with the checkpoint's facts
    (model_cards/vaswani-tatoeba-es-en.yaml), scores (eval_results.json) and configuration. After editing one of
    them: ``python -m hf_vaswani.model_card pretrained/vaswani-tatoeba-es-en``."""
    assert str(checkpoint_card(CHECKPOINT)) == (CHECKPOINT / "README.md").read_text(encoding="utf-8")
