"""``hf-vaswani compare-bert``: compare our heads with a pretrained BERT-family encoder's (`vaswani_inspect.compare`):
BERT, RoBERTa, XLM-RoBERTa, DistilBERT, ELECTRA or DeBERTa-v2 (`vaswani_inspect.compare.models.BERT_FAMILIES`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hf_vaswani.commands import positive_int

from .common import check_device, local_model, model_name

__all__ = ["add_parser", "run_compare_bert"]

#: Libraries of the [inspect] extra the command needs, checked before any model is loaded.
_COMPARE_NEEDS = ("matplotlib", "sklearn", "tqdm")


def add_parser(subparsers: Any) -> None:
    """Add the ``compare-bert`` subcommand to an argparse `subparsers` object."""
    from ..extract import AttentionUnavailableError

    _add_compare_bert(subparsers).set_defaults(func=run_compare_bert, user_errors=(AttentionUnavailableError,))


def _add_compare_bert(subparsers: Any) -> argparse.ArgumentParser:
    from ..compare import DEFAULT_BERT
    from ..compare.models import BERT_FAMILIES

    families = ", ".join(BERT_FAMILIES.values())
    parser = subparsers.add_parser(
        "compare-bert",
        help="compare our heads with a pretrained BERT-family encoder's (Clark et al. 2019)",
        description=(
            f"Run our encoder (en->es) and a BERT-family encoder ({families}) on the same English sentences, merge "
            "their attention to the same words, and write per-head statistics, head-to-head Jensen-Shannon "
            "distances, an MDS map of all heads and a summary (index.md, report.json, PNGs) into --out."
        ),
    )
    parser.add_argument(
        "--bert",
        default=DEFAULT_BERT,
        help=f"Hub id or local folder of a BERT-family encoder: {families} (default: {DEFAULT_BERT})",
    )
    parser.add_argument(
        "--sentences", required=True, type=Path, help="English sentences, one per line (or English<TAB>Spanish)"
    )
    parser.add_argument("--out", required=True, type=Path, help="report folder (must not exist or be empty)")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --out folder whole")
    parser.add_argument("--model", type=Path, default=None, help="our checkpoint folder (default: the shipped one)")
    parser.add_argument("--max-sentences", type=positive_int, default=None, help="use at most the first N sentences")
    parser.add_argument(
        "--decoder",
        action="store_true",
        help="also compare our decoder self-attention (English target, es->en) with the causally masked encoder",
    )
    parser.add_argument(
        "--specials",
        choices=("drop", "keep"),
        default="drop",
        help="special-token slots in the distance: drop and renormalise (default) or keep",
    )
    parser.add_argument(
        "--on-long",
        choices=("skip", "error"),
        default="skip",
        help="sentences longer than either model accepts: skip with a warning (default) or stop with an error",
    )
    parser.add_argument("--batch-size", type=positive_int, default=16, help="sentences per forward pass (default: 16)")
    parser.add_argument(
        "--device", default=None, help="torch device for both models: cpu (default), cuda, cuda:1 ... (checked first)"
    )
    parser.add_argument("--format", choices=("png", "svg"), default="png", help="image format (default: png)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def run_compare_bert(args: argparse.Namespace) -> int:
    """The ``compare-bert`` subcommand: returns 0 after writing the report."""
    from hf_vaswani.outputs import OutputPlan

    from ..compare import check_bert, compare_bert, load_bert, load_ours, read_sentences, write_compare_report
    from ..compare.models import check_ours, family_name
    from ..dependencies import require

    check_device(args.device)
    require(*_COMPARE_NEEDS, needed_by="hf-vaswani compare-bert")
    bert_folder = Path(str(args.bert)).expanduser()  # a local BERT is an input too; a Hub id is not
    plan = OutputPlan(inputs=[args.sentences, *local_model(args), bert_folder if bert_folder.exists() else None])
    out = plan.folder(args.out, "report folder", overwrite=args.overwrite)
    plan.check()
    sentences = read_sentences(args.sentences, args.max_sentences)
    check_bert(str(args.bert))  # fail fast, before loading anything large
    check_ours(args.model)
    model, tokenizer = load_ours(args.model, device=args.device)
    bert, bert_tokenizer = load_bert(str(args.bert), device=args.device)
    result = compare_bert(
        sentences,
        model,
        tokenizer,
        bert,
        bert_tokenizer,
        decoder=args.decoder,
        specials=args.specials,
        batch_size=args.batch_size,
        on_long=args.on_long,
        progress=not args.no_progress,
        model_name=model_name(args, model),
        bert_name=str(args.bert),
    )
    with plan.writing() as staged:
        written = write_compare_report(result, staged(out), image_format=args.format)
    family = family_name(bert.config.model_type)
    for kind, comparison in result.comparisons.items():
        summary = comparison.summary()
        print(
            f"{kind}: {comparison.sentences} sentences, {summary['heads_a']} of our heads vs {summary['heads_b']} "
            f"{family} heads; {summary['same_tag_as_nearest']} of ours share the category of their nearest "
            f"{family} head."
        )
    if result.skipped:
        print(f"skipped {len(result.skipped)} sentence(s); see report.json")
    print(f"report: {Path(args.out) / 'index.md'} ({len(written)} files)")
    return 0
