"""The training recipe (schedule, train/resume, checkpoint averaging) and the train/translate/evaluate CLI."""

import io
import json
import math
import re
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file
from transformers.optimization import _get_inverse_sqrt_schedule_lr_lambda, get_inverse_sqrt_schedule

from hf_vaswani.cli import main
from hf_vaswani.training import (
    DEFAULT_CONFIG,
    average_checkpoints,
    find_checkpoints,
    load_config,
    paper_learning_rate,
    paper_lr_lambda,
    paper_peak_learning_rate,
)
from tests.helpers import ROOT, TINY_CONFIG, training_corpus

# Slow as a whole (tests/README.md, the fast lane): its module fixtures train tiny models
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A tiny corpus and config, trained for 12 updates (checkpoints at 6 and 12)."""
    root = tmp_path_factory.mktemp("train")
    data = root / "pairs.tsv"
    data.write_text(training_corpus(), encoding="utf-8")
    config = root / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY_CONFIG), encoding="utf-8")
    out = root / "run"
    args = ["train", str(config), "--set", f"data.path={data}", "--set", f"training.output_dir={out}"]
    assert main(args) == 0
    return {"root": root, "data": data, "config": config, "out": out, "args": args}


# ------------------------------------------------------------------------------------------- schedule


@pytest.mark.parametrize("d_model, warmup", [(512, 4000), (256, 500), (32, 3)])
def test_inverse_sqrt_schedule_is_the_papers_formula(d_model, warmup):
    peak = paper_peak_learning_rate(d_model, warmup)
    assert peak == pytest.approx(d_model**-0.5 * warmup**-0.5)
    for step in list(range(1, 3 * warmup, max(1, warmup // 50))) + [warmup, 10 * warmup]:
        expected = d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
        assert paper_learning_rate(step, d_model, warmup) == pytest.approx(expected, rel=1e-12)
        # transformers' inverse_sqrt (timescale = warmup) with the paper's peak is the same function of the step...
        hf = _get_inverse_sqrt_schedule_lr_lambda(step, num_warmup_steps=warmup, timescale=warmup)
        assert peak * hf == pytest.approx(expected, rel=1e-12)
        # ...and ours is shifted by one, because Trainer steps the scheduler after each update.
        assert peak * paper_lr_lambda(step - 1, warmup_steps=warmup) == pytest.approx(expected, rel=1e-12)


def test_update_k_uses_step_num_k():
    """With Trainer's order (optimizer.step, then scheduler.step), update k runs at the paper's lr(k);
    transformers' inverse_sqrt would run update 1 at lr 0."""
    d_model, warmup = 64, 4
    peak = paper_peak_learning_rate(d_model, warmup)
    parameter = torch.nn.Parameter(torch.zeros(1))
    ours = torch.optim.Adam([parameter], lr=peak)
    theirs = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=peak)
    ours_scheduler = torch.optim.lr_scheduler.LambdaLR(ours, lambda s: paper_lr_lambda(s, warmup_steps=warmup))
    theirs_scheduler = get_inverse_sqrt_schedule(theirs, num_warmup_steps=warmup)
    for update in range(1, 20):
        assert ours.param_groups[0]["lr"] == pytest.approx(paper_learning_rate(update, d_model, warmup))
        assert theirs.param_groups[0]["lr"] == pytest.approx(
            0.0 if update == 1 else paper_learning_rate(update - 1, d_model, warmup)
        )
        ours.step()
        theirs.step()
        ours_scheduler.step()
        theirs_scheduler.step()


# ------------------------------------------------------------------------------------------- config


def test_shipped_config_loads_and_overrides(tmp_path):
    config = load_config(ROOT / "configs" / "tatoeba-es-en.yaml", ["training.max_steps=7", "data.directions=[es-en]"])
    assert config["training"]["max_steps"] == 7
    assert config["data"]["directions"] == ["es-en"]
    assert config["model"]["d_model"] == 256 and config["model"]["label_smoothing"] == 0.1
    assert config["training"]["adam_beta2"] == 0.98 and config["training"]["adam_epsilon"] == 1e-9
    assert set(config) == set(DEFAULT_CONFIG)
    assert config["data"]["noun_phrases"] is True and config["data"]["max_noun_phrases"] is None
    with pytest.raises(ValueError, match="data.noun_phrases must be true or false"):
        load_config(None, ["data.noun_phrases=sometimes"])
    with pytest.raises(ValueError, match="Unknown key"):
        load_config(None, ["training.max_stepz=3"])
    with pytest.raises(ValueError, match="section.key"):
        load_config(None, ["max_steps=3"])
    with pytest.raises(ValueError, match="VaswaniConfig"):
        load_config(None, ["model.d_modl=3"])
    with pytest.raises(FileNotFoundError):
        load_config(tmp_path / "missing.yaml")


