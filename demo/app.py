"""Hugging Face Space entry point of the translate-and-inspect demo (a thin launcher).

The app itself is `hf_vaswani.demo_app` (``build_app``), so that ``hf-vaswani demo`` works from an installed
package. This file finds that package whether it is installed (``pip install -e .``), run from a clone of the
repository (``python demo/app.py``: the repository root is put on ``sys.path``) or run in a Space (the
``hf_vaswani`` and ``vaswani_inspect`` folders copied next to this file, see README.md).

The model: ``$VASWANI_DEMO_MODEL`` (a folder or Hub id), else ``pretrained/vaswani-tatoeba-es-en`` in the current
directory or the repository. Binds ``$GRADIO_SERVER_NAME`` (a Space sets 0.0.0.0), else 127.0.0.1.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"  # before gradio is imported

_HERE = Path(__file__).resolve().parent
if importlib.util.find_spec("hf_vaswani") is None:
    for _folder in (_HERE, _HERE.parent):
        if (_folder / "hf_vaswani" / "__init__.py").is_file():
            sys.path.insert(0, str(_folder))
            break

from hf_vaswani.demo_app import build_app, launch_app  # noqa: E402
from hf_vaswani.runtime import keep_freed_memory  # noqa: E402

__all__ = ["build_app", "main"]


def main() -> None:
    """Build the app on the default model and serve it until interrupted."""
    keep_freed_memory()  # beam search without page faults (hf_vaswani.runtime); HF_VASWANI_KEEP_FREED_MEMORY=0: off
    port = os.environ.get("GRADIO_SERVER_PORT")
    launch_app(
        build_app(),
        host=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
        port=int(port) if port else None,
    )


if __name__ == "__main__":
    main()
