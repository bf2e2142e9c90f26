"""Where the model comes from when a command is given no ``--model``.

The checkpoint the project ships, ``pretrained/vaswani-tatoeba-es-en``, lives in the source repository, not in
the installed package (a wheel has no weights). `default_model_path()` finds it in the current directory or in
the checkout the package runs from, and otherwise says where to get a model. The default is always a local
folder, never looked up on the Hub.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_MODEL", "default_model_path", "looks_like_local_path"]

#: The checkpoint shipped with the project, relative to the repository root.
DEFAULT_MODEL = "pretrained/vaswani-tatoeba-es-en"

_CHECKOUT = Path(__file__).resolve().parent.parent  # the repository root when the package runs from a checkout


def default_model_path() -> str:
    """`DEFAULT_MODEL` in the current directory or the checkout the package runs from.

    Raises:
        FileNotFoundError: when neither holds it (an installed wheel outside the checkout), with what to do.
    """
    for base in (Path.cwd(), _CHECKOUT):
        candidate = base / DEFAULT_MODEL
        if (candidate / "config.json").is_file():
            return str(candidate)
    raise FileNotFoundError(
        f"No model given, and the shipped checkpoint {DEFAULT_MODEL} is not in the current directory or next to "
        "the installed package: it comes with the project's source repository, not with the pip package. "
        "Pass --model with a model folder or a Hub id (or run from a checkout of the repository)."
    )


def looks_like_local_path(name: str) -> bool:
    """Whether a ``--model`` value names a local folder rather than a Hub id (``org/name``): an absolute path, one
    that starts with ``.`` or ``~``, one with no or several ``/``, or one that exists."""
    return os.path.isabs(name) or name.startswith((".", "~")) or name.count("/") != 1 or os.path.exists(name)
