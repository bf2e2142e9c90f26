"""The search for the alignment configuration that aligns best: `search_alignments` scores every layer x head x
shift against gold (or silver: statistical) links, then the averages of pairs of the best of them, and returns the
best configuration with the whole table; `best_layer` searches the layers alone."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..record import AttentionRecord
from ..words import renormalize_rows
from .aer import AlignmentScores, scores_from_counts
from .config import Heads, Layer
from .gold import GoldAlignment, check_gold, read_gold
from .links import DEFAULT_THRESHOLD, Method, Pair, head_choice, links_of, select_heads, word_level_cross, word_lists

#: How many of the best single configurations `search_alignments` also tries in pairs (28 pairs).
DEFAULT_PAIRS_OF_BEST = 8


@dataclass(frozen=True)
class AlignmentCandidate:
    """One configuration tried by `search_alignments`, with its corpus scores."""

    layer: Layer
    heads: list[int] | str
    shift: bool
    scores: AlignmentScores
    #: The readings averaged with this one (``{"layer", "heads", "shift"}`` each); empty for a single reading.
    average_with: tuple[dict[str, Any], ...] = ()

    @property
    def config(self) -> dict[str, Any]:
        """The configuration as `VaswaniConfig.alignment` / `AttentionRecord.alignment` hold it."""
        config = _plain_config(self)
        if self.average_with:
            config["average_with"] = [dict(reading) for reading in self.average_with]
        return config


@dataclass
class AlignmentSearch:
    """Result of `search_alignments`.

    Attributes:
        best: the configuration with the lowest AER, ``{"layer", "heads", "shift"}``: store it as the model's
            `config.alignment` (``hf-vaswani align-eval --write-config``).
        scores: its AER, precision and recall.
        table: every configuration tried, lowest AER first (ties in the order they were tried).
        settings: how links were read and scored (method, threshold, skip_punctuation, sentences).
    """

    best: dict[str, Any]
    scores: AlignmentScores
    table: list[AlignmentCandidate]
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        """A JSON-ready dict: best, its scores, the settings and the first `top` rows of the table (all: None)."""
        rows = self.table if top is None else self.table[:top]
        return {
            "best": self.best,
            "scores": self.scores._asdict(),
            "settings": self.settings,
            "table": [{**row.config, **row.scores._asdict()} for row in rows],
        }


def _gold_list(gold: Any, index_base: int | None) -> list[GoldAlignment]:
    if isinstance(gold, (str, Path)):
        return read_gold(gold, index_base)
    # Silver links (a set of pairs per sentence, e.g. from a statistical aligner) are all sure.
    return [item if isinstance(item, GoldAlignment) else GoldAlignment(set(item)) for item in gold]


def _layer_choices(record: AttentionRecord, layers: Sequence[Layer] | None) -> list[Layer]:
    if layers is None:
        return [*range(record.num_layers("cross")), "mean"]
    return [layer if layer == "mean" else record.layer_index("cross", layer) for layer in layers]


def _heads_choices(record: AttentionRecord, heads: Sequence[Heads] | None) -> list[list[int] | str]:
    if heads is None:
        return [*([h] for h in range(record.num_heads("cross"))), "all"]
    return ["all" if choice == "all" else head_choice(record, choice) for choice in heads]


def _gold_matrices(
    gold: GoldAlignment, shape: tuple[int, int], skipped: tuple[set[int], set[int]]
) -> tuple[np.ndarray, np.ndarray]:
    """(sure, possible) as boolean (target words, source words) matrices, punctuation links in `skipped` left out;
    the links were checked to lie inside `shape` (`check_gold`)."""
    sure = np.zeros(shape, dtype=bool)
    possible = np.zeros(shape, dtype=bool)
    for links, matrix in ((gold.possible, possible), (gold.sure, sure)):
        for i, j in links:
            if i not in skipped[0] and j not in skipped[1]:
                matrix[j, i] = True
    return sure, possible


def search_alignments(
    records: Sequence[AttentionRecord],
    gold: Sequence[GoldAlignment | Iterable[Pair]] | str | Path,
    *,
    layers: Sequence[Layer] | None = None,
    heads: Sequence[Heads] | None = None,
    shifts: Sequence[bool] = (False, True),
    method: Method = "argmax",
    threshold: float = DEFAULT_THRESHOLD,
    skip_punctuation: bool = False,
    index_base: int | None = None,
    pairs_of_best: int = DEFAULT_PAIRS_OF_BEST,
) -> AlignmentSearch:
    """Score every (layer) x (heads) x (shift) configuration of the cross-attention against gold links, then the
    average of every pair of the `pairs_of_best` best ones (`average_with`), and return the best, with the whole
    table.

    Args:
        records: one record per gold sentence, in the same order, from one model (teacher-forced on the
            reference translations the gold links index: `extract(model, tokenizer, sources, targets)`).
        gold: `GoldAlignment`s, a gold file (read with `read_gold(gold, index_base)`), or silver links: one set of
            (source word, target word) pairs per sentence, e.g. from
            `hf_vaswani.data.word_alignment`, all taken as sure.
        layers: the layer choices; default every decoder layer, then `"mean"`.
        heads: the head choices, each an index, a list of heads (averaged) or `"all"`; default each single head,
            then `"all"`.
        shifts: the shift choices (see the module docstring); default both.
        method, threshold: as in `align`.
        skip_punctuation: punctuation words get no predicted link, and gold links touching them are left out.
        pairs_of_best: how many of the best single configurations are also tried in pairs (0: none).
    Ties go to the configuration tried first: lower layers before `"mean"`, single heads before `"all"`, no shift
    before shift, single readings before pairs.
    """
    gold_list = _gold_list(gold, index_base)
    records = list(records)
    if not records:
        raise ValueError("search_alignments() needs at least one record.")
    if len(records) != len(gold_list):
        raise ValueError(f"Got {len(records)} records but {len(gold_list)} gold sentences: they must correspond 1:1.")
    shapes = {r.cross.shape[:2] for r in records}
    if len(shapes) != 1:
        raise ValueError(f"The records come from models of different (layers, heads): {sorted(shapes)}.")
    layer_choices = _layer_choices(records[0], layers)
    head_choices = _heads_choices(records[0], heads)
    shift_choices = [bool(s) for s in shifts]
    if not layer_choices or not head_choices or not shift_choices:
        raise ValueError("layers, heads and shifts must each offer at least one choice.")
    check_gold(records, gold_list)
    counts = np.zeros((len(layer_choices), len(head_choices), len(shift_choices), 4), dtype=np.int64)
    for number, (record, sentence) in enumerate(zip(records, gold_list, strict=True), start=1):
        counts += _sentence_counts(
            record, sentence, number, layer_choices, head_choices, shift_choices, method, threshold, skip_punctuation
        )
    table = [
        AlignmentCandidate(layer, heads_choice, shift, scores_from_counts(*counts[a, b, c]))
        for a, layer in enumerate(layer_choices)
        for b, heads_choice in enumerate(head_choices)
        for c, shift in enumerate(shift_choices)
    ]
    table.sort(key=lambda row: row.scores.aer)  # stable: ties keep the order they were tried in
    if pairs_of_best < 0:
        raise ValueError(f"pairs_of_best must be 0 or more, got {pairs_of_best}.")
    table += _pair_candidates(records, gold_list, table[:pairs_of_best], method, threshold, skip_punctuation)
    table.sort(key=lambda row: row.scores.aer)
    settings = dict(
        method=method,
        threshold=threshold,
        skip_punctuation=skip_punctuation,
        sentences=len(records),
        pairs_of_best=pairs_of_best,
    )
    return AlignmentSearch(table[0].config, table[0].scores, table, settings)


def _pair_candidates(
    records: list[AttentionRecord],
    gold: list[GoldAlignment],
    best: list[AlignmentCandidate],
    method: Method,
    threshold: float,
    skip_punctuation: bool,
) -> list[AlignmentCandidate]:
    """Every pair of the `best` single configurations, their matrices averaged, scored on the whole corpus."""
    pairs = [(a, b) for a in range(len(best)) for b in range(a + 1, len(best))]
    if not pairs:
        return []
    counts = np.zeros((len(pairs), 4), dtype=np.int64)
    for record, sentence in zip(records, gold, strict=True):
        sure, possible, skipped = _sentence_gold(record, sentence, skip_punctuation)
        word_cross = {shift: word_level_cross(record, shift, skip_punctuation) for shift in {c.shift for c in best}}
        matrices = [select_heads(word_cross[c.shift], record, c.layer, c.heads) for c in best]
        averaged = np.stack([renormalize_rows((matrices[a] + matrices[b]) / 2) for a, b in pairs])
        predicted = links_of(averaged, method, threshold)
        counts[:, 0] += predicted.sum(axis=(-1, -2))
        counts[:, 1] += sure.sum()
        counts[:, 2] += (predicted & sure).sum(axis=(-1, -2))
        counts[:, 3] += (predicted & possible).sum(axis=(-1, -2))
    return [
        AlignmentCandidate(
            best[a].layer, best[a].heads, best[a].shift, scores_from_counts(*counts[k]), (_plain_config(best[b]),)
        )
        for k, (a, b) in enumerate(pairs)
    ]


def _plain_config(candidate: AlignmentCandidate) -> dict[str, Any]:
    heads = candidate.heads if candidate.heads == "all" else list(candidate.heads)
    return {"layer": candidate.layer, "heads": heads, "shift": candidate.shift}


def _sentence_gold(
    record: AttentionRecord, gold: GoldAlignment, skip_punctuation: bool
) -> tuple[np.ndarray, np.ndarray, tuple[set[int], set[int]]]:
    """The sure and possible (sure included) link matrices (target words, source words) of one sentence, without
    the skipped punctuation words, and those words (source, target)."""
    source, target = word_lists(record)
    skipped = (
        {i for i, mark in enumerate(source.punctuation()) if mark and skip_punctuation},
        {j for j, mark in enumerate(target.punctuation()) if mark and skip_punctuation},
    )
    sure, possible = _gold_matrices(gold, (len(target.words), len(source.words)), skipped)
    return sure, possible | sure, skipped


def _sentence_counts(
    record: AttentionRecord,
    gold: GoldAlignment,
    number: int,
    layer_choices: list[Layer],
    head_choices: list[list[int] | str],
    shift_choices: list[bool],
    method: Method,
    threshold: float,
    skip_punctuation: bool,
) -> np.ndarray:
    """|A|, |S|, |A & S|, |A & P| of one sentence for every configuration, (layers, heads, shifts, 4)."""
    sure, possible, _ = _sentence_gold(record, gold, skip_punctuation)
    counts = np.zeros((len(layer_choices), len(head_choices), len(shift_choices), 4), dtype=np.int64)
    for c, shift in enumerate(shift_choices):
        try:
            word_cross = word_level_cross(record, shift, skip_punctuation)
        except ValueError as error:
            raise ValueError(f"Sentence {number}: {error}") from None
        matrices = np.stack(
            [np.stack([select_heads(word_cross, record, layer, h) for h in head_choices]) for layer in layer_choices]
        )
        predicted = links_of(matrices, method, threshold)  # (layers, heads, target words, source words)
        counts[:, :, c, 0] = predicted.sum(axis=(-1, -2))
        counts[:, :, c, 1] = sure.sum()
        counts[:, :, c, 2] = (predicted & sure).sum(axis=(-1, -2))
        counts[:, :, c, 3] = (predicted & possible).sum(axis=(-1, -2))
    return counts


@dataclass
class LayerSearch:
    """Result of `best_layer`: the decoder layer with the lowest AER and the scores of every layer."""

    best_layer: int
    best: AlignmentScores
    scores: dict[int, AlignmentScores]


def best_layer(
    records: Sequence[AttentionRecord],
    gold: Sequence[GoldAlignment] | str | Path,
    *,
    heads: Heads = "all",
    method: Method = "argmax",
    threshold: float = DEFAULT_THRESHOLD,
    shift: bool = False,
    index_base: int | None = None,
) -> LayerSearch:
    """The decoder layer whose cross-attention alignments have the lowest corpus AER on `gold`, with `heads` and
    `shift` fixed: `search_alignments` over the single layers only. `search_alignments` also searches the heads and
    the shift, and usually finds a better configuration.

    Args:
        records: one record per gold sentence, in the same order.
        gold: `GoldAlignment`s or a gold file (read with `read_gold(gold, index_base)`).
        heads, method, threshold, shift: as in `align`.
    Ties go to the lower layer.
    """
    records = list(records)
    if not records:
        raise ValueError("best_layer() needs at least one record.")
    layers = {r.num_layers("cross") for r in records}
    if len(layers) != 1:
        raise ValueError(f"The records come from models with different decoder depths: {sorted(layers)}.")
    search = search_alignments(
        records,
        gold,
        layers=range(layers.pop()),
        heads=[heads],
        shifts=[shift],
        method=method,
        threshold=threshold,
        index_base=index_base,
        pairs_of_best=0,
    )
    scores = dict(sorted((row.layer, row.scores) for row in search.table))
    return LayerSearch(search.best["layer"], search.scores, scores)


__all__ = [
    "DEFAULT_PAIRS_OF_BEST",
    "AlignmentCandidate",
    "AlignmentSearch",
    "LayerSearch",
    "best_layer",
    "search_alignments",
]
