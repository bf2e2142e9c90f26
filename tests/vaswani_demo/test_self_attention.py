"""The encoder self-attention heatmap of the translate tab (`vaswani_demo.self_attention`): the record's own
encoder weights over its source words, for the layer and head chosen (the last layer and every head by default, an
unknown value falling back to them), titled in the page's language, offered for download, with controls in both
languages. On the vaswani_inspect tiny model's record (tests/conftest.py): nothing here translates."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gradio")

from vaswani_demo.choices import DemoChoices  # noqa: E402
from vaswani_demo.components import FIGURE_NAMES  # noqa: E402
from vaswani_demo.layout import page_translations  # noqa: E402
from vaswani_demo.self_attention import ENCODER_FIGURE, encoder_heatmap, encoder_options  # noqa: E402
from vaswani_inspect.words import to_words  # noqa: E402


def _drawn(figure) -> tuple[np.ndarray, list[str], list[str]]:
    ax = figure.axes[0]
    rows = [label.get_text() for label in ax.get_yticklabels()]
    return np.asarray(ax.images[0].get_array()), rows, [label.get_text() for label in ax.get_xticklabels()]


def test_the_heatmap_is_the_records_encoder_attention_over_words(record):
    words = to_words(record, special_tokens="drop")
    last = record.num_layers("encoder") - 1
    for (layer, head), expected in {
        (None, None): (last, "mean"),
        ("0", "1"): (0, 1),
        ("mean", "mean"): ("mean", "mean"),
        ("99", "x"): (last, "mean"),  # not offered: the defaults
    }.items():
        matrix, rows, columns = _drawn(encoder_heatmap(record, layer, head))
        np.testing.assert_allclose(matrix, words.select("encoder", *expected), atol=1e-6)
        assert rows == columns == [token.lstrip("▁") for token in words.source_tokens] == ["el", "gato", "negro"]
    assert encoder_heatmap(None) is None
    spanish = encoder_heatmap(record, "0", "1", "es").axes[0]
    assert spanish.get_title().startswith("Qué palabra de la fuente mira") and "capa 0, cabeza 1" in spanish.get_title()
    assert spanish.get_xlabel() == "palabras miradas" and spanish.get_ylabel() == "palabras que miran"
    assert "layer 0, head 1" in encoder_heatmap(record, "0", "1", "en").axes[0].get_title()


def test_the_controls_offer_every_encoder_layer_and_head_in_both_languages(model, tokenizer):
    choices = DemoChoices.from_model(model, tokenizer, "tiny")
    layers, heads = choices.heads["encoder"]
    options = encoder_options(choices, "es")
    assert [value for _, value in options["layer"]] == ["mean", *map(str, range(layers))]
    assert [value for _, value in options["head"]] == ["mean", *map(str, range(heads))]
    texts = page_translations(choices)
    assert texts["es"]["choice.encoder_layer.0"] == "capa 0" and texts["en"]["choice.encoder_head.1"] == "head 1"
    assert FIGURE_NAMES[ENCODER_FIGURE] == "encoder-self-attention"
