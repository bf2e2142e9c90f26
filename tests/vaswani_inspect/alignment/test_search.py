"""The search over layers, heads, shift and pairs of readings finds what was planted, and refuses gold that
indexes other words."""

import pytest

from tests.vaswani_inspect.alignment.planted import (
    AVERAGED,
    FIRST,
    PLANTED,
    SECOND,
    TRUTH,
    complementary_record,
    planted_head_record,
    synthetic,
)
from vaswani_inspect.alignment import best_layer, search_alignments, to_pharaoh


@pytest.mark.parametrize("shift", [False, True])
def test_best_layer_finds_the_planted_layer(tmp_path, shift):
    records = [synthetic(shift=shift, planted_layer=2, seed=seed) for seed in range(3)]
    gold_file = tmp_path / "gold.txt"
    gold_file.write_text("\n".join([to_pharaoh(TRUTH)] * 3) + "\n", encoding="utf-8")
    search = best_layer(records, gold_file, shift=shift)
    assert search.best_layer == 2
    assert search.best == (0.0, 1.0, 1.0)
    assert set(search.scores) == {0, 1, 2}
    assert all(search.scores[layer].aer > 0 for layer in (0, 1))
    with pytest.raises(ValueError, match="1:1"):
        best_layer(records[:2], gold_file)


def test_search_finds_the_planted_head_and_shift(tmp_path):
    records = [planted_head_record(seed) for seed in range(3)]
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
    records = [planted_head_record()]
    with pytest.raises(ValueError, match=r"Gold sentence 1 links source word 9 .*punctuation marks are words"):
        search_alignments(records, [{(9, 0)}])
    with pytest.raises(ValueError, match="1:1"):
        search_alignments(records, [set(TRUTH)] * 2)


def test_search_finds_two_heads_that_align_together():
    records = [complementary_record(seed) for seed in range(3)]
    search = search_alignments(records, [set(TRUTH)] * 3)
    assert search.scores == (0.0, 1.0, 1.0)
    assert search.best in (AVERAGED, {**SECOND, "average_with": [FIRST]})
    assert len(search.table) == 40 + 28  # the single readings, then the pairs of the 8 best
    singles = [row for row in search.table if not row.average_with]
    assert min(row.scores.aer for row in singles) > 0.2
    assert search.to_dict(top=1)["table"][0]["average_with"] == search.best["average_with"]
    with pytest.raises(ValueError, match="pairs_of_best"):
        search_alignments(records, [set(TRUTH)] * 3, pairs_of_best=-1)
