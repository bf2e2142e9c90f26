"""Static matplotlib views, write_report, and the `inspect` / `align-eval` / `compare-bert` command line."""

import json
import subprocess
import sys
from dataclasses import replace

import pytest
from matplotlib.figure import Figure

from hf_vaswani.cli import main
from vaswani_inspect import (
    AttentionRecord,
    plot_alignment,
    plot_heatmap,
    plot_layer_grid,
    save_figure,
    source_words,
    target_words,
    write_report,
)
from vaswani_inspect.commands import add_parser


@pytest.fixture(scope="module")
def checkpoint(model, tokenizer, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-checkpoint")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_heatmap_has_tokens_on_both_axes(record, tmp_path):
    figure = plot_heatmap(record, "cross", 1, 2)
    assert isinstance(figure, Figure)
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == record.source_tokens
    assert [t.get_text() for t in ax.get_yticklabels()] == record.target_tokens
    assert "layer 1, head 2" in ax.get_title()
    words = plot_heatmap(record, "encoder", "mean", "mean", words=True, special_tokens="drop").axes[0]
    assert [t.get_text() for t in words.get_xticklabels()] == ["el", "gato", "negro"]
    png = save_figure(figure, tmp_path / "cross.png")
    assert png.read_bytes().startswith(b"\x89PNG")
    svg = save_figure(plot_layer_grid(record, "decoder", 0), tmp_path / "grid.svg")
    assert "<svg" in svg.read_text()
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        save_figure(figure, tmp_path / "cross.pdf")


def test_layer_grid_and_alignment_picture(record):
    grid = plot_layer_grid(record, "cross", -1)
    assert sum(1 for ax in grid.axes if ax.get_title().startswith("head")) == 4
    picture = plot_alignment(record)
    ax = picture.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == source_words(record) == ["el", "gato", "negro"]
    assert [t.get_text() for t in ax.get_yticklabels()] == target_words(record) == ["the", "black", "cat"]
    assert len(ax.patches) == 3  # one argmax link per target word


def test_dollar_tokens_do_not_break_matplotlib(record, tmp_path):
    tokens = list(record.source_tokens)
    tokens[1] = "$x"
    figure = plot_heatmap(replace(record, source_tokens=tokens))
    assert [t.get_text() for t in figure.axes[0].get_xticklabels()][1] == r"\$x"
    save_figure(figure, tmp_path / "dollar.png")


def test_bad_plot_arguments(record):
    with pytest.raises(ValueError, match="layer 4 does not exist"):
        plot_heatmap(record, "cross", 4, 0)
    with pytest.raises(ValueError, match="head 4 does not exist"):
        plot_heatmap(record, "encoder", 0, 4)
    with pytest.raises(ValueError, match="Unknown attention kind"):
        plot_layer_grid(record, "both", 0)
    with pytest.raises(ValueError, match="integer index or 'mean'"):
        plot_heatmap(record, "cross", "last", 0)


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
        "rollout_encoder.png",
    ):
        assert (out / name).is_file(), name
    saved = AttentionRecord.load(out / "record.json")
    assert saved.generate_kwargs == {"num_beams": 2, "max_new_tokens": 5}
    assert saved.direction == "es-en" and saved.source_tokens[0] == ">>en<<"
    pharaoh = (out / "alignment.pharaoh").read_text().split()
    assert len(pharaoh) == len(target_words(saved))
    assert "tag" in (out / "head_stats.csv").read_text().splitlines()[0]


def test_cli_align_eval_picks_a_layer(checkpoint, tmp_path, capsys):
    (tmp_path / "es.txt").write_text("el gato negro\nla casa roja\n", encoding="utf-8")
    (tmp_path / "en.txt").write_text("the black cat\nthe red house\n", encoding="utf-8")
    (tmp_path / "gold.txt").write_text("# 1-indexed\n1-1 2-3 3-2\n1-1 2-3 3p2\n", encoding="utf-8")
    scores = tmp_path / "scores.json"
    status = main(
        [
            "align-eval",
            "--gold",
            str(tmp_path / "gold.txt"),
            "--source-file",
            str(tmp_path / "es.txt"),
            "--target-file",
            str(tmp_path / "en.txt"),
            "--model",
            str(checkpoint),
            "--json",
            str(scores),
        ]
    )
    assert status == 0
    assert "<- best" in capsys.readouterr().out
    result = json.loads(scores.read_text())
    assert result["best_layer"] in (0, 1) and set(result["scores"]) == {"0", "1"}


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
    args = parser.parse_args(["compare-bert", "--sentences", "s", "--out", "o"])
    assert args.func.__name__ == "run_compare_bert" and args.bert == "bert-base-uncased"


def test_python_dash_m_entry_point():
    result = subprocess.run(
        [sys.executable, "-m", "vaswani_inspect", "--help"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and "inspect" in result.stdout and "align-eval" in result.stdout
    result = subprocess.run(
        [sys.executable, "-m", "vaswani_inspect", "inspect", "--help"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and "--alignment-layer" in result.stdout


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
