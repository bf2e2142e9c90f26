"""The ``hf-vaswani`` command line.

Each subcommand lives in a module that exposes ``add_parser(subparsers)``; that function adds its
subcommand(s) with `subparsers.add_parser(...)` and sets ``func`` (a callable taking the parsed
`argparse.Namespace` and returning an exit code) with `set_defaults`, and may set ``user_errors`` there too (more
exception classes to report like `USER_ERRORS`). To add a subcommand, add one line to
`COMMANDS`. A module is imported only when one of its subcommands is run (or its ``--help`` is asked), so
``hf-vaswani --help`` is fast and a subcommand whose optional dependencies are missing does not break the
others. The argparse types the subcommands share (`positive_int`, `finite_float`) live here too.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import warnings
from collections.abc import Iterator, Sequence

from .runtime import keep_freed_memory

__all__ = ["COMMANDS", "build_parser", "finite_float", "main", "positive_int"]

#: (subcommand, module that adds it, one-line help). One module may add several subcommands.
COMMANDS: list[tuple[str, str, str]] = [
    ("train", "hf_vaswani.training", "train a model with the paper's recipe (Seq2SeqTrainer)"),
    ("average-checkpoints", "hf_vaswani.training", "average the weights of the last N checkpoints (sec. 6.1)"),
    ("translate", "hf_vaswani.inference", "translate sentences (arguments, or one per line on stdin)"),
    ("evaluate", "hf_vaswani.inference", "BLEU and chrF of a model on a TSV of sentence pairs"),
    ("demo", "hf_vaswani.demo_app", "translate-and-inspect web demo (Gradio) on 127.0.0.1"),
    ("convert-marian", "hf_vaswani.convert_marian", "convert a Marian (OPUS-MT) model into an hf_vaswani one, exactly"),
    ("inspect", "vaswani_inspect.cli", "attention views, heatmaps, alignment and head table for one sentence"),
    ("align-eval", "vaswani_inspect.cli", "AER of cross-attention alignments against a gold file; pick the best layer"),
    ("compare-bert", "vaswani_inspect.compare", "compare our attention heads with a pretrained BERT's (Clark et al.)"),
]

#: Errors shown as one line with exit code 2 (set HF_VASWANI_TRACEBACK=1 to see the traceback instead): bad
#: values (ValueError, which includes UnicodeDecodeError and JSON errors) and file system errors (OSError:
#: missing files, permissions, a folder where a file is expected, ...). A subcommand adds its own error classes
#: with ``set_defaults(user_errors=(...))`` (e.g. vaswani_inspect's AttentionUnavailableError).
USER_ERRORS = (ValueError, OSError)


def positive_int(text: str) -> int:
    """An argparse ``type`` for options that take a whole number >= 1 (``--batch-size``, ``--last``, ...)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
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


class _Parser(argparse.ArgumentParser):
    """An `argparse.ArgumentParser` whose usage errors are one line (exit code 2), pointing to ``--help``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


@contextlib.contextmanager
def _one_line_warnings(command: str) -> Iterator[None]:
    """Show the warnings of this package (malformed input lines, skipped checkpoints) as one line each,
    ``hf-vaswani COMMAND: warning: ...``; other warnings as usual."""
    original = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
        if category.__module__.split(".")[0] == "hf_vaswani":
            print(f"hf-vaswani {command}: warning: {_one_line(str(message))}", file=sys.stderr)
        else:
            original(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = original


def _requested(argv: Sequence[str]) -> str | None:
    for item in argv:
        if not item.startswith("-"):
            return item
    return None


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser; the modules of the subcommand named in `argv` (if any) are imported and add their parsers,
    the other subcommands get a placeholder that only carries their help line."""
    parser = _Parser(
        prog="hf-vaswani",
        description="The Transformer of Vaswani et al. (2017) as a Hugging Face transformers model.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    requested = _requested(argv)
    modules = [module for name, module, _ in COMMANDS if name == requested]
    for module_name in dict.fromkeys(modules):
        importlib.import_module(module_name).add_parser(subparsers)
    for name, _, help_text in COMMANDS:
        if name not in subparsers.choices:
            subparsers.add_parser(name, help=help_text)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hf-vaswani`` command line with `argv` (default: ``sys.argv[1:]``); returns the exit code.

    Bad input (missing or unreadable files, malformed values, an unknown direction, a wrong ``--set``) gives a
    one-line ``hf-vaswani COMMAND: error: ...`` on stderr and exit code 2, without a traceback.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # reported by the subcommand's parser, so the message names the subcommand
        subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        subcommands.choices[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    func = getattr(args, "func", None)
    if func is None:  # a placeholder: its module did not add it (should not happen)
        parser.error(f"the subcommand {args.command!r} is not available")
    user_errors = USER_ERRORS + tuple(getattr(args, "user_errors", ()))
    keep_freed_memory()  # faster CPU training and beam search (hf_vaswani.runtime); HF_VASWANI_KEEP_FREED_MEMORY=0: off
    try:
        with _one_line_warnings(args.command):
            return int(func(args) or 0)
    except user_errors as error:
        if os.environ.get("HF_VASWANI_TRACEBACK"):
            raise
        print(f"hf-vaswani {args.command}: error: {_one_line(str(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"hf-vaswani {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
