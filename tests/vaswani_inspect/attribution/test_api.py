"""Reference tests of the attribution methods: each one against its definition written out by hand, on the tiny
model (in float64 where a tolerance matters), and the shape and words of every method's matrix."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vaswani_inspect import extract
from vaswani_inspect.alignment import alignment_matrix, source_words, target_words
from vaswani_inspect.attribution import (
    CONTRAST_METHODS,
    GRADIENT_METHODS,
    METHODS,
    SHARE_METHODS,
    Attribution,
    attribute,
    attribute_methods,
    attribution_links,
    embedding_attributions,
    foil_ids,
    method_options,
)
from vaswani_inspect.attribution.attention import value_norms
from vaswani_inspect.attribution.rollout import decoder_rollout
from vaswani_inspect.attribution.value_zeroing import value_zeroing_scores
from vaswani_inspect.testing import tiny_model


@pytest.fixture(scope="module")
def model64(tokenizer):
    return tiny_model(len(tokenizer), seed=3).double()


@pytest.fixture(scope="module")
def record64(model64, tokenizer):
    return extract(model64, tokenizer, "el gato negro duerme", "the black cat sleeps", direction="es-en")


def _ids(record):
    source = torch.tensor([record.source_ids])
    decoder = torch.tensor([record.target_ids[:-1]])
    return source, decoder, record.target_ids[1:]


def _log_probability(model, source_embeds, target_embeds, row, label):
    logits = model(inputs_embeds=source_embeds, decoder_inputs_embeds=target_embeds, use_cache=False).logits
    return torch.log_softmax(logits[0, row], dim=-1)[label]


@pytest.mark.parametrize("method", ["saliency", "input_x_gradient"])
def test_saliency_and_input_x_gradient_equal_a_hand_written_autograd_grad(model64, record64, method):
    found = embedding_attributions(model64, record64, method)
    source_ids, decoder_ids, labels = _ids(record64)
    for row, label in enumerate(labels):
        source = model64.get_encoder().embed_tokens(source_ids).detach().requires_grad_()
        target = model64.get_decoder().embed_tokens(decoder_ids).detach().requires_grad_()
        source_grad, target_grad = torch.autograd.grad(
            _log_probability(model64, source, target, row, label), [source, target]
        )
        if method == "input_x_gradient":
            source_grad, target_grad = source_grad * source, target_grad * target
        np.testing.assert_allclose(found.source[row], source_grad[0].detach().numpy(), rtol=1e-7, atol=1e-10)
        np.testing.assert_allclose(found.prefix[row], target_grad[0].detach().numpy(), rtol=1e-7, atol=1e-10)


def test_integrated_gradients_is_complete(model64, record64):
    """The sum of a row's attributions (source and prefix tokens, every dimension) is f(input) - f(baseline), f
    the log-probability of the row's target piece, the baseline all-zero embeddings."""
    found = embedding_attributions(model64, record64, "integrated_gradients", n_steps=64, batch_size=1024)
    source_ids, decoder_ids, labels = _ids(record64)
    source = model64.get_encoder().embed_tokens(source_ids).detach()
    target = model64.get_decoder().embed_tokens(decoder_ids).detach()
    with torch.no_grad():
        for row, label in enumerate(labels):
            gap = _log_probability(model64, source, target, row, label) - _log_probability(
                model64, torch.zeros_like(source), torch.zeros_like(target), row, label
            )
            total = found.source[row].sum() + found.prefix[row].sum()
            # Within the quadrature's error, and that error is the one reported.
            assert total == pytest.approx(float(gap), abs=0.02 * max(1.0, abs(float(gap))))
            assert found.completeness_error[row] == pytest.approx(total - float(gap), abs=1e-6)  # Captum: float32 steps


