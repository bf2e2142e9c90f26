"""Synthetic records with a known alignment, shared by the alignment tests: a permutation planted in one layer's
cross-attention (`synthetic`), a sentence pair with punctuation words (`punctuated_record`), one planted head among
wrong ones (`planted_head_record`) and two heads that each align half of the words (`complementary_record`)."""

import numpy as np

from vaswani_inspect import AttentionRecord

SOURCE = [">>en<<", "▁a", "▁b", "b2", "▁c", "▁d", "</s>"]  # words: a=[1] b=[2,3] c=[4] d=[5]
TARGET = ["<s>", "▁w", "▁x", "x2", "▁y", "▁z", "</s>"]  # words: w=[1] x=[2,3] y=[4] z=[5]
SOURCE_PIECES = [[1], [2, 3], [4], [5]]
TARGET_PIECES = [[1], [2, 3], [4], [5]]
PERMUTATION = [2, 0, 3, 1]  # target word j is the translation of source word PERMUTATION[j]


def planted_cross(shift: bool, rng: np.random.Generator) -> np.ndarray:
    """(T, S) attention: the rows of target word j put 0.9 of their mass on source word PERMUTATION[j]."""
    t, s = len(TARGET), len(SOURCE)
    matrix = rng.uniform(0.5, 1.0, size=(t, s))
    matrix /= matrix.sum(-1, keepdims=True)
    offset = 0 if shift else -1  # shift=False: piece p is predicted by row p - 1
    for j, pieces in enumerate(TARGET_PIECES):
        source = SOURCE_PIECES[PERMUTATION[j]]
        for p in pieces:
            row = np.full(s, 0.1 / (s - len(source)))
            row[source] = 0.9 / len(source)
            matrix[p + offset] = row
    return matrix


def record_of(cross: np.ndarray) -> AttentionRecord:
    layers, heads = cross.shape[:2]
    s, t = len(SOURCE), len(TARGET)
    return AttentionRecord(
        source_tokens=SOURCE,
        target_tokens=TARGET,
        source_ids=list(range(s)),
        target_ids=list(range(t)),
        encoder=np.full((layers, heads, s, s), 1.0 / s),
        decoder=np.tril(np.ones((layers, heads, t, t))) / np.arange(1, t + 1)[:, None],
        cross=cross,
        special_tokens=["<pad>", "<s>", "</s>", ">>en<<", ">>es<<"],
    )


def synthetic(shift: bool, planted_layer: int = 1, layers: int = 3, heads: int = 2, seed: int = 0):
    rng = np.random.default_rng(seed)
    noise = rng.uniform(size=(layers, heads, len(TARGET), len(SOURCE)))
    cross = noise / noise.sum(-1, keepdims=True)
    for head in range(heads):
        cross[planted_layer, head] = planted_cross(shift, rng)
    return record_of(cross)


TRUTH = sorted((PERMUTATION[j], j) for j in range(len(PERMUTATION)))

PUNCTUATED_SOURCE = [">>en<<", "▁el", "▁rat", "ón", ".", "</s>"]  # words: 0 el=[1], 1 ratón=[2,3], 2 "."=[4]
PUNCTUATED_TARGET = ["<s>", "▁¿The", "▁mouse", "?", "</s>"]  # words: 0 "¿" (no piece), 1 The, 2 mouse, 3 "?"
SOURCE_WORDS = ["el", "ratón", "."]
TARGET_WORDS = ["¿", "The", "mouse", "?"]


