"""Text shown on a terminal: every message that echoes the user's text (a sentence in a warning, a path or an
argument in an error) goes through `for_terminal`, so that an escape sequence typed into the input (a window title,
a screen clear, a bell) is shown, not run by the terminal."""

from __future__ import annotations

import unicodedata

__all__ = ["for_terminal"]

# Line and paragraph separators end a line on some terminals; the rest of categories Cc/Cf is read as commands or
# hides text (a right-to-left override reorders what follows).
_SHOWN_AS_ESCAPE = frozenset(("Cc", "Cf", "Zl", "Zp"))


def for_terminal(text: object) -> str:
    """`text` as one line for a terminal: runs of white space become one space, and any other control or format
    character (ESC, BEL, DEL, C1 controls, bidirectional overrides) is written as its Python escape (``\\x1b``,
    ``\\u202e``), so the terminal prints it instead of obeying it."""
    words = str(text).split()
    return " ".join("".join(_shown(character) for character in word) for word in words)


def _shown(character: str) -> str:
    if unicodedata.category(character) not in _SHOWN_AS_ESCAPE:
        return character
    return ascii(character)[1:-1]
