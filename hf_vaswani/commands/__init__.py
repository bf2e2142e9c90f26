"""The subcommands of ``hf-vaswani`` that this package provides, and what every subcommand shares.

Each module here (and each module another package registers under the ``hf_vaswani.commands`` entry-point group)
exposes ``add_parser(subparsers)``, which adds its subcommand(s) and sets ``func`` (a callable taking the parsed
`argparse.Namespace` and returning an exit code) with ``set_defaults``, and may set ``user_errors`` there too (more
exception classes to report as one line). Command modules import only `argparse` and this module at the top, so
that building the parser stays fast; the libraries they drive are imported when a command runs.
"""

from __future__ import annotations

import argparse

from ..limits import MAX_NUM_BEAMS

__all__ = [
    "EXTRAS",
    "beam_size",
    "finite_float",
    "head_indices",
    "host_address",
    "missing_extra",
    "non_negative_int",
    "positive_int",
    "utf8_text",
]

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
    "onnx": "onnx",
    "onnxruntime": "onnx",
    "onnxscript": "onnx",
}


def missing_extra(error: ModuleNotFoundError) -> str | None:
    """The extra to install for a missing module, or None when the module is not an optional dependency."""
    return EXTRAS.get((error.name or "").split(".")[0])


def positive_int(text: str) -> int:
    """An argparse ``type`` for options that take a whole number >= 1 (``--batch-size``, ``--last``, ...)."""
    return _at_least(text, 1, "a positive integer")


def non_negative_int(text: str) -> int:
    """An argparse ``type`` for options that take a whole number >= 0 (``--pairs-of-best``)."""
    return _at_least(text, 0, "a whole number, 0 or more")


def _at_least(text: str, low: int, expected: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
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


def beam_size(text: str) -> int:
    """An argparse ``type`` for ``--num-beams``: a whole number from 1 to `MAX_NUM_BEAMS` (the model's vocabulary
    bounds it too, checked once the model is loaded)."""
    value = positive_int(text)
    if value > MAX_NUM_BEAMS:
        raise argparse.ArgumentTypeError(
            f"expected a beam size from 1 to {MAX_NUM_BEAMS}, got {text!r} (larger beams translate no better and "
            "need memory in proportion)"
        )
    return value


def utf8_text(text: str) -> str:
    """An argparse ``type`` for text arguments (sentences): refuses bytes that are not UTF-8, which Python hands
    over as surrogate escapes, naming the byte and where it is."""
    for index, character in enumerate(text):
        if "\udc80" <= character <= "\udcff":
            shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise argparse.ArgumentTypeError(
                f'"{shown}" is not valid UTF-8 (byte 0x{ord(character) - 0xDC00:02x} at character {index + 1}): '
                "write the text in UTF-8"
            )
    return text


def head_indices(text: str) -> str | list[int]:
    """An argparse ``type`` for ``--heads``: ``all``, or comma-separated head indices (0, 1, ...); the number of
    heads of the model bounds them, checked once the model is loaded."""
    if text.strip() == "all":
        return "all"
    parts = [part.strip() for part in text.split(",")]
    if not parts or any(not (part.isascii() and part.isdigit()) for part in parts):
        raise argparse.ArgumentTypeError(f"expected 'all' or comma-separated head numbers such as 0,2, got {text!r}")
    return [int(part) for part in parts]


def host_address(text: str) -> str:
    """An argparse ``type`` for an address to serve on (``--host``): an IP address or host name of this machine,
    checked by binding a socket to it, so that a typo is named instead of a server that "cannot find an empty
    port"."""
    import ipaddress
    import socket

    address = text.strip().removeprefix("[").removesuffix("]")
    try:
        ipaddress.ip_address(address)
    except ValueError:
        if address.replace(".", "").isdigit():
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a valid IPv4 address: it has four numbers from 0 to 255, such as 127.0.0.1"
            ) from None
    try:
        family, kind, protocol, _, where = socket.getaddrinfo(address, 0, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an IP address nor a host name this machine can resolve (e.g. 127.0.0.1, 0.0.0.0)"
        ) from None
    try:
        with socket.socket(family, kind, protocol) as probe:
            probe.bind(where)
    except OSError as error:
        raise argparse.ArgumentTypeError(
            f"cannot serve on {text!r}: {error.strerror or error} (it is not an address of this machine; "
            "127.0.0.1 serves this machine only, 0.0.0.0 every network it is on)"
        ) from None
    return address
