"""Which backend translates: PyTorch (`generate()`) or CTranslate2, and the CTranslate2 weight type by device."""

from __future__ import annotations

__all__ = ["BACKENDS", "BACKEND_CHOICES", "ctranslate2_available", "default_quantization", "resolve_backend"]

#: The values of ``--backend``: PyTorch (`generate()`) or CTranslate2.
BACKENDS = ("torch", "ctranslate2")
#: What a `--backend` option offers: "auto" (`resolve_backend`) and each backend.
BACKEND_CHOICES = ("auto", "ctranslate2", "torch")


def ctranslate2_available() -> bool:
    """Whether the ``[fast]`` extra (the ``ctranslate2`` package) is installed."""
    import importlib.util

    return importlib.util.find_spec("ctranslate2") is not None


def resolve_backend(backend: str | None, device: str | None = None) -> str:
    """The backend to translate with: `backend` when given, else CTranslate2 on a CPU when it is installed.

    Raises:
        ValueError: an unknown backend name.
        ModuleNotFoundError: ``"ctranslate2"`` asked for without the ``[fast]`` extra (the command line turns it
            into "needs the [fast] extra").
    """
    if backend in (None, "auto"):
        on_cpu = device is None or str(device).startswith("cpu")
        return "ctranslate2" if on_cpu and ctranslate2_available() else "torch"
    if backend not in BACKENDS:
        raise ValueError(f"backend must be auto, {' or '.join(BACKENDS)}, got {backend!r}.")
    if backend == "ctranslate2" and not ctranslate2_available():
        raise ModuleNotFoundError("No module named 'ctranslate2'", name="ctranslate2")
    return backend


def default_quantization(device: str | None = None) -> str:
    """int8 weights on a CPU (the fast path), float16 on a GPU."""
    return "float16" if device is not None and str(device).startswith("cuda") else "int8"