def test_integrated_gradients_batches_target_pieces_without_mixing_them(model64, record64):
    """Target pieces explained one per call or all in one call give the same attributions."""
    together = embedding_attributions(model64, record64, "integrated_gradients", n_steps=8, batch_size=4096)
    alone = embedding_attributions(model64, record64, "integrated_gradients", n_steps=8, batch_size=8)
    np.testing.assert_allclose(together.source, alone.source, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(together.prefix, alone.prefix, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("method", ["saliency", "integrated_gradients"])
def test_one_forward_per_point_gives_captums_own_gradients(model64, record64, method, monkeypatch):
    """The shared-point gradient function (one forward per interpolation point, one backward per piece) gives the
    attributions Captum's own gradient function gives (a forward and a backward of every batch row)."""
    from captum._utils.gradient import compute_gradients

    from vaswani_inspect.attribution import gradients

    shared = embedding_attributions(model64, record64, method, n_steps=6, batch_size=12)
    monkeypatch.setattr(gradients, "_SharedPointGradients", lambda pieces, forward: compute_gradients)
    captums = embedding_attributions(model64, record64, method, n_steps=6, batch_size=12)
    np.testing.assert_allclose(shared.source, captums.source, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(shared.prefix, captums.prefix, rtol=1e-9, atol=1e-12)


def test_rows_not_grouped_by_point_are_refused():
    from vaswani_inspect.attribution.gradients import _SharedPointGradients

    rows = torch.arange(12.0).reshape(6, 2)  # 3 points x 2 pieces, but no two rows of a point are equal
    with pytest.raises(RuntimeError, match="not grouped by point"):
        _SharedPointGradients(2, lambda x: x.sum(-1, keepdim=True).expand(-1, 2))(None, (rows,))


def test_bfloat16_attributions_are_close_to_float32(model, record):
    """bfloat16 autocast (the demo's setting) changes scores by a few percent and keeps the reading of links."""
    exact = attribute(model, None, record, method="integrated_gradients", n_steps=8)
    fast = attribute(model, None, record, method="integrated_gradients", n_steps=8, precision="bfloat16")
    assert fast.settings["precision"] == "bfloat16" and exact.settings["precision"] == "float32"
    scale = np.abs(exact.token_scores).max()
    assert np.abs(fast.token_scores - exact.token_scores).max() < 0.1 * scale
    assert not np.array_equal(fast.token_scores, exact.token_scores)  # autocast did run in bfloat16
    np.testing.assert_allclose(fast.matrix, exact.matrix, atol=0.1)


def test_value_zeroing_equals_its_brute_force_definition(model64, record64):
    source_ids, decoder_ids, _ = _ids(record64)
    decoder = model64.get_decoder()
    expected = np.zeros((decoder_ids.shape[1], source_ids.shape[1]))
    with torch.no_grad():
        encoded = model64.get_encoder()(input_ids=source_ids).last_hidden_state
        original = decoder(input_ids=decoder_ids, encoder_hidden_states=encoded, use_cache=False).last_hidden_state
        for token in range(source_ids.shape[1]):

            def zero_token(module, args, output, token=token):
                output = output.clone()
                output[:, token] = 0.0
                return output

            handles = [layer.cross_attn.v_proj.register_forward_hook(zero_token) for layer in decoder.layers]
            changed = decoder(input_ids=decoder_ids, encoder_hidden_states=encoded, use_cache=False).last_hidden_state
            for handle in handles:
                handle.remove()
            cosine = torch.nn.functional.cosine_similarity(original[0], changed[0], dim=-1)
            expected[:, token] = (1.0 - cosine).numpy()
    np.testing.assert_allclose(value_zeroing_scores(model64, record64, batch_size=3), expected, atol=1e-12)


def test_attention_norm_equals_a_hand_computation_from_the_value_and_output_projections(model64, record64):
    source_ids, _, _ = _ids(record64)
    norms = value_norms(model64, record64)
    with torch.no_grad():
        encoded = model64.get_encoder()(input_ids=source_ids).last_hidden_state[0]
        for layer_index, layer in enumerate(model64.get_decoder().layers):
            attention = layer.cross_attn
            size = attention.head_dim
            values = encoded @ attention.v_proj.weight.T + attention.v_proj.bias
            for head in range(attention.num_heads):
                block = slice(head * size, (head + 1) * size)
                transformed = values[:, block] @ attention.out_proj.weight[:, block].T
                np.testing.assert_allclose(norms[layer_index, head], transformed.norm(dim=-1).numpy(), rtol=1e-10)
    # The word-level matrix is the aligner's pooling of weight x norm.
    weighted = record64.cross * norms[:, :, None, :]
    rows = alignment_matrix(_with_cross(record64, weighted), "mean", "all", shift=False)
    found = attribute(model64, None, record64, method="attention_norm", layers="mean")
    np.testing.assert_allclose(found.matrix, rows, rtol=1e-5, atol=1e-7)


def _with_cross(record, cross):
    from dataclasses import replace

    return replace(record, cross=cross)


def test_rollout_rows_share_everything_between_source_and_prefix(record):
    source, prefix = decoder_rollout(record)
    rows = len(record.target_tokens) - 1
    assert source.shape == (rows, len(record.source_tokens)) and prefix.shape == (rows, rows)
    # The prefix part of row t reaches decoder inputs 0..t only; [P, Q] rows sum to 1.
    assert np.allclose(np.triu(prefix, 1), 0.0)
    np.testing.assert_allclose(source.sum(-1) + prefix.sum(-1), 1.0, atol=1e-9)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_gives_the_alignment_matrix_words(model, tokenizer, record, method):
    found = attribute(model, tokenizer, record, method=method, **({"n_steps": 4} if "integrated" in method else {}))
    assert isinstance(found, Attribution) and found.method == method and found.record is record
    assert found.matrix.shape == alignment_matrix(record).shape
    assert found.source_words == source_words(record) and found.target_words == target_words(record)
    sums = found.matrix.sum(-1)
    assert np.all(np.isclose(sums, 1.0) | np.isclose(sums, 0.0)) and np.all(found.matrix >= 0)
    if method in SHARE_METHODS:
        shares = found.source_share[~np.isnan(found.source_share)]
        assert shares.size and np.all((shares >= 0) & (shares <= 1))
    else:
        assert found.source_share is None
    links = found.links()
    assert links == attribution_links(found.matrix) and {t for _, t in links} <= set(range(len(found.target_words)))
    assert found.to_dict()["method"] == method


@pytest.fixture(scope="module")
def glued_record():
    """The shipped model's record of "el perro" -> "the dog.", whose last piece "▁dog." holds the word "."."""
    from vaswani_inspect import load_model_and_tokenizer

    model, tokenizer = load_model_and_tokenizer()
    return model, tokenizer, extract(model, tokenizer, "el perro", "the dog.", direction="es-en")


@pytest.mark.parametrize("method", METHODS)
def test_a_punctuation_mark_glued_into_a_piece_gets_that_pieces_row(glued_record, method):
    """The target "." has no piece of its own: its row is the row of the piece it is in (that prediction wrote
    it), so it sums to 1 as every other row, in every method."""
    model, tokenizer, record = glued_record
    assert record.target_tokens[-2] == "▁dog."
    found = attribute(model, tokenizer, record, method=method, **({"n_steps": 4} if "integrated" in method else {}))
    assert found.target_words == ["the", "dog", "."]
    np.testing.assert_allclose(found.matrix.sum(-1), 1.0)
    np.testing.assert_allclose(found.matrix[-1], found.matrix[-2])


def test_attention_method_is_the_models_aligner(model, tokenizer, record):
    np.testing.assert_array_equal(attribute(model, tokenizer, record).matrix, alignment_matrix(record))


def test_a_source_text_is_extracted_first(model, tokenizer, record):
    from_text = attribute(model, tokenizer, "el gato negro", "the black cat", direction="es-en", method="saliency")
    np.testing.assert_allclose(from_text.matrix, attribute(model, tokenizer, record, method="saliency").matrix)


def test_several_methods_on_one_record(model, tokenizer, record):
    found = attribute_methods(model, tokenizer, record, methods=["rollout", "attention"])
    assert list(found) == ["rollout", "attention"]


def test_bad_calls_are_refused(model, tokenizer, record):
    with pytest.raises(ValueError, match="Unknown attribution method"):
        attribute(model, tokenizer, record, method="lime")
    with pytest.raises(TypeError, match="takes no option n_steps"):
        attribute(model, tokenizer, record, method="saliency", n_steps=3)
    with pytest.raises(ValueError, match="pass no target"):
        attribute(model, tokenizer, record, "the cat")
    assert method_options("integrated_gradients") == {
        "n_steps": 50,
        "batch_size": 512,
        "precision": "float32",
        "contrast": None,
    }
    with pytest.raises(ValueError, match="precision must be one of float32, bfloat16"):
        attribute(model, tokenizer, record, method="saliency", precision="float16")


FOIL = "the black mouse"  # "▁mouse" for "▁cat" of the record's "the black cat": as many pieces, one different


@pytest.mark.slow
def test_a_contrast_is_the_targets_attribution_minus_the_foils(model, tokenizer, record):
    """Input x gradient is linear in the function explained: the attribution of log p(target) - log p(foil) is
    the target's minus the foil piece's (read after the target's prefix), row by row, and zero where the two
    pieces agree."""
    method = "input_x_gradient"
    foil = foil_ids(model, tokenizer, record, FOIL)
    pieces = foil[1:]
    contrasted = embedding_attributions(model, record, method, contrast=pieces)
    target = embedding_attributions(model, record, method)
    of_foil = embedding_attributions(model, record, method, labels=pieces)
    np.testing.assert_allclose(contrasted.source, target.source - of_foil.source, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(contrasted.prefix, target.prefix - of_foil.prefix, rtol=1e-5, atol=1e-7)
    differ = np.asarray(record.target_ids[1:]) != np.asarray(pieces)
    assert differ.sum() == 1 and np.abs(contrasted.source[differ]).max() > 0
    assert not contrasted.source[~differ].any()
    explained = attribute(model, tokenizer, record, method=method, contrast=FOIL)
    np.testing.assert_allclose(explained.token_scores, np.linalg.norm(contrasted.source, axis=-1), rtol=1e-5)
    assert explained.details["contrast_rows"] == np.flatnonzero(differ).tolist()


def test_a_contrast_is_refused_when_it_cannot_be_computed(model, tokenizer, record):
    with pytest.raises(ValueError, match="nothing to contrast"):
        attribute(model, tokenizer, record, method="saliency", contrast=record.target_text)
    with pytest.raises(ValueError, match="as many pieces as the target"):
        attribute(model, tokenizer, record, method="saliency", contrast="the cat")
    for method in sorted(set(METHODS) - set(CONTRAST_METHODS)):
        with pytest.raises(ValueError, match="Methods that take contrast=: " + ", ".join(CONTRAST_METHODS)):
            attribute(model, tokenizer, record, method=method, contrast="the black mouse")
    assert set(CONTRAST_METHODS) == set(GRADIENT_METHODS)
