"""Keeping numbers, URLs, e-mail addresses and rare names unchanged through translation.

A small model trained on short sentences copies badly what it rarely saw: the shipped checkpoint turns "764884"
into "766484" and "Aisha" into "They", because it reads a long number digit by digit and a rare name as pieces of
other words. The guard takes such spans out of the source, puts in their place a placeholder the model copies
(a frequent name, a two-digit number for a number, a time for a time), translates, and puts the original spans
back where the placeholders came out:

    "Tengo 764884 euros."  ->  "Tengo 30 euros."  ->  "I have 30 euros."  ->  "I have 764884 euros."

`find_spans` finds the spans (`Span`):

- URLs and e-mail addresses;
- numbers of two digits or more, or with ``.`` or ``,`` between digit groups (``45``, ``1982``, ``1.250,50``,
  ``3,5``), and times (``18:45``, which the model turns into "185"); one-digit numbers are left to the model, which
  copies them or writes them as words ("7" -> "seven");
- names: a capitalised word that does not start a sentence and that the tokenizer does not hold as one piece (rare
  in its training data), with the capitalised words next to it when they are all rare ("Buenos Aires"; not
  "Estados Unidos", a phrase the model knows and translates). A name that starts a sentence is not found: it
  cannot be told from any other first word.

`protect` replaces them; `restore` puts them back and says what went wrong when the model dropped or repeated a
placeholder. `translate_keeping_spans` does the three around any translate function; when a placeholder did not
come back exactly once, that sentence is translated again without the guard and a `KeepSpansWarning` names it, and
another names every sentence whose translation lost or gained a number, or changed a span no placeholder was left
for: the guard never invents or loses text silently.

`hf_vaswani.inference.translate(..., keep_spans=True)` and `CTranslate2Translator.translate(..., keep_spans=True)`
use it through `translate_with_model_keeping_spans`; ``hf-vaswani translate`` by default (``--no-keep-spans``: off).

Long because finding, replacing and restoring the spans and the translation loop around them share one set of
records (`Span`, `Protected`, `Restored`) and their private helpers.
"""

from __future__ import annotations

import bisect
import re
import warnings
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "NAME_PLACEHOLDERS",
    "NUMBER_PLACEHOLDERS",
    "TIME_PLACEHOLDERS",
    "YEAR_PLACEHOLDERS",
    "KeepSpansWarning",
    "Protected",
    "Restored",
    "Span",
    "check_keep_spans",
    "find_spans",
    "protect",
    "restore",
    "translate_keeping_spans",
    "vocabulary_of",
]

#: Stand-ins for names, URLs and e-mail addresses: frequent names of the training data, one vocabulary piece each,
#: that the shipped model copies in both directions (chosen on the validation split).
NAME_PLACEHOLDERS = ("Tom", "Mary", "John", "Boston", "Alice", "Paris")
#: Stand-ins for numbers: numbers the model copies as they are (a one-digit number may come out as a word).
NUMBER_PLACEHOLDERS = ("30", "40", "50", "60", "70", "80")
#: Stand-ins for four-digit numbers (mostly years: "en 30" would lose "en" or gain "años"), copied as well.
YEAR_PLACEHOLDERS = ("1990", "1980", "1970")
#: Stand-ins for times: times the model copies in both directions ("20:00"; "10:30" may come out "diez y media").
TIME_PLACEHOLDERS = ("20:00", "22:00", "19:00", "16:00")

#: The word piece prefix of SentencePiece vocabularies (ours and Marian's): "▁Tom" is "Tom" after a space.
WORD_START = "\u2581"

