"""`python -m vaswani_inspect inspect ...` / `align-eval ...` (see `vaswani_inspect.cli`)."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
