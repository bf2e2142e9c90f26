"""`vaswani_inspect.ablation`: switching heads off is exact (nothing off: the same bits; a head off: the same as a
model whose output projection ignores that head; every head off: the projection's bias), works in `generate` with
the cache and beam search on both attention paths, is restored, and refuses what the model does not have."""

from __future__ import annotations

import copy

import pytest
import torch

from vaswani_inspect.ablation import (
    Head,
    ablate_heads,
    attention_modules,
    check_heads,
    gradient_masks,
    head_counts,
    heads_of,
    list_heads,
)

IMPLEMENTATIONS = ("eager", "sdpa")
#: Heads of all three kinds, several in one layer; tiny_config has 2 encoder layers of 4 heads, 3 decoder of 2.
SOME_HEADS = {"encoder": {0: [1, 3]}, "decoder": {2: [0]}, "cross": {1: [1], 2: "all"}}


def _decoder_inputs(source_batch):
    input_ids, attention_mask = source_batch
    decoder_input_ids = torch.tensor([[1, 7, 8, 9, 10], [1, 11, 12, 13, 2]])
    return dict(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids)


def _logits(model, inputs) -> torch.Tensor:
    with torch.no_grad():
        return model(**inputs).logits


def _without_heads(model, spec):
    """A copy of `model` whose output projections give the chosen heads' columns zero weight: the reference for
    what switching those heads off must do."""
    copied = copy.deepcopy(model)
    modules = attention_modules(copied)
    for kind, layers in check_heads(copied, spec).items():
        for layer, heads in layers.items():
            module = modules[kind][layer]
            with torch.no_grad():
                for head in heads:
                    module.out_proj.weight[:, head * module.head_dim : (head + 1) * module.head_dim] = 0.0
    return copied


def _hooks(model) -> int:
    """How many hooks sit on the output projections (ablation adds one per ablated layer, and removes it)."""
    return sum(len(m.out_proj._forward_pre_hooks) for group in attention_modules(model).values() for m in group)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_no_head_off_gives_the_same_bits(tiny_model, source_batch, implementation):
    tiny_model.set_attn_implementation(implementation)
    inputs = _decoder_inputs(source_batch)
    plain = _logits(tiny_model, inputs)
    with ablate_heads(tiny_model, {}):
        assert _hooks(tiny_model) == 0
        assert torch.equal(_logits(tiny_model, inputs), plain)
    with ablate_heads(tiny_model, {"cross": {0: []}}):
        assert torch.equal(_logits(tiny_model, inputs), plain)
    # The model's own head_mask of ones in every module changes no bit either.
    for module in [m for group in attention_modules(tiny_model).values() for m in group]:
        module.head_mask = torch.ones(module.num_heads)
    try:
        assert torch.equal(_logits(tiny_model, inputs), plain)
    finally:
        for module in [m for group in attention_modules(tiny_model).values() for m in group]:
            module.head_mask = None


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_head_off_is_its_output_projection_columns_zeroed(tiny_model, source_batch, implementation):
    tiny_model.set_attn_implementation(implementation)
    inputs = _decoder_inputs(source_batch)
    plain = _logits(tiny_model, inputs)
    reference = _without_heads(tiny_model, SOME_HEADS)
    with ablate_heads(tiny_model, SOME_HEADS) as spec:
        ablated = _logits(tiny_model, inputs)
    assert spec == {"encoder": {0: [1, 3]}, "decoder": {2: [0]}, "cross": {1: [1], 2: [0, 1]}}
    torch.testing.assert_close(ablated, _logits(reference, inputs), rtol=1e-5, atol=1e-5)
    assert not torch.allclose(ablated, plain, atol=1e-3)
    assert _hooks(tiny_model) == 0  # removed
    assert torch.equal(_logits(tiny_model, inputs), plain)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("num_beams", [1, 3])
def test_generate_with_heads_off(tiny_model, source_batch, implementation, num_beams):
    tiny_model.set_attn_implementation(implementation)
    input_ids, attention_mask = source_batch
    settings = dict(num_beams=num_beams, max_new_tokens=8, min_new_tokens=8, do_sample=False)
    settings.update(return_dict_in_generate=True, output_scores=True)
    spec = {"decoder": {0: [1]}, "cross": {1: "all"}, "encoder": {1: [0, 2]}}
    reference = _without_heads(tiny_model, spec)
    with torch.no_grad():
        plain = tiny_model.generate(input_ids, attention_mask=attention_mask, **settings)
        expected = reference.generate(input_ids, attention_mask=attention_mask, **settings)
        with ablate_heads(tiny_model, spec):
            cached = tiny_model.generate(input_ids, attention_mask=attention_mask, use_cache=True, **settings)
            uncached = tiny_model.generate(input_ids, attention_mask=attention_mask, use_cache=False, **settings)
    assert torch.equal(cached.sequences, expected.sequences)
    assert torch.equal(cached.sequences, uncached.sequences)
    for step, (ours, theirs) in enumerate(zip(cached.scores, expected.scores)):
        finite = torch.isfinite(theirs)
        assert torch.equal(torch.isfinite(ours), finite), step
        torch.testing.assert_close(ours[finite], theirs[finite], rtol=1e-4, atol=1e-4)
    # The ablation changes what is generated (scores at least), so the test can fail.
    assert not all(torch.allclose(a, b) for a, b in zip(plain.scores, cached.scores))


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_every_head_off_leaves_the_output_projection_bias(tiny_model, source_batch, implementation, kind):
    tiny_model.set_attn_implementation(implementation)
    module = attention_modules(tiny_model)[kind][1]
    with torch.no_grad():
        module.out_proj.bias.normal_()  # the bias is initialised at 0: make it tell
    outputs = []
    handle = module.register_forward_hook(lambda _, __, output: outputs.append(output[0]))
    try:
        with ablate_heads(tiny_model, {kind: {1: "all"}}):
            _logits(tiny_model, _decoder_inputs(source_batch))
    finally:
        handle.remove()
    (output,) = outputs
    assert torch.equal(output, module.out_proj.bias.expand_as(output))


