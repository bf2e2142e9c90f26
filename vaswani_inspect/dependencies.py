"""The optional libraries vaswani_inspect draws and computes with, all installed by the ``[inspect]`` extra of
hf-vaswani, and the error that says so when one is missing.

The error is a `ModuleNotFoundError` that keeps the missing module's `name`, so that ``hf-vaswani`` still reports
it as the one-line "this command needs the [inspect] extra" message.
"""

from __future__ import annotations

import importlib.util

__all__ = ["EXTRA_MODULES", "INSTALL", "is_extra_module", "missing_extra_error", "require"]

#: How to install the optional dependencies.
INSTALL = "pip install 'hf-vaswani[inspect]'"

#: Top-level modules that the ``[inspect]`` extra installs.
EXTRA_MODULES = frozenset({"bertviz", "matplotlib", "mpld3", "numpy", "scipy", "sklearn", "tqdm", "xstatic"})


def is_extra_module(error: ModuleNotFoundError) -> bool:
    """Whether the module that `error` did not find is one the ``[inspect]`` extra installs."""
    return (error.name or "").split(".")[0] in EXTRA_MODULES


def missing_extra_error(error: ModuleNotFoundError, needed_by: str) -> ModuleNotFoundError:
    """A `ModuleNotFoundError` naming the same module as `error` and saying how to install the extra (raise it
    ``from error`` to keep the original as the cause). `needed_by` says what needs the module."""
    name = error.name or ""
    return ModuleNotFoundError(f"{needed_by} needs {name}, which is not installed: {INSTALL}", name=name)


def require(*modules: str, needed_by: str) -> None:
    """Check that the top-level `modules` are installed, without importing them, so that a command stops before
    any slow work rather than when it writes its output.

    Raises:
        ModuleNotFoundError: the first module that is missing, with how to install it.
    """
    for module in modules:
        if importlib.util.find_spec(module) is None:
            missing = ModuleNotFoundError(f"No module named {module!r}", name=module)
            raise missing_extra_error(missing, needed_by)
