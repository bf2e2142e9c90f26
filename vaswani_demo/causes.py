"""What the "What causes it?" tab computes and draws, without Gradio: activation patching of one sentence into
another (`vaswani_inspect.patch_activations`), said in words (the cells that bring the first translation back most)
and drawn as the toolkit's heatmaps (`vaswani_inspect.patching_plots`).

`find_causes` checks the two sentences (the text rules of a translation, `vaswani_demo.checks.text_notes`, then the
same number of tokens and not the same tokens: a refusal names both token lists, pieces shown as words) and patches
the first into the second in the copy of the model that serves the direction (`ModelRunner.borrowed_copy`), so that
its hooks and gradients never reach a translation served meanwhile; any architecture the toolkit looks inside works.
Every sentence and figure title is in the request's language (`vaswani_demo.causes_texts`).
"""

from __future__ import annotations

import logging
import math
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vaswani_inspect.patching import SITES, patch_activations
from vaswani_inspect.patching_plots import plot_patching

from .checks import text_notes
from .texts import DEFAULT_LANGUAGE, Refusal, decimal, message

__all__ = [
    "COURSE_PAIRS",
    "HEAD_SITES",
    "PATCHING_METHODS",
    "CausesAnswer",
    "continues_word",
    "find_causes",
    "pieces_as_words",
    "site_figure",
    "top_cells",
    "word_of",
]

logger = logging.getLogger(__name__)

#: The course's pairs, one word apart and the same length in tokens on the shipped model: (first, second,
#: direction). The first is the course's failure ("banco" read as a bank).
COURSE_PAIRS = (
    ("Me senté en el banco de la plaza.", "Me senté en el sofá de la plaza.", "es-en"),
    ("Nos sentamos en el banco del río.", "Nos sentamos en el sofá del río.", "es-en"),
    ("I went to the bank to get money.", "I went to the shop to get money.", "en-es"),
)
#: The patching methods the tab offers, the fast one first (the default).
PATCHING_METHODS = ("attribution", "exhaustive")
#: The head sites, in the order the heads figure draws them.
HEAD_SITES = ("encoder_heads", "decoder_heads", "cross_heads")
#: How many cells of each kind the summary names.
TOP = 3
#: Below this gap between the two sentences' log-probabilities, patching has nothing to bring back.
_NO_GAP = 1e-3
_METASPACE = "▁"


@dataclass
class CausesAnswer:
    """What the tab shows after a click: `status` (Markdown: the summary, or why nothing was computed), the
    `result` (a `vaswani_inspect.patching.PatchingResult`, None when refused or failed), the figures by site
    (`SITES`: "encoder" layer x source position, "decoder" layer x target position, the head sites layer x head),
    and how long it took."""

    status: str
    result: Any = None
    figures: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.result is not None


def word_of(label: str) -> str:
    """A piece label as a word is written: without the word-start mark "▁" (special tokens as they are)."""
    return label.replace(_METASPACE, "") or label


def pieces_as_words(labels: list[str]) -> str:
    """Piece labels as the words they spell, the pieces of one word joined by "·": ``>>en<< Me sent·é en el``."""
    words: list[str] = []
    for label in labels:
        if words and continues_word(label, words[-1]):
            words[-1] += "·" + label
        else:
            words.append(word_of(label))
    return " ".join(words)


def continues_word(label: str, previous: str) -> bool:
    """Whether the piece `label` continues the word of the piece (or word) `previous`: it does not start a word
    ("▁"), and neither it nor `previous` is a special token or punctuation (shown as words of their own)."""
    return not label.startswith(_METASPACE) and not any(_apart(piece) for piece in (label, previous))


def _apart(label: str) -> bool:
    """A special token (``</s>``, ``>>en<<``) or a punctuation piece: a word of its own when shown."""
    special = label.startswith("<") and label.endswith(">") or label.startswith(">>") and label.endswith("<<")
    text = word_of(label)
    return special or all(unicodedata.category(character).startswith("P") for character in text)


def _checked_pair(backend: Any, clean: Any, corrupted: Any, direction: Any) -> None:
    """Refuse a pair the tab cannot patch: what a translation refuses, a missing sentence, sentences of different
    token lengths (both token lists named) or of the same tokens."""
    if not isinstance(clean, str) or not clean.strip():
        raise Refusal("causes.empty")
    if not isinstance(corrupted, str) or not corrupted.strip():
        raise Refusal("causes.second")
    routes, limit = backend.runner.routes, backend.choices.max_tokens
    for text in (clean, corrupted):
        text_notes(routes, text, direction, limit)
    served = backend.runner.served(direction)
    ids = [served.source_ids(text, direction) for text in (clean, corrupted)]
    labels = [_labels(served.tokenizer, values) for values in ids]
    if len(ids[0]) != len(ids[1]):
        raise Refusal(
            "causes.length",
            clean_count=len(ids[0]),
            clean_tokens=pieces_as_words(labels[0]),
            corrupted_count=len(ids[1]),
            corrupted_tokens=pieces_as_words(labels[1]),
        )
    if ids[0] == ids[1]:
        raise Refusal("causes.same", tokens=pieces_as_words(labels[0]))


