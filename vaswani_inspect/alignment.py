"""Word alignments read off the cross-attention, their evaluation against gold alignments, and the search for the
layer, heads and shift that align best.

**Words.** Alignments index the words of each side's text, special tokens left out (`vaswani_inspect.words`): a
word is a run of letters and digits, and every punctuation mark is a word of its own, as in gold alignment files
and in guided-alignment training (`hf_vaswani.data.word_alignment`). For the source `>>en<< ▁el ▁gato ▁come ▁rat ón .
</s>` the words are 0 "el", 1 "gato", 2 "come", 3 "ratón", 4 "."; for the target `<s> ▁¿Qué ▁es ▁eso ? </s>` they
are 0 "¿", 1 "Qué", 2 "es", 3 "eso", 4 "?". A punctuation mark glued into another word's piece ("¿" in "▁¿Qué") is
a word no piece stands for: it keeps its index, but has no attention and never gets a link.
`skip_punctuation=True` leaves every punctuation word out (`align`, `alignment_error_rate`, `search_alignments`):
the attention paid to a final "." then counts for no word, and the links of the other words are found among the
other words.

**Which rows and heads** (`layer`, `heads`, `shift`): a decoder layer or the mean over layers, a list of heads
(averaged) or all of them, and which cross-attention row belongs to a target word:

* `shift=False`: the rows that *predict* the word's pieces. Piece p of the target is predicted at decoder row
  p - 1 (row t reads input token t and predicts token t + 1, see `vaswani_inspect.record`).
* `shift=True`: the variant of Chen et al. (2020, "Accurate Word Alignment Induction from Neural Machine
  Translation"): the rows where the word's pieces are the decoder *input*, i.e. one row later, when the decoder
  already knows which word it has produced. Which of the two aligns better depends on the layer and head.

**Averaged readings** (`average_with`): a configuration can add more readings, each a layer, heads and shift of
its own, whose word-level matrices are averaged with the first one's before the links are read. Two heads that
make different mistakes align better together: the shipped checkpoint's aligner averages the head trained on
statistical alignments (layer 1, head 0, the rows that predict a word) with layer 0, head 1 read shifted.

Left out (None), the layer, heads, shift and averaged readings come from the record's model
(`AttentionRecord.alignment`, the model's `config.alignment`, written by guided-alignment training or by
``hf-vaswani align-eval --write-config``), else from `DEFAULT_ALIGNMENT`: the mean over all layers and heads, not
shifted. A call that chooses a layer, heads or shift reads that one configuration alone (unless it also passes
`average_with`). `search_alignments` scores every layer x head x shift against gold (or silver: statistical)
links, then the averages of pairs of the best of them, and returns the best configuration.

The word-level matrix averages the rows of a target word's pieces, sums the columns of a source word's pieces,
leaves out the special tokens' columns and renormalises each row to sum to 1.

Attention is not an explanation: the weights show where a head read from, not why the model chose its words, and
most heads do not align. A head trained to follow a statistical aligner (guided alignment) is an aligner: what it
shows is that aligner's links, learned.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np

from .record import AttentionRecord
from .words import DEFAULT_SPECIAL_TOKENS, TextWords, is_punctuation_word, is_special, renormalize_rows, text_words

Pair = tuple[int, int]
Method = Literal["argmax", "threshold"]
Layer = int | str
Heads = int | str | Sequence[int]
#: Default weight a (source word, target word) cell needs with `method="threshold"`.
DEFAULT_THRESHOLD = 0.5
#: How many of the best single configurations `search_alignments` also tries in pairs (28 pairs).
DEFAULT_PAIRS_OF_BEST = 8
#: How alignments are read when neither the call nor the record's model says: every layer and head, not shifted.
DEFAULT_ALIGNMENT: dict[str, Any] = {"layer": "mean", "heads": "all", "shift": False}


class AlignmentScores(NamedTuple):
    """Alignment error rate (Och & Ney 2003) with precision and recall, all in [0, 1]."""

    aer: float
    precision: float
    recall: float


@dataclass
class GoldAlignment:
    """Gold alignment of one sentence pair: `sure` links and `possible` links (`possible` includes `sure`).

    `read_gold` also records where the links come from, for error messages: `origin` (``"gold.txt, line 3"``) and
    `index_base` (the indexing of the file, to show the links as they are written there). Neither takes part in
    comparisons."""

    sure: set[Pair] = field(default_factory=set)
    possible: set[Pair] = field(default_factory=set)
    origin: str | None = field(default=None, compare=False)
    index_base: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        self.sure = {(int(i), int(j)) for i, j in self.sure}
        self.possible = {(int(i), int(j)) for i, j in self.possible} | self.sure


# ----------------------------------------------------------------------------------------------------------------
# Words and configuration
# ----------------------------------------------------------------------------------------------------------------


def _words(record: AttentionRecord) -> tuple[TextWords, TextWords]:
    specials = record.special_tokens or DEFAULT_SPECIAL_TOKENS
    return text_words(record.source_tokens, specials), text_words(record.target_tokens, specials)


def source_words(record: AttentionRecord) -> list[str]:
    """The source words that alignments index (special tokens left out, punctuation marks words of their own)."""
    return _words(record)[0].words


def target_words(record: AttentionRecord) -> list[str]:
    """The target words that alignments index (special tokens left out, punctuation marks words of their own)."""
    return _words(record)[1].words


def alignment_settings(
    record: AttentionRecord,
    layer: Layer | None = None,
    heads: Heads | None = None,
    shift: bool | None = None,
    average_with: Sequence[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The configuration ``{"layer", "heads", "shift"}`` (with ``"average_with"``, the readings averaged with it,
    when there are any) that `align(record, layer, heads, shift=shift, average_with=average_with)` uses: each
    argument given, else the record's model configuration (`record.alignment`), else `DEFAULT_ALIGNMENT`. The
    model's averaged readings are used only when none of the four is given. A single head index becomes a one-head
    list."""
    configured = record.alignment or DEFAULT_ALIGNMENT
    settings = _reading(
        configured["layer"] if layer is None else layer,
        configured["heads"] if heads is None else heads,
        configured["shift"] if shift is None else shift,
    )
    if average_with is None and layer is None and heads is None and shift is None:
        average_with = configured.get("average_with")
    if average_with:
        settings["average_with"] = [_reading(r["layer"], r["heads"], r["shift"]) for r in average_with]
    return settings


