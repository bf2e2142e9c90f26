"""write_report, and the `inspect` / `align-eval` / `compare-bert` command line (the static matplotlib views are
tested in tests/vaswani_inspect/test_plots.py)."""

import json
import shutil
import subprocess
import sys
from dataclasses import replace

import pytest

from hf_vaswani.cli import main
from tests.helpers import PROCESS_TIMEOUT, unwritable_folder
from vaswani_inspect import (
    AttentionRecord,
    align,
    target_words,
    write_report,
)
from vaswani_inspect.alignment import write_alignment_config
from vaswani_inspect.commands import add_parser
from vaswani_inspect.lens import decoder_lens, logit_lens


@pytest.fixture(scope="module")
def checkpoint(model, tokenizer, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-checkpoint")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_cli_inspect_writes_the_report(checkpoint, tmp_path, capsys):
    out = tmp_path / "report"
    status = main(
        [
            "inspect",
            "el gato negro",
            "--direction",
            "es-en",
            "--out",
            str(out),
            "--model",
            str(checkpoint),
            "--num-beams",
            "2",
            "--max-new-tokens",
            "5",
        ]
    )
    assert status == 0
    printed = capsys.readouterr().out
    assert "el gato negro ->" in printed and "alignment:" in printed
    for name in (
        "head_view.html",
        "model_view.html",
        "index.html",
        "record.json",
        "alignment.pharaoh",
        "alignment.txt",
        "head_stats.csv",
        "head_stats.md",
        "heatmap_cross_layer0.png",
        "heatmap_encoder_layer1.png",
        "heatmap_decoder_layer1.png",
        "heads_cross_layer1.png",
        "heatmap_cross_words.png",
        "alignment.png",
        "alignment_links.png",
        "rollout_encoder.png",
    ):
        assert (out / name).is_file(), name
    saved = AttentionRecord.load(out / "record.json")
    assert saved.generate_kwargs == {"num_beams": 2, "max_new_tokens": 5}
    assert saved.direction == "es-en" and saved.source_tokens[0] == ">>en<<"
    pharaoh = (out / "alignment.pharaoh").read_text().split()
    assert len(pharaoh) == len(target_words(saved))
    assert "tag" in (out / "head_stats.csv").read_text().splitlines()[0]
    assert (out / "alignment.txt").read_text().startswith("# mean of layers, all heads, argmax;")


def _align_eval_files(folder):
    (folder / "es.txt").write_text("el gato negro\nla casa roja?\n", encoding="utf-8")
    (folder / "en.txt").write_text("the black cat\nthe red house?\n", encoding="utf-8")
    # "?" is a word of its own: word 4 (1-indexed) on both sides of the second pair.
    (folder / "gold.txt").write_text("# 1-indexed\n1-1 2-3 3-2\n1-1 2-3 3p2 4-4\n", encoding="utf-8")
    return ["--gold", str(folder / "gold.txt"), "--source-file", str(folder / "es.txt")] + [
        "--target-file",
        str(folder / "en.txt"),
    ]


def test_cli_align_eval_searches_layers_heads_and_shift(checkpoint, tmp_path, capsys):
    scores = tmp_path / "scores.json"
    status = main(["align-eval", *_align_eval_files(tmp_path), "--model", str(checkpoint), "--json", str(scores)])
    assert status == 0
    printed = capsys.readouterr().out
    # 2 layers and mean x 4 heads and all x shift, then the pairs of the 8 best
    assert "<- best" in printed and "58 configurations on 2 sentences" in printed
    result = json.loads(scores.read_text())
    assert len(result["table"]) == (2 + 1) * (4 + 1) * 2 + 28
    assert result["table"][0]["aer"] == result["scores"]["aer"] == min(row["aer"] for row in result["table"])
    best = result["best"]
    assert {"layer", "heads", "shift"} <= set(best) <= {"layer", "heads", "shift", "average_with"}
    assert {k: result["table"][0][k] for k in best} == best
    assert result["settings"]["skip_punctuation"] is False
    # --pairs-of-best 0: the single readings only.
    assert main(["align-eval", *_align_eval_files(tmp_path), "--model", str(checkpoint), "--pairs-of-best", "0"]) == 0
    assert "30 configurations on 2 sentences" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        main(["align-eval", *_align_eval_files(tmp_path), "--model", str(checkpoint), "--pairs-of-best", "-1"])
    assert refused.value.code == 2 and "expected a whole number, 0 or more" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_align_eval_writes_the_best_configuration_into_the_model(checkpoint, tmp_path, capsys):
    from hf_vaswani.configuration_vaswani import VaswaniConfig
    from vaswani_inspect import extract, load_model_and_tokenizer

    model_dir = tmp_path / "model"
    shutil.copytree(checkpoint, model_dir)
    before = json.loads((model_dir / "config.json").read_text())
    scores = tmp_path / "scores.json"
    arguments = ["align-eval", *_align_eval_files(tmp_path), "--model", str(model_dir), "--json", str(scores)]
    assert main([*arguments, "--skip-punctuation", "--write-config", str(model_dir)]) == 0
    assert "wrote alignment" in capsys.readouterr().out
    best = json.loads(scores.read_text())["best"]
    after = json.loads((model_dir / "config.json").read_text())
    assert after == {**before, "alignment": best}  # only the alignment field changed
    assert VaswaniConfig.from_pretrained(model_dir).alignment == best
    model, tokenizer = load_model_and_tokenizer(model_dir)
    record = extract(model, tokenizer, "el gato negro", "the black cat", direction="es-en")
    assert record.alignment == best
    averaged = best.get("average_with", [])
    assert align(record) == align(record, best["layer"], best["heads"], shift=best["shift"], average_with=averaged)
    # inspect reads the alignment the model carries.
    out = tmp_path / "report"
    inspect = ["inspect", "el gato negro", "--target", "the black cat", "--out", str(out), "--model", str(model_dir)]
    assert main(inspect) == 0
    header = (out / "alignment.txt").read_text().splitlines()[0]
    assert header.startswith("# layer" if best["layer"] != "mean" else "# mean of layers")
    assert (out / "alignment.pharaoh").read_text().strip() == " ".join(f"{i}-{j}" for i, j in align(record))


def test_write_alignment_config_refuses_what_the_model_cannot_hold(checkpoint, tmp_path, capsys):
    model_dir = tmp_path / "model"
    shutil.copytree(checkpoint, model_dir)
    with pytest.raises(ValueError, match="VaswaniConfig.alignment must be"):
        write_alignment_config(model_dir, {"layer": 5, "heads": "all", "shift": False})
    with pytest.raises(FileNotFoundError, match="No model config"):
        write_alignment_config(tmp_path, {"layer": 0, "heads": "all", "shift": False})
    (tmp_path / "config.json").write_text('{"model_type": "marian"}', encoding="utf-8")
    with pytest.raises(ValueError, match="'marian' model, not a 'vaswani' one"):
        write_alignment_config(tmp_path, {"layer": 0, "heads": "all", "shift": False})
    missing = tmp_path / "nowhere"
    arguments = ["align-eval", *_align_eval_files(tmp_path), "--model", str(checkpoint)]
    assert main([*arguments, "--write-config", str(missing)]) == 2
    assert "no model config" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_inspect_lens_writes_the_lenses(checkpoint, model, tokenizer, tmp_path, capsys):
    out = tmp_path / "report"
    arguments = ["inspect", "el gato negro", "--target", "the black cat", "--direction", "es-en", "--out", str(out)]
    assert main([*arguments, "--model", str(checkpoint), "--max-new-tokens", "4", "--lens"]) == 0
    written = json.loads((out / "lens.json").read_text(encoding="utf-8"))
    expected = logit_lens(model, tokenizer, "el gato negro", direction="es-en", target="the black cat")
    assert written["logit_lens"]["top_tokens"] == expected.top_tokens
    assert written["logit_lens"]["target_ids"] == AttentionRecord.load(out / "record.json").target_ids
    lines = (out / "lens.csv").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + len(expected.layers) * expected.positions
    decoded = decoder_lens(model, tokenizer, "el gato negro", direction="es-en", max_new_tokens=4)
    assert written["decoder_lens"]["translations"] == decoded.translations
    assert (out / "lens.png").stat().st_size > 0 and (out / "lens.svg").read_text().startswith("<?xml")


@pytest.mark.slow
def test_cli_inspect_alignment_options(checkpoint, tmp_path):
    out = tmp_path / "report"
    arguments = ["inspect", "¿dónde está la casa?", "--target", "where is the house?", "--out", str(out)]
    arguments += ["--model", str(checkpoint)]
    options = ["--alignment-layer", "1", "--alignment-heads", "2,3", "--shift", "--skip-punctuation"]
    assert main([*arguments, *options]) == 0
    lines = (out / "alignment.txt").read_text().splitlines()
    assert lines[0].startswith("# layer 1, heads 2, 3, shifted, punctuation skipped, argmax;")
    linked = [line.split("\t")[1:] for line in lines[1:]]
    assert sorted(target for _, target in linked) == ["house", "is", "the", "where"]  # "?" gets no link
    assert not {"¿", "?"} & {source for source, _ in linked}
    saved = AttentionRecord.load(out / "record.json")
    expected = align(saved, 1, [2, 3], shift=True, skip_punctuation=True)
    assert (out / "alignment.pharaoh").read_text().strip() == " ".join(f"{i}-{j}" for i, j in expected)
    with pytest.raises(SystemExit) as exited:  # a usage error: argparse exits with code 2
        main([*arguments, "--alignment-heads", "two"])
    assert exited.value.code == 2


def test_cli_errors_are_one_line(checkpoint, tmp_path, capsys):
    assert main(["inspect", "   ", "--out", str(tmp_path), "--model", str(checkpoint)]) == 2
    assert "empty or whitespace" in capsys.readouterr().err
    assert main(["inspect", "hola", "--out", str(tmp_path), "--model", str(tmp_path / "missing")]) == 2
    assert "No model checkpoint" in capsys.readouterr().err


def test_add_parser_registers_every_subcommand():
    import argparse

    parser = argparse.ArgumentParser(prog="hf-vaswani")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["inspect", "el gato negro", "--direction", "es-en", "--out", "r", "--num-beams", "4"])
    assert args.func.__name__ == "run_inspect" and args.num_beams == 4 and args.text == ["el gato negro"]
    args = parser.parse_args(["align-eval", "--gold", "g", "--source-file", "s", "--target-file", "t"])
    assert args.func.__name__ == "run_align_eval" and args.index_base is None
    assert (args.top, args.write_config, args.skip_punctuation) == (10, None, False)
    args = parser.parse_args(["inspect", "x", "--out", "r"])
    assert (args.alignment_layer, args.alignment_heads, args.shift, args.skip_punctuation) == (None, None, None, False)
    assert parser.parse_args(["inspect", "x", "--out", "r", "--no-shift"]).shift is False
    args = parser.parse_args(["compare-bert", "--sentences", "s", "--out", "o"])
    assert args.func.__name__ == "run_compare_bert" and args.bert == "bert-base-uncased"


