"""Hugging Face Space entry point of the translate-and-inspect demo (a thin launcher).

The app itself is the `vaswani_demo` package (``build_app``, ``launch_app``), which ``hf-vaswani demo`` runs too.
This file finds that package whether it is installed (``pip install -e '.[demo]'``), run from a clone of the
repository (``python demo/app.py``: the repository root is put on ``sys.path``) or run in a Space (the
``hf_vaswani``, ``vaswani_inspect`` and ``vaswani_demo`` folders copied next to this file, see README.md).

The model: ``$VASWANI_DEMO_MODEL`` (a folder or Hub id of any architecture the demo serves, or one model per direction
separated by a space, ``es-en=Helsinki-NLP/opus-mt-es-en en-es=Helsinki-NLP/opus-mt-en-es``), else
``pretrained/vaswani-tatoeba-es-en`` in the current directory or the repository. Binds ``$GRADIO_SERVER_NAME`` (a Space
sets 0.0.0.0), else 127.0.0.1, on ``$GRADIO_SERVER_PORT``, else the first free port from 7860. ``python demo/app.py
--help`` says so and exits.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"  # before gradio is imported

_HERE = Path(__file__).resolve().parent
if importlib.util.find_spec("vaswani_demo") is None:
    for _folder in (_HERE, _HERE.parent):
        if (_folder / "vaswani_demo" / "__init__.py").is_file():
            sys.path.insert(0, str(_folder))
            break

from hf_vaswani.runtime import keep_freed_memory  # noqa: E402
from vaswani_demo import build_app, launch_app  # noqa: E402

__all__ = ["build_app", "main"]


def main(argv: list[str] | None = None) -> int:
    """Build the app on the default model and serve it until interrupted (``--help``: print how, and exit)."""
    parser = argparse.ArgumentParser(
        prog="demo/app.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.parse_args(argv)  # no options: $VASWANI_DEMO_MODEL, $GRADIO_SERVER_NAME and _PORT configure the app
    keep_freed_memory()  # beam search without page faults (hf_vaswani.runtime); HF_VASWANI_KEEP_FREED_MEMORY=0: off
    port = os.environ.get("GRADIO_SERVER_PORT")
    app = build_app()
    try:
        launch_app(app, host=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"), port=int(port) if port else None)
    finally:  # after Ctrl-C too: Gradio's cached files and the demo's record folder go
        app.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
