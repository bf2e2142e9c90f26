"""``hf-vaswani patch`` on the tiny model: the report folder (heatmaps per site, the JSON of the result), and bad
input refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hf_vaswani.cli import main
from vaswani_inspect import patch_activations


@pytest.mark.slow
def test_patch_writes_heatmaps_and_the_json(model, tokenizer, tmp_path, capsys):
    folder = tmp_path / "tiny"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    out = tmp_path / "report"
    argv = ["patch", "el gato negro", "el perro negro", "--direction", "es-en", "--model", str(folder)]
    argv += ["--target", "the black cat", "--site", "encoder", "--site", "cross_heads", "--out", str(out)]
    assert main([*argv, "--method", "attribution"]) == 0
    assert "report:" in capsys.readouterr().out
    names = {path.name for path in out.iterdir()}
    assert names == {
        "patching.json",
        *(f"patching-{s}.{f}" for s in ("encoder", "cross_heads") for f in ("png", "svg")),
    }
    found = json.loads((out / "patching.json").read_text(encoding="utf-8"))
    expected = patch_activations(
        model,
        tokenizer,
        "el gato negro",
        "el perro negro",
        direction="es-en",
        target="the black cat",
        sites=["encoder", "cross_heads"],
        method="attribution",
    )
    assert found["sites"] == ["encoder", "cross_heads"] and found["method"] == "attribution"
    np.testing.assert_allclose(found["effects"]["encoder"], expected.effects["encoder"], atol=1e-5)
    assert found["source_tokens"] == expected.source_tokens and found["target_ids"] == expected.target_ids
    # sources of different lengths: one line, exit code 2, no report folder
    refused = tmp_path / "refused"
    assert main(["patch", "el gato negro", "el perro negro grande", "--model", str(folder), "--out", str(refused)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("hf-vaswani patch: error: ") and "same number of tokens" in error and "\n" not in error
    assert not refused.exists()
