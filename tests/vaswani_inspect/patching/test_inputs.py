"""What a patching run compares (vaswani_inspect/patching/inputs.py): the metric, a contrast read at the one step
where answer and foil differ, and the pairs of sources it refuses, with both token lists named."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.vaswani_inspect.patching.hand_hooks import CLEAN, CORRUPTED
from vaswani_inspect import Contrast, patch_activations


def test_a_contrast_reads_one_step(model, tokenizer):
    target = "the black cat"
    result = patch_activations(
        model, tokenizer, CLEAN, CORRUPTED, direction="es-en", target=target, metric=("cat", "dog"), sites="decoder"
    )
    (step,) = result.metric_steps
    ids = result.target_ids
    answer = tokenizer(text_target="cat")["input_ids"][0]
    foil = tokenizer(text_target="dog")["input_ids"][0]
    assert ids[step + 1] == answer
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([result.source_ids]), decoder_input_ids=torch.tensor([ids])).logits
    log_probs = torch.log_softmax(logits[0, step], -1)
    assert result.clean_metric == pytest.approx(float(log_probs[answer] - log_probs[foil]), abs=1e-5)
    last = result.effects["decoder"][-1]  # only the step's own position reaches its prediction
    assert last[step] == pytest.approx(1.0, abs=1e-4) and np.delete(last, step) == pytest.approx(0.0, abs=1e-5)
    assert result.metric == Contrast("cat", "dog").describe()


@pytest.mark.parametrize(
    ("clean", "corrupted", "options", "message"),
    [
        (CLEAN, "el perro negro grande", {}, "same number of tokens"),
        (CLEAN, CLEAN, {}, "same tokens"),
        (CLEAN, CORRUPTED, {"target": "the black cat", "metric": Contrast("mouse", "dog")}, "must occur in the target"),
        (CLEAN, CORRUPTED, {"target": "the black cat", "metric": Contrast("cat", "cat")}, "must differ"),
    ],
)
def test_refused_inputs(model, tokenizer, clean, corrupted, options, message):
    with pytest.raises(ValueError, match=message) as error:
        patch_activations(model, tokenizer, clean, corrupted, direction="es-en", **options)
    if "tokens" in message:
        assert "▁gato" in str(error.value) and "▁negro" in str(error.value)
