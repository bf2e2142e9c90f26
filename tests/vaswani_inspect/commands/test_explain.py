"""``hf-vaswani explain`` on the tiny model: the report folder, and every bad input refused in one line before the
model loads; ``align-eval --method M`` for an attribution method."""

from __future__ import annotations

import json
import shutil

import pytest

from hf_vaswani.cli import main


@pytest.fixture(scope="module")
def checkpoint(model, tokenizer, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-checkpoint")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _run(argv, capsys, command):
    try:
        code = main(argv)
    except SystemExit as exited:
        code = exited.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err
    if code != 2:
        return code, None, captured.out
    errors = [line for line in captured.err.splitlines() if line.startswith(f"hf-vaswani {command}: error: ")]
    assert len(errors) == 1, captured.err
    return code, errors[0], captured.out


def test_explain_writes_matrices_heatmaps_shares_and_the_table(checkpoint, tmp_path, capsys):
    out = tmp_path / "report"
    argv = ["explain", "el gato negro", "--target", "the black cat", "--model", str(checkpoint), "--out", str(out)]
    code, _, printed = _run([*argv, "--method", "attention", "--method", "saliency"], capsys, "explain")
    assert code == 0 and "report:" in printed
    names = {path.name for path in out.iterdir()}
    assert {"attributions.json", "heatmap-attention.png", "heatmap-saliency.png", "table.md", "table.json"} <= names
    assert "source-share-saliency.png" in names and "source-share-attention.png" not in names
    found = json.loads((out / "attributions.json").read_text())
    assert set(found) == {"attention", "saliency"}
    assert found["saliency"]["source_words"] == ["el", "gato", "negro"] and len(found["saliency"]["matrix"]) == 3
    assert len(found["saliency"]["source_share"]) == 3 and found["attention"]["source_share"] is None
    table = json.loads((out / "table.json").read_text())
    assert [row["method"] for row in table] == ["attention", "saliency"]
    assert "| 0 | saliency |" in (out / "table.md").read_text()


def test_explain_pairs_get_a_folder_each_and_the_default_method_is_the_models_aligner(checkpoint, tmp_path, capsys):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("the black cat\tel gato negro\nthe red house\tla casa roja\n", encoding="utf-8")
    out = tmp_path / "report"
    code, _, _ = _run(["explain", "--pairs", str(pairs), "--model", str(checkpoint), "--out", str(out)], capsys, "")
    assert code == 0
    assert (out / "00" / "heatmap-attention.png").is_file() and (out / "01" / "attributions.json").is_file()
    rows = json.loads((out / "table.json").read_text())
    assert [row["target"] for row in rows] == ["the black cat", "the red house"]


#: (arguments, message): refused in one line before the model is loaded.
_BAD = [
    (["el gato", "--pairs", "PAIRS"], "not both"),
    ([], "nothing to explain"),
    (["el gato", "--method", "guess"], "invalid choice"),
    (["el gato", "la casa", "--target", "the cat"], "--target goes with exactly one"),
    (["--pairs", "MISSING"], "no such file"),
    (["   "], "empty"),
    (["el gato", "--direction", "fr-de"], "fr-de"),
    (["el gato", "--max-pairs", "2"], "--max-pairs goes with --pairs"),
]


@pytest.mark.parametrize(("options", "message"), _BAD)
def test_explain_refuses_bad_input_before_loading_the_model(options, message, no_model, tmp_path, capsys):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("the cat\tel gato\n", encoding="utf-8")
    options = [str(pairs) if o == "PAIRS" else str(tmp_path / "nope.tsv") if o == "MISSING" else o for o in options]
    code, line, _ = _run(["explain", *options, "--out", str(tmp_path / "out")], capsys, "explain")
    assert code == 2 and message in line


def test_explain_checks_the_report_folder_before_loading_the_model(no_model, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("keep me")
    code, line, _ = _run(["explain", "el gato", "--out", str(out)], capsys, "explain")
    assert code == 2 and "--overwrite" in line and (out / "old.txt").read_text() == "keep me"


def test_align_eval_scores_an_attribution_method_and_writes_it_only_when_it_wins(checkpoint, tmp_path, capsys):
    (tmp_path / "es.txt").write_text("el gato negro\nla casa roja?\n", encoding="utf-8")
    (tmp_path / "en.txt").write_text("the black cat\nthe red house?\n", encoding="utf-8")
    (tmp_path / "gold.txt").write_text("# 1-indexed\n1-1 2-3 3-2\n1-1 2-3 3p2 4-4\n", encoding="utf-8")
    model_dir = tmp_path / "model"
    shutil.copytree(checkpoint, model_dir)
    before = json.loads((model_dir / "config.json").read_text())
    files = ["--gold", str(tmp_path / "gold.txt"), "--source-file", str(tmp_path / "es.txt")]
    files += ["--target-file", str(tmp_path / "en.txt"), "--model", str(model_dir)]
    scores = tmp_path / "scores.json"
    argv = ["align-eval", *files, "--method", "attention_norm", "--json", str(scores), "--write-config", str(model_dir)]
    code, _, printed = _run(argv, capsys, "align-eval")
    assert code == 0 and "attention_norm as an aligner on 2 sentences" in printed and "the model's aligner" in printed
    result = json.loads(scores.read_text())
    assert result["method"] == "attention_norm" and result["table"][0]["links"] in ("argmax", "threshold")
    after = json.loads((model_dir / "config.json").read_text())
    if result["wins"]:
        assert after["alignment"]["method"] == "attention_norm" and "wrote alignment" in printed
    else:
        assert after == before and "left as it is" in printed