def _reading(layer: Layer, heads: Heads, shift: bool) -> dict[str, Any]:
    if isinstance(heads, (int, np.integer)) and not isinstance(heads, bool):
        heads = [int(heads)]
    elif not isinstance(heads, str):
        heads = [int(h) for h in heads]
    return {"layer": layer, "heads": heads, "shift": bool(shift)}


def describe_alignment(settings: dict[str, Any]) -> str:
    """A short text for a configuration: "layer 2, head 1, shifted", "mean of layers, all heads", and for averaged
    readings "layer 1, head 0 + layer 0, head 1, shifted"."""
    readings = [settings, *settings.get("average_with", [])]
    return " + ".join(_describe_reading(reading) for reading in readings)


def _describe_reading(settings: dict[str, Any]) -> str:
    layer = "mean of layers" if settings["layer"] == "mean" else f"layer {settings['layer']}"
    heads = settings["heads"]
    if heads == "all":
        head_text = "all heads"
    else:
        head_text = f"head{'s' if len(heads) > 1 else ''} {', '.join(str(h) for h in heads)}"
    return f"{layer}, {head_text}{', shifted' if settings['shift'] else ''}"


# ----------------------------------------------------------------------------------------------------------------
# The word-level matrix and the links
# ----------------------------------------------------------------------------------------------------------------


