"""``hf-vaswani demo`` (transitional shim)."""

from typing import Any


def add_parser(subparsers: Any) -> None:
    from hf_vaswani.demo_app import add_parser as add

    add(subparsers)
