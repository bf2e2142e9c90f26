"""What the subcommands of vaswani_inspect share: the ``--model`` and ``--device`` options, loading the model they
name, what a report calls it, and the local folders an output must not replace."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = [
    "DIRECTION_HELP",
    "check_device",
    "check_direction",
    "check_source_texts",
    "command_direction",
    "load_model",
    "local_model",
    "model_arguments",
    "model_name",
]

#: The ``--direction`` option's help, the same in every command.
DIRECTION_HELP = (
    "source-target: es-en (default) or en-es, in ISO codes or the model's own (spa_Latn-eng_Latn for NLLB, "
    "es_XX-en_XX for mBART-50); a one-direction model (OPUS-MT) defaults to its own direction"
)


def model_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--model`` and ``--device`` to `parser`."""
    parser.add_argument(
        "--model",
        default=None,
        help="model folder or Hub id: ours, Marian/OPUS-MT, M2M100/NLLB, mBART, BART or T5 (default: the shipped "
        "pretrained/vaswani-tatoeba-es-en)",
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


def command_direction(args: argparse.Namespace, model: Any, tokenizer: Any) -> str:
    """The direction the command translates in, checked against the loaded model (``--direction``, else a
    one-direction model's own, else es-en); stored back in ``args.direction``.

    Raises:
        ValueError: a direction the model cannot translate (`vaswani_inspect.directions.resolve_direction`).
    """
    from hf_vaswani.directions import default_direction, resolve_direction

    direction = default_direction(model, tokenizer, args.direction)
    resolve_direction(model, tokenizer, direction)
    args.direction = direction
    return direction


def check_source_texts(texts: list[str]) -> None:
    """Refuse an empty text, or one with a language token written in it (the direction adds what the model
    needs), before any model is loaded."""
    from hf_vaswani.empty_input import check_not_empty
    from hf_vaswani.languages import LANGUAGE_TOKEN_PATTERN

    for number, text in enumerate(texts, start=1):
        check_not_empty(text, f"sentence {number}")
        found = LANGUAGE_TOKEN_PATTERN.search(text)
        if found:
            raise ValueError(
                f"Sentence {number}: The source text contains a language token, {found.group(0)!r}: the direction "
                "adds what the model needs, not the text."
            )


def check_direction(args: argparse.Namespace) -> None:
    """Refuse a malformed ``--direction`` before any model is loaded, and, when the model named is ours (or a
    local folder that is not readable as another architecture's), a direction other than es-en and en-es; another
    architecture's directions are checked once it is loaded (`command_direction`)."""
    from hf_vaswani.directions import check_direction_syntax
    from hf_vaswani.languages import direction_to_languages
    from hf_vaswani.paths import looks_like_local_path

    from ..loading import model_type_of

    if args.direction is None:
        return
    check_direction_syntax(args.direction)
    if args.model is None:
        ours = True
    elif looks_like_local_path(str(args.model)):
        ours = model_type_of(str(args.model)) in (None, "vaswani")
    else:
        ours = model_type_of(str(args.model)) == "vaswani"  # a Hub id: its config says, when it can be read
    if ours:
        direction_to_languages(args.direction)