# ------------------------------------------------------------------------------------------- train / resume


def test_train_reduces_loss_and_writes_checkpoints(tiny_run):
    out = tiny_run["out"]
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in records if "loss" in r]
    assert len(losses) >= 10 and all(math.isfinite(x) for x in losses)
    assert sum(losses[-3:]) / 3 < losses[0] - 0.5
    assert any("eval_bleu" in r and "eval_chrf" in r for r in records)
    # Validation BLEU/chrF per direction too (the validation rows mix both directions).
    assert any({"eval_bleu_es-en", "eval_chrf_es-en", "eval_bleu_en-es", "eval_chrf_en-es"} <= set(r) for r in records)
    assert [p.name for p in find_checkpoints(out)] == ["checkpoint-6", "checkpoint-12"]
    for name in ("config.json", "generation_config.json", "tokenizer.json", "model.safetensors"):
        assert (out / "checkpoint-12" / name).is_file()
        assert (out / "final" / name).is_file()
    assert (out / "splits" / "test.tsv").is_file() and (out / "tokenizer" / "tokenizer.json").is_file()
    assert not (out / "splits" / "noun_phrases.tsv").exists()  # data.noun_phrases is off by default
    generation = json.loads((out / "final" / "generation_config.json").read_text())
    assert generation["num_beams"] == 4 and generation["length_penalty"] == 0.6
    assert generation["no_repeat_ngram_size"] == 3  # the loop guard


def test_noun_phrases_are_mined_from_the_training_split_and_added(tiny_run, capsys):
    out = tiny_run["root"] / "phrases"
    args = ["train", str(tiny_run["config"]), "--set", f"data.path={tiny_run['data']}"]
    args += ["--set", f"training.output_dir={out}", "--set", "data.noun_phrases=true", "--set", "training.max_steps=2"]
    args += ["--set", "training.eval_steps=0", "--set", "training.save_steps=2", "--set", "training.average_last=0"]
    capsys.readouterr()
    assert main(args) == 0
    phrases = (out / "splits" / "noun_phrases.tsv").read_text(encoding="utf-8").splitlines()
    assert "the cat\tel gato" in phrases and "my friend\tmi amigo" in phrases
    # The training rows: the 156 sentence rows of the tiny corpus plus both directions of every phrase.
    assert f"hf-vaswani train: {156 + 2 * len(phrases):,} training rows" in capsys.readouterr().err


def test_second_invocation_resumes(tiny_run, capsys):
    out = tiny_run["out"]
    capsys.readouterr()
    assert main(tiny_run["args"] + ["--set", "training.max_steps=15", "--set", "training.save_steps=3"]) == 0
    printed = capsys.readouterr().out  # Trainer's log lines (disable_tqdm), then the JSON summary
    summary = json.loads(printed[printed.index('{\n  "output_dir"') :])
    assert summary["resumed_from"].endswith("checkpoint-12")
    assert summary["global_step"] == 15
    state = json.loads((out / "checkpoint-15" / "trainer_state.json").read_text())
    assert state["global_step"] == 15
    steps = [json.loads(line)["step"] for line in (out / "log.jsonl").read_text().splitlines()]
    assert 13 in steps and 15 in steps
    # --no-resume refuses to start over on top of existing checkpoints.
    assert main(tiny_run["args"] + ["--no-resume"]) == 2
    assert "already has checkpoints" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------- averaging


