"""Where patching reads and writes (vaswani_inspect/patching/sites.py): a layer site is the layer's output, a head
site the output projection's input split per head, and a hook that returns nothing leaves the run unchanged."""

from __future__ import annotations

import torch

from tests.vaswani_inspect.patching.hand_hooks import CLEAN
from vaswani_inspect.patching.sites import capture, find_sites, hooked


def _run(model, tokenizer):
    ids = tokenizer(">>en<< " + CLEAN, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        return model(input_ids=ids, decoder_input_ids=ids[:, :2], output_hidden_states=True)


def test_captured_activations_are_the_layer_outputs_and_the_heads_inputs(model, tokenizer):
    sites = find_sites(model, ["encoder", "cross_heads"])
    layers, heads, seen = {}, {}, {}
    projection = sites["cross_heads"].modules[0]

    def read(module, args):
        seen["input"] = args[0][0].clone()

    handle = projection.register_forward_pre_hook(read)
    try:
        with capture(sites["encoder"], layers), capture(sites["cross_heads"], heads):
            outputs = _run(model, tokenizer)
    finally:
        handle.remove()
    for layer, value in layers.items():
        assert torch.equal(value, outputs.encoder_hidden_states[layer + 1][0])
    count, size = sites["cross_heads"].heads
    assert heads[0].shape[-2:] == (count, size)
    assert torch.equal(heads[0].flatten(-2), seen["input"])


def test_a_hook_that_returns_nothing_changes_nothing_and_leaves_no_hook(model, tokenizer):
    site = find_sites(model, ["decoder"])["decoder"]
    hooks = [len(module._forward_hooks) for module in site.modules]
    before = _run(model, tokenizer).logits
    with hooked(site, lambda layer, activation: None):
        unchanged = _run(model, tokenizer).logits
    with hooked(site, lambda layer, activation: torch.zeros_like(activation)):
        zeroed = _run(model, tokenizer).logits
    assert torch.equal(before, unchanged) and not torch.allclose(before, zeroed)
    assert [len(module._forward_hooks) for module in site.modules] == hooks
