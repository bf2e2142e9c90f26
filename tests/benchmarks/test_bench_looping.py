"""benchmarks/bench_looping.py: what counts as a loop, and the script end to end on a tiny model, never timed."""

import json
import subprocess
import sys

import pytest

from hf_vaswani.testing import tiny_model
from tests.helpers import PAIRS, PROCESS_TIMEOUT, ROOT, tiny_tokenizer

sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_looping import is_looping  # noqa: E402

# Slow as a whole (tests/README.md, the fast lane): runs a benchmark script in a process
pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "text",
    ["la repósopululululululumpsa", "He built an exact burddddddddy of the cave.", "ma ma ma ma ma", "samamamamamon"],
)
def test_loops_are_found(text):
    assert is_looping(text)


@pytest.mark.parametrize(
    "text", ["The black cat sleeps.", "No, no, no.", "It costs 1000000 dollars...", "Hahaha!", "¡¡¡Hola!!!!"]
)
def test_ordinary_sentences_are_not_loops(text):
    assert not is_looping(text)


def test_bench_looping_compares_settings_on_a_tiny_model(tmp_path):
    tokenizer = tiny_tokenizer()
    tiny_model(len(tokenizer)).save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    (tmp_path / "pairs.tsv").write_text("".join(f"{en}\t{es}\n" for en, es in PAIRS[:3]), encoding="utf-8")
    name = str(tmp_path / "looping")  # an absolute name: the results stay out of benchmarks/results
    command = [sys.executable, "benchmarks/bench_looping.py", "--pairs", str(tmp_path / "pairs.tsv")]
    command += ["--model", str(tmp_path / "model"), "--settings", "none", "no_repeat_ngram_size=3", "--json", name]
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=PROCESS_TIMEOUT)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    results = json.loads((tmp_path / "looping.json").read_text())
    assert list(results["settings"]) == ["none", "no_repeat_ngram_size=3"] and results["count"] == 3
    for row in results["settings"].values():
        assert set(row) == {"es-en", "en-es"} and all(row[d]["looping"] >= 0 for d in row)
    assert "no_repeat_ngram_size=3 |" in completed.stdout
