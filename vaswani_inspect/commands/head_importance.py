"""``hf-vaswani head-importance``: switch each attention head off and measure what the translation loses
(`vaswani_inspect.importance.head_importance`), and write the report."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hf_vaswani.commands import beam_size, positive_int

from .common import (
    DIRECTION_HELP,
    check_device,
    check_direction,
    command_direction,
    load_model,
    local_model,
    model_arguments,
    model_name,
)

__all__ = ["DEFAULT_MAX_PAIRS", "add_parser", "run_head_importance"]

#: Libraries of the [inspect] extra the command needs, checked before any model is loaded.
_IMPORTANCE_NEEDS = ("matplotlib", "scipy", "tqdm")
#: Sentence pairs ``head-importance`` measures on by default: one translation of them per head and per point of the
#: pruning curves, ~2 s for 200 pairs with the shipped checkpoint, greedy, on one CPU core.
DEFAULT_MAX_PAIRS = 200


def add_parser(subparsers: Any) -> None:
    """Add the ``head-importance`` subcommand to an argparse `subparsers` object."""
    from ..extract import AttentionUnavailableError

    _add_head_importance(subparsers).set_defaults(func=run_head_importance, user_errors=(AttentionUnavailableError,))


def _add_head_importance(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "head-importance",
        help="switch each attention head off and measure what the translation loses (Michel et al. 2019)",
        description=(
            "On sentence pairs: the BLEU, chrF and reference log-likelihood drop with each head alone switched off, "
            "the gradient estimate of the same and its rank correlation with it, each head's confidence and "
            "category, and pruning curves (BLEU as heads are switched off, least important first). Writes "
            "report.json, index.md and figures into --out."
        ),
    )
    parser.add_argument(
        "--pairs", required=True, type=Path, help="sentence pairs, English<TAB>Spanish per line (or CSV/JSONL)"
    )
    parser.add_argument("--out", required=True, type=Path, help="output folder (must not exist or be empty)")
    parser.add_argument("--direction", default=None, help=DIRECTION_HELP)
    model_arguments(parser)
    parser.add_argument(
        "--max-pairs",
        type=positive_int,
        default=DEFAULT_MAX_PAIRS,
        help=f"use the first N pairs (default: {DEFAULT_MAX_PAIRS}; the cost grows with N x heads)",
    )
    parser.add_argument("--num-beams", type=beam_size, default=1, help="beam size, at most 64 (default: 1, greedy)")
    parser.add_argument(
        "--max-new-tokens",
        type=positive_int,
        help="longest translation to generate, in tokens: at most the model's max_position_embeddings - 1",
    )
    parser.add_argument("--batch-size", type=positive_int, default=32, help="sentences per batch (default: 32)")
    parser.add_argument(
        "--prune-by",
        choices=("gradient", "ablation"),
        default="gradient",
        help="order of the pruning curves: the gradient estimate (default, as Michel et al.) or the measured drop",
    )
    parser.add_argument(
        "--no-pruning", action="store_true", help="skip the pruning curves (a translation per head per curve)"
    )
    parser.add_argument("--format", choices=("png", "svg"), default="png", help="image format (default: png)")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --out folder whole")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def run_head_importance(args: argparse.Namespace) -> int:
    """The ``head-importance`` subcommand: returns 0 after writing the report."""
    import importlib.util
    import time

    from hf_vaswani.data import read_pairs
    from hf_vaswani.inference import check_generation_settings
    from hf_vaswani.outputs import OutputPlan

    from ..dependencies import require

    check_direction(args)
    check_device(args.device)
    require(*_IMPORTANCE_NEEDS, needed_by="hf-vaswani head-importance")
    if importlib.util.find_spec("sacrebleu") is None:  # BLEU and chrF; the dispatcher names its extra
        raise ModuleNotFoundError("No module named 'sacrebleu'", name="sacrebleu")
    plan = OutputPlan(inputs=[args.pairs, *local_model(args)])
    out = plan.folder(args.out, "report folder", overwrite=args.overwrite)
    plan.check()  # before the model is loaded or anything measured
    pairs = read_pairs(args.pairs)[: args.max_pairs]
    from ..importance import head_importance, write_importance_report
    from ..importance.result import PRUNING_CURVES

    started = time.perf_counter()
    model, tokenizer = load_model(args)
    command_direction(args, model, tokenizer)
    check_generation_settings(model, num_beams=args.num_beams, max_new_tokens=args.max_new_tokens)
    result = head_importance(
        model,
        tokenizer,
        pairs,
        args.direction,
        num_beams=args.num_beams,
        max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size,
        curves=() if args.no_pruning else PRUNING_CURVES,
        prune_by=args.prune_by,
        progress=not args.no_progress,
        model_name=model_name(args, model),
    )
    result.timings["total"] = time.perf_counter() - started
    with plan.writing() as staged:
        written = write_importance_report(result, staged(out), image_format=args.format)
    _print_importance(result, len(written), Path(args.out))
    return 0


def _print_importance(result: Any, files: int, out: Path) -> None:
    summary = result.summary()
    base = result.baseline
    print(
        f"{result.settings['pairs']} pairs, {len(result.heads)} heads: baseline BLEU {base['bleu']:.2f}, chrF "
        f"{base['chrf']:.2f}, reference log-likelihood {base['log_likelihood']:.3f}"
    )
    for curve, count in summary["prunable_heads"].items():
        print(f"  {curve}: {count} heads can go before BLEU drops more than a point")
    print(f"  most important (BLEU drop): {', '.join(summary['top_by_bleu_drop'])}")
    print(f"report: {out / 'index.md'} ({files} files, {result.timings['total']:.0f} s)")
