"""A model folder's config.json and generation_config.json are checked where a command or the demo loads it, and the
Python API refuses what it would misread.

Each broken folder below loaded before these checks and translated to garbage with exit code 0 (a NaN or negative
layer_norm_eps: empty lines; a NaN length_penalty: a few words; min_new_tokens above max_new_tokens: babble), or
ended in a traceback (a config that is a list, dtype "float33", num_beams 0, eos_token_id [], 10**9 positions: an
attempt to allocate a terabyte). Now each is one line naming the folder, the file and the field, with exit code 2.
The checks run before any model is built, so these tests load no model for a broken folder.
"""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import warnings
from pathlib import Path

import pytest

from hf_vaswani.cli import main
from hf_vaswani.config_checks import MAX_POSITION_EMBEDDINGS, MissingGenerationConfigWarning
from hf_vaswani.marian.export import export_marian
from hf_vaswani.model_checks import BrokenModelError, check_model
from hf_vaswani.model_folder import check_model_folder, folder_generation_config
from hf_vaswani.testing import tiny_model
from tests.helpers import PAIRS, tiny_tokenizer

#: The decoding settings of the sound folder (a short search keeps the tests fast).
GENERATION = {"num_beams": 2, "length_penalty": 0.6, "max_new_tokens": 12, "bos_token_id": 1, "eos_token_id": 2,
              "pad_token_id": 0, "decoder_start_token_id": 1}  # fmt: skip


@pytest.fixture(scope="module")
def sound_folder(tmp_path_factory) -> Path:
    from transformers import GenerationConfig

    tokenizer = tiny_tokenizer()
    folder = tmp_path_factory.mktemp("sound") / "model"
    model = tiny_model(len(tokenizer))
    model.generation_config = GenerationConfig(**GENERATION)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _edited(name: str, **values):
    def edit(folder: Path) -> None:
        data = json.loads((folder / name).read_text())
        data.update(values)
        (folder / name).write_text(json.dumps(data))

    return edit


def _written(name: str, text: str):
    def write(folder: Path) -> None:
        (folder / name).write_text(text)

    return write


def _with_nan(name: str, field: str):
    def write(folder: Path) -> None:  # (json.dumps writes NaN as Python's json reads it)
        _edited(name, **{field: math.nan})(folder)

    return write


def _with_adapter_files(folder: Path) -> None:
    """What ``PeftModel.save_pretrained`` leaves when the merged model is then saved into the same folder."""
    (folder / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 4}))
    shutil.copy(folder / "model.safetensors", folder / "adapter_model.safetensors")


#: name -> (how the sound folder is broken, what the error says)
BROKEN = {
    "layer_norm_eps -1": (_edited("config.json", layer_norm_eps=-1), "config.json's layer_norm_eps is -1: expected"),
    "layer_norm_eps NaN": (_with_nan("config.json", "layer_norm_eps"), "config.json's layer_norm_eps is nan"),
    "config a list": (_written("config.json", "[1, 2]"), "config.json holds a list, not a JSON object"),
    "dtype float33": (_edited("config.json", dtype="float33"), "config.json's dtype is 'float33'"),
    "model_type marian": (
        _edited("config.json", model_type="marian"),
        "config.json's model_type is 'marian', but the config describes a VaswaniForConditionalGeneration",
    ),
    "10**9 positions": (
        _edited("config.json", max_position_embeddings=10**9),
        f"max_position_embeddings is 1000000000: expected a whole number from 1 to {MAX_POSITION_EMBEDDINGS}",
    ),
    "generation not JSON": (_written("generation_config.json", "{not json"), "generation_config.json is not valid"),
    "length_penalty NaN": (
        _with_nan("generation_config.json", "length_penalty"),
        "generation_config.json's length_penalty is nan: expected a finite number",
    ),
    "length_penalty abc": (
        _edited("generation_config.json", length_penalty="abc"),
        "generation_config.json's length_penalty is 'abc'",
    ),
    "num_beams 0": (_edited("generation_config.json", num_beams=0), "generation_config.json's num_beams is 0"),
    "eos_token_id []": (
        _edited("generation_config.json", eos_token_id=[]),
        "generation_config.json's eos_token_id is []",
    ),
    "min_new_tokens above max": (
        _edited("generation_config.json", min_new_tokens=200),
        "min_new_tokens (200) is above its max_new_tokens (12)",
    ),
    "tokenizer_class MarianTokenizer": (
        _edited("tokenizer_config.json", tokenizer_class="MarianTokenizer"),
        "its tokenizer is a MarianTokenizer, which reads source.spm, target.spm, vocab.json, but the folder has no "
        "source.spm, target.spm, vocab.json",
    ),
    "adapter beside merged weights": (
        _with_adapter_files,
        "PEFT adapter files (adapter_config.json, adapter_model.safetensors) beside full weights (model.safetensors)",
    ),
}


