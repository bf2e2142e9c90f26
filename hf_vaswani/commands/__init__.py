"""The subcommands of ``hf-vaswani`` that this package provides, and what every subcommand shares.

Each module here (and each module another package registers under the ``hf_vaswani.commands`` entry-point group)
exposes ``add_parser(subparsers)``, which adds its subcommand(s) and sets ``func`` (a callable taking the parsed
`argparse.Namespace` and returning an exit code) with ``set_defaults``, and may set ``user_errors`` there too (more
exception classes to report as one line). Command modules import only `argparse` and this module at the top, so
that building the parser stays fast; the libraries they drive are imported when a command runs.
"""

from __future__ import annotations

import argparse

__all__ = ["EXTRAS", "finite_float", "missing_extra", "positive_int"]

#: The optional dependency (a top-level module name) -> the extra of ``hf-vaswani`` that installs it.
EXTRAS = {
    "datasets": "train",
    "evaluate": "train",
    "sacrebleu": "train",
    "accelerate": "train",
    "yaml": "train",
    "matplotlib": "inspect",
    "bertviz": "inspect",
    "mpld3": "inspect",
    "sklearn": "inspect",
    "scipy": "inspect",
    "xstatic": "inspect",
    "gradio": "demo",
    "ctranslate2": "fast",
    "eflomal": "align",
}


def missing_extra(error: ModuleNotFoundError) -> str | None:
    """The extra to install for a missing module, or None when the module is not an optional dependency."""
    return EXTRAS.get((error.name or "").split(".")[0])


def positive_int(text: str) -> int:
    """An argparse ``type`` for options that take a whole number >= 1 (``--batch-size``, ``--last``, ...)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def finite_float(text: str) -> float:
    """An argparse ``type`` for options that take a finite number (no nan or inf)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value
