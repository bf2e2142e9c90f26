"""A PatchingResult (vaswani_inspect/patching/result.py): one array per site of the expected shape, its JSON, its
position labels and pass count, for both methods."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vaswani_inspect.patching import SITES


def test_shapes_labels_and_json(model, exhaustive, attribution):
    layers = model.config.encoder_layers, model.config.decoder_layers
    heads = model.config.encoder_attention_heads
    positions = len(exhaustive.source_tokens), len(exhaustive.target_tokens)
    shapes = {
        "encoder": (layers[0], positions[0]),
        "decoder": (layers[1], positions[1]),
        "encoder_heads": (layers[0], heads),
        "decoder_heads": (layers[1], heads),
        "cross_heads": (layers[1], heads),
    }
    for result in (exhaustive, attribution):
        assert result.sites == SITES
        assert {site: values.shape for site, values in result.effects.items()} == shapes
        assert all(values.dtype == np.float32 and np.isfinite(values).all() for values in result.effects.values())
        data = json.loads(result.to_json())
        np.testing.assert_allclose(data["effects"]["cross_heads"], result.effects["cross_heads"], rtol=1e-6)
    assert exhaustive.target_tokens[0] == "<s>" and exhaustive.source_tokens[0] == ">>en<<"
    assert exhaustive.clean_metric == pytest.approx(attribution.clean_metric, abs=1e-5)
    assert exhaustive.passes == sum(v.size for v in exhaustive.effects.values()) + 2 and attribution.passes == 3
    assert any("→" in token for token in exhaustive.position_tokens("encoder"))