def test_average_checkpoints_is_the_mean(tiny_run, tmp_path):
    from transformers import AutoModelForSeq2SeqLM

    import hf_vaswani  # noqa: F401

    first, second = tiny_run["out"] / "checkpoint-6", tiny_run["out"] / "checkpoint-12"
    out = average_checkpoints([first, second], tmp_path / "avg")
    a, b = load_file(str(first / "model.safetensors")), load_file(str(second / "model.safetensors"))
    averaged = load_file(str(out / "model.safetensors"))
    assert set(averaged) == set(a)
    for key in a:
        assert torch.allclose(averaged[key], (a[key].float() + b[key].float()) / 2, atol=1e-7), key
    model = AutoModelForSeq2SeqLM.from_pretrained(out)
    assert torch.equal(model.model.encoder.embed_tokens.weight, averaged["model.encoder.embed_tokens.weight"])
    assert (out / "tokenizer.json").is_file() and (out / "generation_config.json").is_file()
    assert not (out / "optimizer.pt").exists() and not (out / "training_args.json").exists()

    half = average_checkpoints([first, second], tmp_path / "avg16", dtype="bfloat16")
    assert all(t.dtype == torch.bfloat16 for t in load_file(str(half / "model.safetensors")).values())
    assert AutoModelForSeq2SeqLM.from_pretrained(half).dtype == torch.bfloat16

    # The CLI: a run directory and --last.
    assert main(["average-checkpoints", str(tiny_run["out"]), "--last", "2", "-o", str(tmp_path / "cli")]) == 0
    assert (tmp_path / "cli" / "model.safetensors").is_file()


# ------------------------------------------------------------------------------------------- attention path


@pytest.mark.parametrize("bf16, expected", [(True, "eager"), (False, "sdpa")], ids=["bf16", "float32"])
def test_cpu_training_attention_path_and_saved_default(tiny_run, tmp_path, monkeypatch, bf16, expected):
    """On the CPU, a bf16 run trains on the eager attention path (sdpa's bf16 backward is slower there) and a
    float32 run keeps sdpa; either way final/ and averaged/ load with the model's default, sdpa."""
    from transformers import AutoModelForSeq2SeqLM

    import hf_vaswani  # noqa: F401
    from hf_vaswani.training import VaswaniTrainer

    trained_with = []
    original = VaswaniTrainer.train

    def recording(self, *args, **kwargs):
        trained_with.append(self.model.config._attn_implementation)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(VaswaniTrainer, "train", recording)
    out = tmp_path / "run"
    args = ["train", str(tiny_run["config"]), "--set", f"data.path={tiny_run['data']}"]
    args += ["--set", f"training.output_dir={out}", "--set", f"tokenizer.path={tiny_run['out'] / 'tokenizer'}"]
    args += ["--set", f"training.bf16={str(bf16).lower()}", "--set", "training.use_cpu=true"]
    args += ["--set", "training.max_steps=2", "--set", "training.save_steps=1", "--set", "training.eval_steps=0"]
    assert main(args) == 0
    assert trained_with == [expected]
    for folder in ("final", "averaged"):
        assert "attn_implementation" not in (out / folder / "config.json").read_text()
        assert AutoModelForSeq2SeqLM.from_pretrained(out / folder).config._attn_implementation == "sdpa"


def test_guided_alignment_trains_a_head_caches_its_links_and_continues_from_a_model(tiny_run, tmp_path, capsys):
    """alignment.guided: eflomal links of the training pairs are made once and cached in RUN/alignments, the
    alignment loss is logged next to the translation loss, and the supervised head becomes the saved model's
    alignment configuration; training.init_from starts from a trained model and its tokenizer."""
    pytest.importorskip("eflomal")
    out = tmp_path / "guided"
    args = ["train", str(tiny_run["config"]), "--set", f"data.path={tiny_run['data']}"]
    args += ["--set", f"training.output_dir={out}", "--set", f"training.init_from={tiny_run['out'] / 'final'}"]
    args += [
        "--set",
        "alignment.guided=true",
        "--set",
        "alignment.weight=1.0",
        "--set",
        "data.noun_phrase_sentences=true",
    ]
    args += ["--set", "training.max_steps=4", "--set", "training.save_steps=2", "--set", "training.eval_steps=2"]
    assert main(args) == 0
    rows = int(re.search(r"([\d,]+) training rows", capsys.readouterr().err).group(1).replace(",", ""))
    logs = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    losses = [row for row in logs if "loss" in row]
    assert losses and all(row["alignment_loss"] > 0 for row in losses)
    assert any("eval_bleu" in row for row in logs)  # evaluation batches carry no alignment targets
    links = (out / "alignments" / "train.links").read_text().splitlines()
    assert 2 * len(links) == rows and all(line for line in links[:5])  # one line per pair, two rows per pair
    config = json.loads((out / "final" / "config.json").read_text())
    assert config["alignment"] == {"layer": 0, "heads": [0], "shift": False}  # one decoder layer: its only one
    stamp = (out / "alignments" / "train.links").stat().st_mtime_ns
    assert main([*args[:-6], "--set", "training.max_steps=6", "--set", "training.save_steps=2"]) == 0
    assert (out / "alignments" / "train.links").stat().st_mtime_ns == stamp  # resumed with the cached links
    assert "resuming from" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------- translate / evaluate


