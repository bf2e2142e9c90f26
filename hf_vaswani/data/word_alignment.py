"""Words, and statistical word alignments of sentence pairs: the units and the reference of attention alignments.

**Words.** A word is a run of letters and digits (with inner apostrophes: "don't", "Tom's"), and every punctuation
mark is a word of its own: "¿Qué es eso?" has the words ¿ Qué es eso ?. Gold alignment files are indexed this way,
and it keeps the attention paid to a final "." from counting for the last word. `word_spans(text)` gives their
character spans; `token_words(offsets, text)` says which word each subword token belongs to (a token that holds
both a word and a glued punctuation mark, like "▁eso.", belongs to the word).

**Alignments.** A set of links (source word i, target word j), written in the Pharaoh format "i-j i-j ...".
`statistical_alignments` runs eflomal (Östling & Tiedemann 2016, the `[align]` extra) in both directions over a
corpus; `symmetrize` combines the two directions: their intersection (precise), their union (complete), or
grow-diag-final-and (Koehn et al. 2005), which starts from the intersection and adds neighbouring union links.
These links supervise one cross-attention head in guided-alignment training (`hf_vaswani.training`) and are the
reference that `vaswani_inspect` measures attention alignments against.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = [
    "SYMMETRIZATIONS",
    "Links",
    "is_punctuation_word",
    "read_pharaoh",
    "statistical_alignments",
    "symmetrize",
    "token_words",
    "word_spans",
    "words",
    "write_pharaoh",
]

Links = set[tuple[int, int]]
SYMMETRIZATIONS = ("intersection", "union", "grow-diag-final-and")

_PHARAOH_LINK = re.compile(r"(\d+)[-p?](\d+)")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*|[^\w\s]|_")


def word_spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) character spans of the words of `text` (see the module docstring)."""
    return [match.span() for match in _WORD.finditer(text)]


def words(text: str) -> list[str]:
    """The words of `text`: ``words("¿Qué es eso?") == ["¿", "Qué", "es", "eso", "?"]``."""
    return [text[start:end] for start, end in word_spans(text)]


def is_punctuation_word(word: str) -> bool:
    """Whether `word` is a punctuation mark (or another symbol), not a word with letters or digits."""
    return not any(character.isalnum() for character in word)


def token_words(offsets: Sequence[tuple[int, int]], text: str) -> list[int | None]:
    """For each token, given by its character span in `text`, the index of its word in `word_spans(text)`, or
    None for a token that covers no word (special tokens, a lone space marker).

    A token that covers several words belongs to the first one with a letter or digit in the token ("▁eso." to
    "eso", "▁¿Qué" to "Qué"), so that the glued punctuation mark is simply a word no token stands for.
    """
    word_of_character = [None] * len(text)
    for index, (start, end) in enumerate(word_spans(text)):
        word_of_character[start:end] = [index] * (end - start)
    result: list[int | None] = []
    for start, end in offsets:
        covered = [(text[i], word_of_character[i]) for i in range(start, end) if word_of_character[i] is not None]
        content = [word for character, word in covered if character.isalnum()]
        result.append(content[0] if content else covered[0][1] if covered else None)
    return result


# --------------------------------------------------------------------------------------------------------------
# Pharaoh files
# --------------------------------------------------------------------------------------------------------------


def write_pharaoh(alignments: Iterable[Links], path: str | os.PathLike[str]) -> Path:
    """One line per sentence pair, "i-j" links sorted and separated by spaces (an empty line: no link)."""
    path = Path(path)
    lines = (" ".join(f"{i}-{j}" for i, j in sorted(links)) for links in alignments)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def read_pharaoh(path: str | os.PathLike[str]) -> list[Links]:
    """The links of a Pharaoh file written by `write_pharaoh` (or eflomal, fast_align, ...); possible links
    (``ipj``) are read as links too (`vaswani_inspect.alignment.read_gold` keeps sure and possible apart)."""
    alignments = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        try:
            alignments.append({_link(item) for item in line.split()})
        except ValueError:
            raise ValueError(f"{path}, line {number}: expected links like 0-1 2-2, got {line[:80]!r}.") from None
    return alignments


def _link(item: str) -> tuple[int, int]:
    found = _PHARAOH_LINK.fullmatch(item)  # "i-j", or a possible link "ipj" / "i?j" as gold files write them
    if found is None:
        raise ValueError(item)
    return int(found.group(1)), int(found.group(2))


# --------------------------------------------------------------------------------------------------------------
# eflomal and symmetrization
# --------------------------------------------------------------------------------------------------------------


def statistical_alignments(
    sources: Sequence[Sequence[str]], targets: Sequence[Sequence[str]]
) -> tuple[list[Links], list[Links]]:
    """eflomal's forward (source -> target) and reverse alignments of the word lists `sources[k]`, `targets[k]`.

    Statistical aligners learn from the whole corpus: align the training pairs together with the pairs whose
    alignments you need. Pairs where a side has no word get no link. eflomal samples with a seed of its own, so two
    runs differ in a few links: keep the links you train or evaluate with in a file (`write_pharaoh`).
    """
    import eflomal  # the [align] extra

    if len(sources) != len(targets):
        raise ValueError(f"{len(sources)} source sentences but {len(targets)} target sentences.")
    # eflomal reads whitespace-separated tokens; an empty side is given one placeholder token and its links dropped.
    source_lines = [" ".join(sentence) or "_" for sentence in sources]
    target_lines = [" ".join(sentence) or "_" for sentence in targets]
    with tempfile.TemporaryDirectory(prefix="eflomal-") as folder:
        forward_file, reverse_file = Path(folder) / "forward", Path(folder) / "reverse"
        eflomal.Aligner().align(
            source_lines, target_lines, links_filename_fwd=str(forward_file), links_filename_rev=str(reverse_file)
        )
        forward, reverse = read_pharaoh(forward_file), read_pharaoh(reverse_file)
    empty = {k for k, (s, t) in enumerate(zip(sources, targets, strict=True)) if not s or not t}
    return (
        [set() if k in empty else links for k, links in enumerate(forward)],
        [set() if k in empty else links for k, links in enumerate(reverse)],
    )


def symmetrize(forward: Links, reverse: Links, method: str = "grow-diag-final-and") -> Links:
    """Combine the alignments of the two directions (`SYMMETRIZATIONS`)."""
    if method == "intersection":
        return forward & reverse
    if method == "union":
        return forward | reverse
    if method == "grow-diag-final-and":
        return _grow_diag_final_and(forward, reverse)
    raise ValueError(f"Unknown symmetrization {method!r}: choose one of {', '.join(SYMMETRIZATIONS)}.")


# Written here because no maintained Python package offers it on its own (Moses and fast_align's atools are C++).
def _grow_diag_final_and(forward: Links, reverse: Links) -> Links:
    union = forward | reverse
    alignment = set(forward & reverse)
    neighbours = [(-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1)]

    def unaligned(link: tuple[int, int]) -> bool:
        return all(i != link[0] for i, _ in alignment) or all(j != link[1] for _, j in alignment)

    grew = True
    while grew:  # grow-diag: add union links next to a link while they align a word not aligned yet
        grew = False
        for i, j in sorted(alignment):
            for di, dj in neighbours:
                candidate = (i + di, j + dj)
                if candidate in union and candidate not in alignment and unaligned(candidate):
                    alignment.add(candidate)
                    grew = True
    for links in (forward, reverse):  # final-and: a link whose two words are both still unaligned
        for i, j in sorted(links):
            if all(i != a for a, _ in alignment) and all(j != b for _, b in alignment):
                alignment.add((i, j))
    return alignment
