"""An attribution method read as a word aligner and scored against gold (or eflomal's silver) links: AER, precision
and recall (`score_method`), the link reading chosen on the sentences given (argmax per target word, or a threshold
from `DEFAULT_THRESHOLDS`), and the model's own aligner when its configuration names a method (`model_links`).

Links are read off `Attribution.matrix` as `align` reads attention (`attribution_links`); with `skip_punctuation`
the punctuation words' rows and columns are zeroed first, so a target word's argmax is found among the other words
(what `align(..., skip_punctuation=True)` does) and gold links touching punctuation are left out of the scores.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..alignment.aer import AlignmentScores, scores_from_counts
from ..alignment.gold import GoldAlignment, check_gold
from ..alignment.links import links_of, word_lists
from ..record import AttentionRecord
from .api import attribute, check_method

#: The thresholds tried on a row-normalised matrix (a cell needs at least this share of the row to be a link).
DEFAULT_THRESHOLDS: tuple[float, ...] = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6)


@dataclass(frozen=True)
class LinkReading:
    """One way of reading links off a method's matrices, with its corpus scores: `links` "argmax" or "threshold"
    (then `threshold`)."""

    links: str
    threshold: float | None
    scores: AlignmentScores

    @property
    def config(self) -> dict[str, Any]:
        """The reading as the model's aligner stores it next to the method (``{"threshold": t}`` or nothing)."""
        return {} if self.threshold is None else {"threshold": self.threshold}

    def describe(self) -> str:
        return "argmax per target word" if self.threshold is None else f"threshold {self.threshold:g}"


@dataclass
class MethodScores:
    """What `score_method` returns: the `best` reading (lowest AER), every reading tried (`table`, best first), and
    the milliseconds each sentence's attribution took (`ms_per_sentence`)."""

    method: str
    best: LinkReading
    table: list[LinkReading]
    ms_per_sentence: float
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def aligner(self) -> dict[str, Any]:
        """``{"method": M}`` (with ``"threshold"`` when the best reading has one): how `write_alignment_config`
        stores this method as the model's aligner."""
        return {"method": self.method, **self.best.config}

    def to_dict(self) -> dict[str, Any]:
        def row(reading: LinkReading) -> dict[str, Any]:
            return {"links": reading.links, "threshold": reading.threshold, **reading.scores._asdict()}

        return {
            "method": self.method,
            "best": row(self.best),
            "aligner": self.aligner,
            "table": [row(reading) for reading in self.table],
            "ms_per_sentence": self.ms_per_sentence,
            "settings": self.settings,
        }


def without_punctuation(matrix: np.ndarray, record: AttentionRecord) -> np.ndarray:
    """`matrix` with the punctuation words' rows and columns zeroed."""
    source, target = word_lists(record)
    cleaned = np.array(matrix, dtype=np.float64)
    cleaned[:, np.asarray(source.punctuation(), dtype=bool)] = 0.0
    cleaned[np.asarray(target.punctuation(), dtype=bool)] = 0.0
    return cleaned


def matrix_links(
    matrix: np.ndarray, record: AttentionRecord, threshold: float | None = None, skip_punctuation: bool = False
) -> set[tuple[int, int]]:
    """(source word, target word) links of one word-level matrix: argmax per target word, or every cell at least
    `threshold`."""
    if skip_punctuation:
        matrix = without_punctuation(matrix, record)
    method = "argmax" if threshold is None else "threshold"
    targets, sources = np.nonzero(links_of(np.asarray(matrix), method, 0.5 if threshold is None else threshold))
    return {(int(i), int(j)) for j, i in zip(targets, sources)}


def _gold_sets(gold: GoldAlignment, record: AttentionRecord, skip_punctuation: bool) -> tuple[set, set]:
    if not skip_punctuation:
        return gold.sure, gold.possible
    source, target = word_lists(record)
    marks = {i for i, p in enumerate(source.punctuation()) if p}, {j for j, p in enumerate(target.punctuation()) if p}
    keep = lambda links: {(i, j) for i, j in links if i not in marks[0] and j not in marks[1]}  # noqa: E731
    return keep(gold.sure), keep(gold.possible)


