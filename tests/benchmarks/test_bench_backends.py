"""benchmarks/bench_backends.py end to end on a tiny random model and a tiny pairs file, never timed: the four
backends run in interleaved rounds, the table and the JSON have a row each, and CTranslate2 float32 gives the same
translations as PyTorch float32."""

import importlib
import json

import pytest
import torch

from hf_vaswani import VaswaniForConditionalGeneration
from tests.helpers import PAIRS, ROOT, tiny_config, tiny_tokenizer


@pytest.mark.slow
def test_bench_backends_puts_the_four_backends_side_by_side(tmp_path, monkeypatch, capsys):
    pytest.importorskip("ctranslate2")
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    bench = importlib.import_module("bench_backends")
    torch.manual_seed(0)
    model = VaswaniForConditionalGeneration(tiny_config(vocab_size=300)).eval()
    model.generation_config.update(max_length=8, num_beams=4, early_stopping=True)
    model.save_pretrained(tmp_path / "model")
    tiny_tokenizer().save_pretrained(tmp_path / "model")
    data = tmp_path / "pairs.tsv"
    data.write_text("".join(f"{english}\t{spanish}\n" for english, spanish in PAIRS), encoding="utf-8")

    arguments = ["--model", str(tmp_path / "model"), "--data", str(data), "--sentences", "6", "--rounds", "2"]
    assert bench.main([*arguments, "--batch-size", "4", "--json", str(tmp_path / "results")]) == 0
    output = capsys.readouterr().out
    results = json.loads((tmp_path / "results.json").read_text())
    assert list(results["rows"]) == list(bench.CONTENDERS) and results["settings"]["sentences"] == 6
    for name, row in results["rows"].items():
        assert f"| {name} |" in output and row["sentences_per_s"] > 0 and len(row["wall_s"]) == 2
    assert results["rows"]["ct2_fp32"]["same_as_reference"] == 6
    assert results["rows"]["torch_fp32"]["speedup"] == 1.0


def test_quick_mode_is_one_round_of_at_most_32_sentences(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    bench = importlib.import_module("bench_backends")
    args = bench.arguments(["--quick"])
    assert (args.sentences, args.rounds, args.num_beams, args.length_penalty, args.batch_size) == (32, 1, 4, 0.6, 32)
