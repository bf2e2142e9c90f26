"""The token-to-word pooling shared by every method, on a hand-made record."""

import numpy as np
import pytest

from vaswani_inspect import AttentionRecord
from vaswani_inspect.attribution import pool_rows, pool_to_words, source_shares


def _record() -> AttentionRecord:
    source = [">>en<<", "▁el", "▁ga", "to", "</s>"]
    target = ["<s>", "▁the", "▁c", "at", "</s>"]
    return AttentionRecord(
        source_tokens=source,
        target_tokens=target,
        source_ids=list(range(5)),
        target_ids=list(range(5)),
        encoder=np.full((1, 1, 5, 5), 0.2),
        decoder=np.tril(np.ones((1, 1, 5, 5))) / np.arange(1, 6)[:, None],
        cross=np.full((1, 1, 5, 5), 0.2),
    )


def test_pool_to_words_by_hand():
    scores = np.array(
        [
            [1.0, 1.0, 2.0, 2.0, 4.0],  # predicts "the": specials out -> 0.2 0.4 0.4 -> el 0.2, gato 0.8
            [0.0, 3.0, 1.0, 0.0, 0.0],  # predicts "c": 0.75 0.25 0 -> el 0.75, gato 0.25
            [0.0, 0.0, 1.0, 1.0, 0.0],  # predicts "at": 0 0.5 0.5 -> el 0, gato 1
            [9.0, 9.0, 9.0, 9.0, 9.0],  # predicts "</s>": no word
        ]
    )
    # "cat" is the mean of its two pieces' rows.
    np.testing.assert_allclose(pool_to_words(scores, _record()), [[0.2, 0.8], [0.375, 0.625]])


def test_pool_rows_and_source_shares_by_hand():
    record = _record()
    np.testing.assert_allclose(pool_rows(np.array([1.0, 2.0, 4.0, 8.0]), record), [1.0, 3.0])
    source = np.array([[3.0, 0.0], [1.0, 1.0], [0.0, 0.0], [1.0, 1.0]])
    prefix = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    # rows: 3/4, 2/4, no score (0.5), 1 -> the 0.75, cat mean(0.5, 0.5)
    np.testing.assert_allclose(source_shares(source, prefix, record), [0.75, 0.5])


def test_pool_to_words_refuses_bad_scores():
    with pytest.raises(ValueError, match="shape"):
        pool_to_words(np.ones((2, 5)), _record())
    with pytest.raises(ValueError, match="non-negative"):
        pool_to_words(-np.ones((4, 5)), _record())


def test_a_glued_punctuation_mark_takes_the_row_of_its_piece():
    """Target "the dog." as ["▁the", "▁dog."]: the word "." has no piece of its own, and the prediction of
    "▁dog." wrote it; its row is that piece's, not a row of zeros."""
    record = _record()
    record.target_tokens = ["<s>", "▁the", "▁dog.", "</s>", "<pad>"]
    scores = np.array([[0.0, 1.0, 3.0, 0.0, 0.0], [0.0, 3.0, 1.0, 0.0, 0.0], [0.0, 1.0, 1.0, 0.0, 0.0], [1.0] * 5])
    matrix = pool_to_words(scores, record)
    np.testing.assert_allclose(matrix, [[0.25, 0.75], [0.75, 0.25], [0.75, 0.25]])
    np.testing.assert_allclose(pool_rows(np.array([1.0, 2.0, 4.0, 8.0]), record), [1.0, 2.0, 2.0])
