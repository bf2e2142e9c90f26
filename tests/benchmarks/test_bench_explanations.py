"""benchmarks/bench_explanations.py end to end on the tiny model and 2 pairs a split, never timed: eflomal gold,
the table, the results JSON, the demo's model summary, and reruns that measure only what the cache lacks
(resumable, also for a cache written before the ablation agreement was measured)."""

import json
import subprocess
import sys

import pytest

from tests.helpers import PROCESS_TIMEOUT, ROOT

# Slow as a whole (tests/README.md, the fast lane): runs a benchmark script in a process
pytestmark = pytest.mark.slow

METHODS = ("attention", "saliency", "value_zeroing")


def _bench(tmp_path, name, *extra):
    argv = [sys.executable, "benchmarks/bench_explanations.py", "--tiny", "--test-pairs", "2"]
    argv += ["--validation-pairs", "2", "--methods", *METHODS]
    argv += ["--work", str(tmp_path / "work"), "--json", str(tmp_path / name), *extra]  # results out of the repo
    completed = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=PROCESS_TIMEOUT)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed, json.loads((tmp_path / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("bench_explanations")
    completed, results = _bench(tmp_path, "explanations", "--model-summary", str(tmp_path / "summary.json"))
    return tmp_path, completed, results


def test_bench_explanations_measures_every_method(first_run):
    tmp_path, completed, results = first_run
    assert set(results["rows"]) == {*METHODS, "random"}
    assert results["settings"]["test_pairs"] == 2 and results["loadavg_start"] and results["loadavg_end"]
    for method in METHODS:
        row = results["rows"][method]
        assert 0 <= row["aer_es-en"]["aer"] <= 1 and 0 <= row["aer_en-es"]["aer"] <= 1
        assert row["ms_per_sentence"] > 0 and row["target_words"] > 0
        assert row["chosen_es-en"]["links"] in ("argmax", "threshold")
    for row in results["rows"].values():
        assert row["ablation_pairs"] == 4 and row["ablation_words"] > 0
        assert 0 <= row["ablation_top1"] <= 1 and -1 <= row["ablation_spearman"] <= 1
    assert set(results["rows"]["random"]["comprehensiveness_per_k"]) == {"1", "2", "3"}
    assert "| saliency |" in completed.stdout and "ablation top-1" in completed.stdout
    assert (tmp_path / "work" / "silver" / "es-en.gold").is_file()
    assert len((tmp_path / "work" / "cache.jsonl").read_text().splitlines()) == 8  # 2 pairs x 2 splits x 2 directions


def test_the_model_summary_holds_the_rows_rounded(first_run):
    tmp_path, _, results = first_run
    summary = json.loads((tmp_path / "summary.json").read_text())
    measured = summary["measured"]
    assert set(measured) == {"test_pairs", "validation_pairs", "directions", "split", "gold", "ks", "date", "command"}
    assert (measured["test_pairs"], measured["validation_pairs"], measured["ks"]) == (2, 2, [1, 2, 3])
    assert measured["directions"] == ["es-en", "en-es"] and "--tiny" in measured["command"]
    assert set(summary["methods"]) == {*METHODS, "random"}
    rows = results["rows"]
    for method in METHODS:
        found = summary["methods"][method]
        assert list(found) == ["aer", "comprehensiveness", "sufficiency", "ms_per_sentence", "ablation_agreement"]
        assert found["aer"] == {d: round(rows[method][f"aer_{d}"]["aer"], 4) for d in ("es-en", "en-es")}
        assert found["ms_per_sentence"] == round(rows[method]["ms_per_sentence"], 1)
    for method, found in summary["methods"].items():
        assert found["comprehensiveness"] == round(rows[method]["comprehensiveness"], 4)
        assert found["sufficiency"] == round(rows[method]["sufficiency"], 4)
        assert found["ablation_agreement"] == round(rows[method]["ablation_top1"], 4)
    assert list(summary["methods"]["random"]) == ["comprehensiveness", "sufficiency", "ablation_agreement"]


def test_a_cache_without_agreement_gets_it_on_rerun_and_nothing_else_is_measured_again(first_run):
    tmp_path, _, results = first_run
    cache_path = tmp_path / "work" / "cache.jsonl"
    entries = [json.loads(line) for line in cache_path.read_text().splitlines()]
    for entry in entries:  # the es-en test pairs as a cache written before the agreement was measured
        if (entry["split"], entry["direction"]) == ("test", "es-en"):
            del entry["agreement"]
    cache_path.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    _, again = _bench(tmp_path, "again")
    added = [json.loads(line) for line in cache_path.read_text().splitlines()[len(entries) :]]
    assert [(e["split"], e["direction"]) for e in added] == [("test", "es-en")] * 2
    assert all(set(e) == {"split", "direction", "index", "agreement"} for e in added)  # no method ran again
    for method, row in results["rows"].items():
        for name in ("ablation_top1", "ablation_spearman", "ablation_words"):
            assert again["rows"][method][name] == pytest.approx(row[name])
