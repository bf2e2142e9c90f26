"""How a model is told which way to translate: `hf_vaswani.directions`, under the name the toolkit has always used.

The direction schemes (target tokens, language codes, task prefixes, one-direction models) live in `hf_vaswani`,
which translates with them too; this module gives the same names to `vaswani_inspect`'s callers.
"""

from __future__ import annotations

from hf_vaswani.directions import (
    ISO_639_3,
    Direction,
    check_direction_syntax,
    code_tokens,
    default_direction,
    language_codes,
    model_direction,
    model_directions,
    pair_language,
    resolve_direction,
    scheme_of,
    set_model_direction,
    source_for,
    source_language_settings,
    target_language_settings,
)

__all__ = [
    "ISO_639_3",
    "Direction",
    "check_direction_syntax",
    "code_tokens",
    "default_direction",
    "pair_language",
    "language_codes",
    "model_direction",
    "model_directions",
    "resolve_direction",
    "scheme_of",
    "set_model_direction",
    "source_for",
    "source_language_settings",
    "target_language_settings",
]
