"""``python -m vaswani_inspect inspect ...`` / ``align-eval ...`` / ``compare-bert ...``: the ``hf-vaswani`` command
line (`hf_vaswani.cli.main`), which finds these subcommands in `vaswani_inspect.commands` through its entry point."""

from hf_vaswani.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
