"""Where the project's trained checkpoint lives: the one definition that the command lines, the demo and
`vaswani_inspect` use. This module imports nothing heavy itself.

`DEFAULT_MODEL` is the checkpoint's folder relative to the repository (or to the folder the packages are installed
in). `default_model_path()` looks it up in the current directory, the repository root and the package folder, as
``hf-vaswani translate``/``evaluate``/``demo`` do; `DEFAULT_MODEL_PATH` is its absolute place in the repository,
next to the package folders, which `vaswani_inspect` uses. The default is always a local folder, never looked up
on the Hub.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_MODEL", "DEFAULT_MODEL_PATH", "default_model_path", "looks_like_local_path"]

#: The checkpoint shipped with the project, relative to the repository (or the installed package).
DEFAULT_MODEL = "pretrained/vaswani-tatoeba-es-en"

_PACKAGE_DIR = Path(__file__).resolve().parent

#: `DEFAULT_MODEL` in the repository (the folder that holds the ``hf_vaswani`` and ``vaswani_inspect`` packages).
DEFAULT_MODEL_PATH = _PACKAGE_DIR.parent / DEFAULT_MODEL


def default_model_path() -> str:
    """`DEFAULT_MODEL` looked up in the current directory, the repository root and the package folder; the
    relative name itself when none has it (loading then fails with a message that says where it looked)."""
    for base in (Path.cwd(), _PACKAGE_DIR.parent, _PACKAGE_DIR):
        candidate = base / DEFAULT_MODEL
        if (candidate / "config.json").is_file():
            return str(candidate)
    return DEFAULT_MODEL


def looks_like_local_path(name: str) -> bool:
    """Whether a ``--model`` value names a local folder rather than a Hub id (``org/name``): an absolute path, one
    that starts with ``.`` or ``~``, one with no or several ``/``, or one that exists."""
    return os.path.isabs(name) or name.startswith((".", "~")) or name.count("/") != 1 or os.path.exists(name)
