"""`head_computation` against the model's own forward pass, on our tiny model and on each tiny architecture: its
weights are `extract`'s rows, each step follows from the one before, and the heads' shares add up to what the
attention module returned (read by a forward hook of the test's own)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from vaswani_inspect import extract, head_computation
from vaswani_inspect.architectures import attention_modules, head_counts, projections
from vaswani_inspect.record import KINDS
from vaswani_inspect.testing_models import ARCHITECTURES

SOURCE, TARGET = "el gato negro", "the black cat"


@pytest.fixture(scope="module")
def architecture_models(tiny_architecture_folders, model, tokenizer):
    """{architecture: (model, tokenizer)}: ours and each tiny architecture, loaded plainly."""
    found = {"vaswani": (model, tokenizer)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (Marian's "pip install sacremoses", the switch to eager attention)
        for name, folder in tiny_architecture_folders.items():
            found[name] = (AutoModelForSeq2SeqLM.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder))
    return found


def _module_outputs(model, tokenizer):
    """(the record, {kind: what the last layer's `kind` attention module returned: (positions, d_model)})."""
    captured = {}

    def hook(kind):
        def keep(_module, _args, output):
            captured[kind] = (output[0] if isinstance(output, tuple) else output)[0].detach().float().numpy()

        return keep

    modules = attention_modules(model)
    handles = [modules[kind][-1].register_forward_hook(hook(kind)) for kind in KINDS]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            record = extract(model, tokenizer, SOURCE, TARGET, direction="es-en")
    finally:
        for handle in handles:
            handle.remove()
    return record, captured


@pytest.mark.slow
@pytest.mark.parametrize("name", ["vaswani", *ARCHITECTURES])
def test_each_step_is_the_models_own_computation(name, architecture_models):
    """In the last layer of each kind: one head's steps (every head's for cross-attention, whose shares must add up
    to the module's output: keys and values read from the encoder output, W_O's slices)."""
    model, tokenizer = architecture_models[name]
    record, module_outputs = _module_outputs(model, tokenizer)
    for kind in KINDS:
        layers, heads = head_counts(model)[kind]
        layer, query = layers - 1, record.attention(kind).shape[2] // 2
        settings = {"direction": "es-en", "target": TARGET, "kind": kind, "layer": layer, "query": query}
        chosen = range(heads) if kind == "cross" else [heads - 1]
        steps = {h: head_computation(model, tokenizer, SOURCE, head=h, **settings) for h in chosen}
        for h, step in steps.items():
            np.testing.assert_allclose(step.weights, record.attention(kind)[layer, h, query], atol=1e-5)
            np.testing.assert_allclose(step.scores, step.keys @ step.query, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(step.output, step.weights @ step.values, rtol=1e-5, atol=1e-6)
            queries = record.source_tokens if kind == "encoder" else record.target_tokens
            assert step.query_tokens == queries
        if kind == "cross":
            bias = projections(model, attention_modules(model)[kind][layer]).output.bias
            total = sum(step.head_output for step in steps.values()) + (0 if bias is None else bias.detach().numpy())
            np.testing.assert_allclose(total, module_outputs[kind][query], rtol=1e-4, atol=1e-5)
        step = steps[heads - 1]
        seen = np.arange(len(step.key_tokens)) <= query if kind == "decoder" else np.ones(len(step.key_tokens))
        np.testing.assert_array_equal(step.mask, seen.astype(bool))
        assert step.weights[~step.mask].sum() == 0
        if name == "t5":  # no 1/sqrt(d_k); positions enter the self-attention scores as a learned bias
            assert step.scale == 1.0
            assert (np.abs(step.bias).max() > 0) == (kind != "cross")
        else:
            assert step.scale == pytest.approx(len(step.query) ** -0.5) and not step.bias.any()
            # softmax(b z) gets more peaked as b grows: without the 1/sqrt(d_k) factor the entropy cannot rise
            unscaled = step.with_scale(1.0)
            assert unscaled.entropy <= step.entropy + 1e-6
            assert not np.allclose(unscaled.weights, step.weights) or np.ptp(step.scores[step.mask]) < 1e-6
            np.testing.assert_allclose(unscaled.with_scale(None).weights, step.weights, atol=1e-7)


@pytest.mark.slow
def test_the_models_own_translation_and_the_scale_argument(model, tokenizer):
    short = {"max_new_tokens": 4}  # (random weights: a short translation is as good a test)
    record = extract(model, tokenizer, SOURCE, direction="es-en", generate_kwargs=short)
    settings = {"direction": "es-en", "generate_kwargs": short, "kind": "cross", "layer": 0, "head": 0, "query": 0}
    step = head_computation(model, tokenizer, SOURCE, **settings)
    assert step.query_tokens == record.target_tokens and step.key_tokens == record.source_tokens
    np.testing.assert_allclose(step.weights, record.cross[0, 0, 0], atol=1e-5)
    doubled = head_computation(model, tokenizer, SOURCE, **settings, scale=2 * step.scale)
    np.testing.assert_allclose(doubled.weights, step.with_scale(2 * step.scale).weights, atol=1e-7)
    assert doubled.model_scale == step.scale and doubled.scale == 2 * step.scale
    entropy = -(step.weights * np.log(step.weights)).sum()
    assert step.entropy == pytest.approx(float(entropy), rel=1e-5)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"kind": "self"}, "encoder, decoder, cross"),
        ({"layer": 99}, r"layer must be from 0 to \d+ \(the model has \d+ encoder layers\)"),
        ({"head": -1}, r"head must be from 0 to \d+"),
        ({"query": 99}, r"query must be from 0 to \d+ \(the sentence has \d+ source positions\)"),
        ({"scale": 0.0}, "scale must be a positive number"),
    ],
)
def test_what_the_model_or_sentence_does_not_have_is_refused(arguments, message, model, tokenizer):
    settings = {"kind": "encoder", "layer": 0, "head": 0, "query": 0, **arguments}
    with pytest.raises(ValueError, match=message):
        head_computation(model, tokenizer, SOURCE, direction="es-en", target=TARGET, **settings)


def test_the_computation_leaves_no_hook_behind(model, tokenizer):
    modules = attention_modules(model)["decoder"]
    before = [len(module._forward_pre_hooks) for module in modules]
    head_computation(
        model, tokenizer, SOURCE, direction="es-en", target=TARGET, kind="decoder", layer=0, head=0, query=1
    )
    assert [len(module._forward_pre_hooks) for module in modules] == before
    assert not model.get_encoder()._forward_hooks