_URL = re.compile(r"(?:https?://|www\.)[^\s<>\"]+", re.IGNORECASE)
# An e-mail address is found from its "@" (`_email_spans`): a pattern searched from every position would read a
# long word without "@" again from each of its characters (quadratic in its length).
_EMAIL_LOCAL = frozenset("._+-")
_EMAIL_DOMAIN = re.compile(r"[\w-]+(?:\.[\w-]+)+")
# Digits, with one separator between digit groups: "1.250,50", "10:30", "3,000"; not glued to letters ("3rd").
_NUMBER = re.compile(r"(?<!\w)\d+(?:[.,:]\d+)*(?!\w)")
# Numbers the model copies or writes as a word itself: one digit ("4" -> "four"); longer ones it changes ("1982" ->
# "1922", "45" -> "455").
_SHORT_NUMBER = re.compile(r"\d")
_TIME = re.compile(r"\d{1,2}:\d{2}")
_YEAR = re.compile(r"\d{4}")
_WORD = re.compile(r"[^\W\d_]+")
# What may stand between two capitalised words of one name: "Buenos Aires", "Jean-Luc".
_NAME_JOINER = re.compile(r"[ -]")
# Closing punctuation a URL or e-mail address does not end with in running text; a closing bracket is part of
# the URL when it closes one the URL opened ("https://en.wikipedia.org/wiki/Mercury_(planet)").
_TRAILING = ".,;:!?)]}'\u00bb\u201d"
_BRACKETS = {")": "(", "]": "[", "}": "{"}
#: How many sentences a `KeepSpansWarning` names (then "and N more").
_REPORTED = 5
_SENTENCE_END = ".!?\u2026"
_OPENING = "\u00bf\u00a1\"'\u00ab\u201c([{-\u2014 \t\n"


@dataclass(frozen=True)
class Span:
    """A stretch of a source kept as it is: ``text == source[start:end]``; `kind` is ``"url"``, ``"email"``,
    ``"number"``, ``"time"`` or ``"name"``."""

    kind: str
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Protected:
    """A source with its spans replaced: `text` is what the model translates; ``placeholders[i]`` stands for
    ``spans[i]``."""

    original: str
    text: str
    spans: tuple[Span, ...]
    placeholders: tuple[str, ...]
    #: The spans no placeholder was free for (all of a kind used, or already in the text), left to the model.
    left: tuple[Span, ...] = ()


@dataclass(frozen=True)
class Restored:
    """What `restore` made of a translation: `text` with the spans back when `ok`; else `missing` (placeholders the
    model dropped) and `repeated` (placeholders it wrote more than once) say what went wrong, and `text` is the
    translation as the model gave it."""

    text: str
    ok: bool
    missing: tuple[Span, ...] = field(default=())
    repeated: tuple[Span, ...] = field(default=())


class KeepSpansWarning(UserWarning):
    """The model dropped or repeated the placeholder of a span: that sentence was translated without the guard."""


def vocabulary_of(tokenizer: Any) -> Container[str]:
    """The token strings of `tokenizer` (what `find_spans` asks whether a word is one piece)."""
    return tokenizer.get_vocab()


def _is_single_piece(word: str, vocabulary: Container[str]) -> bool:
    return WORD_START + word in vocabulary


def _starts_sentence(text: str, position: int) -> bool:
    """Whether only opening punctuation stands between `position` and the text's start or the last sentence end."""
    while position > 0 and text[position - 1] in _OPENING:  # (no copy of the text before: linear in all)
        position -= 1
    return position == 0 or text[position - 1] in _SENTENCE_END


class _Taken:
    """Spans found so far, sorted and not overlapping: whether a stretch overlaps one of them, in log time."""

    def __init__(self, spans: Sequence[Span] = ()) -> None:
        self.spans = sorted(spans, key=lambda span: span.start)
        self.starts = [span.start for span in self.spans]

    def overlaps(self, start: int, end: int) -> bool:
        i = bisect.bisect_left(self.starts, end)  # the spans that start before `end`: only the last can reach in
        return i > 0 and self.spans[i - 1].end > start

    def add(self, new: Sequence[Span]) -> None:
        self.spans = sorted([*self.spans, *new], key=lambda span: span.start)
        self.starts = [span.start for span in self.spans]


