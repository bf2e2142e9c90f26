""" "Why this word and not that one?" in the step-by-step view, without Gradio: the contrastive attribution (Yin &
Neubig 2022) of the piece the translation took at a step against another candidate of that step.

The candidates are the step's own (`vaswani_inspect.steps.DecodingStep.candidates` of the hypothesis the
translation went through: what the search weighed there), so the foil is a piece, not a retyped word: the foil
translation is the trace's, with that one piece changed, and the attribution explains log p(chosen) - log p(foil)
from the translation's own prefix (`CONTRAST_METHOD`'s ``contrast=`` option, `vaswani_inspect.attribution`), in
the copy of the model that serves the direction (`ModelRunner.borrowed_copy`). The scores of the source pieces are
summed into words and shown as shares of the row.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from vaswani_inspect.attribution.registry import method_entry
from vaswani_inspect.extract import extract
from vaswani_inspect.plots import new_figure

from .causes import continues_word, word_of
from .texts import DEFAULT_LANGUAGE, Named, decimal, message

__all__ = ["CONTRAST_METHOD", "WhyAnswer", "source_word_scores", "step_foils", "why_not"]

logger = logging.getLogger(__name__)

#: The gradient method that explains the contrast: one backward pass per row, the fastest of them.
CONTRAST_METHOD = "input_x_gradient"
#: How many source words the sentence names.
_NAMED = 3


@dataclass
class WhyAnswer:
    """What the view shows: a sentence (`summary`), the bar figure (None when nothing was computed), the source
    words and their shares, the attribution itself, and how long it took."""

    summary: str
    figure: Any = None
    words: list[str] | None = None
    shares: np.ndarray | None = None
    attribution: Any = None
    seconds: float = 0.0


def _step(trace: Any, step: Any) -> tuple[int, Any] | None:
    """(index, `DecodingStep`) of `step` (from 1, clamped to the trace), or None without a trace."""
    if trace is None or not getattr(trace, "steps", None):
        return None
    index = min(max(int(step or 1), 1), len(trace.steps)) - 1
    return index, trace.steps[index]


def step_foils(trace: Any, step: Any) -> list[tuple[str, str]]:
    """The candidates of `step` other than the piece the translation took, as dropdown choices (label, token
    id): the word and its probability, most probable first; [] without a trace or after the translation ended."""
    found = _step(trace, step)
    if found is None or found[1].chosen is None or found[1].chosen_hypothesis is None:
        return []
    chosen = found[1].chosen
    candidates = found[1].candidates[found[1].chosen_hypothesis]
    return [
        (f"{word_of(candidate.piece)} ({candidate.probability:.2f})", str(candidate.token_id))
        for candidate in candidates
        if candidate.token_id != chosen.token_id
    ]


def source_word_scores(tokens: list[str], scores: np.ndarray) -> tuple[list[str], np.ndarray]:
    """(words, scores): the scores of the source pieces `tokens` summed over the pieces of each word (a piece
    that does not start with "▁" continues the word before it; special tokens and punctuation are words of their
    own, `vaswani_demo.causes.continues_word`)."""
    words: list[str] = []
    summed: list[float] = []
    for token, score in zip(tokens, scores):
        if words and continues_word(token, words[-1]):
            words[-1] += word_of(token)
            summed[-1] += float(score)
        else:
            words.append(word_of(token))
            summed.append(float(score))
    return words, np.asarray(summed)


def _traced_record(record: Any, trace: Any, model: Any, tokenizer: Any) -> Any:
    """The token-level record of the trace's translation: the session's own when it is the same translation, else
    that translation teacher-forced (a trace behind placeholders, or of PyTorch where CTranslate2 chose)."""
    if list(record.target_ids) == list(trace.target_ids):
        return record
    return extract(model, tokenizer, trace.source, trace.text, direction=record.direction)


def why_not(
    backend: Any, record: Any, trace: Any, step: Any, foil: Any, *, language: str = DEFAULT_LANGUAGE
) -> WhyAnswer:
    """Why the translation took its piece at `step` (from 1) rather than the candidate `foil` (a token id, as
    `step_foils` offers it), said and drawn in `language`. Never raises: no translation, a step after the end, a
    foil that is not a candidate of the step or a failure give an answer whose sentence says why."""
    found = _step(trace, step)
    if record is None or found is None:
        return WhyAnswer(message(language, "why.none"))
    index, decoding = found
    if decoding.chosen is None:
        return WhyAnswer(message(language, "why.end"))
    chosen = decoding.chosen
    candidates = {str(c.token_id): c for c in decoding.candidates[decoding.chosen_hypothesis]}
    shown_chosen = f"“{word_of(chosen.piece)}”"
    if foil is None or foil == "":
        return WhyAnswer(message(language, "why.pick", step=index + 1, chosen=shown_chosen))
    if str(foil) not in candidates or str(foil) == str(chosen.token_id):
        return WhyAnswer(message(language, "why.foil", foil=f"“{foil}”", step=index + 1))
    candidate = candidates[str(foil)]
    started = time.perf_counter()
    try:
        with backend.runner.borrowed_copy(record.direction) as (served, model), served.encoding(record.direction):
            traced = _traced_record(record, trace, model, served.tokenizer)
            foil_ids = list(traced.target_ids)
            foil_ids[index + 1] = candidate.token_id
            attribution = method_entry(CONTRAST_METHOD).function(model, traced, contrast=foil_ids)
    except ImportError:  # captum, the [explain] extra
        return WhyAnswer(message(language, "explain.needs", method=Named("method", CONTRAST_METHOD)))
    except Exception as error:  # noqa: BLE001 - the user gets a sentence, the log gets the traceback
        logger.exception("The demo could not contrast step %s of %r", step, getattr(record, "source_text", ""))
        return WhyAnswer(message(language, "why.failed", error=type(error).__name__))
    words, scores = source_word_scores(list(traced.source_tokens), attribution.token_scores[index])
    total = scores.sum()
    shares = scores / total if total > 0 else scores
    fields = {
        "step": index + 1,
        "chosen": shown_chosen,
        "foil": f"“{word_of(candidate.piece)}”",
    }
    difference = math.log(max(chosen.probability, 1e-12)) - math.log(max(candidate.probability, 1e-12))
    ranked = np.argsort(-shares)[:_NAMED]
    named = ", ".join(f"“{words[i]}” ({decimal(language, 100 * shares[i], 0)} %)" for i in ranked)
    summary = message(language, "why.summary", difference=decimal(language, difference), words=named, **fields)
    figure = _why_figure(words, shares, fields, language)
    return WhyAnswer(summary, figure, words, shares, attribution, time.perf_counter() - started)


def _why_figure(words: list[str], shares: np.ndarray, fields: dict[str, Any], language: str) -> Any:
    """A bar per source word: its share of the contrast's attribution, the largest in orange."""
    figure = new_figure(max(4.5, 0.55 * len(words) + 1.2), 3.0)
    ax = figure.add_subplot()
    colours = ["tab:orange" if value == shares.max() else "tab:blue" for value in shares]
    ax.bar(range(len(words)), shares, color=colours)
    ax.set_xticks(range(len(words)), words, rotation=45, ha="right", rotation_mode="anchor", fontsize=9)
    ax.set_ylabel(message(language, "why.axis"), fontsize=8)
    ax.set_title(message(language, "why.title", **fields), fontsize=10, wrap=True)
    ax.spines[["top", "right"]].set_visible(False)
    return figure
