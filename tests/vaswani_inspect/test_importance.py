"""`vaswani_inspect.head_importance` and ``hf-vaswani head-importance``: on a small model trained in the test, the
heads ranked most important hurt more when switched off than those ranked least; the report and the command's
one-line errors."""

from __future__ import annotations

import json

import pytest
import torch

from hf_vaswani.cli import main
from hf_vaswani.testing import tiny_model
from hf_vaswani.tokenization import train_tokenizer
from tests.helpers import training_corpus
from vaswani_inspect import ablate_heads, head_importance
from vaswani_inspect.importance import (
    PruningPoint,
    alignment_heads,
    head_confidence,
    prunable_heads,
    reference_log_likelihood,
    write_importance_report,
)

# Slow as a whole (tests/README.md, the fast lane): its module fixture trains the tiny model; commands in processes
pytestmark = pytest.mark.slow

torch.set_num_threads(1)  # the tiny model is faster on one thread, and the machine is shared

#: (English, Spanish) pairs of the generated corpus: 144 sentences of one pattern.
PAIRS = [tuple(line.split("\t")) for line in training_corpus().splitlines()]
MEASURED = PAIRS[::6]  # 24 pairs, every subject, verb and object


@pytest.fixture(scope="module")
def trained():
    """(model, tokenizer): the tiny model (2+2 layers of 4 heads) trained es->en for 150 updates (~10 s)."""
    tokenizer = train_tokenizer([text for pair in PAIRS for text in pair], vocab_size=200, model_max_length=64)
    model = tiny_model(len(tokenizer), seed=0, label_smoothing=0.0)
    sources = [">>en<< " + spanish for _, spanish in PAIRS]
    batch = tokenizer(sources, text_target=[english for english, _ in PAIRS], padding=True, return_tensors="pt")
    labels = batch["labels"].masked_fill(batch["labels"] == tokenizer.pad_token_id, -100)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(0)
    model.train()
    for _ in range(150):
        rows = torch.randperm(len(PAIRS), generator=generator)[:32]
        loss = model(
            input_ids=batch["input_ids"][rows], attention_mask=batch["attention_mask"][rows], labels=labels[rows]
        ).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    model.generation_config.max_length = 20
    return model, tokenizer


@pytest.fixture(scope="module")
def measured(trained):
    model, tokenizer = trained
    return head_importance(
        model, tokenizer, MEASURED, "es-en", max_new_tokens=32, curves=("cross", "all"), progress=False
    )


@pytest.fixture(scope="module")
def model_dir(trained, tmp_path_factory):
    folder = tmp_path_factory.mktemp("trained-tiny")
    model, tokenizer = trained
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / "pairs.tsv").write_text("".join(f"{en}\t{es}\n" for en, es in MEASURED), encoding="utf-8")
    return folder


def _scores_without(model, tokenizer, heads) -> dict[str, float]:
    from hf_vaswani.inference import score_translations, translate

    with ablate_heads(model, heads):
        hypotheses = translate(model, tokenizer, [es for _, es in MEASURED], "es-en", num_beams=1, max_new_tokens=32)
        bleu = score_translations(hypotheses, [en for en, _ in MEASURED])["bleu"]
        return {"bleu": bleu, "log_likelihood": reference_log_likelihood(model, tokenizer, MEASURED, "es-en")}


def test_the_trained_model_translates(measured):
    assert measured.baseline["bleu"] > 60, measured.baseline  # else nothing below could tell heads apart
    assert len(measured.heads) == 24 and measured.settings["pairs"] == len(MEASURED)


@pytest.mark.parametrize("ranking", ["bleu_drop", "log_likelihood_drop", "gradient"])
def test_top_ranked_heads_hurt_more_than_bottom_ranked(trained, measured, ranking):
    model, tokenizer = trained
    ranked = [(s.kind, s.layer, s.head) for s in measured.ranked(ranking)]
    top, bottom = _scores_without(model, tokenizer, ranked[:4]), _scores_without(model, tokenizer, ranked[-4:])
    baseline = measured.baseline
    assert baseline["log_likelihood"] - top["log_likelihood"] > baseline["log_likelihood"] - bottom["log_likelihood"]
    assert top["bleu"] < bottom["bleu"], (top, bottom)


def test_gradient_estimate_ranks_like_the_ablation(measured):
    # First-order Taylor (Michel et al.): the estimate follows the log-likelihood drop it approximates.
    assert measured.correlations["gradient"]["all"]["log_likelihood"] > 0.4, measured.correlations
    for estimate in ("gradient", "confidence"):
        for kind in ("all", "encoder", "decoder", "cross"):
            assert set(measured.correlations[estimate][kind]) == {"bleu", "chrf", "log_likelihood"}


