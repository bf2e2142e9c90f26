"""`hf_vaswani.backends.choice`: which backend translates and with which weight type."""

from __future__ import annotations

import pytest

pytest.importorskip("ctranslate2")

from hf_vaswani import backends  # noqa: E402


def test_the_backend_is_ctranslate2_on_a_cpu_when_installed(monkeypatch):
    assert backends.resolve_backend(None) == "ctranslate2" == backends.resolve_backend("auto", "cpu")
    assert backends.resolve_backend(None, "cuda") == "torch" and backends.resolve_backend("torch") == "torch"
    assert backends.default_quantization("cpu") == "int8" and backends.default_quantization("cuda:0") == "float16"
    with pytest.raises(ValueError, match="backend must be auto, torch or ctranslate2"):
        backends.resolve_backend("onnx")
    monkeypatch.setattr(backends.choice, "ctranslate2_available", lambda: False)
    assert backends.resolve_backend(None) == "torch"
    with pytest.raises(ModuleNotFoundError) as error:
        backends.resolve_backend("ctranslate2")
    assert error.value.name == "ctranslate2"  # the command line says "needs the [fast] extra"