def test_translate_prints_one_line_per_input(tiny_run, capsys, monkeypatch):
    model = str(tiny_run["out"] / "final")
    capsys.readouterr()
    assert main(["translate", "--model", model, "--num-beams", "2", "El gato come.", "Mi amigo ve la casa."]) == 0
    assert len(capsys.readouterr().out.split("\n")) == 3  # two lines, each ending in "\n"
    monkeypatch.setattr("sys.stdin", io.StringIO("The cat eats.\n\nThe dog sees the book.\n"))
    assert main(["translate", "--model", model, "--direction", "en-es", "--batch-size", "1"]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[-1] == ""


@pytest.fixture(scope="module")
def talking_model(tiny_run):
    """The tiny config trained for 120 updates: enough to put words out (12 give empty strings, 60 sometimes)."""
    out = tiny_run["root"] / "talking"
    args = ["train", str(tiny_run["config"]), "--set", f"data.path={tiny_run['data']}"]
    args += [
        "--set",
        f"training.output_dir={out}",
        "--set",
        "training.max_steps=120",
        "--set",
        "training.warmup_steps=10",
    ]
    args += ["--set", "training.save_steps=60", "--set", "training.eval_steps=0", "--set", "training.average_last=0"]
    assert main(args) == 0
    return {"model": str(out / "final"), "test": out / "splits" / "test.tsv"}


def _generate_calls(monkeypatch) -> list[dict]:
    """Record the keyword arguments of every generate() call of the model."""
    from hf_vaswani import VaswaniForConditionalGeneration

    calls: list[dict] = []
    original = VaswaniForConditionalGeneration.generate

    def recording(self, *args, **kwargs):
        calls.append({k: v for k, v in kwargs.items() if k not in ("input_ids", "attention_mask")})
        return original(self, *args, **kwargs)

    monkeypatch.setattr(VaswaniForConditionalGeneration, "generate", recording)
    return calls


def test_evaluate_scores_writes_hypotheses_and_json(talking_model, tmp_path, capsys, monkeypatch):
    import sacrebleu

    from hf_vaswani.data import read_pairs

    calls = _generate_calls(monkeypatch)
    capsys.readouterr()
    hypotheses, scores_file = tmp_path / "hyp.txt", tmp_path / "scores.json"
    # --backend torch: these tests watch generate() (the CTranslate2 backend has tests of its own)
    args = ["evaluate", str(talking_model["test"]), "--model", talking_model["model"], "--backend", "torch"]
    args += ["--num-beams", "2"]
    args += ["--length-penalty", "1.3", "--batch-size", "5", "--output", str(hypotheses), "--json", str(scores_file)]
    assert main(args) == 0
    printed = json.loads(capsys.readouterr().out)
    assert json.loads(scores_file.read_text()) == printed
    pairs = read_pairs(talking_model["test"])
    assert set(printed) == {"es-en", "en-es"}
    # The options reach generate(): beam size 2, length penalty 1.3, batches of at most 5 sentences.
    assert calls and all(c["num_beams"] == 2 and c["length_penalty"] == 1.3 for c in calls)
    assert len(calls) == 2 * math.ceil(len(pairs) / 5)
    for direction, (source_side, reference_side) in {"es-en": (1, 0), "en-es": (0, 1)}.items():
        lines = (tmp_path / f"hyp.{direction}.txt").read_text(encoding="utf-8").split("\n")
        assert lines[-1] == "" and len(lines) - 1 == len(pairs)  # one line per pair, in the file's order
        translations = lines[:-1]
        assert any(translations)  # words, not empty strings
        references = [pair[reference_side] for pair in pairs]
        result = printed[direction]
        assert result["sentences"] == len(pairs) and result["num_beams"] == 2 and result["length_penalty"] == 1.3
        # sacrebleu's default BLEU and chrF of the detokenized translations written to the file.
        assert result["bleu"] == pytest.approx(sacrebleu.corpus_bleu(translations, [references]).score)
        assert result["chrf"] == pytest.approx(sacrebleu.corpus_chrf(translations, [references]).score)
        assert result["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp")
        # translate, with the same options, gives the same translations (stdin in, one line out per line).
        sources = "".join(pair[source_side] + "\n" for pair in pairs)
        monkeypatch.setattr("sys.stdin", io.StringIO(sources))
        command = ["translate", "--model", talking_model["model"], "--backend", "torch", "--direction", direction]
        command += ["--num-beams", "2"]
        assert main(command + ["--length-penalty", "1.3"]) == 0
        assert capsys.readouterr().out.split("\n")[:-1] == translations

    # One direction: --output is the file itself; {direction} in the name is filled in.
    args = ["evaluate", str(talking_model["test"]), "--model", talking_model["model"], "--limit", "3"]
    assert main(args + ["--direction", "en-es", "--output", str(tmp_path / "one.txt")]) == 0
    assert len((tmp_path / "one.txt").read_text().splitlines()) == 3
    assert main(args + ["--output", str(tmp_path / "{direction}.out")]) == 0
    assert (tmp_path / "es-en.out").is_file() and (tmp_path / "en-es.out").is_file()


def test_translate_is_batched_and_keeps_lines(talking_model, capsys, monkeypatch):
    calls = _generate_calls(monkeypatch)
    text = "El gato come la manzana.\n\nMi amigo ve la casa hoy.\nEl perro quiere pan.\nEl niño ve el libro.\n"
    outputs = {}
    for batch_size in ("1", "3"):
        monkeypatch.setattr("sys.stdin", io.StringIO(text))
        capsys.readouterr()
        calls.clear()
        argv = ["translate", "--model", talking_model["model"], "--backend", "torch", "--batch-size", batch_size]
        assert main(argv) == 0
        outputs[batch_size] = capsys.readouterr().out.split("\n")
        assert len(calls) == {"1": 4, "3": 2}[batch_size]  # 4 sentences; the blank line is not translated
    assert outputs["1"] == outputs["3"]  # batching (with padding) does not change a translation
    lines = outputs["1"]
    assert len(lines) == 6 and lines[1] == "" and lines[-1] == "" and all(lines[i] for i in (0, 2, 3, 4))


def test_translate_default_model_is_the_shipped_checkpoint(capsys, monkeypatch, tmp_path):
    from hf_vaswani import inference

    assert inference.DEFAULT_MODEL == "pretrained/vaswani-tatoeba-es-en"
    monkeypatch.chdir(tmp_path)
    if Path(inference.default_model_path()).is_absolute():
        pytest.skip("the checkpoint is shipped: covered by its own tests")
    capsys.readouterr()
    assert main(["translate", "Hola."]) == 2
    err = capsys.readouterr().err
    assert "pretrained/vaswani-tatoeba-es-en" in err and "pass --model PATH" in err


def test_evaluate_prints_scores(tiny_run, capsys):
    capsys.readouterr()
    test_file = tiny_run["out"] / "splits" / "test.tsv"
    args = ["evaluate", str(test_file), "--model", str(tiny_run["out"] / "final"), "--limit", "4"]
    assert main(args + ["--direction", "es-en"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"es-en"} and {"bleu", "chrf"} <= set(result["es-en"])


def test_clear_errors(tiny_run, tmp_path, capsys, monkeypatch):
    model = str(tiny_run["out"] / "final")
    capsys.readouterr()
    missing = tmp_path / "nope.tsv"
    args = ["train", str(tiny_run["config"]), "--set", f"data.path={missing}"]
    assert main(args + ["--set", f"training.output_dir={tmp_path / 'r'}"]) == 2
    assert "No such file" in capsys.readouterr().err
    assert main(["translate", "--model", model, "--direction", "fr-en", "hola"]) == 2
    assert "Unknown translation direction 'fr-en'" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO("\n  \n"))
    assert main(["translate", "--model", model]) == 2
    assert "empty" in capsys.readouterr().err
    assert main(["translate", "--model", model, ""]) == 2
    assert "empty" in capsys.readouterr().err
    assert main(["translate", "--model", str(tmp_path / "no-model"), "hola"]) == 2
    assert "No model folder" in capsys.readouterr().err
    assert main(["evaluate", str(missing), "--model", model]) == 2
    assert "No such file" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["train", "average-checkpoints", "translate", "evaluate"])