def _without_trailing(text: str) -> str:
    """`text` without the closing punctuation of the sentence around it; a bracket it opened stays."""
    end = len(text)
    unclosed = {closing: text.count(opening) - text.count(closing) for closing, opening in _BRACKETS.items()}
    while end and text[end - 1] in _TRAILING:
        closing = text[end - 1]
        if closing in unclosed:
            if unclosed[closing] >= 0:
                break
            unclosed[closing] += 1
        end -= 1
    return text[:end]


def _stripped(kind: str, text: str, start: int) -> Span:
    text = _without_trailing(text)
    return Span(kind, text, start, start + len(text))


def _email_spans(text: str) -> list[Span]:
    """The e-mail addresses of `text` (the local part, ``@``, a dotted domain), each ``@`` looked at once: the
    characters around one ``@`` are read once or twice, so the search is linear in the text's length."""
    spans: list[Span] = []
    searched_from = 0  # the end of the last address: the next one starts after it
    at = text.find("@")
    while at != -1:
        start = at
        while start > searched_from and (text[start - 1].isalnum() or text[start - 1] in _EMAIL_LOCAL):
            start -= 1
        domain = _EMAIL_DOMAIN.match(text, at + 1) if start < at else None
        if domain is not None:
            span = _stripped("email", text[start : domain.end()], start)
            spans.append(span)
            searched_from = domain.end()
        at = text.find("@", max(at + 1, searched_from))
    return spans


def _is_capitalised(text: str, match: re.Match[str]) -> bool:
    """A capitalised word that may be a name: not at a sentence start (where every word is capitalised) and not
    the first half of a contraction ("Don't"; "Aisha's" is the name "Aisha")."""
    word, after = match.group(), text[match.end() : match.end() + 2]
    contraction = len(after) == 2 and after[0] in "'\u2019" and after[1].isalpha() and after[1] != "s"
    return word[0].isupper() and not contraction and not _starts_sentence(text, match.start())


def _is_name_word(match: re.Match[str], vocabulary: Container[str]) -> bool:
    """A word the tokenizer splits into pieces: rare in its training data."""
    return not _is_single_piece(match.group(), vocabulary)


def _name_spans(text: str, vocabulary: Container[str], taken: _Taken) -> list[Span]:
    """Runs of capitalised words that are all rare ("Buenos Aires"); a run with a frequent word is a phrase the
    model knows and may have to translate ("Estados Unidos", "Madre Teresa"). One pass over the words, keeping
    only the run being read."""
    spans: list[Span] = []
    run: list[int] = []  # [start, end] of the run of capitalised words being read
    rare = False  # whether every word of that run is rare
    previous_end = -1  # where the last word read ended (-1: the last word was not capitalised)
    for match in _WORD.finditer(text):
        if taken.overlaps(match.start(), match.end()):
            continue
        if not _is_capitalised(text, match):
            previous_end = -1
            continue
        if run and previous_end == run[1] and _NAME_JOINER.fullmatch(text[previous_end : match.start()]):
            run[1], rare = match.end(), rare and _is_name_word(match, vocabulary)
        else:
            if run and rare:
                spans.append(Span("name", text[run[0] : run[1]], run[0], run[1]))
            run, rare = [match.start(), match.end()], _is_name_word(match, vocabulary)
        previous_end = match.end()
    if run and rare:
        spans.append(Span("name", text[run[0] : run[1]], run[0], run[1]))
    return spans


def find_spans(text: str, vocabulary: Container[str] | None = None) -> list[Span]:
    """The spans of `text` to keep unchanged, in order: URLs, e-mail addresses, numbers and, when `vocabulary`
    (the tokenizer's token strings, `vocabulary_of`) is given, rare names."""
    taken = _Taken([_stripped("url", m.group(), m.start()) for m in _URL.finditer(text)])
    taken.add([span for span in _email_spans(text) if not taken.overlaps(span.start, span.end)])
    taken.add(
        [
            Span("time" if _TIME.fullmatch(m.group()) else "number", m.group(), m.start(), m.end())
            for m in _NUMBER.finditer(text)
            if not _SHORT_NUMBER.fullmatch(m.group()) and not taken.overlaps(m.start(), m.end())
        ]
    )
    if vocabulary is not None:
        taken.add(_name_spans(text, vocabulary, taken))
    return list(taken.spans)