def _labels(tokenizer: Any, ids: list[int]) -> list[str]:
    from vaswani_inspect.pieces import piece_labels

    return piece_labels(tokenizer, ids)


def find_causes(
    backend: Any,
    clean: Any,
    corrupted: Any,
    direction: Any,
    method: Any = "attribution",
    *,
    progress: Callable[[int, int], None] | None = None,
    drawn: tuple[str, ...] = SITES,
    language: str = DEFAULT_LANGUAGE,
) -> CausesAnswer:
    """Patch `clean` into `corrupted` (every site) by `method` ("attribution" or "exhaustive"), on the model that
    serves `direction`, and say what brings `clean`'s translation back and draw the `drawn` sites' heatmaps
    (`site_figure`), in `language`. `progress` is `patch_activations`' (called as cells or passes are done).

    Never raises for the user's input: a refused pair (`_checked_pair`), or what the toolkit refuses, gives an
    answer without a result whose status says why; anything else too, with a traceback in the log.
    """
    started = time.perf_counter()
    method = method if method in PATCHING_METHODS else PATCHING_METHODS[0]
    try:
        _checked_pair(backend, clean, corrupted, direction)
        with backend.runner.borrowed_copy(direction) as (served, model), served.encoding(direction):
            result = patch_activations(
                model, served.tokenizer, clean, corrupted, direction=direction, method=method, progress=progress
            )
    except Refusal as refusal:
        return CausesAnswer(refusal.told(language))
    except ValueError as error:  # what the toolkit refuses says so in its own (English) words
        return CausesAnswer(message(language, "causes.refused", error=str(error)))
    except Exception as error:  # noqa: BLE001 - the user gets a sentence, the log gets the traceback
        logger.exception("The demo could not patch %r into %r", clean, corrupted)
        return CausesAnswer(message(language, "causes.failed", error=type(error).__name__))
    seconds = time.perf_counter() - started
    figures = {site: site_figure(result, site, language) for site in drawn}
    return CausesAnswer(causes_summary(result, language, seconds), result, figures, seconds)


def top_cells(result: Any, sites: tuple[str, ...], k: int = TOP) -> list[tuple[str, int, int, float]]:
    """The `k` cells of `sites` with the largest effect, largest first: (site, layer, column, effect); NaN cells
    (no gap between the sentences) are never among them."""
    cells = [
        (site, layer, column, float(value))
        for site in sites
        if site in result.effects
        for (layer, column), value in np.ndenumerate(np.asarray(result.effects[site], dtype=np.float64))
        if not math.isnan(value)
    ]
    return sorted(cells, key=lambda cell: -cell[3])[:k]


def _column_word(result: Any, site: str, column: int) -> str:
    """The word of a position site's column: the source piece (with the second sentence's, where they differ), or
    the target token the decoder input at that position predicts next."""
    if site == "encoder":
        clean, corrupted = result.source_tokens[column], result.corrupted_tokens[column]
        return word_of(clean) if clean == corrupted else f"{word_of(clean)} [{word_of(corrupted)}]"
    return word_of(result.target_tokens[column])


def causes_summary(result: Any, language: str = DEFAULT_LANGUAGE, seconds: float | None = None) -> str:
    """The tab's sentences for `result` (Markdown): the two sentences' log-probabilities of the first one's
    translation, then the source positions and the heads that bring it back most (`top_cells`)."""
    fields = {
        "clean": result.source_text,
        "corrupted": result.corrupted_text,
        "target": result.target_text,
        "clean_metric": decimal(language, result.clean_metric),
        "corrupted_metric": decimal(language, result.corrupted_metric),
        "method": message(language, f"causes.method.{result.method}"),
    }
    if abs(result.clean_metric - result.corrupted_metric) < _NO_GAP:
        return message(language, "causes.no_gap", **fields)
    lines = [message(language, "causes.summary", **fields)]
    for site, layer, column, effect in top_cells(result, ("encoder",)):
        told = dict(layer=layer, word=_column_word(result, site, column), effect=decimal(language, effect))
        lines.append("- " + message(language, "causes.position", site=message(language, f"causes.site.{site}"), **told))
    for site, layer, head, effect in top_cells(result, HEAD_SITES):
        told = dict(layer=layer, head=head, effect=decimal(language, effect))
        lines.append("- " + message(language, "causes.head", site=message(language, f"causes.site.{site}"), **told))
    if seconds is not None:
        lines.append("\n" + message(language, "causes.took", seconds=decimal(language, seconds)))
    return "\n".join(lines)


def site_figure(result: Any, site: str, language: str = DEFAULT_LANGUAGE) -> Any:
    """The effects of `site` as the toolkit draws them (`vaswani_inspect.patching_plots.plot_patching`: layer x
    position or layer x head, positions named by their words), titled in the tab's words in `language`; None when
    `result` has no such site."""
    if site not in result.effects:
        return None
    figure = plot_patching(result, site, language=language)
    method = message(language, f"causes.method.{result.method}")
    site_name = message(language, f"causes.site.{site}")
    title = message(language, "causes.figure", site=site_name, target=result.target_text, method=method)
    figure.axes[0].set_title(title, fontsize=9, wrap=True)
    return figure
