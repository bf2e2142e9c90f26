"""Gold alignment files: their index base, and the files they refuse."""

import pytest

from vaswani_inspect.alignment import GoldAlignment, read_gold


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
