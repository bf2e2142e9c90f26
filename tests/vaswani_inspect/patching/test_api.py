"""patch_activations (vaswani_inspect/patching/api.py) against its definition: a cell's effect is what a hand-written
hook that makes the same patch gives through the model's own forward; the last decoder layer's position effects add
up to 1 (each position's output reaches only its own prediction); attribution patching is the first-order term, with
the gradient computed here independently; every architecture runs every site."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from tests.vaswani_inspect.patching.hand_hooks import CLEAN, CORRUPTED, captured, log_prob
from vaswani_inspect import extract, patch_activations
from vaswani_inspect.patching import SITES


def test_cells_equal_a_hand_written_patch(model, tokenizer, exhaustive):
    r = exhaustive
    clean, corrupted, target = r.source_ids, r.corrupted_ids, r.target_ids
    base = log_prob(model, corrupted, target)
    top = log_prob(model, clean, target)
    assert r.clean_metric == pytest.approx(top, abs=1e-4) and r.corrupted_metric == pytest.approx(base, abs=1e-4)
    encoder, decoder = model.get_encoder().layers, model.get_decoder().layers
    size = model.config.d_model // model.config.encoder_attention_heads
    cells = [
        ("encoder", encoder[0], False, (0, 2)),
        ("decoder", decoder[1], False, (1, 3)),
        ("cross_heads", decoder[1].cross_attn.out_proj, True, (1, 2)),
        ("encoder_heads", encoder[0].self_attn.out_proj, True, (0, 1)),
    ]
    for site, module, pre, (layer, index) in cells:
        saved = captured(model, clean, target, module, pre)
        if pre:
            columns = slice(index * size, (index + 1) * size)

            def hook(module, args, saved=saved, columns=columns):
                patched = args[0].clone()
                patched[..., columns] = saved[..., columns]
                return (patched,)
        else:

            def hook(module, args, output, saved=saved, index=index):
                patched = output.clone()
                patched[:, index] = saved[:, index]
                return patched

        patched = log_prob(model, corrupted, target, module, hook, pre)
        expected = (patched - base) / (top - base)
        assert r.effects[site][layer, index] == pytest.approx(expected, abs=1e-5), site


def test_the_last_decoder_layer_adds_up_to_the_whole_difference(exhaustive):
    last = exhaustive.effects["decoder"][-1]
    assert last.sum() == pytest.approx(1.0, abs=1e-4)
    assert last[-1] == pytest.approx(0.0, abs=1e-6)  # the input after the last token predicts nothing the metric reads


def test_attribution_is_the_first_order_term(model, attribution):
    r = attribution
    clean, corrupted, target = r.source_ids, r.corrupted_ids, r.target_ids
    difference = r.clean_metric - r.corrupted_metric
    for site, module, pre, (layer, index) in [
        ("encoder", model.get_encoder().layers[1], False, (1, 2)),
        ("cross_heads", model.get_decoder().layers[0].cross_attn.out_proj, True, (0, 3)),
    ]:
        saved = captured(model, clean, target, module, pre)
        leaf = {}

        def hook(module, *args, pre=pre, leaf=leaf):
            value = (args[0][0] if pre else args[1]).detach().requires_grad_(True)
            leaf["value"] = value
            return (value,) if pre else value

        handle = (module.register_forward_pre_hook if pre else module.register_forward_hook)(hook)
        try:
            logits = model(input_ids=torch.tensor([corrupted]), decoder_input_ids=torch.tensor([target])).logits
        finally:
            handle.remove()
        log_probs = torch.log_softmax(logits[0, :-1], -1)
        (gradient,) = torch.autograd.grad(log_probs.gather(-1, torch.tensor(target[1:])[:, None]).sum(), leaf["value"])
        change = (saved - leaf["value"].detach()) * gradient
        if pre:
            size = change.shape[-1] // model.config.decoder_attention_heads
            expected = change[..., index * size : (index + 1) * size].sum()
        else:
            expected = change[0, index].sum()
        assert r.effects[site][layer, index] == pytest.approx(float(expected) / difference, abs=1e-5), site
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.parametrize(
    ("options", "message"),
    [({"sites": ["nowhere"]}, "Unknown patching site"), ({"method": "guess"}, "Unknown patching method")],
)
def test_unknown_sites_and_methods_are_refused(model, tokenizer, options, message):
    with pytest.raises(ValueError, match=message):
        patch_activations(model, tokenizer, CLEAN, CORRUPTED, direction="es-en", **options)


def test_the_default_target_is_the_translation_and_progress_counts_up(model, tokenizer):
    calls = []
    record = lambda done, total: calls.append((done, total))  # noqa: E731
    result = patch_activations(
        model, tokenizer, CLEAN, CORRUPTED, direction="es-en", sites=["cross_heads"], progress=record, batch_size=3
    )
    total = model.config.decoder_layers * model.config.decoder_attention_heads
    assert calls[0] == (0, total) and calls[-1] == (total, total)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert result.target_ids == extract(model, tokenizer, CLEAN, direction="es-en").target_ids


@pytest.mark.slow
def test_every_architecture_runs_every_site(tiny_architecture_folders):
    clean, corrupted = "El gato se comió el ratón.", "El perro se comió el ratón."
    for name, folder in tiny_architecture_folders.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
            tokenizer = AutoTokenizer.from_pretrained(folder)
        for method in ("exhaustive", "attribution"):
            result = patch_activations(
                model, tokenizer, clean, corrupted, direction="es-en", target="The cat ate the mouse.", method=method
            )
            assert result.sites == SITES and len(result.source_tokens) == result.effects["encoder"].shape[1], name
            assert all(np.isfinite(values).all() for values in result.effects.values()), (name, method)
            if method == "exhaustive":  # in log-probability units: a random model's sources differ by little
                restored = result.effects["decoder"][-1].sum() * (result.clean_metric - result.corrupted_metric)
                difference = result.clean_metric - result.corrupted_metric
                assert restored == pytest.approx(difference, abs=1e-5 * abs(result.clean_metric)), name
