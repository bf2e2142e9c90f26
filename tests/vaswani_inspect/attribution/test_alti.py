"""ALTI+ ("alti_plus") against its definition: a one-layer model's contributions by brute force (one loop per
output, input and head, straight from the papers' formulas, the attention weights recomputed from the queries
and keys), the exactness of every block's decomposition on our model (post- and pre-LN) and on every tiny
architecture, and source shares that vary, unlike rollout's constant."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from vaswani_inspect import extract
from vaswani_inspect.architectures import UnsupportedModelError, attention_modules
from vaswani_inspect.attribution import METHODS, SHARE_METHODS, attribute, pool_rows
from vaswani_inspect.attribution.alti import alti_contributions, alti_plus_scores, manhattan_contributions
from vaswani_inspect.testing import tiny_model

PRE_NORM = {"marian": False, "bart": False, "m2m100": True, "mbart": True, "t5": True}


@pytest.fixture(scope="module")
def one_layer(tokenizer):
    return tiny_model(len(tokenizer), seed=5, encoder_layers=1, decoder_layers=1).double()


@pytest.fixture(scope="module")
def one_layer_record(one_layer, tokenizer):
    return extract(one_layer, tokenizer, "el gato negro duerme", "the black cat sleeps", direction="es-en")


def _inputs_of(model, record):
    """The hidden states entering encoder layer 0, decoder layer 0, and decoder layer 0's cross-attention, and the
    outputs of the three attention blocks (the inputs of what follows each), from hooks of their own."""
    seen = {}
    encoder_layer, decoder_layer = model.get_encoder().layers[0], model.get_decoder().layers[0]

    def keep(name):
        def hook(module, args, kwargs):
            seen[name] = (args[0] if args else kwargs["hidden_states"])[0].detach()

        return hook

    hooks = [
        encoder_layer.register_forward_pre_hook(keep("encoder_in"), with_kwargs=True),
        encoder_layer.ffn.register_forward_pre_hook(keep("encoder_block"), with_kwargs=True),
        decoder_layer.register_forward_pre_hook(keep("decoder_in"), with_kwargs=True),
        decoder_layer.cross_attn.register_forward_pre_hook(keep("self_block"), with_kwargs=True),
        decoder_layer.ffn.register_forward_pre_hook(keep("cross_block"), with_kwargs=True),
    ]
    try:
        with torch.no_grad():
            out = model(
                input_ids=torch.tensor([record.source_ids]), decoder_input_ids=torch.tensor([record.target_ids[:-1]])
            )
    finally:
        for hook in hooks:
            hook.remove()
    return seen, out.encoder_last_hidden_state[0].detach()


def _brute_force(attention, norm, queries, keys, *, causal, cross):
    """(contributions (queries, inputs), the block's output) of one post-LN attention block, term by term."""
    heads, size = attention.num_heads, attention.head_dim
    wq, wk, wv, wo = (
        m.weight.detach() for m in (attention.q_proj, attention.k_proj, attention.v_proj, attention.out_proj)
    )
    bq, bk, bv, bo = (
        m.bias.detach() for m in (attention.q_proj, attention.k_proj, attention.v_proj, attention.out_proj)
    )
    gamma, beta, eps = norm.weight.detach(), norm.bias.detach(), norm.eps
    contributions, outputs = [], []
    for i in range(len(queries)):
        vectors = [torch.zeros(queries.shape[1], dtype=torch.float64) for _ in range(len(keys))]
        for h in range(heads):
            rows = slice(h * size, (h + 1) * size)
            query = wq[rows] @ queries[i] + bq[rows]
            scores = torch.stack([(wk[rows] @ key + bk[rows]) @ query for key in keys]) * size**-0.5
            if causal:
                scores[i + 1 :] = -torch.inf
            alpha = torch.softmax(scores, dim=0)
            for j, key in enumerate(keys):
                vectors[j] = vectors[j] + alpha[j] * (wo[:, rows] @ (wv[rows] @ key + bv[rows]))
        if cross:
            vectors.append(queries[i].clone())  # the residual: the decoder state, an input of its own
        else:
            vectors[i] = vectors[i] + queries[i]
        normalised = sum(vectors) + bo  # what the layer norm reads
        scale = torch.sqrt(normalised.var(unbiased=False) + eps)
        transformed = [(v - v.mean()) / scale * gamma for v in vectors]
        y = sum(transformed)
        raw = [max(0.0, float(y.abs().sum() - (y - t).abs().sum())) for t in transformed]
        contributions.append([r / sum(raw) for r in raw])
        outputs.append(y + (bo - bo.mean()) / scale * gamma + beta)
    return np.array(contributions), torch.stack(outputs)


def test_one_layer_contributions_equal_the_definition_by_brute_force(one_layer, one_layer_record):
    seen, encoded = _inputs_of(one_layer, one_layer_record)
    encoder_layer, decoder_layer = one_layer.get_encoder().layers[0], one_layer.get_decoder().layers[0]
    expected = {
        "encoder": _brute_force(
            encoder_layer.self_attn,
            encoder_layer.self_attn_layer_norm,
            seen["encoder_in"],
            seen["encoder_in"],
            causal=False,
            cross=False,
        ),
        "decoder": _brute_force(
            decoder_layer.self_attn,
            decoder_layer.self_attn_layer_norm,
            seen["decoder_in"],
            seen["decoder_in"],
            causal=True,
            cross=False,
        ),
        "cross": _brute_force(
            decoder_layer.cross_attn,
            decoder_layer.cross_attn_layer_norm,
            seen["self_block"],
            encoded,
            causal=False,
            cross=True,
        ),
    }
    # The brute-force outputs are the model's own block outputs: the decomposition is exact.
    for name, block in (("encoder", "encoder_block"), ("decoder", "self_block"), ("cross", "cross_block")):
        np.testing.assert_allclose(expected[name][1].numpy(), seen[block].numpy(), rtol=1e-9, atol=1e-10)
    found = alti_contributions(one_layer, one_layer_record)
    for kind in ("encoder", "decoder", "cross"):
        np.testing.assert_allclose(found[kind][0].numpy(), expected[kind][0], rtol=1e-9, atol=1e-12)
    # ALTI+ with one layer: Q = C_src C_enc, P = c_res C_self.
    source, prefix = alti_plus_scores(one_layer, one_layer_record)
    cross = expected["cross"][0]
    np.testing.assert_allclose(source, cross[:, :-1] @ expected["encoder"][0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(prefix, cross[:, -1:] * expected["decoder"][0], rtol=1e-9, atol=1e-12)


def test_layers_compose_as_matrix_products(tokenizer):
    model = tiny_model(len(tokenizer), seed=6, encoder_layers=3, decoder_layers=2).double()
    record = extract(model, tokenizer, "la casa roja", "the red house", direction="es-en")
    found = alti_contributions(model, record)
    encoder = np.eye(len(record.source_ids))
    for layer in found["encoder"]:  # the first layer acts first
        encoder = layer.numpy() @ encoder
    rows = len(record.target_ids) - 1
    state = np.hstack([np.eye(rows), np.zeros((rows, encoder.shape[0]))])  # [P, Q]
    for self_attention, cross in zip(found["decoder"], found["cross"]):
        state = self_attention.numpy() @ state
        cross = cross.numpy()
        state = cross[:, -1:] * state + np.hstack([np.zeros((rows, rows)), cross[:, :-1] @ encoder])
    source, prefix = alti_plus_scores(model, record)
    np.testing.assert_allclose(prefix, state[:, :rows], atol=1e-12)
    np.testing.assert_allclose(source, state[:, rows:], atol=1e-12)
    np.testing.assert_allclose(source.sum(-1) + prefix.sum(-1), 1.0, atol=1e-9)
    assert np.allclose(np.triu(prefix, 1), 0.0)  # row t reaches decoder inputs 0..t only


def test_manhattan_contributions_are_alti_s_measure():
    vectors = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [-3.0, 0.0]]], dtype=torch.float64)
    # y = (-2, 1), ||y|| = 3; distances 4, 2, 2: raw 0 (clipped from -1), 1, 1.
    np.testing.assert_allclose(manhattan_contributions(vectors).numpy(), [[0.0, 0.5, 0.5]])


