"""`extract` refuses what the commands refuse, with their messages (issue 27: it took emoji-only text, a beam size
of 0 (ZeroDivisionError), 10,000 new tokens, ``target="</s>"`` and a ``>>fr<<`` in the text)."""

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hf_vaswani.source_checks import UnknownCharactersWarning
from tests.helpers import PROCESS_TIMEOUT
from vaswani_inspect import extract

REFUSED = {
    "emoji-only": (dict(source="😀😀😀"), r"Most characters of source #0 \(😀😀😀\) are unknown to the model"),
    "special-tokens": (dict(source="<pad> <pad>"), r"Most characters of source #0 \(<pad>\) are unknown"),
    "no-beams": (dict(generate_kwargs={"num_beams": 0}), "num_beams must be a positive integer, got 0"),
    "too-long": (dict(generate_kwargs={"max_new_tokens": 10000}), "max_new_tokens=10000 is more than this model"),
    "eos-target": (dict(target="</s>"), r"Most characters of target #0 \(</s>\) are unknown"),
    "empty-target": (dict(target=""), "Target #0 is empty or whitespace only"),
    "unknown-language": (dict(source="el >>fr<< gato"), "contains '>>fr<<', which is not one of the model's"),
    "unknown-language-first": (dict(source=">>fr<< Le chat.", direction=None), "contains '>>fr<<'"),
    "nan-length-penalty": (
        dict(generate_kwargs={"num_beams": 2, "length_penalty": float("nan")}),
        "length_penalty must be a finite number, got nan",
    ),
    "misspelt-option": (dict(generate_kwargs={"nm_beams": 2}), r"'nm_beams' \(did you mean 'num_beams'\?\)"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_extract_refuses_what_the_commands_refuse(model, tokenizer, case):
    arguments, message = REFUSED[case]
    arguments = {"source": "el gato negro", "direction": "es-en", **arguments}
    with pytest.raises(ValueError, match=message):
        extract(model, tokenizer, **arguments)


def test_attribute_refuses_a_nan_length_penalty_in_its_generate_kwargs(model, tokenizer):
    from vaswani_inspect import attribute

    with pytest.raises(ValueError, match="length_penalty must be a finite number, got nan"):
        attribute(model, tokenizer, "el gato negro", direction="es-en", generate_kwargs={"length_penalty": math.nan})


def test_extract_names_unknown_characters_of_an_otherwise_readable_source(model, tokenizer):
    with pytest.warns(UnknownCharactersWarning, match=r"source #0 \(😀\)"):
        extract(model, tokenizer, "el gato negro 😀", "the black cat", direction="es-en")


@pytest.mark.slow
def test_inspect_refuses_emoji_only_text_in_one_line(model, tokenizer, tmp_path):
    """``hf-vaswani inspect '😀😀😀'`` in a subprocess: exit 2, one error line, no report."""
    folder = tmp_path / "model"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    executable = shutil.which("hf-vaswani") or str(Path(sys.executable).with_name("hf-vaswani"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
    env.pop("HF_VASWANI_TRACEBACK", None)
    result = subprocess.run(
        [executable, "inspect", "😀😀😀", "--model", str(folder), "--out", str(tmp_path / "report")],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=PROCESS_TIMEOUT,
    )
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-2000:]
    assert lines[0].startswith("hf-vaswani inspect: error: ") and "are unknown to the model" in lines[0]
    assert not (tmp_path / "report").exists()
