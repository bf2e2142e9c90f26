"""benchmarks/bench_explanations.py end to end on the tiny model and 2 pairs a split, never timed: eflomal gold,
the table, the results JSON, and a rerun that measures nothing again (resumable)."""

import json
import subprocess
import sys

from tests.helpers import ROOT


def test_bench_explanations_measures_every_method_and_resumes(tmp_path):
    name = str(tmp_path / "explanations")  # an absolute name: the results stay out of benchmarks/results
    argv = [sys.executable, "benchmarks/bench_explanations.py", "--tiny", "--test-pairs", "2"]
    argv += ["--validation-pairs", "2", "--methods", "attention", "saliency", "value_zeroing"]
    argv += ["--work", str(tmp_path / "work"), "--json", name]
    completed = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    results = json.loads((tmp_path / "explanations.json").read_text())
    assert set(results["rows"]) == {"attention", "saliency", "value_zeroing", "random"}
    assert results["settings"]["test_pairs"] == 2 and results["loadavg_start"] and results["loadavg_end"]
    for method in ("attention", "saliency", "value_zeroing"):
        row = results["rows"][method]
        assert 0 <= row["aer_es-en"]["aer"] <= 1 and 0 <= row["aer_en-es"]["aer"] <= 1
        assert row["ms_per_sentence"] > 0 and row["target_words"] > 0
        assert row["chosen_es-en"]["links"] in ("argmax", "threshold")
    assert set(results["rows"]["random"]["comprehensiveness_per_k"]) == {"1", "2", "3"}
    assert "| saliency |" in completed.stdout and (tmp_path / "work" / "silver" / "es-en.gold").is_file()
    cache = (tmp_path / "work" / "cache.jsonl").read_text().splitlines()
    assert len(cache) == 8  # 2 pairs x 2 splits x 2 directions
    again = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len((tmp_path / "work" / "cache.jsonl").read_text().splitlines()) == 8
