"""Faithfulness by deletion on a hand-made case, and attribution methods read as aligners (`evaluation`), with the
model's aligner stored as a method in its config."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vaswani_inspect import extract
from vaswani_inspect.alignment import check_model_alignment, model_alignment, write_alignment_config
from vaswani_inspect.alignment.config import ALIGNER_METHODS, model_aligner
from vaswani_inspect.alignment.gold import GoldAlignment
from vaswani_inspect.alignment.links import word_lists
from vaswani_inspect.attribution import METHODS
from vaswani_inspect.attribution.evaluation import best_reading, link_scores, model_links, score_method
from vaswani_inspect.attribution.faithfulness import deletion_scores, random_rankings, rankings_of


class _OneWordModel(torch.nn.Module):
    """Every target piece is likely only while the source holds the pieces of one chosen word."""

    def __init__(self, pieces: list[int], labels: list[int], vocabulary: int) -> None:
        super().__init__()
        self.pieces, self.labels, self.vocabulary = pieces, labels, vocabulary
        self.config = type("Config", (), {"pad_token_id": 0})()

    def forward(self, input_ids, attention_mask, decoder_input_ids, use_cache=False):  # noqa: ANN001, ANN201
        present = torch.stack(
            [
                torch.isin(row[mask.bool()], torch.tensor(self.pieces)).any()
                for row, mask in zip(input_ids, attention_mask)
            ]
        ).double()
        logits = torch.zeros(input_ids.shape[0], decoder_input_ids.shape[1], self.vocabulary, dtype=torch.float64)
        for t, label in enumerate(self.labels):
            logits[:, t, label] = 6.0 * present
        return type("Output", (), {"logits": logits})()


def test_ranking_the_only_important_word_first_is_the_most_comprehensive_and_sufficient(record):
    source, target = word_lists(record)
    important = source.words.index("gato")
    fake = _OneWordModel([record.source_ids[p] for p in source.pieces[important]], record.target_ids[1:], 200)
    matrix = np.full((len(target.words), len(source.words)), 0.1)
    right, wrong = matrix.copy(), matrix.copy()
    right[:, important] = 0.8
    wrong[:, important] = 0.0
    rankings = {
        "right": rankings_of(right, record),
        "wrong": rankings_of(wrong, record),
        "random": random_rankings(record, np.random.default_rng(0)),
    }
    assert all(order[0] == important for order in rankings["right"].values())
    found = deletion_scores(fake, record, rankings, ks=(1, 2))
    means = {name: scores.means() for name, scores in found.items()}
    # Removing the word alone takes the whole drop; leaving it alone loses nothing.
    assert means["right"]["comprehensiveness@1"] > 1.0
    assert means["wrong"]["comprehensiveness@1"] == pytest.approx(0.0)
    assert means["right"]["comprehensiveness"] == max(m["comprehensiveness"] for m in means.values())
    assert means["right"]["sufficiency@1"] == pytest.approx(0.0)
    assert means["wrong"]["sufficiency@1"] == pytest.approx(means["right"]["comprehensiveness@1"])
    assert found["right"].words == found["random"].words == [j for j in range(len(target.words)) if target.pieces[j]]


def test_deletion_scores_on_the_tiny_model_are_finite_and_zero_when_nothing_is_removed(model, record):
    found = deletion_scores(model, record, {"attention": rankings_of(np.eye(3), record)}, ks=(1, 3))
    scores = found["attention"]
    assert np.all(np.isfinite(scores.comprehensiveness)) and scores.comprehensiveness.shape == (2, 3)
    assert np.allclose(scores.sufficiency[1], 0.0)  # k = 3 keeps all three source words: the same source
    with pytest.raises(ValueError, match="ks"):
        deletion_scores(model, record, {}, ks=(0,))


def test_a_method_read_as_an_aligner_scores_argmax_and_thresholds(model, tokenizer, record):
    gold = [GoldAlignment(sure={(0, 0), (1, 2), (2, 1)})]
    perfect = np.zeros((3, 3))
    perfect[0, 0] = perfect[2, 1] = perfect[1, 2] = 1.0
    assert link_scores([perfect], [record], gold).aer == 0.0
    readings = best_reading([perfect], [record], gold, thresholds=(0.5, 1.0))
    assert readings[0].scores.aer == 0.0 and readings[0].threshold is None  # argmax first on a tie
    scored = score_method(model, tokenizer, [record], gold, "attention_norm", thresholds=(0.2,))
    assert {r.links for r in scored.table} == {"argmax", "threshold"} and scored.ms_per_sentence > 0
    assert scored.aligner["method"] == "attention_norm"
    assert scored.to_dict()["best"]["aer"] == scored.best.scores.aer


def test_the_model_aligner_can_be_an_attribution_method(model, tokenizer, tmp_path):
    model.save_pretrained(tmp_path)
    write_alignment_config(
        tmp_path, {"layer": 1, "heads": [0], "shift": False, "method": "value_zeroing", "threshold": 0.2}
    )
    reloaded = type(model).from_pretrained(tmp_path)
    assert model_aligner(reloaded.config) == {"method": "value_zeroing", "threshold": 0.2}
    assert model_alignment(reloaded.config) == {"layer": 1, "heads": [0], "shift": False}
    record = extract(reloaded, tokenizer, "el gato negro", "the black cat", direction="es-en")
    assert record.alignment == {"layer": 1, "heads": [0], "shift": False}
    links = model_links(reloaded, tokenizer, record)
    assert links and all(0 <= i < 3 and 0 <= j < 3 for i, j in links)
    check_model_alignment({"method": "rollout"}, 2, 4)  # a method alone is a configuration too
    assert ALIGNER_METHODS == METHODS
    for bad, message in (
        ({"method": "nope"}, "attribution method"),
        ({"method": "rollout", "threshold": 2}, "threshold"),
    ):
        with pytest.raises(ValueError, match=message):
            check_model_alignment(bad, 2, 4)