@pytest.mark.slow
def test_python_dash_m_entry_point(capsys):
    """``python -m vaswani_inspect inspect --help`` in a real process finds the subcommand and its options; the
    list of subcommands, which the same `main` prints, is read in-process (another process would spend seconds
    importing the package again)."""
    result = subprocess.run(
        [sys.executable, "-m", "vaswani_inspect", "inspect", "--help"],
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
    )
    assert result.returncode == 0 and "--alignment-layer" in result.stdout
    from vaswani_inspect.__main__ import main as module_main

    with pytest.raises(SystemExit) as exited:
        module_main(["--help"])
    listed = capsys.readouterr().out
    assert exited.value.code == 0 and "inspect" in listed and "align-eval" in listed


@pytest.mark.slow
def test_report_of_an_empty_translation(record, tmp_path):
    empty = replace(
        record,
        target_tokens=["<s>", "</s>"],
        target_ids=record.target_ids[:1] + record.target_ids[-1:],
        decoder=record.decoder[:, :, :2, :2] / record.decoder[:, :, :2, :2].sum(-1, keepdims=True),
        cross=record.cross[:, :, :2],
        target_text="",
    )
    written = write_report(empty, tmp_path / "empty", image_format="svg")
    assert "alignment" not in written and (tmp_path / "empty" / "alignment.pharaoh").read_text() == "\n"
    assert "no alignment" in (tmp_path / "empty" / "alignment.txt").read_text()
    with pytest.raises(ValueError, match="layer 5 does not exist"):
        write_report(record, tmp_path / "bad", alignment_layer=5)
    assert not (tmp_path / "bad").exists()