@pytest.fixture(params=list(BROKEN))
def broken(request, sound_folder, tmp_path) -> tuple[Path, str]:
    folder = tmp_path / "model"
    shutil.copytree(sound_folder, folder)
    breakage, message = BROKEN[request.param]
    breakage(folder)
    return folder, message


def test_the_sound_folder_passes(sound_folder):
    check_model_folder(sound_folder)


def test_each_broken_folder_is_refused_before_loading(broken):
    folder, message = broken
    with pytest.raises(BrokenModelError) as caught:
        check_model_folder(folder)
    assert f"The model at {str(folder)!r} is broken: " in str(caught.value) and message in str(caught.value)


def test_translate_refuses_each_in_one_line(broken, capsys):
    folder, message = broken
    assert main(["translate", "El gato negro.", "--model", str(folder), "--backend", "torch"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1 and "Traceback" not in captured.err, captured.err
    assert lines[0].startswith("hf-vaswani translate: error: The model at ") and message in lines[0], lines[0]


BROKEN_FOR_EVERY_LOADER = ["10**9 positions", "length_penalty NaN", "tokenizer_class MarianTokenizer"]


def _loaders(model: str, data: Path, out: Path) -> dict[str, list[str]]:
    return {
        "translate-ctranslate2": ["translate", "El gato negro.", "--model", model, "--backend", "ctranslate2"],
        "evaluate": ["evaluate", str(data), "--model", model, "--backend", "torch"],
        "export-marian": ["export-marian", model, str(out / "marian")],
        "inspect": ["inspect", "El gato negro.", "--model", model, "--out", str(out / "report")],
    }


@pytest.mark.parametrize("case", BROKEN_FOR_EVERY_LOADER)
@pytest.mark.parametrize("command", list(_loaders("M", Path("D"), Path("O"))))
def test_every_loader_refuses_before_building_the_model(case, command, sound_folder, tmp_path, capsys):
    if command == "translate-ctranslate2":
        pytest.importorskip("ctranslate2")
    folder = tmp_path / "model"
    shutil.copytree(sound_folder, folder)
    BROKEN[case][0](folder)
    data = tmp_path / "pairs.tsv"
    data.write_text("".join(f"{en}\t{es}\n" for en, es in PAIRS[:2]), encoding="utf-8")
    (tmp_path / "out").mkdir()
    assert main(_loaders(str(folder), data, tmp_path / "out")[command]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"The model at {str(folder)!r} is broken: " in err, err
    assert BROKEN[case][1] in err and not any((tmp_path / "out").iterdir())


def test_the_demo_loading_path_refuses_a_foreign_model_with_a_broken_generation_config(tmp_path):
    """(vaswani_inspect.loading, which the demo loads through, for a Marian folder.)"""
    from vaswani_inspect.loading import load_for_inspection
    from vaswani_inspect.testing_models import write_tiny_architecture

    folder = write_tiny_architecture("marian", tmp_path / "marian")
    _edited("generation_config.json", num_beams=0)(folder)
    with pytest.raises(BrokenModelError, match="generation_config.json's num_beams is 0"):
        load_for_inspection(folder)


@pytest.mark.parametrize("missing", ["source.spm", "vocab.json"])
def test_a_marian_folder_without_a_file_its_tokenizer_reads_is_one_line(tiny_architecture_folders, tmp_path, missing):
    """(transformers' MarianTokenizer meets it with a TypeError about a None path.)"""
    from vaswani_inspect.loading import load_model_and_tokenizer

    folder = tmp_path / "marian"
    shutil.copytree(tiny_architecture_folders["marian"], folder)
    (folder / missing).unlink()
    with pytest.raises(
        BrokenModelError, match=f"reads source.spm, target.spm, vocab.json, but the folder has no {missing}"
    ):
        load_model_and_tokenizer(folder)


def test_a_tokenizer_class_of_another_model_is_refused(sound_folder, tmp_path):
    from hf_vaswani.inference import load_translator

    folder = tmp_path / "model"
    shutil.copytree(sound_folder, folder)
    _edited("config.json", tokenizer_class="MarianTokenizer")(folder)
    with pytest.raises(BrokenModelError, match="config.json's tokenizer_class is 'MarianTokenizer', but the folder"):
        load_translator(folder, device="cpu")


# ----------------------------------------------------------------------------------------------- no generation config


def test_a_folder_without_generation_config_gets_the_projects_decoding_settings(sound_folder, tmp_path, capsys):
    from hf_vaswani.inference import load_translator

    folder = tmp_path / "model"
    shutil.copytree(sound_folder, folder)
    (folder / "generation_config.json").unlink()
    with pytest.warns(MissingGenerationConfigWarning, match="has no generation_config.json"):
        model, _ = load_translator(folder, device="cpu")
    settings = model.generation_config
    # (at most 63 new tokens: the tiny model has 64 positions, one for the decoder start token)
    assert (settings.num_beams, settings.length_penalty, settings.max_new_tokens) == (4, 0.6, 63)
    assert settings.no_repeat_ngram_size == 3 and settings.early_stopping is True and settings.eos_token_id == 2
    # The CTranslate2 backend reads the folder's settings through the same function.
    with pytest.warns(MissingGenerationConfigWarning):
        assert folder_generation_config(folder, model.config).to_dict() == settings.to_dict()
    # The command line says so in one warning line, and translates.
    argv = ["translate", "El gato negro.", "--model", str(folder), "--backend", "torch", "--max-new-tokens", "3"]
    capsys.readouterr()  # (the progress bars of the loads above, when no earlier command switched them off)
    assert main([*argv, "--num-beams", "1"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hf-vaswani translate: warning: ") and "num_beams 4" in err[0]
    # An export decodes as the translation does: the Marian folder carries the same settings.
    with pytest.warns(MissingGenerationConfigWarning):
        export_marian(folder, tmp_path / "marian")
    exported = json.loads((tmp_path / "marian" / "generation_config.json").read_text())
    assert (exported["num_beams"], exported["length_penalty"], exported["no_repeat_ngram_size"]) == (4, 0.6, 3)


def test_a_checked_generation_config_is_what_the_ctranslate2_backend_reads(sound_folder, tmp_path):
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(sound_folder)
    assert folder_generation_config(sound_folder, config).num_beams == GENERATION["num_beams"]
    folder = tmp_path / "model"
    shutil.copytree(sound_folder, folder)
    _edited("generation_config.json", length_penalty="abc")(folder)
    with pytest.raises(BrokenModelError, match="length_penalty is 'abc'"):
        folder_generation_config(folder, config)


# ------------------------------------------------------------------------------------------------ the Python API


@pytest.fixture(scope="module")
def loaded(sound_folder):
    from hf_vaswani.inference import load_translator

    return load_translator(sound_folder, device="cpu")


def test_translate_refuses_one_text_instead_of_a_list(loaded):
    from hf_vaswani.inference import evaluate_pairs, translate

    model, tokenizer = loaded
    with pytest.raises(TypeError, match="sentences must be a list of texts, got one str"):
        translate(model, tokenizer, "gato", "es-en")
    with pytest.raises(TypeError, match="labels must be a list of texts"):
        translate(model, tokenizer, ["gato"], "es-en", labels="a")
    with pytest.raises(TypeError, match="pairs must be a list of texts"):
        evaluate_pairs(model, tokenizer, "The cat.\tEl gato.")
    with pytest.raises(TypeError, match="Pair 1 must be two texts"):
        evaluate_pairs(model, tokenizer, [("The cat.",)])


@pytest.mark.parametrize("value", [math.nan, math.inf, "abc", True])
def test_translate_refuses_a_length_penalty_that_is_not_a_finite_number(loaded, value):
    from hf_vaswani.inference import evaluate_pairs, translate

    model, tokenizer = loaded
    with pytest.raises(ValueError, match="length_penalty must be a finite number"):
        translate(model, tokenizer, ["gato"], "es-en", length_penalty=value)
    with pytest.raises(ValueError, match="length_penalty must be a finite number"):
        evaluate_pairs(model, tokenizer, PAIRS[:1], length_penalty=value)


def test_translate_still_translates_a_list(loaded):
    from hf_vaswani.inference import translate

    model, tokenizer = loaded
    translations = translate(model, tokenizer, ["El gato.", "El perro."], "es-en", length_penalty=1, max_new_tokens=3)
    assert len(translations) == 2 and all(isinstance(text, str) for text in translations)


def test_check_model_finds_decoding_settings_set_in_memory(loaded):
    """(A model from the Hub, or one a user changed: its loaded settings are checked as a folder's files are.)"""
    import copy

    model, tokenizer = loaded
    changed = copy.copy(model)
    changed.generation_config = copy.deepcopy(model.generation_config)
    changed.generation_config.num_beams = 0
    with pytest.raises(BrokenModelError, match="generation_config.json's num_beams is 0"):
        check_model(changed, tokenizer)
    check_model(model, tokenizer)


# ------------------------------------------------------------------------------------------------ messages


def test_a_folder_given_as_a_file_of_pairs_is_named_a_folder(tmp_path, capsys):
    (tmp_path / "pairs").mkdir()
    argv = {
        "evaluate": ["evaluate", str(tmp_path / "pairs")],
        "head-importance": ["head-importance", "--pairs", str(tmp_path / "pairs"), "--out", str(tmp_path / "o")],
        "explain": ["explain", "--pairs", str(tmp_path / "pairs"), "--out", str(tmp_path / "e")],
    }
    for command, arguments in argv.items():
        assert main(arguments) == 2, command
        err = capsys.readouterr().err
        assert f"{tmp_path / 'pairs'}" in err and "is a folder" in err and "no such file" not in err.lower(), err


@pytest.mark.skipif(importlib.util.find_spec("gradio") is None, reason="needs the [demo] extra")
def test_an_invalid_host_is_named_before_the_demo_starts(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["demo", "--host", "256.1.1.1"])
    assert exited.value.code == 2
    assert "'256.1.1.1' is not a valid IPv4 address" in capsys.readouterr().err


def test_a_too_long_source_says_what_a_command_line_user_can_do(model, tokenizer):
    from vaswani_inspect import extract

    with pytest.raises(ValueError, match="hf-vaswani inspect --truncate"):
        extract(model, tokenizer, "el gato negro " * 200, direction="es-en")


def test_no_warning_for_a_sound_folder(sound_folder):
    from hf_vaswani.inference import load_translator

    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingGenerationConfigWarning)
        load_translator(sound_folder, device="cpu")
