"""`hf-vaswani inspect --model` takes a folder or a Hub id (like ``translate``), and a model without attention
weights is reported in one line with exit code 2."""

import importlib

import pytest

import vaswani_inspect.__main__
import vaswani_inspect.commands.inspect
from hf_vaswani.cli import main
from vaswani_inspect import load_model_and_tokenizer
from vaswani_inspect.extract import AttentionUnavailableError


def _error_line(err: str, command: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"hf-vaswani {command}: error: "), err
    return lines[0]


def test_hub_ids_go_to_the_inspection_loader(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(
        "vaswani_inspect.loading.load_for_inspection", lambda *args, **kwargs: calls.append((args, kwargs))
    )
    load_model_and_tokenizer("someone/vaswani-es-en")
    load_model_and_tokenizer(str(tmp_path), device="meta")
    assert calls == [(("someone/vaswani-es-en",), {"device": "cpu"}), ((str(tmp_path),), {"device": "meta"})]
    for missing in (tmp_path / "missing", str(tmp_path / "missing"), "missing", "./a/b"):
        with pytest.raises(FileNotFoundError, match="No model checkpoint folder"):
            load_model_and_tokenizer(missing)
    assert not calls[2:]


def test_inspect_loads_a_hub_id(tmp_path, capsys):
    # Offline (tests/conftest.py), so the Hub id cannot be fetched: the error is the loader's, not "no such folder".
    argv = ["inspect", "hola", "--out", str(tmp_path), "--model", "no-such-user-xyz/no-such-vaswani-xyz"]
    assert main(argv) == 2
    line = _error_line(capsys.readouterr().err, "inspect")
    assert "Cannot load the model at 'no-such-user-xyz/no-such-vaswani-xyz'" in line


def test_attention_unavailable_is_one_line(monkeypatch, tmp_path, capsys, model, tokenizer):
    def no_attention(*args, **kwargs):
        raise AttentionUnavailableError("The model returned no cross_attentions: load it with 'eager'.")

    monkeypatch.setattr(vaswani_inspect.commands.inspect, "load_model", lambda args: (model, tokenizer))
    extract_module = importlib.import_module("vaswani_inspect.extract")  # (the package's `extract` is the function)
    monkeypatch.setattr(extract_module, "extract", no_attention)
    assert main(["inspect", "hola", "--out", str(tmp_path)]) == 2
    assert "no cross_attentions" in _error_line(capsys.readouterr().err, "inspect")
    assert vaswani_inspect.__main__.main(["inspect", "hola", "--out", str(tmp_path)]) == 2  # python -m too
    assert "no cross_attentions" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["inspect", "hola", "--out", "o"],
        ["align-eval", "--gold", "g", "--source-file", "s", "--target-file", "t"],
        ["compare-bert", "--sentences", "s", "--out", "o"],
    ],
)
def test_subcommands_report_attention_errors(argv):
    from hf_vaswani.cli import build_parser

    args = build_parser().parse_args(argv)
    assert AttentionUnavailableError in args.user_errors