# ----------------------------------------------------------------------------------------------------------------
# Checked before any work, written whole: arguments, input files and outputs of inspect and align-eval
# ----------------------------------------------------------------------------------------------------------------


def _run(argv, capsys, command):
    """(exit code, the one error line or None, stdout) of ``hf-vaswani ARGV`` run in-process; usage errors too."""
    try:
        code = main(argv)
    except SystemExit as exited:  # argparse's usage errors
        code = exited.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err
    if code != 2:
        return code, None, captured.out
    lines = [line for line in captured.err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(f"hf-vaswani {command}: error: ")]
    assert len(errors) == 1, captured.err
    return code, errors[0], captured.out


@pytest.fixture
def no_extraction(monkeypatch):
    """Fail the test if the command runs the model: the case must be refused once it is loaded, before."""
    import importlib

    def extract(*args, **kwargs):
        raise AssertionError("the model ran before the bad input was refused")

    monkeypatch.setattr(importlib.import_module("vaswani_inspect.extract"), "extract", extract)


#: inspect: (options, source text, message); refused before the model is loaded.
INSPECT_ERRORS = {
    "direction": (["--direction", "fr-en"], "el gato", "Unknown translation direction 'fr-en'"),
    "device": (["--device", "bogus"], "el gato", "Unknown device 'bogus': expected a torch device"),
    "missing-gpu": (["--device", "cuda:7"], "el gato", "Device 'cuda:7'"),
    "heads": (["--alignment-heads", "a"], "el gato", "argument --alignment-heads: expected 'all' or comma-separated"),
    "layer": (["--alignment-layer", "last"], "el gato", "argument --alignment-layer: expected a layer number"),
    "beams": (["--num-beams", "65"], "el gato", "argument --num-beams: expected a beam size from 1 to 64"),
    "new-tokens": (["--max-new-tokens", "0"], "el gato", "argument --max-new-tokens: expected a positive integer"),
    "not-utf8": ([], "el gato \udcff", 'argument text: "el gato \\xff" is not valid UTF-8'),
    "language-token": ([], ">>en<< el gato", "Sentence 1: The source text contains a language token"),
    "blank": ([], "  ", "Sentence 1 is empty or whitespace only"),
    "unwritable": (["--out", "{ro}/report"], "el gato", "Cannot write the report folder"),
    "non-empty": (["--out", "{full}"], "el gato", "is not empty: choose a new folder, or pass --overwrite"),
    "holds-the-model": (["--out", "{tmp}", "--overwrite"], "el gato", "holds the input"),
}


