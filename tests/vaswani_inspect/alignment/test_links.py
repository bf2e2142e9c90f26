"""Links read off the cross-attention: permutation recovery (with and without shift), the word-level matrix,
Pharaoh, punctuation words and averaged readings."""

import numpy as np
import pytest

from tests.vaswani_inspect.alignment.planted import (
    FIRST,
    SECOND,
    SOURCE_WORDS,
    TARGET_WORDS,
    TRUTH,
    complementary_record,
    punctuated_record,
    synthetic,
)
from vaswani_inspect.alignment import align, alignment_matrix, read_gold, source_words, target_words, to_pharaoh


def test_words_that_alignments_index():
    record = synthetic(shift=False)
    assert source_words(record) == ["a", "bb2", "c", "d"]
    assert target_words(record) == ["w", "xx2", "y", "z"]


@pytest.mark.parametrize("shift", [False, True])
def test_permutation_is_recovered(shift):
    record = synthetic(shift=shift)
    assert align(record, layer=1, shift=shift) == TRUTH
    assert align(record, layer=1, method="threshold", threshold=0.5, shift=shift) == TRUTH
    assert align(record, layer=1, heads=[0], shift=shift) == TRUTH
    assert align(record, layer=1, heads=1, shift=shift) == TRUTH
    # Reading the other rows does not find it: the shift matters.
    assert align(record, layer=1, shift=not shift) != TRUTH


def test_alignment_matrix_rows_sum_to_one_without_special_columns():
    matrix = alignment_matrix(synthetic(shift=False), layer=1)
    assert matrix.shape == (4, 4)
    np.testing.assert_allclose(matrix.sum(-1), 1.0, atol=1e-6)


def test_pharaoh_format():
    assert to_pharaoh(TRUTH) == "0-1 1-3 2-0 3-2"
    assert to_pharaoh(TRUTH, one_based=True) == "1-2 2-4 3-1 4-3"
    assert to_pharaoh([]) == ""


def test_bad_alignment_arguments():
    record = synthetic(shift=False)
    with pytest.raises(ValueError, match="layer 5 does not exist"):
        align(record, layer=5)
    with pytest.raises(ValueError, match="head 7 does not exist"):
        align(record, heads=[0, 7])
    with pytest.raises(ValueError, match="method must be"):
        align(record, method="itermax")
    with pytest.raises(ValueError, match="threshold must be"):
        align(record, method="threshold", threshold=0.0)


def test_punctuation_marks_are_words_in_words_pharaoh_and_gold(tmp_path):
    record = punctuated_record()
    assert source_words(record) == SOURCE_WORDS and target_words(record) == TARGET_WORDS
    # "¿" is glued into "▁¿The": it keeps index 0 but has no row, so it never gets a link.
    pairs = align(record)
    assert pairs == [(0, 1), (2, 2), (2, 3)]
    assert to_pharaoh(pairs) == "0-1 2-2 2-3"
    gold_file = tmp_path / "gold.txt"
    gold_file.write_text("# el ratón . / ¿ The mouse ?, 0-based\n0-1 1-2 2-3 2p0\n", encoding="utf-8")
    (gold,) = read_gold(gold_file)
    assert gold.sure == {(0, 1), (1, 2), (2, 3)} and gold.possible == gold.sure | {(2, 0)}
    matrix = alignment_matrix(record)
    assert matrix.shape == (4, 3)
    np.testing.assert_allclose(matrix[0], 0.0)  # the word without a piece: a zero row
    np.testing.assert_allclose(matrix[1:].sum(-1), 1.0, atol=1e-6)


def test_skip_punctuation_in_align():
    record = punctuated_record()
    # "mouse" now links to its most attended word that is not punctuation; "?" and "." get no link.
    assert align(record, skip_punctuation=True) == [(0, 1), (1, 2)]
    matrix = alignment_matrix(record, skip_punctuation=True)
    np.testing.assert_allclose(matrix[:, 2], 0.0)
    np.testing.assert_allclose(matrix[[0, 3]], 0.0)
    np.testing.assert_allclose(matrix[2], [0.05 / 0.45, 0.4 / 0.45, 0.0], rtol=1e-5)
    assert align(record, method="threshold", threshold=0.5, skip_punctuation=True) == [(0, 1), (1, 2)]


def test_averaged_readings_are_the_mean_of_their_matrices():
    record = complementary_record()
    first = alignment_matrix(record, **FIRST)
    second = alignment_matrix(record, **SECOND)
    averaged = alignment_matrix(record, **FIRST, average_with=[SECOND])
    np.testing.assert_allclose(averaged, (first + second) / 2)  # both rows sum to 1 already
    np.testing.assert_allclose(averaged.sum(-1), 1.0)
    assert align(record, **FIRST) != TRUTH and align(record, **SECOND) != TRUTH
    assert align(record, **FIRST, average_with=[SECOND]) == TRUTH
