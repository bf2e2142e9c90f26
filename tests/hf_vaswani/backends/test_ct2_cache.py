"""The CTranslate2 cache (`hf_vaswani.backends.ensure_ctranslate2_export`) checks an entry before using it: a
damaged one (a file cut short, deleted or changed) is made again with one warning; a cache that cannot be written
is one clear error, on which ``--backend auto`` translates with PyTorch instead. A tiny random model, exported
in float32 (a fraction of a second)."""

from __future__ import annotations

import json
import warnings

import pytest
import torch

from hf_vaswani import VaswaniForConditionalGeneration
from hf_vaswani.cli import main
from tests.helpers import tiny_config, tiny_tokenizer, unwritable_folder

ctranslate2 = pytest.importorskip("ctranslate2")

from hf_vaswani import backends  # noqa: E402


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("ct2-cache") / "model"
    torch.manual_seed(0)
    VaswaniForConditionalGeneration(tiny_config(vocab_size=300)).eval().save_pretrained(path)
    tiny_tokenizer().save_pretrained(path)
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_VASWANI_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "ctranslate2"


def _cut(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip_last_byte(path):
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


DAMAGE = {
    "model.bin cut short": (lambda entry: _cut(entry / "model.bin"), "model.bin has "),
    "vocabulary missing": (
        lambda entry: (entry / "shared_vocabulary.json").unlink(),
        "shared_vocabulary.json is missing",
    ),
    "model.bin changed": (lambda entry: _flip_last_byte(entry / "model.bin"), "model.bin is not the file"),
    "stamp missing": (lambda entry: (entry / backends.STAMP).unlink(), f"{backends.STAMP} is missing"),
}


def test_the_stamp_records_every_file_of_the_export(folder, cache):
    entry = backends.ensure_ctranslate2_export(folder, "float32")
    files = json.loads((entry / backends.STAMP).read_text())["files"]
    assert {"model.bin", "shared_vocabulary.json", "config.json"} <= set(files)
    assert files["model.bin"]["size"] == (entry / "model.bin").stat().st_size
    assert len(files["model.bin"]["sha256"]) == 64


@pytest.mark.parametrize("how", list(DAMAGE))
def test_a_damaged_entry_is_made_again_with_one_warning(folder, cache, how):
    entry = backends.ensure_ctranslate2_export(folder, "float32")
    damage, said = DAMAGE[how]
    damage(entry)
    with pytest.warns(backends.CTranslate2CacheWarning, match="was damaged") as caught:
        assert backends.ensure_ctranslate2_export(folder, "float32") == entry
    assert len(caught) == 1 and said in str(caught[0].message)
    translator = backends.load_ctranslate2(folder, quantization="float32", threads=1)  # loads again
    assert len(translator.translate(["Hola."], "es-en", max_new_tokens=3)) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # whole again: used as it is
        assert backends.ensure_ctranslate2_export(folder, "float32") == entry


def test_an_entry_of_an_earlier_version_is_made_again_without_a_warning(folder, cache):
    entry = backends.ensure_ctranslate2_export(folder, "float32")
    stamp = json.loads((entry / backends.STAMP).read_text())
    del stamp["files"]  # what an earlier version wrote
    (entry / backends.STAMP).write_text(json.dumps(stamp))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert backends.ensure_ctranslate2_export(folder, "float32") == entry
    assert "files" in json.loads((entry / backends.STAMP).read_text())


def test_an_unwritable_cache_is_one_error_and_auto_falls_back(folder, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_VASWANI_CACHE", str(unwritable_folder(tmp_path) / "cache"))
    with pytest.raises(backends.CTranslate2CacheError, match="Cannot write the CTranslate2 export into the cache"):
        backends.ensure_ctranslate2_export(folder, "float32")
    with pytest.warns(backends.CTranslate2CacheWarning, match="translating with PyTorch"):
        assert backends.load_ctranslate2_or_none(folder, quantization="float32") is None


def test_the_command_line_falls_back_to_torch_only_for_auto(folder, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_VASWANI_CACHE", str(unwritable_folder(tmp_path) / "cache"))
    command = ["translate", "--model", str(folder), "--max-new-tokens", "3", "--num-beams", "1", "Hola."]
    assert main(command) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 1
    notes = [line for line in captured.err.splitlines() if line.startswith("hf-vaswani translate: warning: ")]
    assert len(notes) == 1 and "translating with PyTorch" in notes[0], captured.err
    assert main([*command[:1], "--backend", "ctranslate2", *command[1:]]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("hf-vaswani translate: error: ")]
    assert len(errors) == 1 and "Cannot write the CTranslate2 export into the cache" in errors[0], err
    assert "--backend torch" in errors[0] and "Traceback" not in err