@pytest.mark.parametrize("case", list(INSPECT_ERRORS))
def test_inspect_checks_arguments_and_output_before_loading_the_model(case, no_model, tmp_path, capsys):
    (tmp_path / "model").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("an earlier report")
    options, text, message = INSPECT_ERRORS[case]
    options = [o.format(ro=unwritable_folder(tmp_path), full=tmp_path / "full", tmp=tmp_path) for o in options]
    argv = ["inspect", text, "--out", str(tmp_path / "report"), "--model", str(tmp_path / "model"), *options]
    code, line, out = _run(argv, capsys, "inspect")
    assert code == 2 and message in line, line
    assert out == "" and sorted(p.name for p in tmp_path.iterdir() if p.name != "read-only") == ["full", "model"]
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["keep.txt"]


#: inspect: (options, source text, message); refused once the model is loaded, before it runs.
INSPECT_MODEL_LIMITS = {
    "new-tokens": (["--max-new-tokens", "1000"], "el gato", "max_new_tokens=1000 is more than this model can generate"),
    "layer": (["--alignment-layer", "2"], "el gato", "--alignment-layer 2: the model has 2 decoder layers, 0 to 1"),
    "heads": (["--alignment-heads", "0,4"], "el gato", "--alignment-heads 0,4: the model's cross-attention has 4"),
    "unknown-characters": ([], "😀😀😀", "Most characters of sentence 1 (😀😀😀) are unknown to the model"),
}


@pytest.mark.parametrize("case", list(INSPECT_MODEL_LIMITS))
def test_inspect_checks_the_model_limits_before_running_it(case, checkpoint, no_extraction, tmp_path, capsys):
    options, text, message = INSPECT_MODEL_LIMITS[case]
    argv = ["inspect", text, "--out", str(tmp_path / "report"), "--model", str(checkpoint), *options]
    code, line, _ = _run(argv, capsys, "inspect")
    assert code == 2 and message in line, line
    assert not (tmp_path / "report").exists()


