"""Tests of hf_vaswani.data: reading (with line numbers), cleaning, leak-free splits, directions, tokens."""

from __future__ import annotations

import json
import random
import warnings

import pytest
from transformers import DataCollatorForSeq2Seq

from hf_vaswani.data import (
    MalformedLinesWarning,
    SentencePair,
    build_translation_datasets,
    deduplicate_pairs,
    evaluation_lists,
    filter_pairs,
    load_pairs,
    load_translation_datasets,
    prepare_splits,
    read_pairs,
    split_pairs,
    tokenize_pairs,
    write_pairs_tsv,
    write_split_tsv,
)
from tests.helpers import PAIRS, tiny_tokenizer


def _write_tsv(path, pairs):
    path.write_text("".join(f"{en}\t{es}\n" for en, es in pairs), encoding="utf-8")
    return path


def _synthetic_pairs(n: int) -> list[SentencePair]:
    """`n` distinct made-up pairs (numbered, so every English and Spanish side is different)."""
    return [SentencePair(f"Sentence number {i}.", f"Oración número {i}.") for i in range(n)]


# ------------------------------------------------------------------------------------------- reading


def test_read_tsv_keeps_quotes_verbatim(tmp_path):
    path = tmp_path / "pairs.tsv"
    lines = [
        'He said "hi".\tDijo "hola".',
        '"Quoted" start\t"Entre comillas" al inicio',
        'One " quote\tUna " comilla',
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pairs = read_pairs(path)
    assert pairs == [
        ('He said "hi".', 'Dijo "hola".'),
        ('"Quoted" start', '"Entre comillas" al inicio'),
        ('One " quote', 'Una " comilla'),
    ]
    assert isinstance(pairs[0], SentencePair)
    assert (pairs[0].en, pairs[0].es) == ('He said "hi".', 'Dijo "hola".')


def test_read_tsv_reports_malformed_lines_with_numbers_in_one_warning(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_bytes(
        b"Good one.\tBuena.\n"  # 1
        b"Too\tmany\tfields\n"  # 2
        b"Only one field\n"  # 3
        b"Empty Spanish\t   \n"  # 4
        b"\n"  # 5: blank, skipped silently
        b"Bad bytes \xff\xfe\tMal\n"  # 6
        b"\tEmpty English\n"  # 7
        b"Last good.\tLa ultima.\n"  # 8
    )
    with pytest.warns(MalformedLinesWarning) as record:
        pairs = read_pairs(path)
    assert pairs == [("Good one.", "Buena."), ("Last good.", "La ultima.")]
    assert len(record) == 1
    message = str(record[0].message)
    assert "skipped 5 malformed line(s)" in message
    assert str(path) in message
    assert "line 2: expected 2 tab-separated fields, found 3" in message
    assert "line 3: expected 2 tab-separated fields, found 1" in message
    assert "line 4: empty Spanish side" in message
    assert "line 6: invalid UTF-8" in message
    assert "line 7: empty English side" in message
    assert "line 5" not in message
    assert record[0].filename == __file__  # the warning points at the caller, not at hf_vaswani/data.py


def test_warning_lists_only_the_first_few_lines(tmp_path):
    lines = ["ok\tvale"] + [f"bad line {i}" for i in range(2, 10)]
    path = tmp_path / "pairs.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.warns(MalformedLinesWarning, match=r"skipped 8 malformed") as record:
        read_pairs(path)
    message = str(record[0].message)
    assert "line 2:" in message and "line 6:" in message
    assert "line 7:" not in message
    assert "and 3 more" in message


def test_strict_raises_on_the_first_bad_line(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("ok\tvale\nfine\tbien\nbroken line\nalso\tbroken\tline\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"pairs\.tsv, line 3: expected 2 tab-separated fields, found 1"):
        read_pairs(path, strict=True)


def test_missing_file_and_file_without_pairs(tmp_path):
    missing = tmp_path / "nope.tsv"
    with pytest.raises(FileNotFoundError, match="nope.tsv"):
        read_pairs(missing)
    with pytest.raises(FileNotFoundError, match="nope.tsv"):
        load_pairs(str(missing))  # a file name, never mistaken for a Hub dataset id
    empty = tmp_path / "empty.tsv"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no valid sentence pair"):
        read_pairs(empty)
    all_bad = tmp_path / "bad.tsv"
    all_bad.write_text("no tab here\n", encoding="utf-8")
    with pytest.warns(MalformedLinesWarning), pytest.raises(ValueError, match="no valid sentence pair"):
        read_pairs(all_bad)


def test_crlf_bom_and_extra_fields(tmp_path):
    path = tmp_path / "pairs.txt"
    path.write_bytes("\ufeffHi.\tHola.\tCC-BY 2.0 (France)\r\nBye.\tAdiós.\tCC-BY\r\n".encode())
    pairs = read_pairs(path, fields=("en", "es", "attribution"))
    assert pairs == [("Hi.", "Hola."), ("Bye.", "Adiós.")]
    reversed_path = _write_tsv(tmp_path / "es_en.tsv", [("Hola.", "Hi.")])
    assert read_pairs(reversed_path, fields=("es", "en")) == [("Hi.", "Hola.")]


def test_read_csv_with_header_quotes_and_multiline_field(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text(
        "id,en,es\n"  # 1
        '1,"Hello, world!","¡Hola, mundo!"\n'  # 2
        '2,"He said ""no"".","Dijo ""no""."\n'  # 3
        '3,"Two\nlines","Dos\nlíneas"\n'  # 4-6
        "4,missing a column\n"  # 7
        "5,Fine.,Bien.\n",  # 8
        encoding="utf-8",
    )
    with pytest.warns(MalformedLinesWarning, match=r"line 7: expected 3 fields, found 2"):
        pairs = read_pairs(path)
    assert pairs == [
        ("Hello, world!", "¡Hola, mundo!"),
        ('He said "no".', 'Dijo "no".'),
        ("Two\nlines", "Dos\nlíneas"),
        ("Fine.", "Bien."),
    ]


def test_read_csv_reports_invalid_utf8_and_empty_sides(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_bytes(b"en,es\nCat.,Gato.\nBad \xc3(,Malo.\n,Vac\xc3\xado.\nDog.,Perro.\n")
    with pytest.raises(ValueError, match=r"pairs\.csv, line 3: invalid UTF-8"):
        read_pairs(path, strict=True)
    expected = r"skipped 2 .*line 3: invalid UTF-8; line 4: empty English side"
    with pytest.warns(MalformedLinesWarning, match=expected):
        assert read_pairs(path) == [("Cat.", "Gato."), ("Dog.", "Perro.")]


def test_read_csv_with_named_or_explicit_columns(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("Spanish,English\nGato.,Cat.\n", encoding="utf-8")
    assert read_pairs(path, language_columns={"en": "English", "es": "Spanish"}) == [("Cat.", "Gato.")]
    with pytest.raises(ValueError, match=r"no column 'en'.*\['Spanish', 'English'\]"):
        read_pairs(path)
    headerless = tmp_path / "plain.csv"
    headerless.write_text("Perro.,Dog.\n", encoding="utf-8")
    assert read_pairs(headerless, fields=("es", "en")) == [("Dog.", "Perro.")]
    assert read_pairs(path, fields=("es", "en"), has_header=True) == [("Cat.", "Gato.")]


def test_read_jsonl(tmp_path):
    path = tmp_path / "pairs.jsonl"
    lines = [
        json.dumps({"en": "The sun.", "es": "El sol."}, ensure_ascii=False),  # 1
        "{not json",  # 2
        json.dumps({"en": "Only English."}),  # 3
        json.dumps(["a", "list"]),  # 4
        json.dumps({"en": "Number", "es": 5}),  # 5
        json.dumps({"en": "The moon.", "es": "La luna.", "id": 7}, ensure_ascii=False),  # 6
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.warns(MalformedLinesWarning) as record:
        pairs = read_pairs(path)
    assert pairs == [("The sun.", "El sol."), ("The moon.", "La luna.")]
    message = str(record[0].message)
    assert "skipped 4 malformed" in message
    assert "line 2: not valid JSON" in message
    assert "line 3: no Spanish ('es') field" in message
    assert "line 4: a JSON list, not an object" in message
    assert "line 5: the Spanish ('es') field is a int, not a string" in message
    renamed = tmp_path / "renamed.jsonl"
    renamed.write_text(json.dumps({"source": "Hi.", "target": "Hola."}) + "\n", encoding="utf-8")
    assert read_pairs(renamed, language_columns={"en": "source", "es": "target"}) == [("Hi.", "Hola.")]


def test_unknown_suffix_needs_file_format(tmp_path):
    path = _write_tsv(tmp_path / "pairs.data", [("Hi.", "Hola.")])
    with pytest.raises(ValueError, match="file_format"):
        read_pairs(path)
    assert read_pairs(path, file_format="tsv") == [("Hi.", "Hola.")]


# ------------------------------------------------------------------------------- cleaning, splitting


def test_deduplicate_exact_pairs_only():
    pairs = [("Go.", "Ve."), ("Go.", "Vete."), ("Go.", "Ve."), ("go.", "Ve.")]
    assert deduplicate_pairs(pairs) == [("Go.", "Ve."), ("Go.", "Vete."), ("go.", "Ve.")]


def test_filter_by_characters_ratio_and_tokens():
    pairs = [("Hi.", "Hola."), ("A much longer English sentence.", "Una frase."), ("Yes.", "Sí.")]
    assert filter_pairs(pairs, max_chars=10) == [("Hi.", "Hola."), ("Yes.", "Sí.")]
    assert filter_pairs(pairs, min_chars=4) == [("A much longer English sentence.", "Una frase.")]
    assert filter_pairs(pairs, max_length_ratio=2.0) == [("Hi.", "Hola."), ("Yes.", "Sí.")]
    tokenizer = tiny_tokenizer()
    # Token length = language token + pieces + </s>: the longest form a side takes.
    limit = max(len(tokenizer(text).input_ids) + 1 for text in ("Hi.", "Hola."))
    kept = filter_pairs(pairs, max_tokens=limit, tokenizer=tokenizer)
    assert ("Hi.", "Hola.") in kept and ("A much longer English sentence.", "Una frase.") not in kept
    assert ("Hi.", "Hola.") not in filter_pairs(pairs, max_tokens=limit - 1, tokenizer=tokenizer)
    with pytest.raises(ValueError, match="tokenizer"):
        filter_pairs(pairs, max_tokens=10)


def test_min_chars_filter_is_per_side():
    pairs = [("Hi.", "Hola."), ("Hello.", "Hola.")]
    assert filter_pairs(pairs, min_chars=4) == [("Hello.", "Hola.")]


def test_split_sizes_disjoint_and_independent_of_line_order():
    pairs = _synthetic_pairs(300)
    splits = split_pairs(pairs, validation_size=20, test_size=30, seed=0)
    assert [len(splits[name]) for name in ("train", "validation", "test")] == [250, 20, 30]
    assert sorted(splits["train"] + splits["validation"] + splits["test"]) == sorted(pairs)
    shuffled = pairs[:]
    random.Random(1).shuffle(shuffled)
    assert split_pairs(shuffled, validation_size=20, test_size=30, seed=0) == splits
    other_seed = split_pairs(pairs, validation_size=20, test_size=30, seed=1)
    assert set(other_seed["test"]) != set(splits["test"])
    fractions = split_pairs(pairs, validation_size=0.1, test_size=0.05)
    assert (len(fractions["validation"]), len(fractions["test"])) == (30, 15)


def test_the_same_sentence_never_lands_in_two_splits():
    pairs = _synthetic_pairs(200)
    # Several translations of one English sentence, variants that differ in case/punctuation only, and a
    # Spanish sentence shared by two English ones: each set must stay in one split.
    pairs += [
        ("Go.", "Ve."),
        ("Go.", "Vete."),
        ("Go!", "¡Vete!"),
        ("go", "Váyase."),
        ("Get out.", "Vete."),
        ("Leave.", "Márchate."),
        ("Leave!", "¡Márchate!"),
    ]
    for seed in range(8):
        splits = split_pairs(pairs, validation_size=40, test_size=40, seed=seed)
        where = {pair: name for name, members in splits.items() for pair in members}
        assert len({where[p] for p in pairs[200:205]}) == 1
        assert len({where[p] for p in pairs[205:]}) == 1
        for a in ("train", "validation", "test"):
            for b in ("train", "validation", "test"):
                if a < b:
                    assert not {p.en for p in splits[a]} & {p.en for p in splits[b]}
                    assert not {p.es for p in splits[a]} & {p.es for p in splits[b]}


def test_split_rejects_impossible_sizes():
    pairs = _synthetic_pairs(10)
    with pytest.raises(ValueError, match="no training pair"):
        split_pairs(pairs, validation_size=5, test_size=5)
    with pytest.raises(ValueError, match="fraction"):
        split_pairs(pairs, validation_size=1.5, test_size=1)
    with pytest.raises(ValueError, match="test_size"):
        split_pairs(pairs, validation_size=1, test_size=-1)


def test_prepare_splits_deduplicates_then_filters_only_training():
    pairs = _synthetic_pairs(50) + _synthetic_pairs(50)
    # "Sentence number 9." has 18 characters, "Sentence number 10." 19: only 0-9 pass max_chars=18.
    splits = prepare_splits(pairs, validation_size=5, test_size=5, max_chars=18)
    assert len(splits["validation"]) == 5 and len(splits["test"]) == 5
    held_out_short = sum(len(p.en) <= 18 for p in splits["validation"] + splits["test"])
    assert sorted(splits["train"]) == sorted(
        p for p in _synthetic_pairs(10) if p not in splits["validation"] + splits["test"]
    )
    assert len(splits["train"]) == 10 - held_out_short
    unfiltered = prepare_splits(pairs, validation_size=5, test_size=5)
    assert unfiltered["test"] == splits["test"] and len(unfiltered["train"]) == 40


# ------------------------------------------------------------------------------------------- datasets


def test_both_directions_are_built_from_the_same_pairs():
    splits = {"train": [SentencePair("The cat.", "El gato."), SentencePair("Hi.", "Hola.")]}
    dataset = build_translation_datasets(splits)["train"]
    assert dataset.column_names == ["source", "target", "direction"]
    rows = list(zip(dataset["source"], dataset["target"], dataset["direction"], strict=True))
    assert sorted(rows) == sorted(
        [
            ("El gato.", "The cat.", "es-en"),
            ("Hola.", "Hi.", "es-en"),
            ("The cat.", "El gato.", "en-es"),
            ("Hi.", "Hola.", "en-es"),
        ]
    )
    only = build_translation_datasets(splits, directions=["en-es"])["train"]
    assert set(only["direction"]) == {"en-es"}
    with pytest.raises(ValueError, match="direction"):
        build_translation_datasets(splits, directions=["es-fr"])


def test_tokenize_pairs_and_collate_with_minus_100():
    tokenizer = tiny_tokenizer()
    splits = {"train": [SentencePair(en, es) for en, es in PAIRS[:6]]}
    datasets = build_translation_datasets(splits)
    tokenized = tokenize_pairs(datasets, tokenizer, max_length=32)["train"]
    assert tokenized.column_names == ["input_ids", "attention_mask", "labels"]
    assert len(tokenized) == 12
    for row, source, target, direction in zip(
        tokenized, datasets["train"]["source"], datasets["train"]["target"], datasets["train"]["direction"]
    ):
        expected_lang_id = 4 if direction == "es-en" else 5
        assert row["input_ids"][0] == expected_lang_id
        assert row["input_ids"][-1] == 2 and row["labels"][-1] == 2
        assert 4 not in row["labels"] and 5 not in row["labels"]
        assert row["attention_mask"] == [1] * len(row["input_ids"])
        assert tokenizer.decode(row["input_ids"], skip_special_tokens=True) == source
        assert tokenizer.decode(row["labels"], skip_special_tokens=True) == target
    collator = DataCollatorForSeq2Seq(tokenizer, padding=True)
    batch = collator([tokenized[i] for i in range(4)])
    lengths = [len(tokenized[i]["labels"]) for i in range(4)]
    assert batch["labels"].shape == (4, max(lengths))
    for i, length in enumerate(lengths):
        assert batch["labels"][i, length:].tolist() == [-100] * (max(lengths) - length)
        assert batch["labels"][i, :length].tolist() == tokenized[i]["labels"]
    assert (batch["input_ids"][batch["attention_mask"] == 0] == 0).all()


def test_tokenize_pairs_truncates_and_keeps_eos():
    tokenizer = tiny_tokenizer()
    dataset = build_translation_datasets({"test": [SentencePair(*PAIRS[1])]})["test"]
    tokenized = tokenize_pairs(dataset, tokenizer, max_length=4, keep_text_columns=True)
    assert set(tokenized.column_names) >= {"source", "target", "direction", "input_ids", "labels"}
    for row in tokenized:
        assert len(row["input_ids"]) == 4 and row["input_ids"][-1] == 2
        assert len(row["labels"]) == 4 and row["labels"][-1] == 2
    with pytest.raises(ValueError, match="direction"):
        tokenize_pairs(dataset.remove_columns("direction"), tokenizer)


def test_evaluation_lists_and_write_split_tsv_round_trip(tmp_path):
    pairs = _synthetic_pairs(40)
    splits = prepare_splits(pairs, validation_size=4, test_size=6)
    datasets = build_translation_datasets(splits)
    lists = evaluation_lists(datasets, "test")
    assert set(lists) == {"es-en", "en-es"}
    assert lists["en-es"] == ([p.en for p in splits["test"]], [p.es for p in splits["test"]])
    assert lists["es-en"] == ([p.es for p in splits["test"]], [p.en for p in splits["test"]])
    assert evaluation_lists(splits, "test") == lists
    assert evaluation_lists(splits["test"]) == lists
    with pytest.raises(KeyError, match="dev"):
        evaluation_lists(datasets, "dev")

    path = tmp_path / "out" / "test.tsv"
    assert write_split_tsv(datasets, "test", path) == 6
    assert read_pairs(path) == splits["test"]
    assert write_split_tsv(splits, "validation", tmp_path / "validation.tsv") == 4
    assert read_pairs(tmp_path / "validation.tsv") == splits["validation"]
    with pytest.raises(ValueError, match="tab"):
        write_pairs_tsv([SentencePair("a\tb", "c")], tmp_path / "bad.tsv")
    before = path.read_bytes()  # a failure part-way leaves the previous file whole
    with pytest.raises(ValueError, match="tab"):
        write_pairs_tsv([*splits["test"], SentencePair("a\tb", "c")], path)
    assert path.read_bytes() == before and sorted(p.name for p in path.parent.iterdir()) == ["test.tsv"]


def test_load_translation_datasets_end_to_end(tmp_path):
    path = _write_tsv(tmp_path / "pairs.tsv", PAIRS + PAIRS[:5])  # with 5 exact duplicates
    datasets = load_translation_datasets(path, validation_size=3, test_size=3, seed=3)
    assert set(datasets) == {"train", "validation", "test"}
    # each distinct pair once in one split, in both directions
    assert {name: len(d) for name, d in datasets.items()} == {"train": 2 * (len(PAIRS) - 6), "validation": 6, "test": 6}
    for split in datasets.values():
        assert set(split["direction"]) == {"es-en", "en-es"}
    again = load_translation_datasets(path, validation_size=3, test_size=3, seed=3)
    assert again["test"]["source"] == datasets["test"]["source"]
