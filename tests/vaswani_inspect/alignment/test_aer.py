"""The alignment error rate: the textbook value, corpus counts, edge cases and punctuation words left out."""

import pytest

from tests.vaswani_inspect.alignment.planted import SOURCE_WORDS, TARGET_WORDS
from vaswani_inspect.alignment import AlignmentScores, alignment_error_rate, read_gold


def test_aer_matches_the_textbook_value(tmp_path):
    gold_file = tmp_path / "gold.txt"
    gold_file.write_text("# hand-made gold, 0-based\n0-0 1-2 2p1\n", encoding="utf-8")
    (gold,) = read_gold(gold_file)
    assert gold.sure == {(0, 0), (1, 2)} and gold.possible == {(0, 0), (1, 2), (2, 1)}
    predicted = {(0, 0), (2, 1), (2, 2)}
    # A = {0-0, 2-1, 2-2}, S = {0-0, 1-2}, P = S + {2-1}
    # |A & S| = 1 (0-0), |A & P| = 2 (0-0, 2-1), |A| = 3, |S| = 2
    # AER = 1 - (|A & S| + |A & P|) / (|A| + |S|) = 1 - (1 + 2) / (3 + 2) = 1 - 3/5 = 0.4
    # precision = |A & P| / |A| = 2/3, recall = |A & S| / |S| = 1/2
    scores = alignment_error_rate(predicted, gold.sure, gold.possible)
    assert isinstance(scores, AlignmentScores)
    assert scores.aer == pytest.approx(0.4)
    assert scores.precision == pytest.approx(2 / 3)
    assert scores.recall == pytest.approx(1 / 2)


def test_corpus_aer_sums_counts_over_sentences():
    # Sentence 1: A={0-0}, S={0-0} -> |A&S|=1, |A&P|=1, |A|=1, |S|=1.
    # Sentence 2: A={0-1, 1-1}, S={1-0}, P={1-0, 1-1} -> |A&S|=0, |A&P|=1, |A|=2, |S|=1.
    # AER = 1 - (1 + 0 + 1 + 1) / (1 + 2 + 1 + 1) = 1 - 3/5 = 0.4; precision = 2/3; recall = 1/2.
    scores = alignment_error_rate(
        [{(0, 0)}, {(0, 1), (1, 1)}],
        [{(0, 0)}, {(1, 0)}],
        [set(), {(1, 1)}],
    )
    assert scores == pytest.approx((0.4, 2 / 3, 0.5))
    assert alignment_error_rate({(0, 0)}, {(0, 0)}) == (0.0, 1.0, 1.0)


def test_aer_edge_cases():
    assert alignment_error_rate(set(), {(0, 0)}) == (1.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="undefined"):
        alignment_error_rate(set(), set())
    with pytest.raises(ValueError, match="same number of sentences"):
        alignment_error_rate([{(0, 0)}, {(1, 1)}], [{(0, 0)}], None)


def test_skip_punctuation_in_aer():
    predicted, sure = {(0, 1), (2, 2), (2, 3)}, {(0, 1), (1, 2), (2, 3)}
    # All links: |A| = 3, |S| = 3, |A & S| = 2 (0-1, 2-3): AER = 1 - 4/6, precision = recall = 2/3.
    assert alignment_error_rate(predicted, sure) == pytest.approx((1 / 3, 2 / 3, 2 / 3))
    # Without links touching "." (source 2) or "¿"/"?" (target 0, 3): A = {0-1}, S = {0-1, 1-2}.
    # AER = 1 - (1 + 1) / (1 + 2) = 1/3, precision = 1, recall = 1/2.
    words = (SOURCE_WORDS, TARGET_WORDS)
    scores = alignment_error_rate(predicted, sure, skip_punctuation=True, words=words)
    assert scores == pytest.approx((1 / 3, 1.0, 0.5))
    corpus = alignment_error_rate([predicted, predicted], [sure, sure], skip_punctuation=True, words=[words] * 2)
    assert corpus == pytest.approx(scores)
    # An unknown piece standing alone (an emoji, a rare mark) is skipped like punctuation.
    symbol = (["gato", "<unk>"], ["cat"])
    unknown = alignment_error_rate({(0, 0)}, {(0, 0), (1, 0)}, skip_punctuation=True, words=symbol)
    assert unknown == (0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="needs words="):
        alignment_error_rate(predicted, sure, skip_punctuation=True)
    with pytest.raises(ValueError, match="for each of the 2 sentences"):
        alignment_error_rate([predicted, predicted], [sure, sure], skip_punctuation=True, words=[words])