def punctuated_record() -> AttentionRecord:
    """Rows read without shift: row 0 (The) looks at "el"; row 1 (mouse) at "." (0.5) more than at "ratón" (0.4);
    row 2 ("?") at "."."""
    cross = np.array(
        [
            [0.05, 0.8, 0.05, 0.05, 0.0, 0.05],
            [0.0, 0.05, 0.2, 0.2, 0.5, 0.05],
            [0.0, 0.1, 0.1, 0.0, 0.7, 0.1],
            [0.2, 0.2, 0.2, 0.2, 0.1, 0.1],
            [0.2, 0.2, 0.2, 0.2, 0.1, 0.1],
        ]
    )
    s, t = len(PUNCTUATED_SOURCE), len(PUNCTUATED_TARGET)
    return AttentionRecord(
        source_tokens=PUNCTUATED_SOURCE,
        target_tokens=PUNCTUATED_TARGET,
        source_ids=list(range(s)),
        target_ids=list(range(t)),
        encoder=np.full((1, 1, s, s), 1.0 / s),
        decoder=np.tril(np.ones((1, 1, t, t))) / np.arange(1, t + 1)[:, None],
        cross=cross[None, None],
        special_tokens=["<pad>", "<s>", "</s>", ">>en<<", ">>es<<"],
    )


PLANTED = {"layer": 1, "heads": [2], "shift": True}
WRONG = [0, 1, 2, 3]  # differs from PERMUTATION for every target word


def planted_head_record(seed: int = 0, layers: int = 3, heads: int = 4, alignment: dict | None = None):
    """Cross-attention whose one head (layer 1, head 2, rows read with shift) is the gold alignment; every other
    head looks at the wrong source words, so that averaging heads or layers, or reading other rows, misaligns."""
    rng = np.random.default_rng(seed)
    t, s = len(TARGET), len(SOURCE)
    cross = np.empty((layers, heads, t, s))
    for layer in range(layers):
        for head in range(heads):
            noise = rng.uniform(0.0, 0.2, size=(t, s))
            for j, pieces in enumerate(TARGET_PIECES):
                for p in pieces:  # both the rows that predict a word and the rows one later
                    for row in (p - 1, p):
                        noise[row, SOURCE_PIECES[WRONG[j]]] += 1.5
            cross[layer, head] = noise / noise.sum(-1, keepdims=True)
    cross[PLANTED["layer"], PLANTED["heads"][0]] = planted_cross(True, rng)
    record = record_of(cross)
    record.alignment = alignment
    return record


FIRST = {"layer": 0, "heads": [1], "shift": True}
SECOND = {"layer": 2, "heads": [0], "shift": False}
AVERAGED = {**FIRST, "average_with": [SECOND]}


def half_right(shift: bool, right: set[int], rng: np.random.Generator) -> np.ndarray:
    """(T, S) attention that puts 0.8 on the true source word of the target words in `right` and 0.5 on a wrong one
    for the others: alone it aligns half the words, averaged with its complement all of them."""
    t, s = len(TARGET), len(SOURCE)
    matrix = rng.uniform(0.5, 1.0, size=(t, s))
    matrix /= matrix.sum(-1, keepdims=True)
    offset = 0 if shift else -1
    for j, pieces in enumerate(TARGET_PIECES):
        source, weight = (PERMUTATION[j], 0.8) if j in right else (WRONG[j], 0.5)
        columns = SOURCE_PIECES[source]
        for p in pieces:
            row = np.full(s, (1.0 - weight) / (s - len(columns)))
            row[columns] = weight / len(columns)
            matrix[p + offset] = row
    return matrix


def complementary_record(seed: int = 0, alignment: dict | None = None) -> AttentionRecord:
    """Two heads that each align half of the words right (FIRST: words 0 and 1, SECOND: words 2 and 3), every other
    head wrong."""
    rng = np.random.default_rng(seed)
    cross = planted_head_record(seed).cross  # every head wrong but the planted one, which is replaced below
    cross[PLANTED["layer"], PLANTED["heads"][0]] = cross[0, 0]
    cross[FIRST["layer"], FIRST["heads"][0]] = half_right(FIRST["shift"], {0, 1}, rng)
    cross[SECOND["layer"], SECOND["heads"][0]] = half_right(SECOND["shift"], {2, 3}, rng)
    record = record_of(cross)
    record.alignment = alignment
    return record