def _word_cross(record: AttentionRecord, shift: bool, skip_punctuation: bool) -> np.ndarray:
    """Every layer's and head's cross-attention at word level, (layers, heads, target words, source words), not
    renormalised: a target word's rows averaged, a source word's columns summed. Words without pieces, and
    punctuation words with `skip_punctuation`, get zero rows and columns."""
    specials = record.special_tokens or DEFAULT_SPECIAL_TOKENS
    if not shift and not is_special(record.target_tokens[0], specials):
        raise ValueError(
            "The first target token is not the decoder start token (<s>): rows cannot be matched to the tokens they "
            "predict. Use a token-level record, or to_words(..., special_tokens='keep')."
        )
    source, target = _words(record)
    if not source.words or not target.words:
        raise ValueError("The record has no source or no target words besides special tokens: nothing to align.")
    source_skipped = source.punctuation() if skip_punctuation else [False] * len(source.words)
    target_skipped = target.punctuation() if skip_punctuation else [False] * len(target.words)
    offset = 0 if shift else -1  # shift=False: piece p is predicted by row p - 1
    rows = np.zeros((len(target.words), len(record.target_tokens)), dtype=np.float64)
    for j, pieces in enumerate(target.pieces):
        if pieces and not target_skipped[j]:
            rows[j, [p + offset for p in pieces]] = 1.0 / len(pieces)
    columns = np.zeros((len(record.source_tokens), len(source.words)), dtype=np.float64)
    for i, pieces in enumerate(source.pieces):
        if pieces and not source_skipped[i]:
            columns[pieces, i] = 1.0
    return rows @ record.cross.astype(np.float64) @ columns


def _head_choice(record: AttentionRecord, heads: Heads) -> list[int]:
    if isinstance(heads, str):
        if heads != "all":
            raise ValueError(f"heads must be 'all', a head index or a list of head indices, got {heads!r}.")
        return list(range(record.num_heads("cross")))
    if isinstance(heads, (int, np.integer)):
        return [record.head_index("cross", heads)]
    chosen = [record.head_index("cross", h) for h in heads]
    if not chosen:
        raise ValueError("heads is an empty list: choose at least one head.")
    return chosen


def _select(word_cross: np.ndarray, record: AttentionRecord, layer: Layer, heads: Heads) -> np.ndarray:
    """The mean of the chosen layer(s) and heads of `_word_cross`, rows renormalised."""
    per_layer = word_cross if layer == "mean" else word_cross[record.layer_index("cross", layer)][None]
    return renormalize_rows(per_layer[:, _head_choice(record, heads)].mean(axis=(0, 1)))


def _links(matrix: np.ndarray, method: Method, threshold: float) -> np.ndarray:
    """Boolean links of word-level matrices (..., target words, source words); all-zero rows get none."""
    linked = matrix.sum(axis=-1, keepdims=True) > 0
    if method == "argmax":
        best = np.argmax(matrix, axis=-1)[..., None]
        return (np.arange(matrix.shape[-1]) == best) & linked
    if method == "threshold":
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}.")
        return (matrix >= threshold) & linked
    raise ValueError(f"method must be 'argmax' or 'threshold', got {method!r}.")


def alignment_matrix(
    record: AttentionRecord,
    layer: Layer | None = None,
    heads: Heads | None = None,
    *,
    shift: bool | None = None,
    skip_punctuation: bool = False,
    average_with: Sequence[dict[str, Any]] | None = None,
) -> np.ndarray:
    """Word-level cross-attention (target words x source words) used by `align`; rows sum to 1, except the rows
    of words that have no piece of their own (and of punctuation words with `skip_punctuation`), which are zero.

    Args:
        record: a token-level record, or a word-level one that kept its special tokens.
        layer: a decoder layer index, or `"mean"` over all layers.
        heads: `"all"`, one head index, or a list of head indices (averaged).
        shift: read each target word at the rows where it is the decoder input (Chen et al. 2020) instead of the
            rows that predict it (see the module docstring).
        skip_punctuation: punctuation words get zero rows and columns; the other columns are renormalised.
        average_with: more readings (``{"layer", "heads", "shift"}`` each) whose matrices are averaged with this
            one's, rows renormalised.

    Left at None, `layer`, `heads`, `shift` and `average_with` come from the record's model (`alignment_settings`).
    """
    settings = alignment_settings(record, layer, heads, shift, average_with)
    readings = [settings, *settings.get("average_with", [])]
    matrices = [
        _select(_word_cross(record, reading["shift"], skip_punctuation), record, reading["layer"], reading["heads"])
        for reading in readings
    ]
    return matrices[0] if len(matrices) == 1 else renormalize_rows(np.mean(matrices, axis=0))