def test_head_scores_are_consistent(trained, measured):
    model, tokenizer = trained
    score = measured.ranked("bleu_drop")[0]
    assert score.bleu_drop == pytest.approx(measured.baseline["bleu"] - score.bleu)
    again = _scores_without(model, tokenizer, [(score.kind, score.layer, score.head)])
    assert again["bleu"] == pytest.approx(score.bleu)
    assert again["log_likelihood"] == pytest.approx(score.log_likelihood, rel=1e-5)
    assert all(0.0 < s.confidence <= 1.0 and s.gradient >= 0 for s in measured.heads)
    assert {s.tag for s in measured.heads} <= {"positional", "special-token", "broad", "other"}
    layer_norms = {}
    for s in measured.heads:
        layer_norms[s.kind, s.layer] = layer_norms.get((s.kind, s.layer), 0.0) + s.gradient_normalized**2
    assert all(value == pytest.approx(1.0) for value in layer_norms.values())
    assert _hooks(model) == 0  # no ablation hook left behind


def _hooks(model):
    from vaswani_inspect.ablation import attention_modules

    return sum(len(m.out_proj._forward_pre_hooks) for group in attention_modules(model).values() for m in group)


def test_pruning_curves_and_groups(measured):
    assert set(measured.curves) == {"cross", "all"}
    cross, everything = measured.curves["cross"], measured.curves["all"]
    assert [p.removed for p in cross] == list(range(9)) and len(everything) == 25
    assert cross[0].bleu == measured.baseline["bleu"] and cross[0].heads == []
    assert all(p.heads == cross[-1].heads[: p.removed] for p in cross)  # one order, heads added one by one
    assert all(label.startswith("cross") for label in cross[-1].heads)
    assert everything[-1].bleu < measured.baseline["bleu"] - 10  # every head off: the model cannot translate
    summary = measured.summary()
    assert summary["prunable_heads"]["cross"] == prunable_heads(cross, measured.baseline["bleu"])
    assert {g.name for g in measured.groups} <= {
        "positional heads",
        "special-token heads",
        "broad heads",
        "other heads",
    }
    assert sum(len(g.heads) for g in measured.groups) == 24
    assert summary["alignment"]["heads"] == [] and summary["alignment"]["config"] is None


def test_prunable_heads_counts_until_the_first_drop():
    points = [PruningPoint(0, [], 50.0, 0), PruningPoint(1, [], 49.5, 0), PruningPoint(2, [], 48.0, 0)]
    points.append(PruningPoint(3, [], 49.9, 0))
    assert prunable_heads(points, 50.0) == 1 and prunable_heads(points, 50.0, tolerance=2.5) == 3


def test_alignment_heads_follow_the_config(trained):
    model, _ = trained
    assert alignment_heads(model) == []
    try:
        model.config.alignment = {"layer": 1, "heads": [0, 2], "shift": False}
        assert [h.label() for h in alignment_heads(model)] == ["cross L1 H0", "cross L1 H2"]
        model.config.alignment = {"layer": "mean", "heads": [3], "shift": True}
        assert [h.label() for h in alignment_heads(model)] == ["cross L0 H3", "cross L1 H3"]
    finally:
        model.config.alignment = None


def test_confidence_is_the_mean_row_maximum(record):
    confidence = head_confidence([record])
    rows = [i for i, token in enumerate(record.source_tokens) if token != "</s>"]
    expected = record.encoder[1, 2][rows].max(-1).mean()
    assert confidence[("encoder", 1, 2)] == pytest.approx(float(expected), rel=1e-6)
    decoder_rows = [i for i, token in enumerate(record.target_tokens) if token != "</s>" and i > 0]
    assert confidence[("decoder", 0, 1)] == pytest.approx(float(record.decoder[0, 1][decoder_rows].max(-1).mean()))


def test_report_files(measured, tmp_path):
    written = write_importance_report(measured, tmp_path / "report")
    assert set(written) == {"importance_encoder", "importance_decoder", "importance_cross", "pruning", "json", "index"}
    assert all(path.read_bytes()[:4] == b"\x89PNG" for name, path in written.items() if name.startswith(("imp", "pru")))
    report = json.loads(written["json"].read_text(encoding="utf-8"))
    assert len(report["heads"]) == 24 and report["baseline"]["bleu"] == pytest.approx(measured.baseline["bleu"])
    assert {"summary", "correlations", "curves", "groups", "settings", "timings"} <= set(report)
    index = written["index"].read_text(encoding="utf-8")
    assert "| cross L1 H3 |" in index and "Attention is not explanation" in index
    assert "![pruning](pruning.png)" in index


