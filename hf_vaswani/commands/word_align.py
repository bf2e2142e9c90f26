"""``hf-vaswani word-align``: statistical word alignments (eflomal) of sentence pairs, as gold files for
``hf-vaswani align-eval``: the reference that attention alignments are measured against when no hand-made gold
alignment exists."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(subparsers: Any) -> None:
    """Add ``word-align PAIRS --corpus TRAIN --out DIR``."""
    parser = subparsers.add_parser(
        "word-align",
        help="eflomal word alignments of sentence pairs, as align-eval gold files (sure = both directions agree)",
        description="Align the words of each English<TAB>Spanish pair with eflomal, in both directions, learning "
        "from the pairs together with a corpus (e.g. the training split), and write per translation direction the "
        "source sentences, the target sentences and a gold file for align-eval: a link both directions found is "
        "sure (i-j), one only one direction found is possible (ipj). Words as hf_vaswani.data.word_alignment.words: "
        "punctuation marks are words of their own.",
        epilog="example: hf-vaswani word-align RUN/splits/test.tsv --corpus train.tsv --out silver/ && "
        "hf-vaswani align-eval --gold silver/es-en.gold --source-file silver/es-en.source.txt "
        "--target-file silver/es-en.target.txt --direction es-en",
    )
    parser.add_argument("pairs", help="the English<TAB>Spanish pairs to align (TSV/CSV/JSONL)")
    parser.add_argument(
        "--corpus", help="more pairs for eflomal to learn from (the statistics improve with size); not written out"
    )
    parser.add_argument("--out", required=True, help="folder for {es-en,en-es}.{source.txt,target.txt,gold}")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --out folder whole")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..data import LANGUAGES, read_pairs
    from ..data.word_alignment import statistical_alignments, words
    from ..languages import DIRECTIONS, direction_to_languages
    from ..outputs import OutputPlan

    plan = OutputPlan(inputs=[args.pairs, args.corpus])
    out = plan.folder(args.out, "alignment folder", overwrite=args.overwrite)
    plan.check()
    pairs = read_pairs(args.pairs)
    corpus = read_pairs(args.corpus) if args.corpus else []
    everything = [*corpus, *pairs]  # eflomal learns from all; only the pairs' links are written
    forward, reverse = statistical_alignments([words(p.en) for p in everything], [words(p.es) for p in everything])
    forward, reverse = forward[len(corpus) :], reverse[len(corpus) :]  # (English word, Spanish word) links
    with plan.writing() as staged:
        folder = staged(out)  # an empty temporary folder, renamed to --out at the end
        for direction in DIRECTIONS:
            source_lang, target_lang = direction_to_languages(direction)
            source, target = LANGUAGES.index(source_lang), LANGUAGES.index(target_lang)
            swap = source_lang != LANGUAGES[0]
            lines = [_gold_line(f, r, swap) for f, r in zip(forward, reverse, strict=True)]
            (folder / f"{direction}.gold").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
            for name, index in (("source", source), ("target", target)):
                text = "".join(pair[index] + "\n" for pair in pairs)
                (folder / f"{direction}.{name}.txt").write_text(text, encoding="utf-8")
    print(f"hf-vaswani word-align: {len(pairs):,} pairs aligned (learning from {len(everything):,}) into {args.out}")
    return 0


def _gold_line(forward: set, reverse: set, swap: bool) -> str:
    """Sure links (both directions) as ``i-j``, links of one direction only as ``ipj``; (source, target) order."""

    def oriented(links: set) -> set:
        return {(j, i) for i, j in links} if swap else set(links)

    sure, possible = oriented(forward & reverse), oriented((forward | reverse) - (forward & reverse))
    return " ".join([*(f"{i}-{j}" for i, j in sorted(sure)), *(f"{i}p{j}" for i, j in sorted(possible))])