def align(
    record: AttentionRecord,
    layer: Layer | None = None,
    heads: Heads | None = None,
    method: Method = "argmax",
    threshold: float = DEFAULT_THRESHOLD,
    shift: bool | None = None,
    *,
    skip_punctuation: bool = False,
    average_with: Sequence[dict[str, Any]] | None = None,
) -> list[Pair]:
    """Word alignment pairs `(source_word_idx, target_word_idx)` read off the cross-attention, sorted.

    Args:
        record: one `AttentionRecord`.
        layer: decoder layer index or `"mean"` over layers. heads: `"all"`, an index or a list (averaged).
        method: `"argmax"`: each target word is linked to its most attended source word (one link per target word
            that has pieces); `"threshold"`: every cell of `alignment_matrix` with weight >= `threshold` is a link
            (a target word may get zero or several links).
        threshold: used by `method="threshold"`, in (0, 1].
        shift: `False` reads the rows that predict each target word, `True` the rows one later (Chen et al. 2020).
            Left at None, `layer`, `heads` and `shift` come from the record's model (`alignment_settings`): with
            no argument, `align(record)` reads the alignment the model is configured for.
        skip_punctuation: punctuation words get no link, and each other target word is linked among the other
            source words.
        average_with: more readings averaged with this one before the links are read (`alignment_matrix`).
            Left at None with `layer`, `heads` and `shift`: the model's.
    """
    matrix = alignment_matrix(
        record, layer, heads, shift=shift, skip_punctuation=skip_punctuation, average_with=average_with
    )
    targets, sources = np.nonzero(_links(matrix, method, threshold))
    return sorted((int(i), int(j)) for j, i in zip(targets, sources))


def to_pharaoh(pairs: Iterable[Pair], one_based: bool = False) -> str:
    """Pharaoh format: `"i-j"` links (source-target) separated by spaces, sorted; 0-based unless `one_based`.

    The indices are those of `source_words` / `target_words`: punctuation marks are words of their own."""
    shift = 1 if one_based else 0
    return " ".join(f"{i + shift}-{j + shift}" for i, j in sorted({(int(i), int(j)) for i, j in pairs}))


_LINK = re.compile(r"^(\d+)([-pP?])(\d+)$")
_INDEX_DECLARATION = re.compile(
    r"index[\s_-]*base\s*[:=]?\s*(?P<a>[01])\b|\b(?P<b>[01])[\s_-]*(?:indexed|based)\b", re.IGNORECASE
)