def test_bad_arguments_are_refused(trained):
    model, tokenizer = trained
    with pytest.raises(ValueError, match="No sentence pair"):
        head_importance(model, tokenizer, [], "es-en")
    with pytest.raises(ValueError, match="Unknown translation direction"):
        head_importance(model, tokenizer, MEASURED, "es-fr")
    with pytest.raises(ValueError, match="Unknown pruning curve"):
        head_importance(model, tokenizer, MEASURED, curves=("middle",))
    with pytest.raises(ValueError, match="prune_by"):
        head_importance(model, tokenizer, MEASURED, prune_by="random")


# ----------------------------------------------------------------------------------------------- the command


def test_command_writes_the_report(model_dir, tmp_path, capsys):
    out = tmp_path / "importance"
    argv = ["head-importance", "--pairs", str(model_dir / "pairs.tsv"), "--out", str(out), "--model", str(model_dir)]
    assert main([*argv, "--max-pairs", "8", "--max-new-tokens", "32", "--no-progress", "--no-pruning"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("8 pairs, 24 heads: baseline BLEU") and str(out / "index.md") in printed
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["settings"]["pairs"] == 8 and report["curves"] == {} and report["settings"]["num_beams"] == 1
    assert sorted(p.name for p in out.iterdir()) == [
        "importance_cross.png",
        "importance_decoder.png",
        "importance_encoder.png",
        "index.md",
        "report.json",
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["importance"]  # no temporary folder left
    # Again into the same folder: only with --overwrite, which replaces it whole.
    (out / "pruning.png").write_text("from an earlier run with the pruning curves")
    assert main([*argv, "--max-pairs", "4", "--max-new-tokens", "32", "--no-progress", "--no-pruning"]) == 2
    assert "pass --overwrite" in _error(capsys)
    argv += ["--max-pairs", "4", "--max-new-tokens", "32", "--no-progress", "--no-pruning", "--overwrite"]
    assert main(argv) == 0
    assert not (out / "pruning.png").exists()
    assert json.loads((out / "report.json").read_text(encoding="utf-8"))["settings"]["pairs"] == 4
    assert [p.name for p in tmp_path.iterdir()] == ["importance"]


def _error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("hf-vaswani head-importance: error: "), err
    return err


def test_command_defaults():
    from hf_vaswani.cli import build_parser

    args = build_parser().parse_args(["head-importance", "--pairs", "p.tsv", "--out", "o"])
    assert (args.max_pairs, args.num_beams, args.direction, args.prune_by) == (200, 1, None, "gradient")
    assert not args.overwrite and not args.no_pruning and args.model is None


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--direction", "es-fr"], "Unknown translation direction 'es-fr'"),
        (["--pairs", "{tmp}/missing.tsv"], "No such file of sentence pairs"),
        (["--pairs", "{tmp}/empty.tsv"], "no valid sentence pair"),
        (["--model", "{tmp}/no-model"], "No model checkpoint folder"),
        (["--out", "{tmp}/full"], "not empty"),
        (["--out", "{model}/pairs.tsv"], "is also an input"),
        (["--out", "{model}"], "holds the input"),
        (["--max-pairs", "0"], "--max-pairs: expected a positive integer"),
        (["--num-beams", "0"], "--num-beams: expected a positive integer"),
    ],
)
def test_command_errors_are_one_line(model_dir, tmp_path, capsys, arguments, message):
    (tmp_path / "empty.tsv").write_text("\n", encoding="utf-8")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("x", encoding="utf-8")
    values = {"--pairs": str(model_dir / "pairs.tsv"), "--out": str(tmp_path / "out"), "--model": str(model_dir)}
    for option, value in zip(arguments[::2], arguments[1::2]):
        values[option] = value.format(tmp=tmp_path, model=model_dir)
    argv = ["head-importance", "--no-progress", "--no-pruning", *[x for item in values.items() for x in item]]
    try:
        status = main(argv)
    except SystemExit as exited:  # argparse's usage errors
        status = exited.code
    assert status == 2
    assert message in _error(capsys)
    assert not (tmp_path / "out").exists() and (tmp_path / "full" / "keep.txt").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--device", "bogus"], "Unknown device 'bogus': expected a torch device"),
        (["--max-new-tokens", "1000"], "max_new_tokens=1000 is more than this model can generate: at most 63"),
    ],
)
def test_command_checks_the_device_and_the_model_limits_before_measuring(
    model_dir, tmp_path, capsys, monkeypatch, arguments, message
):
    def measure(*args, **kwargs):
        raise AssertionError("the heads were measured before the bad argument was refused")

    monkeypatch.setattr("vaswani_inspect.importance.head_importance", measure)
    argv = ["head-importance", "--pairs", str(model_dir / "pairs.tsv"), "--out", str(tmp_path / "out")]
    assert main([*argv, "--model", str(model_dir), "--no-progress", *arguments]) == 2
    assert message in _error(capsys)
    assert not (tmp_path / "out").exists()