def test_every_subcommand_has_help(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    assert "usage: hf-vaswani " + command in capsys.readouterr().out


# ------------------------------------------------------------------------------------------- token-based batching


def test_token_batch_sampler_bounds_padded_tokens_and_groups_lengths():
    from hf_vaswani.training import TokenBatchSampler

    generator = torch.Generator().manual_seed(0)
    lengths = torch.randint(3, 60, (1000,), generator=generator).tolist() + [150]  # one pair longer than the budget
    sampler = TokenBatchSampler(lengths, max_tokens=256, seed=7)
    epochs = []
    for epoch in range(3):
        sampler.set_epoch(epoch)
        batches = list(sampler)
        epochs.append(batches)
        assert len(batches) == len(sampler)
        # Every pair exactly once per epoch.
        assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
        for batch in batches:
            padded = len(batch) * max(lengths[i] for i in batch)
            assert padded <= 256 or batch == [1000]  # the over-long pair alone
    # Pairs of similar length together: under 5% padding (random batches of these lengths would pad ~70%).
    real = sum(lengths[:-1])
    padded_total = sum(len(b) * max(lengths[i] for i in b) for b in epochs[0] if b != [1000])
    assert padded_total < 1.05 * real
    assert sum(len(b) for b in epochs[0]) / len(epochs[0]) > 5
    # The same batches each epoch, in a new order; the same order again for the same seed and epoch.
    assert sorted(map(tuple, epochs[0])) == sorted(map(tuple, epochs[1]))
    assert epochs[0] != epochs[1] != epochs[2]
    again = TokenBatchSampler(lengths, max_tokens=256, seed=7)
    again.set_epoch(1)
    assert list(again) == epochs[1]
    with pytest.raises(ValueError, match="positive integer"):
        TokenBatchSampler(lengths, max_tokens=0)


def test_token_batching_trains_and_resumes_in_the_same_order(tiny_run, tmp_path, capsys):
    """`sampling: tokens` with `max_tokens_per_batch`: each update sees at most that many source tokens, and a
    run resumed in its second epoch continues with the batches (and losses) of an uninterrupted run."""
    assert DEFAULT_CONFIG["training"]["sampling"] == "group_by_length"  # the default does not change
    shipped = load_config(ROOT / "configs" / "tatoeba-es-en.yaml")
    assert shipped["training"]["sampling"] == "group_by_length" and shipped["training"]["max_tokens_per_batch"] is None
    base = ["train", str(tiny_run["config"]), "--set", f"data.path={tiny_run['data']}", "--set", "model.dropout=0.1"]
    # One tokenizer for both runs: training a Unigram tokenizer twice can give scores that differ in the last
    # digits (hash map order in `tokenizers`), which may segment a word differently.
    base += ["--set", f"tokenizer.path={tiny_run['out'] / 'tokenizer'}"]
    base += ["--set", "training.sampling=tokens", "--set", "training.max_tokens_per_batch=400"]
    base += ["--set", "training.eval_steps=0", "--set", "training.average_last=0", "--set", "training.save_steps=5"]
    reference, resumed = tmp_path / "reference", tmp_path / "resumed"
    assert main([*base, "--set", f"training.output_dir={reference}", "--set", "training.max_steps=14"]) == 0
    assert main([*base, "--set", f"training.output_dir={resumed}", "--set", "training.max_steps=10"]) == 0
    assert "batches of <= 400 tokens per side" in capsys.readouterr().err
    start = len((resumed / "log.jsonl").read_text().splitlines())
    assert main([*base, "--set", f"training.output_dir={resumed}", "--set", "training.max_steps=14"]) == 0

    def steps(path, first_line=0):
        records = [json.loads(line) for line in path.read_text().splitlines()[first_line:]]
        return {r["step"]: r for r in records if "loss" in r}

    expected = steps(reference / "log.jsonl")
    tokens = [expected[1]["num_input_tokens_seen"]] + [
        expected[s]["num_input_tokens_seen"] - expected[s - 1]["num_input_tokens_seen"] for s in range(2, 15)
    ]
    assert all(0 < n <= 400 for n in tokens) and len(set(tokens)) > 3  # bounded, and not a fixed batch size
    state = json.loads((resumed / "checkpoint-10" / "trainer_state.json").read_text())
    assert 1 < state["epoch"] < 2  # the resume happens inside the second epoch
    after = steps(resumed / "log.jsonl", start)
    assert sorted(after) == [11, 12, 13, 14]
    for step in after:
        assert after[step]["loss"] == expected[step]["loss"], step
        assert after[step]["num_input_tokens_seen"] == expected[step]["num_input_tokens_seen"], step
