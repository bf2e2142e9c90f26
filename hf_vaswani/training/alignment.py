"""The word alignments guided-alignment training learns from: eflomal run on the training pairs of the run, both
directions, symmetrized, and cached in ``RUN/alignments/`` so that a resumed run trains on the same links (eflomal
samples, so a second run would differ in a few links)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data.word_alignment import Links, read_pharaoh, statistical_alignments, symmetrize, words, write_pharaoh

__all__ = ["training_alignments"]


def _fingerprint(pairs: Sequence[Any], symmetrization: str) -> str:
    digest = hashlib.sha256(symmetrization.encode())
    for pair in pairs:
        digest.update(f"{pair.en}\t{pair.es}\n".encode())
    return digest.hexdigest()


def training_alignments(pairs: Sequence[Any], alignment: Mapping[str, Any], output_dir: Path) -> list[Links]:
    """The (English word, Spanish word) links of each training pair: read from ``RUN/alignments/train.links``
    when it was made for these very pairs and settings, else made with eflomal and written there."""
    folder = output_dir / "alignments"
    links_file, fingerprint_file = folder / "train.links", folder / "train.fingerprint"
    fingerprint = _fingerprint(pairs, alignment["symmetrization"])
    if links_file.is_file() and fingerprint_file.is_file() and fingerprint_file.read_text().strip() == fingerprint:
        links = read_pharaoh(links_file)
        if len(links) == len(pairs):
            return links
    forward, reverse = statistical_alignments([words(p.en) for p in pairs], [words(p.es) for p in pairs])
    links = [symmetrize(f, r, alignment["symmetrization"]) for f, r in zip(forward, reverse, strict=True)]
    folder.mkdir(parents=True, exist_ok=True)
    write_pharaoh(links, links_file)
    fingerprint_file.write_text(fingerprint + "\n")
    return links