@pytest.mark.parametrize("position", ["post", "pre"])
def test_every_block_sums_to_the_models_own_output(tokenizer, position):
    model = tiny_model(len(tokenizer), seed=2, layer_norm_position=position)
    record = extract(model, tokenizer, "el perro blanco", "the white dog", direction="es-en")
    blocks = alti_contributions(model, record)["blocks"]
    assert len(blocks) == 2 + 2 + 2 and all(block.pre_norm == (position == "pre") for block in blocks)
    for block in blocks:
        total = block.vectors.sum(dim=1) + block.bias
        assert float((total - block.output).norm() / block.output.norm()) < 1e-5
    if position == "pre":  # a pre-LN block's output is x + attention: what the next layer norm reads
        seen = {}
        norm = model.get_encoder().layers[0].ffn_layer_norm
        hook = norm.register_forward_pre_hook(lambda module, args: seen.setdefault("x", args[0][0].detach()))
        with torch.no_grad():
            model(input_ids=torch.tensor([record.source_ids]), decoder_input_ids=torch.tensor([record.target_ids]))
        hook.remove()
        np.testing.assert_allclose(blocks[0].output.numpy(), seen["x"].double().numpy(), rtol=1e-5, atol=1e-6)


def test_a_block_that_cannot_be_written_out_is_refused(model, record):
    cross = attention_modules(model)["cross"][0]
    cross.head_mask = torch.tensor([1.0, 0.0, 1.0, 1.0])  # changes the output, not the weights
    try:
        with pytest.raises(UnsupportedModelError, match="differs from the module's output"):
            attribute(model, None, record, method="alti_plus")
    finally:
        cross.head_mask = None


