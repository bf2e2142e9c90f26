"""Sources the model cannot read as words are refused on every path (issue 27): a ``>>xx<<`` that is not one of the
model's languages, wherever it is (the tokenizer splits it into pieces the model translates: "Lan lenó a la a"),
and text made of special tokens (``<pad> <pad> <pad>`` translated to "bowlm", ``</s>`` to an empty line)."""

import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from transformers import PreTrainedTokenizerFast

from hf_vaswani.pipeline_vaswani import VaswaniTranslationPipeline
from hf_vaswani.source_checks import (
    UnknownCharactersWarning,
    check_known_characters,
    check_language_tokens,
    check_source_ids,
    model_language_tokens,
    unknown_characters,
)
from tests.helpers import CHECKPOINT, PROCESS_TIMEOUT, tiny_tokenizer

SPECIAL_TEXTS = ["<pad> <pad> <pad>", "</s>", "<unk> <s>"]
NOT_A_LANGUAGE = re.escape("which is not one of the model's languages (>>en<<, >>es<<)")


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


def test_the_model_languages_are_the_tokenizers_language_tokens(tokenizer):
    assert model_language_tokens(tokenizer) == [">>en<<", ">>es<<"]


@pytest.mark.parametrize("source", [">>fr<< Le chat.", ">>en<< Le >>fr<< chat.", "Le chat. >>fr<<"])
def test_an_unknown_language_token_is_refused_wherever_it_is(tokenizer, source):
    with pytest.raises(ValueError, match=f"Source #2 contains '>>fr<<', {NOT_A_LANGUAGE}"):
        check_language_tokens(tokenizer, source, "source #2")


def test_a_language_token_after_the_start_is_refused(tokenizer):
    check_language_tokens(tokenizer, ">>en<< El gato.")
    with pytest.raises(ValueError, match="language token '>>es<<' after its start"):
        check_language_tokens(tokenizer, ">>en<< El >>es<< gato.")


def test_a_direct_tokenizer_call_is_detectable_from_its_ids(tokenizer):
    """The tokenizer itself (a plain PreTrainedTokenizerFast) splits ``>>fr<<`` into pieces without a word;
    `check_source_ids` finds what they spell, for one sequence and for a padded batch."""
    ids = tokenizer(">>fr<< Le chat.").input_ids
    assert ">>fr<<" not in tokenizer.convert_ids_to_tokens(ids)  # split into pieces
    with pytest.raises(ValueError, match=f"The source contains '>>fr<<', {NOT_A_LANGUAGE}"):
        check_source_ids(tokenizer, ids)
    batch = tokenizer([">>en<< El gato negro duerme.", ">>en<< Le >>fr<< chat."], padding=True, return_tensors="pt")
    with pytest.raises(ValueError, match="The source #2 contains '>>fr<<'"):
        check_source_ids(tokenizer, batch.input_ids)
    check_source_ids(tokenizer, tokenizer([">>en<< El gato.", ">>es<< Hola."], padding=True).input_ids)


@pytest.mark.parametrize("text", SPECIAL_TEXTS)
def test_text_made_of_special_tokens_is_refused_like_unknown_characters(tokenizer, text):
    found = unknown_characters(tokenizer, text)
    assert found.share == 1 and found.pieces
    with pytest.raises(ValueError, match=r"Most characters of sentence 1 \(.*\) are unknown to the model: it would "):
        check_known_characters(tokenizer, [text], ["sentence 1"])


def test_a_special_token_inside_a_sentence_is_named_in_a_warning(tokenizer):
    with pytest.warns(UnknownCharactersWarning, match=r"or as special tokens .*: sentence 1 \(<pad>\)"):
        check_known_characters(tokenizer, ["El gato <pad> negro duerme."], ["sentence 1"])


@pytest.mark.skipif(not CHECKPOINT.is_dir(), reason="the shipped checkpoint is not in this checkout")
def test_the_shipped_pipeline_refuses_unknown_language_tokens_and_warns_on_special_tokens():
    from transformers import pipeline

    translator = pipeline("translation", model=str(CHECKPOINT), pipeline_class=VaswaniTranslationPipeline)
    for text in (">>fr<< Le chat.", "Le chat >>fr<<"):
        with pytest.raises(ValueError, match=r">>fr<<, which is not a language token of this model"):
            translator(text, tgt_lang="en")
    for text in SPECIAL_TEXTS[:2]:
        with pytest.warns(UserWarning, match="outside the model's vocabulary .* or special tokens"):
            translator(text, tgt_lang="en", max_new_tokens=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert translator("El gato.", tgt_lang="en", max_new_tokens=8)


@pytest.mark.slow
def test_the_command_refuses_special_token_text_in_one_line(tmp_path, capsys, monkeypatch):
    """``hf-vaswani translate TEXT`` on special-token text and on an unknown language token: exit 2, one line,
    nothing on stdout. The first case runs the installed command in a subprocess, for a real process's exit status
    and stderr; the others run `hf_vaswani.cli.main`, which that command calls, in-process (a process would spend
    seconds importing torch and transformers for each)."""
    from hf_vaswani.cli import main
    from hf_vaswani.testing import tiny_model

    folder = tmp_path / "model"
    tokenizer = tiny_tokenizer()
    tiny_model(len(tokenizer)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    assert isinstance(PreTrainedTokenizerFast.from_pretrained(folder), PreTrainedTokenizerFast)
    executable = shutil.which("hf-vaswani") or str(Path(sys.executable).with_name("hf-vaswani"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("HF_VASWANI_TRACEBACK", None)
    monkeypatch.delenv("HF_VASWANI_TRACEBACK", raising=False)
    cases = (("<pad> <pad> <pad>", "<pad>"), ("</s>", "</s>"), ("Le >>fr<< chat.", None))
    for number, (text, shown) in enumerate(cases):
        argv = ["translate", "--model", str(folder), "--backend", "torch", text]
        if number == 0:
            result = subprocess.run(
                [executable, *argv],
                capture_output=True,
                text=True,
                env=env,
                stdin=subprocess.DEVNULL,
                timeout=PROCESS_TIMEOUT,
            )
            code, out, err = result.returncode, result.stdout, result.stderr
        else:
            capsys.readouterr()
            code = main(argv)
            out, err = capsys.readouterr()
        assert code == 2 and out == "", err[-2000:]
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("hf-vaswani translate: error: "), err
        expected = f"sentence 1 ({shown}) are unknown to the model" if shown else "unknown language token, '>>fr<<'"
        assert expected in lines[0], lines[0]
