"""Alignments from cross-attention: permutation recovery (with and without shift), Pharaoh, gold files, AER,
punctuation words, the search over layers, heads and shift, and the record's model configuration."""

import numpy as np
import pytest

from vaswani_inspect import (
    AlignmentScores,
    AttentionRecord,
    GoldAlignment,
    align,
    alignment_error_rate,
    alignment_matrix,
    alignment_settings,
    best_layer,
    read_gold,
    search_alignments,
    source_words,
    target_words,
    to_pharaoh,
)
from vaswani_inspect.alignment import describe_alignment

SOURCE = [">>en<<", "▁a", "▁b", "b2", "▁c", "▁d", "</s>"]  # words: a=[1] b=[2,3] c=[4] d=[5]
TARGET = ["<s>", "▁w", "▁x", "x2", "▁y", "▁z", "</s>"]  # words: w=[1] x=[2,3] y=[4] z=[5]
SOURCE_PIECES = [[1], [2, 3], [4], [5]]
TARGET_PIECES = [[1], [2, 3], [4], [5]]
PERMUTATION = [2, 0, 3, 1]  # target word j is the translation of source word PERMUTATION[j]


def _planted_cross(shift: bool, rng: np.random.Generator) -> np.ndarray:
    """(T, S) attention: the rows of target word j put 0.9 of their mass on source word PERMUTATION[j]."""
    t, s = len(TARGET), len(SOURCE)
    matrix = rng.uniform(0.5, 1.0, size=(t, s))
    matrix /= matrix.sum(-1, keepdims=True)
    offset = 0 if shift else -1  # shift=False: piece p is predicted by row p - 1
    for j, pieces in enumerate(TARGET_PIECES):
        source = SOURCE_PIECES[PERMUTATION[j]]
        for p in pieces:
            row = np.full(s, 0.1 / (s - len(source)))
            row[source] = 0.9 / len(source)
            matrix[p + offset] = row
    return matrix


def _record(cross: np.ndarray) -> AttentionRecord:
    layers, heads = cross.shape[:2]
    s, t = len(SOURCE), len(TARGET)
    return AttentionRecord(
        source_tokens=SOURCE,
        target_tokens=TARGET,
        source_ids=list(range(s)),
        target_ids=list(range(t)),
        encoder=np.full((layers, heads, s, s), 1.0 / s),
        decoder=np.tril(np.ones((layers, heads, t, t))) / np.arange(1, t + 1)[:, None],
        cross=cross,
        special_tokens=["<pad>", "<s>", "</s>", ">>en<<", ">>es<<"],
    )


def _synthetic(shift: bool, planted_layer: int = 1, layers: int = 3, heads: int = 2, seed: int = 0):
    rng = np.random.default_rng(seed)
    noise = rng.uniform(size=(layers, heads, len(TARGET), len(SOURCE)))
    cross = noise / noise.sum(-1, keepdims=True)
    for head in range(heads):
        cross[planted_layer, head] = _planted_cross(shift, rng)
    return _record(cross)


TRUTH = sorted((PERMUTATION[j], j) for j in range(len(PERMUTATION)))


def test_words_that_alignments_index():
    record = _synthetic(shift=False)
    assert source_words(record) == ["a", "bb2", "c", "d"]
    assert target_words(record) == ["w", "xx2", "y", "z"]


@pytest.mark.parametrize("shift", [False, True])
def test_permutation_is_recovered(shift):
    record = _synthetic(shift=shift)
    assert align(record, layer=1, shift=shift) == TRUTH
    assert align(record, layer=1, method="threshold", threshold=0.5, shift=shift) == TRUTH
    assert align(record, layer=1, heads=[0], shift=shift) == TRUTH
    assert align(record, layer=1, heads=1, shift=shift) == TRUTH
    # Reading the other rows does not find it: the shift matters.
    assert align(record, layer=1, shift=not shift) != TRUTH


def test_alignment_matrix_rows_sum_to_one_without_special_columns():
    matrix = alignment_matrix(_synthetic(shift=False), layer=1)
    assert matrix.shape == (4, 4)
    np.testing.assert_allclose(matrix.sum(-1), 1.0, atol=1e-6)


def test_pharaoh_format():
    assert to_pharaoh(TRUTH) == "0-1 1-3 2-0 3-2"
    assert to_pharaoh(TRUTH, one_based=True) == "1-2 2-4 3-1 4-3"
    assert to_pharaoh([]) == ""


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