def test_masks_are_restored_after_an_error_and_nest(tiny_model, source_batch):
    inputs = _decoder_inputs(source_batch)
    plain = _logits(tiny_model, inputs)
    with pytest.raises(RuntimeError, match="boom"):
        with ablate_heads(tiny_model, {"cross": {0: [0]}}):
            raise RuntimeError("boom")
    assert _hooks(tiny_model) == 0
    with ablate_heads(tiny_model, {"cross": {0: [0]}}):
        outer = _logits(tiny_model, inputs)
        with ablate_heads(tiny_model, {"cross": {0: [1]}}):
            both = _logits(tiny_model, inputs)
            assert _hooks(tiny_model) == 2  # the outer and the inner ablation: their factors multiply
        assert torch.equal(_logits(tiny_model, inputs), outer)
    with ablate_heads(tiny_model, {"cross": {0: [0, 1]}}):
        assert torch.equal(_logits(tiny_model, inputs), both)
    assert torch.equal(_logits(tiny_model, inputs), plain)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"self": {0: [0]}}, "Unknown attention kind 'self'"),
        ({"cross": {3: [0]}}, "cross layer 3 does not exist: there are 3"),
        ({"cross": {-1: [0]}}, "cross layer -1 does not exist"),
        ({"encoder": {0: [4]}}, "encoder layer 0 head 4 does not exist: there are 4"),
        ({"decoder": {0: [True]}}, "must be a whole number"),
        ({"decoder": {"0": [0]}}, "decoder layer must be a whole number"),
        ({"decoder": {0: "some"}}, "must be a list or 'all'"),
        ({"decoder": [0, 1]}, "must be a mapping"),
    ],
)
def test_bad_specs_are_refused_before_anything_changes(tiny_model, spec, message):
    with pytest.raises(ValueError, match=message):
        with ablate_heads(tiny_model, spec):
            pass
    assert _hooks(tiny_model) == 0


def test_heads_are_listed_and_specs_read_from_heads(tiny_model):
    assert head_counts(tiny_model) == {"encoder": (2, 4), "decoder": (3, 2), "cross": (3, 2)}
    heads = list_heads(tiny_model)
    assert len(heads) == 2 * 4 + 3 * 2 * 2 and heads[0] == Head("encoder", 0, 0)
    spec = check_heads(tiny_model, [("cross", 2, 1), Head("cross", 2, 0), ("encoder", 1, 3)])
    assert spec == {"cross": {2: [0, 1]}, "encoder": {1: [3]}}
    assert heads_of(spec) == [Head("cross", 2, 0), Head("cross", 2, 1), Head("encoder", 1, 3)]
    assert Head("cross", 2, 0).label() == "cross L2 H0"
    with pytest.raises(TypeError, match="not an encoder-decoder model"):
        attention_modules(torch.nn.Linear(2, 2))


def test_gradient_masks_give_the_derivative_of_the_loss(tiny_model, source_batch):
    model = tiny_model.double()
    inputs = _decoder_inputs(source_batch)
    labels = torch.tensor([[7, 8, 9, 10, 2], [11, 12, 13, 2, -100]])

    def loss() -> torch.Tensor:
        logits = model(**inputs).logits
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="sum")

    with gradient_masks(model) as masks:
        loss().backward()
    assert {kind: tuple(mask.shape) for kind, mask in masks.items()} == {
        "encoder": (2, 4),
        "decoder": (3, 2),
        "cross": (3, 2),
    }
    assert _hooks(model) == 0
    module = attention_modules(model)["cross"][1]
    step = 1e-6
    with torch.no_grad():
        values = []
        for factor in (1 + step, 1 - step):
            module.head_mask = torch.tensor([1.0, factor], dtype=torch.float64)
            values.append(loss())
        module.head_mask = None
    numeric = (values[0] - values[1]) / (2 * step)
    torch.testing.assert_close(masks["cross"].grad[1, 1].double(), numeric, rtol=1e-4, atol=1e-6)
    assert masks["cross"].grad.abs().sum() > 0 and masks["encoder"].grad.abs().sum() > 0
