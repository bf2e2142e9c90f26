"""`attribute` refuses what the explain command refuses, with a ValueError that says what is wrong, before any
work: a direction the model does not translate, steps and batch sizes that are not positive integers, integrated
gradients too large to hold, a record whose ids are not its tokens; and the gradient methods run on a bfloat16
model."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pytest
import torch

from vaswani_inspect.attribution import attribute
from vaswani_inspect.attribution.checks import MAX_STEP_POSITIONS


def test_a_direction_the_model_does_not_translate_is_refused(model, tokenizer):
    with pytest.raises(ValueError, match="Unknown translation direction 'fr-en'"):
        attribute(model, tokenizer, "el gato negro", direction="fr-en", method="rollout")


@pytest.mark.parametrize("value", [True, 0, -3, float("nan"), 2.5, "8", None])
def test_n_steps_must_be_a_positive_integer(model, tokenizer, record, value):
    with pytest.raises(ValueError, match=r"n_steps must be a positive integer, got"):
        attribute(model, tokenizer, record, method="integrated_gradients", n_steps=value)


@pytest.mark.parametrize("method", ["value_zeroing", "saliency", "integrated_gradients"])
@pytest.mark.parametrize("value", [0, -1, False])
def test_batch_size_must_be_a_positive_integer(model, tokenizer, record, method, value):
    with pytest.raises(ValueError, match=r"batch_size must be a positive integer, got"):
        attribute(model, tokenizer, record, method=method, batch_size=value)


@pytest.mark.parametrize("steps", [20_000, 200_000])
def test_integrated_gradients_too_large_to_hold_is_refused_before_any_work(
    model, tokenizer, record, steps, monkeypatch
):
    positions = len(record.source_tokens) + len(record.target_tokens) - 1
    assert steps * positions > MAX_STEP_POSITIONS

    def forward(*args, **kwargs):
        raise AssertionError("the model ran: the request was attempted, not refused")

    monkeypatch.setattr(model, "forward", forward)
    with pytest.raises(ValueError, match=rf"n_steps={steps} is too many.*the limit is 100,000 \(MAX_STEP_POSITIONS\)"):
        attribute(model, tokenizer, record, method="integrated_gradients", n_steps=steps)
    monkeypatch.undo()
    most = MAX_STEP_POSITIONS // positions  # the bound itself passes the check (a few steps, run for real)
    assert most >= 1000


def test_a_record_whose_ids_are_not_its_tokens_is_refused(model, tokenizer, record):
    ids = list(record.source_ids)
    ids[1], ids[2] = ids[2], ids[1]
    if ids == record.source_ids:  # the same piece twice: change it
        ids[1] = ids[1] + 1
    swapped = replace(record, source_ids=ids)
    with pytest.raises(ValueError, match="The record's source ids are not its tokens: id .* at position 1"):
        attribute(model, tokenizer, swapped, method="rollout")
    outside = replace(record, target_ids=[*record.target_ids[:-1], 10_000])
    with pytest.raises(ValueError, match=r"target ids are not all in the model's vocabulary \(0\.\.\d+\)"):
        attribute(model, None, outside, method="alti_plus")
    attribute(model, tokenizer, record, method="rollout")  # the record as extracted passes


@pytest.mark.parametrize("method", ["saliency", "input_x_gradient", "alti_plus"])
def test_a_bfloat16_model_is_explained(model, tokenizer, record, method):
    half = copy.deepcopy(model).to(torch.bfloat16)
    found = attribute(half, tokenizer, record, method=method)
    reference = attribute(model, tokenizer, record, method=method)
    assert found.token_scores.dtype == np.float64 and np.all(np.isfinite(found.token_scores))
    # bfloat16 keeps about 3 significant digits: the words' scores stay close to float32's.
    np.testing.assert_allclose(found.matrix, reference.matrix, atol=0.1)
    assert found.source_share is not None and np.all(np.isfinite(found.source_share[~np.isnan(reference.source_share)]))
