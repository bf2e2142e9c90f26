"""The demo's input rules: every value the API's endpoints and the controls send, checked before any model run.

Each check returns the value in the form the demo uses, or raises `vaswani_demo.texts.Refusal`: a message key and
its fields, which the caller tells in the language of the request. `translation_request` checks everything a
translation takes, in one go, against the model's `vaswani_demo.choices.DemoChoices`; `alignment_options`,
`view_options` and `heads_from_labels` check what the drawings and the ablation panel take. The endpoints skip
Gradio's own preprocessing (``preprocess=False``), so these checks see the raw values an API client sent (``"abc"``
for a number, a direction that is no choice) and answer them with the demo's sentences rather than Gradio's generic
error.

Characters the tokenizer does not know follow the rule every command shares
(`hf_vaswani.source_checks.unknown_characters`, `MAX_UNKNOWN_SHARE`): a text more than half of whose non-space
characters would be read as ``<unk>`` is refused; otherwise those characters are named in a note.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hf_vaswani.checked_source import CheckedSource
from hf_vaswani.languages import LANGUAGE_TOKEN_PATTERN
from hf_vaswani.source_checks import MAX_UNKNOWN_SHARE, unknown_characters
from vaswani_inspect.ablation import Head
from vaswani_inspect.record import KINDS
from vaswani_inspect.views import view_names

from .settings import MAX_CHARS, MEAN, MODEL_ALIGNER, UNITS
from .texts import Named, Offered, Refusal, ViewNames

if TYPE_CHECKING:
    from .choices import DemoChoices
    from .models import ServedModel

__all__ = [
    "Note",
    "TranslationRequest",
    "alignment_options",
    "choice",
    "flag",
    "head_choice",
    "heads_from_labels",
    "layer_choice",
    "shown",
    "text_notes",
    "translation_request",
    "view_options",
    "whole_number",
]

#: A note to show with a translation: (message key, its fields), told in the request's language.
Note = tuple[str, dict[str, Any]]

#: How many characters of a refused value a message repeats.
_SHOWN_CHARS = 40
#: How many unknown pieces a message names.
_SHOWN_PIECES = 10
#: A lone UTF-16 surrogate: half of a character, which no str from a real text holds.
_SURROGATE = re.compile("[\ud800-\udfff]")


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


def choice(value: Any, allowed: tuple[str, ...], default: str, key: str, **fields: Any) -> str:
    """`value` when it is one of `allowed` (`default` when empty), else a `Refusal` with message `key` (and
    `fields`, if its message has more than the value)."""
    if value is None or value == "":
        return default
    if not isinstance(value, str) or value not in allowed:
        raise Refusal(key, value=shown(value), **fields)
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


def text_notes(routes: Mapping[str, ServedModel], text: Any, direction: Any, max_tokens: int) -> list[Note]:
    """Check a text and its direction against the models that serve each direction (`routes`); returns the notes
    to show with its translation, as (message key, fields).

    Raises:
        Refusal: a direction no model serves; not a string; empty or blank; longer than `MAX_CHARS` characters or
            `max_tokens` tokens as the direction's model reads it (language token, code or prefix and ``</s>``
            included); holding a lone surrogate or a language token (``>>en<<``: the direction gives it); mostly
            characters its tokenizer does not know or of special tokens typed as text, ``<pad> <pad>``
            (`hf_vaswani.source_checks.MAX_UNKNOWN_SHARE`).
    """
    if not isinstance(direction, str) or direction not in routes:
        raise Refusal("direction", offered=Offered("direction", tuple(routes)))
    if text is None or text == "":
        raise Refusal("text.empty")
    if not isinstance(text, str):
        raise Refusal("text.type", kind=type(text).__name__)
    if not text.strip():
        raise Refusal("text.blank")
    if len(text) > MAX_CHARS:
        raise Refusal("text.chars", count=len(text), limit=MAX_CHARS)
    _check_encodable(text)
    _check_no_language_token(text)
    served = routes[direction]
    n_tokens = served.source_length(text, direction)
    if n_tokens > max_tokens:
        raise Refusal("text.tokens", count=n_tokens, limit=max_tokens)
    found = unknown_characters(served.tokenizer, text)
    if not found.pieces:
        return []
    # Special tokens typed as text (<pad>, </s>) count as unknown in the shared rule; they are told apart here.
    special = set(getattr(found, "special", ()))
    unknown = [piece for piece in found.pieces if piece not in special]
    if found.share > MAX_UNKNOWN_SHARE:
        raise Refusal("text.unknown" if unknown else "text.special", shown=_pieces(found.pieces))
    notes: list[Note] = []
    if unknown:
        notes.append(("note.unknown.one" if len(unknown) == 1 else "note.unknown.many", {"shown": _pieces(unknown)}))
    if special:
        notes.append(("note.special", {"shown": _pieces([piece for piece in found.pieces if piece in special])}))
    return notes


def _check_encodable(text: str) -> None:
    """Refuse a text holding a lone UTF-16 surrogate (``"\\ud800"``, which JSON can carry from an API client): no
    tokenizer can read it and no answer could repeat it."""
    found = _SURROGATE.search(text)
    if found:
        raise Refusal("text.encoding", shown=ascii(found.group(0)))


def _check_no_language_token(text: str) -> None:
    """Refuse a ``>>xx<<`` typed into the text, as every command does (`hf_vaswani.languages.source_with_language`):
    the direction gives the language token, and a second one would be split into pieces or read as a marker."""
    found = LANGUAGE_TOKEN_PATTERN.search(text)
    if found:
        raise Refusal("text.language", token=shown(found.group(0)))


def _pieces(pieces: Sequence[str]) -> str:
    """`pieces` as a message names them: the first few, separated by spaces."""
    return " ".join(pieces[:_SHOWN_PIECES]) + (" ..." if len(pieces) > _SHOWN_PIECES else "")


@dataclass(frozen=True)
class TranslationRequest:
    """A translation's values, checked (`translation_request`): what `vaswani_demo.runner.ModelRunner.run` runs.

    Attributes:
        text, direction: the sentence and its direction (one of `DemoChoices.directions`).
        num_beams, max_new_tokens: the decoding options (their defaults filled in).
        layer, heads: the word pairs' layer and head choices as `layer_choice` and `head_choice` read them (None:
            the model's configuration).
        notes: what to show with the translation (characters the model does not know).
    """

    text: str
    direction: str
    num_beams: int
    max_new_tokens: int
    layer: int | str | None = None
    heads: list[int] | str | None = None
    notes: tuple[Note, ...] = ()


def translation_request(
    choices: DemoChoices,
    routes: Mapping[str, ServedModel],
    text: Any,
    direction: Any,
    num_beams: Any = None,
    max_new_tokens: Any = None,
    layer: Any = None,
    head: Any = None,
) -> TranslationRequest:
    """Check every value of a translation (empty options: their defaults) against the models' `choices`: the
    options first, then the text against the model that serves its direction (`text_notes`, `routes`); `Refusal`
    for the first one that is out of range, not among the choices or not a text the model can read."""
    beams = whole_number(num_beams, choices.default_beams, 1, choices.max_beams, "option.beams")
    new_tokens = whole_number(
        max_new_tokens, choices.default_max_new_tokens, 1, choices.max_new_tokens_limit, "option.new_tokens"
    )
    chosen_layer = layer_choice(layer, choices.decoder_layers)
    chosen_heads = head_choice(head, choices.decoder_heads)
    notes = text_notes(routes, text, direction, choices.max_tokens)
    checked = CheckedSource(text, direction)  # translated and recorded without checking it again
    return TranslationRequest(checked, direction, beams, new_tokens, chosen_layer, chosen_heads, tuple(notes))


def alignment_options(
    choices: DemoChoices,
    layer: Any = None,
    head: Any = None,
    unit: Any = None,
    shift: Any = None,
    skip_punctuation: Any = None,
) -> dict[str, Any]:
    """The ``/alignment`` options (empty: the model's configuration, words, punctuation skipped); `Refusal` for a
    value out of range or not among the choices."""
    return {
        "layer": layer_choice(layer, choices.decoder_layers),
        "head": head_choice(head, choices.decoder_heads),
        "unit": choice(unit, UNITS, "words", "option.unit"),
        "shift": flag(shift, None, "option.shift"),
        "skip_punctuation": flag(skip_punctuation, True, "option.skip_punctuation"),
    }


def view_options(view: Any = None, kind: Any = None) -> dict[str, str]:
    """The ``/view`` options (empty: the head view of the encoder); `Refusal` for a value not among the choices (the
    views: those of `vaswani_inspect.views.VIEW_REGISTRY`)."""
    return {
        "view": choice(view, view_names(), "head", "option.view", views=ViewNames()),
        "kind": choice(kind, KINDS, "encoder", "option.kind"),
    }


def heads_from_labels(choices: DemoChoices, chosen: Mapping[str, Sequence[str] | None]) -> list[Head]:
    """The ablation panel's ``{kind: ["L0 H1", ...]}`` as heads, sorted; `Refusal` (a ValueError) for an unknown kind
    or a head the model does not have (`DemoChoices.head_labels`)."""
    heads = []
    for kind, labels in chosen.items():
        if kind not in choices.heads:
            raise Refusal("ablation.kind", kind=shown(kind))
        valid = choices.head_labels(kind)
        for label in labels or ():
            if label not in valid:
                named = Named("kind", kind, lower=True)
                raise Refusal("ablation.head", kind=named, label=shown(label), first=valid[0], last=valid[-1])
            layer, head = (int(part[1:]) for part in label.split())
            heads.append(Head(kind, layer, head))
    return sorted(set(heads))