def test_gold_index_base_from_header_or_parameter(tmp_path):
    one_based = tmp_path / "one.txt"
    one_based.write_text("# index-base: 1\n1-1 2-3 3p2\n\n2-2\n", encoding="utf-8")
    gold = read_gold(one_based)
    assert gold[0] == GoldAlignment({(0, 0), (1, 2)}, {(2, 1)})
    assert gold[1] == GoldAlignment(set(), set())  # an empty line is a sentence without links
    assert gold[2].sure == {(1, 1)}
    assert read_gold(one_based, index_base=1) == gold
    with pytest.raises(ValueError, match="declares 1-based"):
        read_gold(one_based, index_base=0)

    plain = tmp_path / "plain.txt"
    plain.write_text("1-1 2-3\n", encoding="utf-8")
    assert read_gold(plain)[0].sure == {(1, 1), (2, 3)}  # no declaration: 0-based
    assert read_gold(plain, index_base=1)[0].sure == {(0, 0), (1, 2)}
    worded = tmp_path / "worded.txt"
    worded.write_text("# These links are 1-indexed\n1-1\n", encoding="utf-8")
    assert read_gold(worded)[0].sure == {(0, 0)}


def test_bad_gold_files(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("0-0 zero-one\n", encoding="utf-8")
    with pytest.raises(ValueError, match="'zero-one' is not an alignment link"):
        read_gold(bad)
    zero = tmp_path / "zero.txt"
    zero.write_text("# 1-based\n0-1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="index 0 but the file is 1-based"):
        read_gold(zero)
    with pytest.raises(ValueError, match="index_base must be"):
        read_gold(zero, index_base=2)


@pytest.mark.parametrize("shift", [False, True])
def test_best_layer_finds_the_planted_layer(tmp_path, shift):
    records = [_synthetic(shift=shift, planted_layer=2, seed=seed) for seed in range(3)]
    gold_file = tmp_path / "gold.txt"
    gold_file.write_text("\n".join([to_pharaoh(TRUTH)] * 3) + "\n", encoding="utf-8")
    search = best_layer(records, gold_file, shift=shift)
    assert search.best_layer == 2
    assert search.best == (0.0, 1.0, 1.0)
    assert set(search.scores) == {0, 1, 2}
    assert all(search.scores[layer].aer > 0 for layer in (0, 1))
    with pytest.raises(ValueError, match="1:1"):
        best_layer(records[:2], gold_file)


def test_bad_alignment_arguments():
    record = _synthetic(shift=False)
    with pytest.raises(ValueError, match="layer 5 does not exist"):
        align(record, layer=5)
    with pytest.raises(ValueError, match="head 7 does not exist"):
        align(record, heads=[0, 7])
    with pytest.raises(ValueError, match="method must be"):
        align(record, method="itermax")
    with pytest.raises(ValueError, match="threshold must be"):
        align(record, method="threshold", threshold=0.0)


# ------------------------------------------------------------------------------------------ punctuation words

PUNCTUATED_SOURCE = [">>en<<", "▁el", "▁rat", "ón", ".", "</s>"]  # words: 0 el=[1], 1 ratón=[2,3], 2 "."=[4]
PUNCTUATED_TARGET = ["<s>", "▁¿The", "▁mouse", "?", "</s>"]  # words: 0 "¿" (no piece), 1 The, 2 mouse, 3 "?"
SOURCE_WORDS = ["el", "ratón", "."]
TARGET_WORDS = ["¿", "The", "mouse", "?"]


def _punctuated_record() -> AttentionRecord:
    """Rows read without shift: row 0 (The) looks at "el"; row 1 (mouse) at "." (0.5) more than at "ratón" (0.4);
    row 2 ("?") at "."."""
    cross = np.array(
        [
            [0.05, 0.8, 0.05, 0.05, 0.0, 0.05],
            [0.0, 0.05, 0.2, 0.2, 0.5, 0.05],
            [0.0, 0.1, 0.1, 0.0, 0.7, 0.1],
            [0.2, 0.2, 0.2, 0.2, 0.1, 0.1],
            [0.2, 0.2, 0.2, 0.2, 0.1, 0.1],
        ]
    )
    s, t = len(PUNCTUATED_SOURCE), len(PUNCTUATED_TARGET)
    return AttentionRecord(
        source_tokens=PUNCTUATED_SOURCE,
        target_tokens=PUNCTUATED_TARGET,
        source_ids=list(range(s)),
        target_ids=list(range(t)),
        encoder=np.full((1, 1, s, s), 1.0 / s),
        decoder=np.tril(np.ones((1, 1, t, t))) / np.arange(1, t + 1)[:, None],
        cross=cross[None, None],
        special_tokens=["<pad>", "<s>", "</s>", ">>en<<", ">>es<<"],
    )


def test_punctuation_marks_are_words_in_words_pharaoh_and_gold(tmp_path):
    record = _punctuated_record()
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
    record = _punctuated_record()
    # "mouse" now links to its most attended word that is not punctuation; "?" and "." get no link.
    assert align(record, skip_punctuation=True) == [(0, 1), (1, 2)]
    matrix = alignment_matrix(record, skip_punctuation=True)
    np.testing.assert_allclose(matrix[:, 2], 0.0)
    np.testing.assert_allclose(matrix[[0, 3]], 0.0)
    np.testing.assert_allclose(matrix[2], [0.05 / 0.45, 0.4 / 0.45, 0.0], rtol=1e-5)
    assert align(record, method="threshold", threshold=0.5, skip_punctuation=True) == [(0, 1), (1, 2)]


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


# ------------------------------------------------------------------------------ the search and the defaults

PLANTED = {"layer": 1, "heads": [2], "shift": True}
WRONG = [0, 1, 2, 3]  # differs from PERMUTATION for every target word


def _planted_head_record(seed: int = 0, layers: int = 3, heads: int = 4, alignment: dict | None = None):
    """Cross-attention whose one head (layer 1, head 2, rows read with shift) is the gold alignment; every other
    head looks at the wrong source words, so that averaging heads or layers, or reading other rows, misaligns."""
    rng = np.random.default_rng(seed)
    t, s = len(TARGET), len(SOURCE)
    cross = np.empty((layers, heads, t, s))
    for layer in range(layers):
        for head in range(heads):
            noise = rng.uniform(0.0, 0.2, size=(t, s))
            for j, pieces in enumerate(TARGET_PIECES):
                for p in pieces:  # both the rows that predict a word and the rows one later
                    for row in (p - 1, p):
                        noise[row, SOURCE_PIECES[WRONG[j]]] += 1.5
            cross[layer, head] = noise / noise.sum(-1, keepdims=True)
    cross[PLANTED["layer"], PLANTED["heads"][0]] = _planted_cross(True, rng)
    record = _record(cross)
    record.alignment = alignment
    return record


def test_search_finds_the_planted_head_and_shift(tmp_path):
    records = [_planted_head_record(seed) for seed in range(3)]
    silver = [set(TRUTH)] * 3  # plain link sets, as a statistical aligner gives them
    search = search_alignments(records, silver, pairs_of_best=0)
    assert search.best == PLANTED
    assert search.scores == (0.0, 1.0, 1.0)
    assert len(search.table) == (3 + 1) * (4 + 1) * 2  # layers and "mean" x heads and "all" x shift
    assert search.table[0].config == PLANTED
    assert all(row.scores.aer > 0 for row in search.table[1:])
    assert [row.scores.aer for row in search.table] == sorted(row.scores.aer for row in search.table)
    configs = [row.config for row in search.table]
    assert {"layer": "mean", "heads": "all", "shift": False} in configs
    assert {"layer": 1, "heads": "all", "shift": True} in configs
    # The same from a gold file; without the shift choice the planted head cannot be found.
    gold_file = tmp_path / "gold.txt"
    gold_file.write_text("\n".join([to_pharaoh(TRUTH)] * 3) + "\n", encoding="utf-8")
    assert search_alignments(records, gold_file).best == PLANTED  # a single reading wins a tie with pairs
    unshifted = search_alignments(records, gold_file, shifts=[False], pairs_of_best=0)
    assert unshifted.scores.aer > 0 and len(unshifted.table) == 20
    payload = search.to_dict(top=3)
    assert payload["best"] == PLANTED and len(payload["table"]) == 3 and payload["table"][0]["aer"] == 0.0


def test_search_refuses_gold_that_indexes_other_words():
    records = [_planted_head_record()]
    with pytest.raises(ValueError, match=r"Gold sentence 1 links source word 9 .*punctuation marks are words"):
        search_alignments(records, [{(9, 0)}])
    with pytest.raises(ValueError, match="1:1"):
        search_alignments(records, [set(TRUTH)] * 2)


def test_align_follows_the_record_model_configuration():
    configured = _planted_head_record(alignment=PLANTED)
    plain = _planted_head_record()
    assert alignment_settings(configured) == PLANTED
    assert alignment_settings(plain) == {"layer": "mean", "heads": "all", "shift": False}
    assert align(configured) == TRUTH  # no arguments: the model's configuration
    assert align(plain) != TRUTH  # no configuration: the mean of every layer and head
    assert align(plain, 1, [2], shift=True) == TRUTH
    # An argument given replaces that part of the configuration only.
    assert alignment_settings(configured, shift=False) == {**PLANTED, "shift": False}
    assert align(configured, shift=False) != TRUTH
    assert alignment_settings(configured, heads=3) == {**PLANTED, "heads": [3]}
    np.testing.assert_allclose(alignment_matrix(configured), alignment_matrix(plain, 1, 2, shift=True))


# ------------------------------------------------------------------------------------------ averaged readings

FIRST = {"layer": 0, "heads": [1], "shift": True}
SECOND = {"layer": 2, "heads": [0], "shift": False}
AVERAGED = {**FIRST, "average_with": [SECOND]}


def _half_right(shift: bool, right: set[int], rng: np.random.Generator) -> np.ndarray:
    """(T, S) attention that puts 0.8 on the true source word of the target words in `right` and 0.5 on a wrong one
    for the others: alone it aligns half the words, averaged with its complement all of them."""
    t, s = len(TARGET), len(SOURCE)
    matrix = rng.uniform(0.5, 1.0, size=(t, s))
    matrix /= matrix.sum(-1, keepdims=True)
    offset = 0 if shift else -1
    for j, pieces in enumerate(TARGET_PIECES):
        source, weight = (PERMUTATION[j], 0.8) if j in right else (WRONG[j], 0.5)
        columns = SOURCE_PIECES[source]
        for p in pieces:
            row = np.full(s, (1.0 - weight) / (s - len(columns)))
            row[columns] = weight / len(columns)
            matrix[p + offset] = row
    return matrix


def _complementary_record(seed: int = 0, alignment: dict | None = None) -> AttentionRecord:
    """Two heads that each align half of the words right (FIRST: words 0 and 1, SECOND: words 2 and 3), every other
    head wrong."""
    rng = np.random.default_rng(seed)
    cross = _planted_head_record(seed).cross  # every head wrong but the planted one, which is replaced below
    cross[PLANTED["layer"], PLANTED["heads"][0]] = cross[0, 0]
    cross[FIRST["layer"], FIRST["heads"][0]] = _half_right(FIRST["shift"], {0, 1}, rng)
    cross[SECOND["layer"], SECOND["heads"][0]] = _half_right(SECOND["shift"], {2, 3}, rng)
    record = _record(cross)
    record.alignment = alignment
    return record


def test_averaged_readings_are_the_mean_of_their_matrices():
    record = _complementary_record()
    first = alignment_matrix(record, **FIRST)
    second = alignment_matrix(record, **SECOND)
    averaged = alignment_matrix(record, **FIRST, average_with=[SECOND])
    np.testing.assert_allclose(averaged, (first + second) / 2)  # both rows sum to 1 already
    np.testing.assert_allclose(averaged.sum(-1), 1.0)
    assert align(record, **FIRST) != TRUTH and align(record, **SECOND) != TRUTH
    assert align(record, **FIRST, average_with=[SECOND]) == TRUTH


def test_the_model_averaged_readings_are_its_default():
    configured = _complementary_record(alignment=AVERAGED)
    assert alignment_settings(configured) == AVERAGED
    assert align(configured) == TRUTH
    assert describe_alignment(alignment_settings(configured)) == "layer 0, head 1, shifted + layer 2, head 0"
    # Choosing a layer, heads or shift reads that one configuration alone, unless average_with is passed too.
    assert alignment_settings(configured, shift=True) == FIRST
    assert align(configured, 0, [1], shift=True) == align(configured, **FIRST) != TRUTH
    assert align(configured, 0, [1], shift=True, average_with=[SECOND]) == TRUTH
    assert alignment_settings(configured, average_with=[]) == FIRST
    # The record keeps it through JSON.
    assert AttentionRecord.from_dict(configured.to_dict()).alignment == AVERAGED
    for bad in ({**FIRST, "average_with": []}, {**FIRST, "average_with": [AVERAGED]}, {**FIRST, "average_with": [1]}):
        with pytest.raises(ValueError, match="average_with"):
            AttentionRecord.from_dict({**configured.to_dict(), "alignment": bad})


def test_search_finds_two_heads_that_align_together():
    records = [_complementary_record(seed) for seed in range(3)]
    search = search_alignments(records, [set(TRUTH)] * 3)
    assert search.scores == (0.0, 1.0, 1.0)
    assert search.best in (AVERAGED, {**SECOND, "average_with": [FIRST]})
    assert len(search.table) == 40 + 28  # the single readings, then the pairs of the 8 best
    singles = [row for row in search.table if not row.average_with]
    assert min(row.scores.aer for row in singles) > 0.2
    assert search.to_dict(top=1)["table"][0]["average_with"] == search.best["average_with"]
    with pytest.raises(ValueError, match="pairs_of_best"):
        search_alignments(records, [set(TRUTH)] * 3, pairs_of_best=-1)
