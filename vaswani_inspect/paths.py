"""Default locations (no heavy imports, so that the command line's --help stays fast)."""

from pathlib import Path

#: Where the project's trained Spanish->English checkpoint lives once it is shipped; `load_model_and_tokenizer()`
#: and the command line use it when no model is given, so they switch to it automatically when the folder exists.
DEFAULT_MODEL_PATH = Path(__file__).resolve().parent.parent / "pretrained" / "vaswani-tatoeba-es-en"

__all__ = ["DEFAULT_MODEL_PATH"]
