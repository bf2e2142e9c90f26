"""The alignment configuration: the record's model configuration is the default of every call, averaged readings
included, and the model's config.alignment is checked where it is read."""

import numpy as np
import pytest

from tests.helpers import tiny_config
from tests.vaswani_inspect.alignment.planted import (
    AVERAGED,
    FIRST,
    PLANTED,
    SECOND,
    TRUTH,
    complementary_record,
    planted_head_record,
)
from vaswani_inspect import AttentionRecord, extract
from vaswani_inspect.alignment import align, alignment_matrix, alignment_settings, describe_alignment, model_alignment
from vaswani_inspect.testing import tiny_model


def test_align_follows_the_record_model_configuration():
    configured = planted_head_record(alignment=PLANTED)
    plain = planted_head_record()
    assert alignment_settings(configured) == PLANTED
    assert alignment_settings(plain) == {"layer": "mean", "heads": "all", "shift": False}
    assert align(configured) == TRUTH  # no arguments: the model's configuration
    assert align(plain) != TRUTH  # no configuration: the mean of every layer and head
    assert align(plain, 1, [2], shift=True) == TRUTH
    # An argument given replaces that part of the configuration only.
    assert alignment_settings(configured, shift=False) == {**PLANTED, "shift": False}
    assert align(configured, shift=False) != TRUTH
    assert alignment_settings(configured, heads=3) == {**PLANTED, "heads": [3]}
    np.testing.assert_allclose(alignment_matrix(configured), alignment_matrix(plain, 1, 2, shift=True))


def test_the_model_averaged_readings_are_its_default():
    configured = complementary_record(alignment=AVERAGED)
    assert alignment_settings(configured) == AVERAGED
    assert align(configured) == TRUTH
    assert describe_alignment(alignment_settings(configured)) == "layer 0, head 1, shifted + layer 2, head 0"
    # Choosing a layer, heads or shift reads that one configuration alone, unless average_with is passed too.
    assert alignment_settings(configured, shift=True) == FIRST
    assert align(configured, 0, [1], shift=True) == align(configured, **FIRST) != TRUTH
    assert align(configured, 0, [1], shift=True, average_with=[SECOND]) == TRUTH
    assert alignment_settings(configured, average_with=[]) == FIRST
    # The record keeps it through JSON.
    assert AttentionRecord.from_dict(configured.to_dict()).alignment == AVERAGED
    for bad in ({**FIRST, "average_with": []}, {**FIRST, "average_with": [AVERAGED]}, {**FIRST, "average_with": [1]}):
        with pytest.raises(ValueError, match="average_with"):
            AttentionRecord.from_dict({**configured.to_dict(), "alignment": bad})


# ------------------------------------------------------------------ the model's config.alignment, checked when read

BAD_MODEL_ALIGNMENTS = [
    ({"layer": 0, "heads": [0]}, "keys layer, heads and shift"),
    ({"layer": 9, "heads": [0], "shift": False}, "a decoder layer in"),
    ({"layer": 0, "heads": [0], "shift": False, "average_with": []}, "non-empty list"),
    ({"layer": 0, "heads": [0], "shift": False, "average_with": [{"layer": 0}]}, "average_with"),
    (
        {
            "layer": 0,
            "heads": [0],
            "shift": True,
            "average_with": [{"layer": 0, "heads": [99], "shift": False}],
        },
        "heads",
    ),
]


@pytest.mark.parametrize(("alignment", "message"), BAD_MODEL_ALIGNMENTS)
def test_reading_a_bad_model_alignment_fails(alignment, message):
    config = tiny_config(alignment=alignment)  # the remote-code configuration holds any dict
    with pytest.raises(ValueError, match=message):
        model_alignment(config)


def test_extract_reads_the_model_alignment_through_the_check(tokenizer):
    model = tiny_model(len(tokenizer))
    model.config.alignment = {"layer": 9, "heads": [0], "shift": False}
    with pytest.raises(ValueError, match="VaswaniConfig.alignment must be None or layer 'mean' or a decoder layer in"):
        extract(model, tokenizer, "el gato negro", "the black cat", direction="es-en")
    model.config.alignment = {"layer": 1, "heads": [0], "shift": False}
    assert model_alignment(model.config) == {"layer": 1, "heads": [0], "shift": False}
    assert extract(model, tokenizer, "el gato", "the cat", direction="es-en").alignment == model.config.alignment