def _free_placeholders(text: str, candidates: Sequence[str]) -> list[str]:
    """The candidates that do not occur in `text` already (they would be restored as a span)."""
    return [c for c in candidates if not _occurrences(c, text)]


def _occurrences(placeholder: str, text: str) -> list[re.Match[str]]:
    """Where `placeholder` stands alone in `text`: not inside a longer word or number."""
    if placeholder[0].isdigit():
        pattern = rf"(?<![\w.,:]){re.escape(placeholder)}(?![\w]|[.,:]\d)"
    else:
        pattern = rf"(?<!\w){re.escape(placeholder)}(?!\w)"
    return list(re.finditer(pattern, text))


def _pool_of(span: Span) -> str:
    if span.kind == "time":
        return "time"
    if span.kind != "number":
        return "other"
    return "year" if _YEAR.fullmatch(span.text) else "number"


def protect(
    text: str,
    spans: Sequence[Span],
    *,
    name_placeholders: Sequence[str] = NAME_PLACEHOLDERS,
    number_placeholders: Sequence[str] = NUMBER_PLACEHOLDERS,
    year_placeholders: Sequence[str] = YEAR_PLACEHOLDERS,
    time_placeholders: Sequence[str] = TIME_PLACEHOLDERS,
) -> Protected:
    """`text` with each span replaced by its own placeholder (a four-digit number by a year, another number by a
    two-digit number, a time by a time, anything else by a name).

    A span that is itself a placeholder ("30", "Tom") stays as it is: the model copies it. A number whose pool
    is used up takes one of the other pool (the text's own "30, 40, ... 80" leave it the years). Other spans
    beyond the placeholders available are left as they are (`Protected.left`).
    """
    free = {
        "number": _free_placeholders(text, number_placeholders),
        "year": _free_placeholders(text, year_placeholders),
        "time": _free_placeholders(text, time_placeholders),
        "other": _free_placeholders(text, name_placeholders),
    }
    own = set(number_placeholders) | set(year_placeholders) | set(time_placeholders) | set(name_placeholders)
    ordered: list[Span] = []
    for span in sorted(spans, key=lambda s: s.start):
        if not ordered or span.start >= ordered[-1].end:  # (overlapping spans: the first one)
            ordered.append(span)
    chosen: dict[Span, str] = {}
    for span in [s for s in ordered if s.text not in own]:  # ("30", "Tom": the model copies them as they are)
        pool = free[_pool_of(span)] or (free["number"] or free["year"] if span.kind == "number" else [])
        if pool:
            chosen[span] = pool.pop(0)
    pieces: list[str] = []
    position = 0
    for span, placeholder in sorted(chosen.items(), key=lambda item: item[0].start):
        pieces += [text[position : span.start], placeholder]
        position = span.end
    pieces.append(text[position:])
    kept = tuple(sorted(chosen, key=lambda span: span.start))
    left = tuple(span for span in ordered if span not in chosen and span.text not in own)
    return Protected(text, "".join(pieces), kept, tuple(chosen[span] for span in kept), left)


def restore(translation: str, protected: Protected) -> Restored:
    """Put the spans of `protected` back into `translation` (the translation of ``protected.text``).

    Each placeholder must come out exactly once; otherwise nothing is replaced and the result says which spans'
    placeholders were dropped (`Restored.missing`) or repeated (`Restored.repeated`).
    """
    found = [_occurrences(p, translation) for p in protected.placeholders]
    missing = tuple(s for s, hits in zip(protected.spans, found, strict=True) if not hits)
    repeated = tuple(s for s, hits in zip(protected.spans, found, strict=True) if len(hits) > 1)
    if missing or repeated:
        return Restored(translation, False, missing, repeated)
    replacements = [(hits[0], span.text) for hits, span in zip(found, protected.spans, strict=True)]
    pieces: list[str] = []
    position = 0
    for match, original in sorted(replacements, key=lambda item: item[0].start()):
        pieces += [translation[position : match.start()], original]
        position = match.end()
    pieces.append(translation[position:])
    return Restored("".join(pieces), True)


