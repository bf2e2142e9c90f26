"""Gold alignment files: reading them (`read_gold`, Pharaoh links with sure and possible ones) and checking that
their links index the words of their sentence pairs (`check_gold`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..record import AttentionRecord
from .links import Pair, word_lists


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
        source, target = (words.words for words in word_lists(record))
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


__all__ = ["GoldAlignment", "check_gold", "read_gold", "read_lines"]
