"""``hf-vaswani inspect``, ``align-eval`` and ``compare-bert`` (transitional shim)."""

from typing import Any


def add_parser(subparsers: Any) -> None:
    from .cli import add_parser as add_inspect
    from .compare import add_parser as add_compare

    add_inspect(subparsers)
    add_compare(subparsers)