@pytest.mark.slow
def test_inspect_replaces_a_report_only_with_overwrite_and_whole(checkpoint, tmp_path, capsys):
    out = tmp_path / "report"
    argv = ["inspect", "el gato negro", "la casa", "--out", str(out), "--model", str(checkpoint)]
    argv += ["--max-new-tokens", "4"]
    assert _run(argv, capsys, "inspect")[0] == 0
    assert sorted(p.name for p in out.iterdir()) == ["00", "01"]  # one subfolder per sentence
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    code, line, _ = _run([*argv, "--format", "svg"], capsys, "inspect")
    assert code == 2 and "is not empty: choose a new folder, or pass --overwrite" in line
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    again = ["inspect", "el gato negro", *argv[3:], "--format", "svg", "--overwrite"]
    code, _, printed = _run(again, capsys, "inspect")
    assert code == 0 and f"report: {out / 'index.html'}" in printed  # the final path, not a temporary one
    assert not list(out.glob("*.png")) and not (out / "00").exists()  # the earlier run's files are gone
    assert (out / "alignment.svg").is_file() and (out / "index.html").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # no temporary sibling left


#: align-eval: (options, what to write into the input files, message); refused before the model is loaded.
ALIGN_EVAL_ERRORS = {
    "direction": (["--direction", "fr-en"], {}, "Unknown translation direction 'fr-en'"),
    "device": (["--device", "bogus"], {}, "Unknown device 'bogus'"),
    "threshold": (["--threshold", "0"], {}, "argument --threshold: expected a weight above 0 and at most 1"),
    "threshold-without-its-method": (["--threshold", "0.3"], {}, "--threshold is read by --method threshold only"),
    "top": (["--top", "0"], {}, "argument --top: expected a positive integer"),
    "gold-not-utf8": ([], {"gold.txt": b"0-0\n1-1 \xff\n"}, "gold.txt' is not valid UTF-8 at line 2"),
    "source-not-utf8": ([], {"es.txt": b"el ni\xf1o\nla casa roja?\n"}, "es.txt' is not valid UTF-8 at line 1"),
    "missing-target": (["--target-file", "{tmp}/missing.txt"], {}, "No target file at"),
    "json-is-the-gold": (["--json", "{tmp}/gold.txt"], {}, "is also an input of this command"),
    "json-unwritable": (["--json", "{ro}/search.json"], {}, "Cannot write the JSON file"),
    "json-is-the-config": (
        ["--json", "{tmp}/model/config.json", "--write-config", "{tmp}/model"],
        {},
        "are the same path",
    ),
    "config-not-ours": (
        ["--write-config", "{tmp}/model"],
        {"model/config.json": b'{"model_type": "marian"}'},
        "is the config of a 'marian' model",
    ),
}


@pytest.mark.parametrize("case", list(ALIGN_EVAL_ERRORS))
def test_align_eval_checks_inputs_and_outputs_before_loading_the_model(case, no_model, tmp_path, capsys):
    options, contents, message = ALIGN_EVAL_ERRORS[case]
    files = _align_eval_files(tmp_path)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text('{"model_type": "vaswani"}')
    for name, data in contents.items():
        (tmp_path / name).write_bytes(data)
    options = [o.format(tmp=tmp_path, ro=unwritable_folder(tmp_path)) for o in options]
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    code, line, out = _run(["align-eval", *files, "--model", str(tmp_path / "model"), *options], capsys, "align-eval")
    assert code == 2 and message in line, line
    assert out == "" and {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_align_eval_refuses_gold_links_outside_the_sentences_naming_the_line(checkpoint, tmp_path, capsys):
    """Links past the words of their pair (another tokenisation, the wrong index base) are refused, naming the file
    and line, before anything is scored or written: never an AER of 1.000 without a word."""
    files = _align_eval_files(tmp_path)
    gold = tmp_path / "gold.txt"
    gold.write_text("# 1-indexed\n1-1 2-3 3-2\n1-1 2-3 9-2 4-4\n", encoding="utf-8")
    argv = ["align-eval", *files, "--model", str(checkpoint), "--json", str(tmp_path / "search.json")]
    code, line, out = _run(argv, capsys, "align-eval")
    assert code == 2 and out == "", line
    assert f"Gold sentence 2 ({gold}, line 3) links source word 8 to target word 1 (written 9-2, 1-based)" in line
    assert "the pair has 4 source words (la casa roja ?)" in line
    assert not (tmp_path / "search.json").exists()
