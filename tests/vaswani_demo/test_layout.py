"""The page's layout (`vaswani_demo.layout`) follows the models served: the texts that quote the shipped checkpoint's
translations (the failures to discuss) appear only where it serves, and the legend names our language tokens only
on a page of our architecture. Built on the tiny model, its serving renamed: nothing here translates."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

gr = pytest.importorskip("gradio")

from vaswani_demo.choices import DemoChoices, Serving  # noqa: E402
from vaswani_demo.layout import build_layout, page_i18n, page_translations  # noqa: E402


@pytest.fixture(scope="module")
def tiny_choices(model, tokenizer) -> DemoChoices:
    return DemoChoices.from_model(model, tokenizer, "tiny")


def _served_by(choices: DemoChoices, name: str, architecture: str) -> DemoChoices:
    return replace(choices, serving={d: Serving(name, architecture, "torch") for d in choices.directions})


def _failures(choices: DemoChoices):
    with gr.Blocks():
        return build_layout(choices, page_i18n(choices)).failures


@pytest.mark.slow
def test_the_checkpoints_own_texts_appear_only_where_it_is_served(tiny_choices: DemoChoices):
    shipped = _served_by(tiny_choices, "pretrained/vaswani-tatoeba-es-en", "vaswani")
    another_of_ours = _served_by(tiny_choices, "runs/my-vaswani", "vaswani")
    marian = _served_by(tiny_choices, "Helsinki-NLP/opus-mt-es-en", "marian")
    assert shipped.shipped_directions == tiny_choices.directions and not marian.shipped_directions
    assert _failures(shipped) is not None
    assert _failures(another_of_ours) is None and _failures(marian) is None
    for language in ("en", "es"):
        for ours in (shipped, another_of_ours):
            assert ">>en<<" in page_translations(ours)[language]["legend"]
        legend = page_translations(marian)[language]["legend"]
        assert ">>en<<" not in legend and ">>es<<" not in legend and "`</s>`" in legend


def test_the_layer_control_tells_the_aligners_whole_reading(model, tokenizer):
    """The aligner's label ("the model's aligner: layer 0, head 1, shifted + layer 1, head 0") is longer than the
    control's box: the whole reading is under it too."""
    aligned = copy.deepcopy(model)
    aligned.config.alignment = {
        "layer": 0, "heads": [1], "shift": True, "average_with": [{"layer": 1, "heads": [0], "shift": False}]
    }  # fmt: skip
    choices = DemoChoices.from_model(aligned, tokenizer, "tiny")
    with gr.Blocks():
        layer = build_layout(choices, page_i18n(choices)).layer
    assert layer.info is not None and layer.info.key == "layer.aligner"
    texts = page_translations(choices)
    assert texts["en"]["layer.aligner"] == "The model's aligner reads layer 0, head 1, shifted + layer 1, head 0."
    assert texts["es"]["layer.aligner"].startswith("El alineador del modelo lee capa 0, cabeza 1, desplazad")
    unaligned = DemoChoices.from_model(model, tokenizer, "tiny")
    with gr.Blocks():
        assert build_layout(unaligned, page_i18n(unaligned)).layer.info is None