def _failure_note(label: str, restored: Restored) -> str:
    parts = []
    if restored.missing:
        parts.append("dropped " + ", ".join(repr(s.text) for s in restored.missing))
    if restored.repeated:
        parts.append("repeated " + ", ".join(repr(s.text) for s in restored.repeated))
    return f"{label} ({'; '.join(parts)})"


def check_keep_spans(keep_spans: Any) -> None:
    """Refuse a `keep_spans` that is not True or False (``"no"`` would be read as true).

    Raises:
        TypeError: naming the value.
    """
    if not isinstance(keep_spans, bool):
        raise TypeError(f"keep_spans must be True or False, got {type(keep_spans).__name__} {keep_spans!r:.30}.")


def _numbers(text: str) -> list[str]:
    """The numbers of `text` (digits, with separators between digit groups), each once, in order."""
    return list(dict.fromkeys(match.group() for match in _NUMBER.finditer(text)))


def _unkept_note(label: str, protected: Protected, translation: str) -> str | None:
    """What the translation of a source did not keep, for a warning: a span left to the model (no placeholder
    was free) that is not in it as it was, a number of the source that it lacks (a short number or a time the
    model wrote otherwise), a number in it that the source does not hold; None when it kept everything."""
    source_numbers, output_numbers = _numbers(protected.original), _numbers(translation)
    changed = [
        span.text
        for span in protected.left
        if span.kind not in ("number", "time") and not _occurrences(span.text, translation)
    ]
    lost = [number for number in source_numbers if number not in output_numbers]
    gained = [number for number in output_numbers if number not in source_numbers]
    parts = [
        f"{what} {', '.join(repr(t) for t in texts)}"
        for what, texts in (("changed", changed), ("lost", lost), ("gained", gained))
        if texts
    ]
    return f"{label} ({'; '.join(parts)})" if parts else None


def _listed(notes: Sequence[str]) -> str:
    more = f" and {len(notes) - _REPORTED} more" if len(notes) > _REPORTED else ""
    return ", ".join(notes[:_REPORTED]) + more


def _restore_into(results: list[str], i: int, protected: Protected) -> bool:
    """Put the spans of `protected` back into ``results[i]`` (its translation); False (and nothing changed) when
    the model dropped or repeated a placeholder."""
    restored = restore(results[i], protected)
    results[i] = restored.text
    return restored.ok


def _second_try(first: Protected) -> dict[str, list[str]]:
    """The placeholders of the second try of a sentence whose first ones (`first`) the model lost: each list with
    the ones the first try used moved to its end."""
    lists = {
        "name_placeholders": NAME_PLACEHOLDERS,
        "number_placeholders": NUMBER_PLACEHOLDERS,
        "year_placeholders": YEAR_PLACEHOLDERS,
        "time_placeholders": TIME_PLACEHOLDERS,
    }
    used = set(first.placeholders)
    return {name: sorted(candidates, key=lambda c: c in used) for name, candidates in lists.items()}