def read_lines(path: str | Path, what: str = "file") -> list[str]:
    """The lines of the UTF-8 text file `path` (a byte order mark is dropped, ``\\r\\n`` endings accepted).

    Raises:
        FileNotFoundError: no such file (the message says which `what` it was).
        ValueError: bytes that are not UTF-8, naming the file and the lines that hold them.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No {what} at {str(path)!r}" + (" (it is a folder)." if path.is_dir() else "."))
    raw = path.read_bytes().removeprefix(b"\xef\xbb\xbf")
    lines, bad = [], []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        try:
            lines.append(line.decode("utf-8").removesuffix("\r"))
        except UnicodeDecodeError:
            bad.append(number)
    if bad:
        shown = ", ".join(str(number) for number in bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        raise ValueError(f"The {what} {str(path)!r} is not valid UTF-8 at line{'s' if len(bad) > 1 else ''} {shown}.")
    if lines and lines[-1] == "" and raw.endswith(b"\n"):
        lines.pop()  # the newline that ends the last line does not start another one
    elif lines == [""]:
        lines = []
    return lines


def read_gold(path: str | Path, index_base: int | None = None) -> list[GoldAlignment]:
    """Read a gold alignment file: one line per sentence pair, links separated by whitespace.

    `i-j` is a sure link, `ipj` (or `i?j`) a possible one; an empty line is a sentence without links. Lines
    starting with `#` are comments; a comment before the first link line may declare the indexing, e.g.
    `# index-base: 1`, `# 1-indexed` or `# 0-based`. Link `i-j` indexes source word i and target word j as
    `source_words` / `target_words` count them, punctuation marks being words of their own ("ratón ." has the
    words 0 "ratón" and 1 "."), as standard gold files (and `hf_vaswani.data.word_alignment`) do.

    Args:
        path: the file (UTF-8).
        index_base: 0 or 1; `None` takes the file's declaration, or 0 when it declares none. A value that
            contradicts the file's declaration raises ValueError.

    Returns:
        One `GoldAlignment` per sentence, with 0-based indices, each knowing its file and line (`origin`).

    Raises:
        FileNotFoundError: no such file. ValueError: not UTF-8, a malformed link, contradicting declarations, an
            index 0 in a 1-based file; the message names the file and the line.
    """
    if index_base not in (None, 0, 1):
        raise ValueError(f"index_base must be 0, 1 or None (read it from the file), got {index_base!r}.")
    lines = read_lines(path, "gold alignment file")
    declared: int | None = None
    sentences: list[GoldAlignment] = []
    started = False
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.startswith("#"):
            match = _INDEX_DECLARATION.search(stripped)
            if match and not started:
                value = int(match.group("a") or match.group("b"))
                if declared is not None and declared != value:
                    raise ValueError(f"{path}:{number}: the header declares both 0- and 1-based indices.")
                declared = value
            continue
        started = True
        sentences.append(_parse_links(stripped, path, number))
    if declared is not None and index_base is not None and declared != index_base:
        raise ValueError(f"{path} declares {declared}-based indices but index_base={index_base} was passed.")
    base = index_base if index_base is not None else (declared if declared is not None else 0)
    if base == 1:
        for number, gold in enumerate(sentences, start=1):
            if any(min(i, j) < 1 for i, j in gold.possible):
                raise ValueError(f"{gold.origin}: sentence {number} has index 0 but the file is 1-based.")
        sentences = [
            GoldAlignment(
                {(i - 1, j - 1) for i, j in g.sure}, {(i - 1, j - 1) for i, j in g.possible}, g.origin, index_base=1
            )
            for g in sentences
        ]
    return sentences


def _parse_links(line: str, path: str | Path, number: int) -> GoldAlignment:
    sure: set[Pair] = set()
    possible: set[Pair] = set()
    for item in line.split():
        match = _LINK.match(item)
        if match is None:
            raise ValueError(f"{path}:{number}: {item!r} is not an alignment link ('i-j' sure, 'ipj' possible).")
        pair = (int(match.group(1)), int(match.group(3)))
        (sure if match.group(2) == "-" else possible).add(pair)
    return GoldAlignment(sure, possible, origin=f"{path}, line {number}")


def _is_pair(item: object) -> bool:
    return (
        isinstance(item, (tuple, list))
        and len(item) == 2
        and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in item)
    )


def _as_corpus(value: object, name: str) -> list[set[Pair]]:
    items = list(value)  # type: ignore[call-overload]
    if not items or all(_is_pair(x) for x in items):
        return [{(int(i), int(j)) for i, j in items}]
    if all(not _is_pair(x) for x in items):
        return [{(int(i), int(j)) for i, j in sentence} for sentence in items]
    raise ValueError(f"{name} mixes pairs and lists of pairs: pass one sentence's pairs, or one set per sentence.")


def _is_word_list(value: object) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(word, str) for word in value)


def _punctuation_per_sentence(words: object, sentences: int) -> list[tuple[set[int], set[int]]]:
    """For each sentence, (punctuation source word indices, punctuation target word indices)."""
    if words is None:
        raise ValueError("skip_punctuation=True needs words=: (source words, target words) for each sentence.")
    items = list(words)  # type: ignore[call-overload]
    if len(items) == 2 and all(_is_word_list(side) for side in items):
        items = [items]  # the words of one sentence
    if len(items) != sentences or not all(
        isinstance(pair, (list, tuple)) and len(pair) == 2 and all(_is_word_list(side) for side in pair)
        for pair in items
    ):
        raise ValueError(
            f"words must give (source words, target words) for each of the {sentences} sentences, e.g. "
            "[(source_words(record), target_words(record)) for record in records]."
        )
    return [
        (
            {i for i, word in enumerate(source) if is_punctuation_word(word)},
            {j for j, word in enumerate(target) if is_punctuation_word(word)},
        )
        for source, target in items
    ]


def alignment_error_rate(
    predicted: Iterable[Pair] | Sequence[Iterable[Pair]],
    sure: Iterable[Pair] | Sequence[Iterable[Pair]],
    possible: Iterable[Pair] | Sequence[Iterable[Pair]] | None = None,
    *,
    skip_punctuation: bool = False,
    words: Sequence[tuple[Sequence[str], Sequence[str]]] | tuple[Sequence[str], Sequence[str]] | None = None,
) -> AlignmentScores:
    """AER = 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|), precision = |A ∩ P| / |A|, recall = |A ∩ S| / |S|.

    `predicted` (A), `sure` (S) and `possible` (P) are either the pairs of one sentence or one collection of pairs
    per sentence (counts are then summed over the corpus). P always includes S (`possible=None` means P = S).
    Precision is 0 when nothing is predicted, recall 0 when there are no sure links; with neither predicted nor
    sure links the score is undefined and a ValueError is raised.

    With `skip_punctuation=True`, links that touch a punctuation word on either side are dropped from A, S and P
    alike; `words` then gives the words of each sentence, ``(source words, target words)`` (one such pair for one
    sentence, or one per sentence: ``[(source_words(r), target_words(r)) for r in records]``).
    """
    predicted_sets = _as_corpus(predicted, "predicted")
    sure_sets = _as_corpus(sure, "sure")
    possible_sets = _as_corpus(possible, "possible") if possible is not None else [set() for _ in sure_sets]
    if not len(predicted_sets) == len(sure_sets) == len(possible_sets):
        raise ValueError(
            f"predicted ({len(predicted_sets)}), sure ({len(sure_sets)}) and possible ({len(possible_sets)}) "
            "must cover the same number of sentences."
        )
    if skip_punctuation:
        punctuation = _punctuation_per_sentence(words, len(sure_sets))
        predicted_sets, sure_sets, possible_sets = (
            [_without(links, marks) for links, marks in zip(sets, punctuation)]
            for sets in (predicted_sets, sure_sets, possible_sets)
        )
    counts = np.zeros(4, dtype=np.int64)  # |A|, |S|, |A & S|, |A & P|
    for a, s, p in zip(predicted_sets, sure_sets, possible_sets):
        p = p | s
        counts += (len(a), len(s), len(a & s), len(a & p))
    return _scores(*counts)


def _without(links: set[Pair], skipped: tuple[set[int], set[int]]) -> set[Pair]:
    return {(i, j) for i, j in links if i not in skipped[0] and j not in skipped[1]}


def _scores(a_total: Any, s_total: Any, a_and_s: Any, a_and_p: Any) -> AlignmentScores:
    if a_total + s_total == 0:
        raise ValueError("AER is undefined with no predicted and no sure links.")
    aer = 1.0 - (a_and_s + a_and_p) / (a_total + s_total)
    precision = a_and_p / a_total if a_total else 0.0
    recall = a_and_s / s_total if s_total else 0.0
    return AlignmentScores(float(aer), float(precision), float(recall))


# ----------------------------------------------------------------------------------------------------------------
# Searching the configuration that aligns best
# ----------------------------------------------------------------------------------------------------------------


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
    return ["all" if choice == "all" else _head_choice(record, choice) for choice in heads]


def check_gold(records: Sequence[AttentionRecord], gold: Sequence[GoldAlignment]) -> None:
    """Refuse gold links that point past the words of their sentence pair (`source_words`, `target_words`), all
    sentences checked before any is scored: such a file indexes other words (another tokenisation, the sentences in
    another order, the wrong index base) and would only give meaningless scores.

    Raises:
        ValueError: naming the first such link (as written in the file, with its file and line when `read_gold`
            read it) and the other sentences that have one.
    """
    if len(records) != len(gold):
        raise ValueError(f"Got {len(records)} records but {len(gold)} gold sentences: they must correspond 1:1.")
    bad = []
    for number, (record, sentence) in enumerate(zip(records, gold, strict=True), start=1):
        source, target = (words.words for words in _words(record))
        outside = sorted((i, j) for i, j in sentence.possible if not (0 <= i < len(source) and 0 <= j < len(target)))
        if outside:
            bad.append((number, sentence, outside[0], source, target))
    if not bad:
        return
    number, sentence, (i, j), source, target = bad[0]
    base = sentence.index_base
    where = f" ({sentence.origin})" if sentence.origin else ""
    written = f" (written {i + base}-{j + base}, {base}-based)" if base else ""
    others = [entry[1].origin or f"sentence {entry[0]}" for entry in bad[1:]]
    more = f" The same at {'; '.join(others[:5])}{f' and {len(others) - 5} more' if len(others) > 5 else ''}."
    more = more if others else ""
    raise ValueError(
        f"Gold sentence {number}{where} links source word {i} to target word {j}{written}, but the pair has "
        f"{len(source)} source words ({' '.join(source)}) and {len(target)} target words ({' '.join(target)}): gold "
        "files must index words as `source_words` and `target_words` do (punctuation marks are words of their own), "
        f"in the order of the sentences.{more}"
    )


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
        AlignmentCandidate(layer, heads_choice, shift, _scores(*counts[a, b, c]))
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
        word_cross = {shift: _word_cross(record, shift, skip_punctuation) for shift in {c.shift for c in best}}
        matrices = [_select(word_cross[c.shift], record, c.layer, c.heads) for c in best]
        averaged = np.stack([renormalize_rows((matrices[a] + matrices[b]) / 2) for a, b in pairs])
        predicted = _links(averaged, method, threshold)
        counts[:, 0] += predicted.sum(axis=(-1, -2))
        counts[:, 1] += sure.sum()
        counts[:, 2] += (predicted & sure).sum(axis=(-1, -2))
        counts[:, 3] += (predicted & possible).sum(axis=(-1, -2))
    return [
        AlignmentCandidate(best[a].layer, best[a].heads, best[a].shift, _scores(*counts[k]), (_plain_config(best[b]),))
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
    source, target = _words(record)
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
            word_cross = _word_cross(record, shift, skip_punctuation)
        except ValueError as error:
            raise ValueError(f"Sentence {number}: {error}") from None
        matrices = np.stack(
            [np.stack([_select(word_cross, record, layer, h) for h in head_choices]) for layer in layer_choices]
        )
        predicted = _links(matrices, method, threshold)  # (layers, heads, target words, source words)
        counts[:, :, c, 0] = predicted.sum(axis=(-1, -2))
        counts[:, :, c, 1] = sure.sum()
        counts[:, :, c, 2] = (predicted & sure).sum(axis=(-1, -2))
        counts[:, :, c, 3] = (predicted & possible).sum(axis=(-1, -2))
    return counts


def read_model_config(model_dir: str | Path) -> tuple[Path, dict[str, Any]]:
    """(MODEL_DIR/config.json, its content), checked to be a Vaswani model's config: what `write_alignment_config`
    changes, readable before any work is done.

    Raises:
        FileNotFoundError: no config.json in `model_dir`.
        ValueError: not UTF-8 JSON, or not a Vaswani model's config.
    """
    import json

    from hf_vaswani.configuration_vaswani import VaswaniConfig

    path = Path(model_dir) / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"No model config at {path}.")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not valid UTF-8 JSON: {error}.") from None
    if not isinstance(data, dict) or data.get("model_type") != VaswaniConfig.model_type:
        found = data.get("model_type") if isinstance(data, dict) else None
        raise ValueError(f"{path} is the config of a {found!r} model, not a {VaswaniConfig.model_type!r} one.")
    return path, data


def write_alignment_config(model_dir: str | Path, alignment: dict[str, Any]) -> Path:
    """Store `alignment` (e.g. `AlignmentSearch.best`) as the ``alignment`` field of MODEL_DIR/config.json, the other
    fields untouched, so that the model carries it (`VaswaniConfig.alignment`, `AttentionRecord.alignment`); returns
    the file. The file is replaced in one step (`hf_vaswani.outputs.write_text`): never left half-written.

    Raises:
        FileNotFoundError: no config.json in `model_dir`.
        ValueError: not a Vaswani model's config, or a layer or head the model does not have.
    """
    import json

    from hf_vaswani.configuration_vaswani import VaswaniConfig
    from hf_vaswani.outputs import write_text

    path, data = read_model_config(model_dir)
    VaswaniConfig.from_dict({**data, "alignment": alignment})  # checks the layer and heads against the model
    data["alignment"] = alignment
    write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


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
    "DEFAULT_ALIGNMENT",
    "DEFAULT_THRESHOLD",
    "AlignmentCandidate",
    "AlignmentScores",
    "AlignmentSearch",
    "GoldAlignment",
    "LayerSearch",
    "align",
    "alignment_error_rate",
    "alignment_matrix",
    "alignment_settings",
    "best_layer",
    "check_gold",
    "describe_alignment",
    "read_gold",
    "read_lines",
    "read_model_config",
    "search_alignments",
    "source_words",
    "target_words",
    "to_pharaoh",
    "write_alignment_config",
]