def test_alti_plus_is_a_share_method(model, tokenizer, record):
    assert "alti_plus" in METHODS and "alti_plus" in SHARE_METHODS
    found = attribute(model, tokenizer, record, method="alti_plus")
    source, prefix = alti_plus_scores(model, record)
    np.testing.assert_allclose(found.token_scores, source)
    shares = source.sum(-1)  # rows of [P, Q] sum to 1: the share is the source's total
    np.testing.assert_allclose(found.source_share, pool_rows(shares, record))


@pytest.mark.parametrize("name", sorted(PRE_NORM))
def test_alti_plus_on_every_architecture(name, tiny_architecture_folders):
    folder = tiny_architecture_folders[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForSeq2SeqLM.from_pretrained(folder, attn_implementation="eager").eval()
        tokenizer = AutoTokenizer.from_pretrained(folder)
        record = extract(model, tokenizer, "El gato se comió el ratón.", "The cat ate the mouse.", direction="es-en")
    blocks = alti_contributions(model, record)["blocks"]
    assert {block.pre_norm for block in blocks} == {PRE_NORM[name]}
    for block in blocks:
        total = block.vectors.sum(dim=1) + block.bias
        assert float((total - block.output).norm() / block.output.norm()) < 1e-5
    found = attribute(model, tokenizer, record, method="alti_plus")
    shares = found.source_share[~np.isnan(found.source_share)]
    assert shares.size and np.all((shares > 0) & (shares < 1))
    np.testing.assert_allclose(found.token_scores.sum(-1) + found.prefix_scores.sum(-1), 1.0, atol=1e-9)


def test_the_shipped_models_source_share_varies():
    from vaswani_inspect.extract import load_model_and_tokenizer

    model, tokenizer = load_model_and_tokenizer(None)
    pairs = (
        ("El gato negro.", "The black cat."),
        (
            "El banco cerró mis cuentas porque no pagué la hipoteca.",
            "The bank closed my accounts because I didn't pay.",
        ),
        ("Tengo un gato.", "I have a cat."),
    )
    shares = [  # teacher-forced: no generation
        attribute(model, tokenizer, source, target, direction="es-en", method="alti_plus").source_share
        for source, target in pairs
    ]
    for share in shares:
        assert np.nanmax(share) - np.nanmin(share) > 0.03  # not one value for every word
        assert not np.allclose(share, 0.875)  # rollout's constant, 1 - 0.5 ** 3
    means = [float(np.nanmean(share)) for share in shares]
    assert max(means) - min(means) > 0.02  # nor one value for every sentence