def translate_keeping_spans(
    translate_texts: Callable[[list[str], list[str]], list[str]],
    sentences: Sequence[Any],
    vocabulary: Container[str] | None,
    labels: Sequence[str] | None = None,
    *,
    cut: Callable[[list[Any], list[str]], list[Any]] | None = None,
) -> list[str]:
    """Translate `sentences` with their spans (`find_spans`) kept unchanged.

    Args:
        translate_texts: translates a list of texts; called as ``translate_texts(texts, labels)``, once for all
            sentences, once more for those whose placeholders did not come back (with other placeholders), and
            once for those whose placeholders were lost twice (without them).
        vocabulary: the tokenizer's token strings (`vocabulary_of`), to find rare names; None keeps URLs,
            e-mail addresses and numbers only.
        labels: how warnings name the sentences (default "sentence i").
        cut: cuts the sentences to what the model reads, warning about those it cuts
            (`hf_vaswani.source_checks.cut_to_model_limit`), before any span is looked for: text the model never
            reads is not searched.

    A sentence whose placeholders the model dropped or repeated is translated again with other placeholders; when
    they are lost again, it gets its translation without the guard, and one `KeepSpansWarning` names every such
    sentence and span. Another names every sentence whose translation did
    not keep all its numbers (or gained one) or changed a span no placeholder was left for. A sentence without
    spans, or anything that is not a text (left for `translate_texts` to refuse), is translated as it is.
    """
    if isinstance(sentences, str):
        return translate_texts(sentences, labels)  # type: ignore[arg-type]  (for it to refuse, in its words)
    sentences = list(sentences)
    if labels is not None and (isinstance(labels, str) or len(labels) != len(sentences)):
        return translate_texts(sentences, labels)  # type: ignore[arg-type]  (likewise)
    labels = list(labels) if labels is not None else [f"sentence {i}" for i in range(1, len(sentences) + 1)]
    if cut is not None:
        sentences = cut(sentences, labels)
    spans = [find_spans(s, vocabulary) if isinstance(s, str) else [] for s in sentences]
    guarded = [protect(s, found) if isinstance(s, str) else None for s, found in zip(sentences, spans, strict=True)]
    # A sentence without spans goes as it came (a `CheckedSource` stays one: it is not checked again).
    texts = [g.text if g is not None and found else s for g, s, found in zip(guarded, sentences, spans, strict=True)]
    results = translate_texts(texts, labels)
    failed = [i for i, g in enumerate(guarded) if g is not None and not _restore_into(results, i, g)]
    if failed:  # a second try, with other placeholders: the model may keep "Mary" where it dropped "Tom"
        retried = {i: protect(sentences[i], spans[i], **_second_try(guarded[i])) for i in failed}
        again = translate_texts([retried[i].text for i in failed], [labels[i] for i in failed])
        for i, translation in zip(failed, again, strict=True):
            results[i], guarded[i] = translation, retried[i]
        failed = [i for i in failed if not _restore_into(results, i, retried[i])]
    if failed:
        notes = [_failure_note(labels[i], restore(results[i], retried[i])) for i in failed]
        plain = translate_texts([sentences[i] for i in failed], [labels[i] for i in failed])
        for i, translation in zip(failed, plain, strict=True):
            results[i], guarded[i] = translation, None
        warnings.warn(
            f"keep_spans: the model dropped or repeated a placeholder in {_listed(notes)}; these sentences were "
            "translated without the guard.",
            KeepSpansWarning,
            stacklevel=2,
        )
    unkept = [
        note
        for i, protected in enumerate(guarded)
        if protected is not None and (note := _unkept_note(labels[i], protected, results[i]))
    ]
    if unkept:
        warnings.warn(
            f"keep_spans: the translation of {_listed(unkept)} did not keep every number or name of its source as "
            "it was: check these.",
            KeepSpansWarning,
            stacklevel=2,
        )
    return results


def translate_with_model_keeping_spans(
    translate_texts: Callable[[list[str], list[str]], list[str]],
    translator: Any,
    tokenizer: Any,
    sentences: Sequence[Any],
    direction: str | None,
    labels: Sequence[str] | None,
) -> list[str]:
    """`translate_keeping_spans` with a model or translator: rare names from its tokenizer's vocabulary, sentences
    cut to what it reads (`hf_vaswani.source_checks.cut_to_model_limit`) first."""
    from .source_checks import cut_to_model_limit

    def cut(texts: list[Any], names: list[str]) -> list[Any]:
        return cut_to_model_limit(translator, tokenizer, texts, direction, names)

    return translate_keeping_spans(translate_texts, sentences, vocabulary_of(tokenizer), labels, cut=cut)
