"""The demo's input rules: every value the API's endpoints and the controls send, checked before any model run.

Each check returns the value in the form the backend uses, or raises `vaswani_demo.texts.Refusal`: a message key
and its fields, which the backend tells in the language of the request. The endpoints skip Gradio's own
preprocessing (``preprocess=False``), so these checks see the raw values an API client sent (``"abc"`` for a number,
a direction that is no choice) and answer them with the demo's sentences rather than Gradio's generic error.

Characters the tokenizer does not know follow the rule every command shares
(`hf_vaswani.inference.unknown_characters`, `MAX_UNKNOWN_SHARE`): a text more than half of whose non-space
characters would be read as ``<unk>`` is refused; otherwise those characters are named in a note.
"""

from __future__ import annotations

import math
from typing import Any

from hf_vaswani.inference import MAX_UNKNOWN_SHARE, unknown_characters
from hf_vaswani.tokenization import DIRECTIONS, direction_to_languages, source_with_language

from .settings import MAX_CHARS, MEAN, MODEL_ALIGNER
from .texts import Refusal

__all__ = ["choice", "flag", "head_choice", "layer_choice", "shown", "text_notes", "whole_number"]

#: How many characters of a refused value a message repeats.
_SHOWN_CHARS = 40
#: How many unknown pieces a message names.
_SHOWN_PIECES = 10


def shown(value: Any) -> str:
    """`value` as a message repeats it: its Python repr, cut to a few dozen characters."""
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def _whole(value: Any) -> int | None:
    """`value` (a number or a numeric string) as a whole number; None when it is not one."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if math.isfinite(number) and number == int(number) else None


def whole_number(value: Any, default: int, low: int, high: int, key: str) -> int:
    """`value` as a whole number from `low` to `high` (`default` when empty), else a `Refusal` with message `key`
    (fields low, high, value)."""
    if value is None or value == "":
        return default
    number = _whole(value)
    if number is None or not low <= number <= high:
        raise Refusal(key, low=low, high=high, value=shown(value))
    return number


def choice(value: Any, allowed: tuple[str, ...], default: str, key: str) -> str:
    """`value` when it is one of `allowed` (`default` when empty), else a `Refusal` with message `key`."""
    if value is None or value == "":
        return default
    if not isinstance(value, str) or value not in allowed:
        raise Refusal(key, value=shown(value))
    return value


def flag(value: Any, default: bool | None, key: str) -> bool | None:
    """`value` when it is true or false (`default` when empty), else a `Refusal` with message `key`; a checkbox's
    value, where an API client might send ``"yes"`` or ``1``."""
    if value is None or value == "":
        return default
    if not isinstance(value, bool):
        raise Refusal(key, value=shown(value))
    return value


def layer_choice(value: Any, layers: int) -> int | str | None:
    """A layer choice ("mean", "0", "1", ..., or "model": the model's aligner) as `MEAN`, `MODEL_ALIGNER` or an
    index below `layers`; None (empty): the model's configuration."""
    if value is None or value == "":
        return None
    if value in (MEAN, MODEL_ALIGNER):
        return value
    number = _whole(value)
    if number is None or not 0 <= number < layers:
        raise Refusal("option.layer", high=layers - 1, value=shown(value))
    return number


def head_choice(value: Any, heads: int) -> list[int] | str | None:
    """A head choice ("mean", "0", or several averaged, "1,3") as "all" or a list of heads below `heads`; None
    (empty): the model's configuration."""
    if value is None or value == "":
        return None
    if value == MEAN:
        return "all"
    chosen: list[int] = []
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        for part in str(value).split(","):
            head = _whole(part.strip())
            if head is None or not 0 <= head < heads:
                raise Refusal("option.head", high=heads - 1, value=shown(value))
            if head not in chosen:
                chosen.append(head)
        return chosen
    raise Refusal("option.head", high=heads - 1, value=shown(value))


def text_notes(tokenizer: Any, text: Any, direction: Any, max_tokens: int) -> list[tuple[str, dict[str, Any]]]:
    """Check a text and its direction; returns the notes to show with its translation, as (message key, fields).

    Raises:
        Refusal: no valid direction; not a string; empty or blank; longer than `MAX_CHARS` characters or
            `max_tokens` tokens (language token and ``</s>`` included); mostly characters the tokenizer does not
            know (`hf_vaswani.inference.MAX_UNKNOWN_SHARE`).
    """
    if not isinstance(direction, str) or direction not in DIRECTIONS:
        raise Refusal("direction")
    if text is None or text == "":
        raise Refusal("text.empty")
    if not isinstance(text, str):
        raise Refusal("text.type", kind=type(text).__name__)
    if not text.strip():
        raise Refusal("text.blank")
    if len(text) > MAX_CHARS:
        raise Refusal("text.chars", count=len(text), limit=MAX_CHARS)
    _, target = direction_to_languages(direction)
    n_tokens = len(tokenizer(source_with_language(text, target), verbose=False).input_ids)
    if n_tokens > max_tokens:
        raise Refusal("text.tokens", count=n_tokens, limit=max_tokens)
    found = unknown_characters(tokenizer, text)
    if not found.pieces:
        return []
    pieces = " ".join(found.pieces[:_SHOWN_PIECES]) + (" ..." if len(found.pieces) > _SHOWN_PIECES else "")
    if found.share > MAX_UNKNOWN_SHARE:
        raise Refusal("text.unknown", shown=pieces)
    return [("note.unknown.one" if len(found.pieces) == 1 else "note.unknown.many", {"shown": pieces})]
