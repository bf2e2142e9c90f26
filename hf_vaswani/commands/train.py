"""``hf-vaswani train`` and ``hf-vaswani average-checkpoints`` (transitional: the parsers still live in training)."""

from typing import Any


def add_parser(subparsers: Any) -> None:
    from ..training import add_parser as add

    add(subparsers)
