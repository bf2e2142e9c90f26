"""Bad recipes are refused before any work, with one line that names the field (or the line of the file) and what
it must be: model fields (signs, ranges, finite values), strict YAML (no key twice, no anchors or aliases), an
output folder that holds a model, an ``init_from`` model of another size; and a loss that becomes NaN stops the
run, keeping the last good checkpoint and writing no final model.

Most cases run `hf_vaswani.cli.main` in-process (what the ``hf-vaswani`` script runs); a few run the installed
command itself, to check the exit status and stderr of a real process.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from hf_vaswani.cli import main
from hf_vaswani.training import find_checkpoints, load_config
from hf_vaswani.training.recipe_yaml import RecipeYAMLError, dump_recipe, load_recipe_yaml
from tests.helpers import ROOT, TINY_CONFIG, training_corpus
from tests.hf_vaswani.training.test_checkpoints import _env, _hf_vaswani

# Slow as a whole (tests/README.md, the fast lane): real training runs in processes
pytestmark = pytest.mark.slow


def _one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("hf-vaswani train: error: ")]
    assert len(errors) == 1, err
    return errors[0]


@pytest.fixture(scope="module")
def recipe_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("recipes")
    (root / "pairs.tsv").write_text(training_corpus(), encoding="utf-8")
    config = yaml.safe_load(yaml.safe_dump(TINY_CONFIG))
    config["training"].update(eval_steps=0, average_last=0)
    (root / "tiny.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return root


def _args(root: Path, out: Path, *sets: str) -> list[str]:
    args = ["train", str(root / "tiny.yaml"), "--set", f"data.path={root / 'pairs.tsv'}"]
    args += ["--set", f"training.output_dir={out}"]
    for item in sets:
        args += ["--set", item]
    return args


# ------------------------------------------------------------------------------------------- field values

BAD_VALUES = [
    ("model.init_std=-1", "model.init_std must be a number > 0 or null, got -1"),
    ("model.init_std=0", "model.init_std must be a number > 0 or null, got 0"),
    ("model.layer_norm_eps=-1e-5", "model.layer_norm_eps must be a number > 0, got '-1e-5'"),
    ("model.layer_norm_eps=.inf", "model.layer_norm_eps must be a number > 0, got inf"),
    ("model.label_smoothing=nan", "model.label_smoothing must be in [0, 1), got 'nan'"),
    ("model.label_smoothing=.nan", "model.label_smoothing must be in [0, 1), got nan"),
    ("model.dropout=abc", "model.dropout must be in [0, 1), got 'abc'"),
    ("model.attention_dropout=-0.1", "model.attention_dropout must be in [0, 1), got -0.1"),
    ("model.d_model=32.5", "model.d_model must be a positive integer, got 32.5"),
    ("model.encoder_layers=0", "model.encoder_layers must be a positive integer, got 0"),
    ("model.share_embeddings=perhaps", "model.share_embeddings must be true or false, got 'perhaps'"),
    ("model.position_encoding=rotary", "model.position_encoding must be one of 'sinusoidal', 'learned', 'none'"),
    ("model.pad_token_id=-1", "model.pad_token_id must be an integer >= 0 or null, got -1"),
    ("data.max_length=2", "data.max_length must be an integer >= 3, got 2"),
    ("data.max_length=100", "data.max_length (100) must be at most model.max_position_embeddings (64)"),
    ("training.max_new_tokens=65", "training.max_new_tokens (65) must be at most model.max_position_embeddings"),
    ("data.validation_size=nan", "data.validation_size must be a number of pairs (int >= 0) or a fraction in [0, 1)"),
    ("training.learning_rate=.inf", "training.learning_rate must be a number > 0 or null, got inf"),
    ("training.adam_epsilon=0", "training.adam_epsilon must be a number > 0, got 0"),
    ("training.no_repeat_ngram_size=-1", "training.no_repeat_ngram_size must be an integer >= 0, got -1"),
]


@pytest.mark.parametrize("override, message", BAD_VALUES, ids=[o for o, _ in BAD_VALUES])
def test_a_bad_value_is_refused_naming_the_field(recipe_root, tmp_path, override, message, capsys):
    out = tmp_path / "run"
    assert main(_args(recipe_root, out, override)) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert message in line, line
    assert not out.exists()  # refused before any work


def test_validation_size_zero_needs_evaluation_off(recipe_root, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_args(recipe_root, out, "data.validation_size=0", "training.eval_steps=6")) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "data.validation_size is 0, but training.eval_steps (6) evaluates on the validation split" in line
    # Without evaluation, no validation pairs is a valid choice.
    config = load_config(recipe_root / "tiny.yaml", ["data.validation_size=0", "training.eval_steps=0"])
    assert config["data"]["validation_size"] == 0


def test_a_max_length_that_keeps_no_pair_says_so(recipe_root, tmp_path, capsys):
    assert main(_args(recipe_root, tmp_path / "run", "data.max_length=3")) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "data.max_length=3 leaves no training pair" in line and "raise data.max_length" in line


def test_shipped_recipes_still_load():
    for name in ("tatoeba-es-en.yaml", "tatoeba-es-en-align.yaml"):
        load_config(ROOT / "configs" / name)


# ------------------------------------------------------------------------------------------- strict YAML


def test_yaml_key_given_twice_is_refused_with_its_line(recipe_root, tmp_path, capsys):
    text = (recipe_root / "tiny.yaml").read_text().replace("data:\n", "data:\n  max_length: 30\n", 1)
    (tmp_path / "twice.yaml").write_text(text, encoding="utf-8")
    argv = ["train", str(tmp_path / "twice.yaml"), "--set", f"training.output_dir={tmp_path / 'run'}"]
    assert main(argv) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "twice.yaml: line 4: the key 'max_length' is given twice (first on line 2)" in line, line
    (tmp_path / "twice.json").write_text('{"training": {"max_steps": 1, "max_steps": 2}}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"the key\(s\) \['max_steps'\] are given twice"):
        load_config(tmp_path / "twice.json")


def test_yaml_anchors_and_aliases_are_refused(tmp_path):
    # The "billion laughs": nine levels of nine aliases each would be 387 million strings.
    levels = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    with pytest.raises(RecipeYAMLError, match=r"line 1: YAML anchors \(&a0\) are not accepted"):
        load_recipe_yaml("\n".join(levels))
    with pytest.raises(RecipeYAMLError, match=r"line 2: YAML aliases \(\*x\) are not accepted"):
        load_recipe_yaml("training: {max_steps: 1}\ndata: *x\n")
    with pytest.raises(RecipeYAMLError, match="merge keys"):
        load_recipe_yaml("training: {<<: {max_steps: 1}}\n")
    (tmp_path / "bomb.yaml").write_text("data:\n  directions: &d [es-en]\ntokenizer: {path: *d}\n")
    with pytest.raises(ValueError, match=r"bomb.yaml: line 2: YAML anchors \(&d\)"):
        load_config(tmp_path / "bomb.yaml")
    with pytest.raises(ValueError, match="aliases"):
        load_config(None, ["data.directions=*d"])


def test_the_written_config_reads_back_strictly(tmp_path):
    shared = ["es-en", "en-es"]
    config = {"data": {"directions": shared}, "training": {"report_to": shared}}
    with open(tmp_path / "config.yaml", "w", encoding="utf-8") as handle:
        dump_recipe(config, handle)
    assert "&" not in (tmp_path / "config.yaml").read_text()
    assert load_recipe_yaml((tmp_path / "config.yaml").read_text()) == config


# ------------------------------------------------------------------------------------------- output_dir


def test_output_dir_that_holds_a_model_is_refused_unless_overwrite(recipe_root, tmp_path, capsys):
    shipped = tmp_path / "vaswani-tatoeba-es-en"
    shutil.copytree(ROOT / "pretrained" / "vaswani-tatoeba-es-en", shipped)
    before = sorted(p.name for p in shipped.iterdir())
    for out in (shipped, shipped / "run"):
        assert main(_args(recipe_root, out, "training.max_steps=1")) == 2
        line = _one_error_line(capsys.readouterr().err)
        assert "is a model folder" in line or "which is a model folder" in line
        assert "--overwrite" in line
    assert sorted(p.name for p in shipped.iterdir()) == before  # nothing written into it
    # --overwrite trains into it anyway, beside the model's own files, which stay as they were.
    weights = (shipped / "model.safetensors").read_bytes()
    argv = _args(recipe_root, shipped, "training.max_steps=1", "training.save_steps=1")
    assert main([*argv, "--overwrite"]) == 0
    assert (shipped / "model.safetensors").read_bytes() == weights and (shipped / "final").is_dir()


# ------------------------------------------------------------------------------------------- init_from


def test_init_from_a_model_of_another_size_names_the_sizes(recipe_root, tmp_path, capsys):
    source = tmp_path / "source"
    assert main(_args(recipe_root, source, "training.max_steps=1", "training.save_steps=1")) == 0
    capsys.readouterr()
    model = source / "final"
    argv = _args(recipe_root, tmp_path / "run", f"training.init_from={model}", "model.d_model=64")
    assert main([*argv, "--set", "model.decoder_layers=2"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert f"training.init_from '{model}' is another model than the recipe describes" in line
    assert "d_model 64 in the recipe, 32 in the model; decoder_layers 2 in the recipe, 1 in the model" in line
    # Weights that lack a tensor are refused too (transformers would initialise it afresh and only report it).
    from safetensors.torch import load_file, save_file

    broken = tmp_path / "broken"
    shutil.copytree(model, broken)
    state = load_file(str(broken / "model.safetensors"))
    del state["model.encoder.layers.0.ffn.fc1.weight"]
    save_file(state, str(broken / "model.safetensors"), metadata={"format": "pt"})
    assert main(_args(recipe_root, tmp_path / "run2", f"training.init_from={broken}")) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "its weights are not the model's (missing" in line and "fc1.weight" in line


# ------------------------------------------------------------------------------------------- non-finite loss


def test_a_loss_that_becomes_nan_stops_and_keeps_the_last_good_checkpoint(recipe_root, tmp_path, capsys, monkeypatch):
    import torch

    from hf_vaswani.training import VaswaniTrainer

    original = VaswaniTrainer.compute_loss

    def poisoned(self, *args, **kwargs):  # the loss of update 6 on is NaN
        loss = original(self, *args, **kwargs)
        if self.state.global_step >= 5:
            loss = loss * torch.tensor(float("nan"))
        return loss

    monkeypatch.setattr(VaswaniTrainer, "compute_loss", poisoned)
    out = tmp_path / "run"
    assert main(_args(recipe_root, out, "training.max_steps=8", "training.save_steps=2")) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "the training loss is nan at update 6" in line, line
    assert f"final/ is not written and the last good checkpoint is {out / 'checkpoint-4'}" in line
    assert [p.name for p in find_checkpoints(out)] == ["checkpoint-2", "checkpoint-4"]
    assert not (out / "final").exists()


def test_a_real_learning_rate_too_high_exits_2_with_one_line(recipe_root, tmp_path):
    out = tmp_path / "run"
    argv = [*_hf_vaswani(), *_args(recipe_root, out, "training.learning_rate=1e6", "training.warmup_steps=1")]
    result = subprocess.run(argv + ["--set", "training.max_steps=6"], env=_env(), capture_output=True, text=True)
    assert result.returncode == 2, result.stderr[-2000:]
    line = _one_error_line(result.stderr)
    assert (
        re.search(r"the training loss is (nan|inf|-inf) at update \d+", line) and "Lower training.learning_rate" in line
    )
    assert not (out / "final").exists()
    assert '"output_dir"' not in result.stdout  # no summary: there is no final model to report