def link_scores(
    matrices: Sequence[np.ndarray],
    records: Sequence[AttentionRecord],
    gold: Sequence[GoldAlignment],
    threshold: float | None = None,
    skip_punctuation: bool = False,
) -> AlignmentScores:
    """Corpus AER, precision and recall of the links read off `matrices` (one per record) against `gold`."""
    counts = np.zeros(4, dtype=np.int64)
    for matrix, record, sentence in zip(matrices, records, gold, strict=True):
        predicted = matrix_links(matrix, record, threshold, skip_punctuation)
        sure, possible = _gold_sets(sentence, record, skip_punctuation)
        possible = possible | sure
        counts += (len(predicted), len(sure), len(predicted & sure), len(predicted & possible))
    return scores_from_counts(*counts)


def best_reading(
    matrices: Sequence[np.ndarray],
    records: Sequence[AttentionRecord],
    gold: Sequence[GoldAlignment],
    thresholds: Iterable[float] | None = DEFAULT_THRESHOLDS,
    skip_punctuation: bool = False,
) -> list[LinkReading]:
    """Every reading (argmax, then each threshold) scored, lowest AER first (argmax first on a tie)."""
    readings = [LinkReading("argmax", None, link_scores(matrices, records, gold, None, skip_punctuation))]
    for threshold in thresholds or ():
        scores = link_scores(matrices, records, gold, float(threshold), skip_punctuation)
        readings.append(LinkReading("threshold", float(threshold), scores))
    return sorted(readings, key=lambda reading: reading.scores.aer)


def method_matrices(
    model: Any,
    tokenizer: Any,
    records: Sequence[AttentionRecord],
    method: str,
    *,
    progress: bool = False,
    **options: Any,
) -> tuple[list[np.ndarray], float]:
    """Each record's word-level attribution matrix by `method`, and the mean milliseconds per record."""
    check_method(method)
    items: Iterable[AttentionRecord] = records
    if progress:
        from tqdm.auto import tqdm

        items = tqdm(records, desc=method, unit="sentence")
    matrices, start = [], time.perf_counter()
    for record in items:
        matrices.append(attribute(model, tokenizer, record, method=method, **options).matrix)
    elapsed = time.perf_counter() - start
    return matrices, 1000.0 * elapsed / max(1, len(records))


def score_method(
    model: Any,
    tokenizer: Any,
    records: Sequence[AttentionRecord],
    gold: Sequence[GoldAlignment],
    method: str,
    *,
    thresholds: Iterable[float] | None = DEFAULT_THRESHOLDS,
    skip_punctuation: bool = False,
    progress: bool = False,
    **options: Any,
) -> MethodScores:
    """`method` read as an aligner on `records` (teacher-forced on their targets) against `gold`: every reading
    scored (`best_reading`), the best kept. The gold links are checked against the sentences first."""
    check_gold(records, gold)
    matrices, ms = method_matrices(model, tokenizer, records, method, progress=progress, **options)
    table = best_reading(matrices, records, gold, thresholds, skip_punctuation)
    settings = {"sentences": len(records), "skip_punctuation": skip_punctuation, "options": options}
    return MethodScores(method, table[0], table, ms, settings)


def model_links(
    model: Any, tokenizer: Any, record: AttentionRecord, *, skip_punctuation: bool = False
) -> list[tuple[int, int]]:
    """The links of `record` by the model's own aligner: the attribution method its ``config.alignment`` names
    (`vaswani_inspect.alignment.config.model_aligner`, with its threshold), else its attention reading (`align`)."""
    from ..alignment.config import model_aligner
    from ..alignment.links import align

    aligner = model_aligner(model.config)
    if aligner is None or aligner["method"] == "attention" and aligner.get("threshold") is None:
        return align(record, skip_punctuation=skip_punctuation)
    matrix = attribute(model, tokenizer, record, method=aligner["method"]).matrix
    return sorted(matrix_links(matrix, record, aligner.get("threshold"), skip_punctuation))


__all__ = [
    "DEFAULT_THRESHOLDS",
    "LinkReading",
    "MethodScores",
    "best_reading",
    "link_scores",
    "matrix_links",
    "method_matrices",
    "model_links",
    "score_method",
    "without_punctuation",
]
