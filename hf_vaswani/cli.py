"""The ``hf-vaswani`` command line: one parser, whose subcommands come from command modules.

This package's commands are listed in `BUILTIN_COMMANDS`; packages built on it add theirs through the
``hf_vaswani.commands`` entry-point group (``vaswani_inspect`` adds ``inspect``, ``align-eval`` and
``compare-bert``, ``vaswani_demo`` adds ``demo``), so this package never imports them. What a command module
provides is described in `hf_vaswani.commands`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import pickle
import sys
import warnings
from collections.abc import Iterator, Sequence
from importlib.metadata import entry_points

from .commands import missing_extra
from .runtime import keep_freed_memory
from .terminal import for_terminal

__all__ = ["BUILTIN_COMMANDS", "ENTRY_POINT_GROUP", "build_parser", "main"]

#: The modules of this package that add subcommands.
BUILTIN_COMMANDS = (
    "hf_vaswani.commands.train",
    "hf_vaswani.commands.translate",
    "hf_vaswani.commands.convert",
    "hf_vaswani.commands.export",
    "hf_vaswani.commands.word_align",
)

#: Other installed packages register command modules under this entry-point group (name: the command).
ENTRY_POINT_GROUP = "hf_vaswani.commands"

#: Errors shown as one line with exit code 2 (HF_VASWANI_TRACEBACK=1 shows the traceback instead): bad values
#: (ValueError, which includes UnicodeDecodeError and JSON errors), file system errors (OSError: missing files,
#: permissions, a folder where a file is expected, a full disk, ...) and a pickle that ``torch.load(...,
#: weights_only=True)`` refuses to run. A command adds its own with ``set_defaults(user_errors=)``. Our code turns
#: the errors of the libraries it drives into these where they happen, naming the file; `_library_user_errors`
#: adds the few that can still come straight from a library.
USER_ERRORS = (ValueError, OSError, pickle.UnpicklingError)


class _Parser(argparse.ArgumentParser):
    """An `argparse.ArgumentParser` whose usage errors are one line (exit code 2), pointing to ``--help``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {for_terminal(message)} (see {self.prog} --help)\n")


def command_modules() -> dict[str, list[str]]:
    """Command module -> the commands registered for it (none for this package's own), this package's first."""
    modules: dict[str, list[str]] = {module: [] for module in BUILTIN_COMMANDS}
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda entry: entry.name):
        modules.setdefault(entry.value, []).append(entry.name)
    return modules


def build_parser() -> argparse.ArgumentParser:
    """The ``hf-vaswani`` parser with every command module's subcommands.

    A registered module that cannot be imported (its package's optional dependencies are not installed) still
    gets its commands, as placeholders that say which extra to install when they are run.
    """
    parser = _Parser(
        prog="hf-vaswani",
        description="The Transformer of Vaswani et al. (2017) as a Hugging Face transformers model.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)
    for module, commands in command_modules().items():
        try:
            importlib.import_module(module).add_parser(subparsers)
        except ImportError as error:
            if not commands:
                raise
            for command in commands:
                _add_unavailable(subparsers, command, error)
    return parser


def _add_unavailable(subparsers: argparse._SubParsersAction, command: str, error: ImportError) -> None:
    missing = _missing_module(error)
    extra = missing_extra(missing) if missing else None
    needs = f"needs the [{extra}] extra" if extra else f"cannot be imported: {error}"
    placeholder = subparsers.add_parser(command, help=f"({needs})", add_help=False)
    placeholder.add_argument("arguments", nargs=argparse.REMAINDER)

    def unavailable(args: argparse.Namespace) -> int:
        raise missing or error

    placeholder.set_defaults(func=unavailable)


def _missing_module(error: BaseException | None) -> ModuleNotFoundError | None:
    """The ModuleNotFoundError behind `error` (itself or one of its causes), if any."""
    while error is not None and not isinstance(error, ModuleNotFoundError):
        error = error.__cause__ or error.__context__
    return error


def _library_user_errors() -> tuple[type[BaseException], ...]:
    """Errors of libraries that bad input can cause, for those of the libraries that this run has imported (they
    are looked up, not imported): a damaged or unwritable safetensors file (`safetensors.SafetensorError`)."""
    safetensors = sys.modules.get("safetensors")
    error = getattr(safetensors, "SafetensorError", None)
    return (error,) if isinstance(error, type) and issubclass(error, BaseException) else ()


@contextlib.contextmanager
def _one_line_warnings(command: str) -> Iterator[None]:
    """Show the warnings of our packages (malformed input lines, skipped checkpoints) as one line each,
    ``hf-vaswani COMMAND: warning: ...``; other warnings as usual."""
    original = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
        if category.__module__.split(".")[0] in ("hf_vaswani", "vaswani_inspect", "vaswani_demo"):
            print(f"hf-vaswani {command}: warning: {for_terminal(str(message))}", file=sys.stderr)
        else:
            original(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = original


def _quiet_loading() -> None:
    """No progress bars for loading weights or files: a command's output is its result and one-line messages."""
    from huggingface_hub.utils import disable_progress_bars
    from transformers.utils import logging

    disable_progress_bars()
    logging.disable_progress_bar()


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hf-vaswani`` with `argv` (default: ``sys.argv[1:]``); returns the exit code.

    Bad input (missing or unreadable files, malformed values, an unknown direction, a missing optional
    dependency) gives a one-line ``hf-vaswani COMMAND: error: ...`` on stderr and exit code 2, no traceback.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # reported by the subcommand's parser, so that the message names the subcommand
        subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        subcommands.choices[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    user_errors = USER_ERRORS + tuple(getattr(args, "user_errors", ()))
    _quiet_loading()
    keep_freed_memory()  # faster CPU training and beam search (hf_vaswani.runtime); HF_VASWANI_KEEP_FREED_MEMORY=0: off
    try:
        with _one_line_warnings(args.command):
            return int(args.func(args) or 0)
    except ModuleNotFoundError as error:
        extra = missing_extra(error)
        if extra is None or os.environ.get("HF_VASWANI_TRACEBACK"):
            raise
        print(
            f"hf-vaswani {args.command}: error: this command needs the [{extra}] extra ({error.name} is not "
            f"installed): pip install 'hf-vaswani[{extra}]'",
            file=sys.stderr,
        )
        return 2
    except (*user_errors, *_library_user_errors()) as error:
        if os.environ.get("HF_VASWANI_TRACEBACK"):
            raise
        if isinstance(error, pickle.UnpicklingError):  # torch's message of a refused pickle is a page long
            from .inference import describe_load_error

            error = describe_load_error(error)
        print(f"hf-vaswani {args.command}: error: {for_terminal(str(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"hf-vaswani {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
