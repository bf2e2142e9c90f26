"""Agreement with head ablation against its definition written out by hand on the tiny model: each head's drop
from a plain forward under `ablate_heads`, the view as the drop-weighted mean of the heads' pooled rows, and the
agreement scores at their extremes."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from vaswani_inspect import extract
from vaswani_inspect.ablation import Head, ablate_heads
from vaswani_inspect.alignment.links import word_lists
from vaswani_inspect.attribution import attribute, pool_to_words
from vaswani_inspect.attribution.ablation_agreement import ablation_agreement, ablation_view
from vaswani_inspect.words import to_words


@pytest.fixture(scope="module")
def view(model, record):
    return ablation_view(model, record)


def _word_log_probabilities_by_hand(model, record):
    """log p of each target word (sum over its pieces) from one plain teacher-forced forward."""
    with torch.no_grad():
        logits = model(
            input_ids=torch.tensor([record.source_ids]), decoder_input_ids=torch.tensor([record.target_ids[:-1]])
        ).logits[0]
    pieces = torch.log_softmax(logits.double(), dim=-1)[torch.arange(logits.shape[0]), record.target_ids[1:]]
    _, target = word_lists(record)
    return [float(sum(pieces[p - 1] for p in word)) for word in target.pieces]


@pytest.mark.parametrize("layer, head", [(0, 2), (1, 0)])
def test_each_drop_is_log_p_intact_minus_log_p_with_that_head_switched_off(model, record, view, layer, head):
    intact = _word_log_probabilities_by_hand(model, record)
    with ablate_heads(model, [Head("cross", layer, head)]):
        ablated = _word_log_probabilities_by_hand(model, record)
    np.testing.assert_allclose(view.drops[layer, head], np.subtract(intact, ablated), atol=1e-5)
    np.testing.assert_allclose(view.log_probability, intact, atol=1e-5)
    assert view.heads[layer * view.drops.shape[1] + head] == Head("cross", layer, head)


def test_the_view_is_the_drop_weighted_mean_of_the_heads_that_matter(record, view):
    layers, heads, words = view.drops.shape
    assert view.matrix.shape == (words, len(word_lists(record)[0].words))
    for j in range(words):
        rows, weights = [], []
        for layer in range(layers):
            for head in range(heads):
                if view.drops[layer, head, j] > 0:
                    rows.append(pool_to_words(record.cross[layer, head], record)[j])
                    weights.append(view.drops[layer, head, j])
        assert view.total_drop[j] == pytest.approx(sum(weights))
        np.testing.assert_allclose(view.matrix[j], np.average(rows, axis=0, weights=weights))


def test_the_view_agrees_with_itself_fully(view):
    found = ablation_agreement(view.matrix, view)
    assert found.words == [j for j in range(view.matrix.shape[0]) if view.total_drop[j] > 0] and found.words
    assert found.means()["top1"] == 1.0 and found.means()["spearman"] == pytest.approx(1.0)


def test_a_matrix_whose_top_word_differs_on_every_word_scores_zero(view):
    matrix = np.zeros_like(view.matrix)
    for j, row in enumerate(view.matrix):
        matrix[j, (int(np.argmax(row)) + 1) % row.size] = 1.0
    found = ablation_agreement(matrix, view)
    assert found.means()["top1"] == 0.0 and found.means()["words"] == len(found.words) > 0
    assert np.all(found.spearman[found.words] < 1.0)


def test_an_attribution_scores_as_its_matrix(model, tokenizer, record, view):
    explained = attribute(model, tokenizer, record, method="attention")
    by_attribution, by_matrix = ablation_agreement(explained, view), ablation_agreement(explained.matrix, view)
    np.testing.assert_array_equal(by_attribution.top1, by_matrix.top1)
    np.testing.assert_array_equal(by_attribution.spearman, by_matrix.spearman)


def test_words_no_head_matters_for_are_not_scored(view):
    drops = view.drops.copy()
    drops[:, :, 0] = -np.abs(drops[:, :, 0])  # every head helps word 0 by switching it off
    weaker = replace(view, drops=drops)
    found = ablation_agreement(view.matrix, weaker)
    assert weaker.total_drop[0] == 0.0 and 0 not in found.words and np.isnan(found.top1[0])
    assert found.words == [j for j in ablation_agreement(view.matrix, view).words if j != 0]


def test_skip_punctuation_leaves_punctuation_out_on_both_sides(model, tokenizer):
    record = extract(model, tokenizer, "¿dónde está la casa?", "where is the house?", direction="es-en")
    source, target = word_lists(record)
    view = ablation_view(model, record)
    # The view's own rows, with the most weight on the final "?": the same ranking once punctuation is out.
    on_punctuation = 0.1 * view.matrix
    on_punctuation[:, source.words.index("?")] = 1.0
    found = ablation_agreement(on_punctuation, view, skip_punctuation=True)
    assert found.words and not any(target.punctuation()[j] for j in found.words)
    assert found.means()["top1"] == 1.0 and found.means()["spearman"] == pytest.approx(1.0)
    assert ablation_agreement(on_punctuation, view).means()["spearman"] < 1.0


def test_bad_input_is_refused_with_a_clear_error(model, record, view):
    with pytest.raises(ValueError, match="token-level record"):
        ablation_view(model, to_words(record))
    with pytest.raises(ValueError, match="shape"):
        ablation_agreement(np.zeros((2, 2)), view)
