"""benchmarks/bench_patching.py end to end on the tiny model and its corpus, never timed; its pair builder and its
agreement measure on their own."""

import importlib
import json
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import PROCESS_TIMEOUT, ROOT


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module("bench_patching")


@pytest.mark.slow  # a benchmark script in a process
def test_bench_patching_compares_both_methods_on_every_site(tmp_path):
    name = str(tmp_path / "patching")  # an absolute name: the results stay out of benchmarks/results
    completed = subprocess.run(
        [sys.executable, "benchmarks/bench_patching.py", "--tiny", "--pairs", "2", "--ablation-pairs", "1"]
        + ["--directions", "es-en", "--json", name],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    results = json.loads((tmp_path / "patching.json").read_text())
    found = results["directions"]["es-en"]
    assert found["pairs"] == 2 and len(found["per_pair"]) == 2
    from vaswani_inspect.patching import SITES

    assert set(found["sites"]) == set(SITES)
    for pair in found["per_pair"]:
        assert pair["clean"] != pair["corrupted"] and pair["substitute"] in pair["corrupted"]
        assert pair["attribution_passes"] == 3 and pair["exhaustive_passes"] > pair["exhaustive_model_calls"] > 2
    assert found["cost"]["exhaustive"]["ms_per_pair_mean"] > 0
    assert set(found["heads"]) == {"exhaustive", "attribution"}  # the tiny model: no head_importance
    assert found["heads"]["exhaustive"]["all"]["n"] == 1
    assert "| es-en | encoder |" in completed.stdout and "| es-en | attribution |" in completed.stdout


def test_substitution_pairs_change_one_word_and_keep_the_number_of_pieces(bench):
    from vaswani_inspect.testing import sentence_pairs, tiny_tokenizer

    tokenizer = tiny_tokenizer()
    sources = [spanish for spanish, _ in sentence_pairs()]
    words = bench.vocabulary(tokenizer, sources, 1)
    pairs = bench.substitution_pairs(tokenizer, sources, words, 5, seed=0)
    assert pairs and pairs == bench.substitution_pairs(tokenizer, sources, words, 5, seed=0)  # seeded
    for pair in pairs:
        clean, corrupted = pair["clean"].split(), pair["corrupted"].split()
        changed = [i for i, (a, b) in enumerate(zip(clean, corrupted)) if a != b]
        assert len(clean) == len(corrupted) and changed == [pair["position"]]
        assert len(tokenizer(pair["clean"]).input_ids) == len(tokenizer(pair["corrupted"]).input_ids)
        assert bench._pieces(tokenizer, pair["word"].lower()) == bench._pieces(tokenizer, pair["substitute"].lower())


def test_correlations_skip_undefined_cells_and_name_the_first_cell(bench):
    a = np.array([[0.1, 0.9], [np.nan, 0.3]])
    same = bench.correlations(a, a)
    assert same["pearson"] == pytest.approx(1.0) and same["spearman"] == pytest.approx(1.0)
    assert same["top1"] and same["top1_in_top3"] and same["best_share"] == 1.0
    found = bench.correlations(
        a, np.array([[0.9, 0.1], [0.5, 0.3]])
    )  # NaN left out: (0.1, 0.9, 0.3) vs (0.9, 0.1, 0.3)
    assert found["top1"] is False and found["spearman"] == pytest.approx(-1.0)
    assert found["top1_in_top3"] and found["best_share"] == pytest.approx(0.1 / 0.9)  # b's first cell is a's least
    assert bench.correlations(np.ones(3), np.arange(3.0))["pearson"] is None  # constant: undefined
