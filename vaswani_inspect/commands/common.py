"""What the subcommands of vaswani_inspect share: the ``--model`` and ``--device`` options, loading the model they
name, what a report calls it, and the local folders an output must not replace."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["check_device", "load_model", "local_model", "model_arguments", "model_name"]


def model_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--model`` and ``--device`` to `parser`."""
    parser.add_argument(
        "--model", default=None, help="model folder or Hub id (default: the shipped pretrained/vaswani-tatoeba-es-en)"
    )
    parser.add_argument(
        "--device", default=None, help="torch device: cpu (default), cuda, cuda:1 ... (checked before any work)"
    )


def load_model(args: argparse.Namespace) -> tuple[Any, Any]:
    """The model of ``--model`` (default: the shipped checkpoint) and its tokenizer."""
    from ..extract import load_model_and_tokenizer

    return load_model_and_tokenizer(args.model, device=args.device)


def model_name(args: argparse.Namespace, model: Any) -> str:
    """What the report calls the model: ``--model``, else the folder the default model was loaded from."""
    return str(args.model) if args.model is not None else str(getattr(model, "name_or_path", ""))


def check_device(device: str | None) -> None:
    """Refuse a ``--device`` this machine does not have, before anything is loaded (the default is the CPU)."""
    from hf_vaswani.inference import resolve_device

    if device is not None:
        resolve_device(device)


def local_model(args: argparse.Namespace) -> list[Path]:
    """The model folder the command reads, when it is local (an output must not replace it)."""
    from hf_vaswani.paths import default_model_path

    if args.model is None:
        try:
            return [Path(default_model_path())]
        except FileNotFoundError:
            return []  # loading the model says so
    return [Path(args.model)] if Path(args.model).exists() else []
