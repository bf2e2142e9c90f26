"""``hf-vaswani align-eval``: search the decoder layer, heads and shift whose cross-attention best matches gold word
alignments (`vaswani_inspect.alignment.search_alignments`), and optionally store the best in a model's config.json."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hf_vaswani.commands import finite_float, non_negative_int, positive_int

from .common import (
    DIRECTION_HELP,
    check_device,
    check_direction,
    command_direction,
    load_model,
    local_model,
    model_arguments,
)

__all__ = ["add_parser", "run_align_eval"]


def add_parser(subparsers: Any) -> None:
    """Add the ``align-eval`` subcommand to an argparse `subparsers` object."""
    from ..extract import AttentionUnavailableError

    _add_align_eval(subparsers).set_defaults(func=run_align_eval, user_errors=(AttentionUnavailableError,))


def _add_align_eval(subparsers: Any) -> argparse.ArgumentParser:
    evaluate = subparsers.add_parser(
        "align-eval",
        help="search the decoder layer, heads and shift whose cross-attention alignments have the lowest AER",
        description=(
            "Teacher-force each reference translation, score every decoder layer (and their mean) x every head (and "
            "all heads) x shift against gold (or silver) word alignments, print the best configurations and "
            "optionally store the best one in a model folder's config.json (its `alignment` field)."
        ),
    )
    evaluate.add_argument(
        "--gold",
        required=True,
        type=Path,
        help="gold alignments: one line per pair, 'i-j' sure, 'ipj' possible; punctuation marks are words",
    )
    evaluate.add_argument("--source-file", required=True, type=Path, help="source sentences, one per line (UTF-8)")
    evaluate.add_argument(
        "--target-file", required=True, type=Path, help="reference translations, one per line (UTF-8)"
    )
    evaluate.add_argument("--direction", default=None, help=DIRECTION_HELP)
    model_arguments(evaluate)
    evaluate.add_argument(
        "--index-base",
        type=int,
        choices=(0, 1),
        help="gold indices are 0- or 1-based (default: what the file declares, else 0)",
    )
    evaluate.add_argument(
        "--method",
        choices=("argmax", "threshold", *_attribution_methods()),
        default="argmax",
        help="argmax (default) or threshold: how links are read off each attention reading searched; or an "
        "attribution method (vaswani_inspect.attribution), scored as an aligner instead: argmax per target word and "
        "each threshold tried, the best kept, against the model's own aligner on the same sentences",
    )
    evaluate.add_argument(
        "--threshold",
        type=_weight,
        help="with --method threshold (only): the weight a link needs, above 0 and at most 1 (default: 0.5)",
    )
    evaluate.add_argument(
        "--skip-punctuation", action="store_true", help="leave links touching punctuation words out of the scores"
    )
    evaluate.add_argument(
        "--top", type=positive_int, default=10, help="configurations to print, best first (default: 10)"
    )
    evaluate.add_argument(
        "--pairs-of-best",
        type=non_negative_int,
        default=8,
        metavar="N",
        help="also try the average of every pair of the N best configurations (default: 8; 0: none)",
    )
    evaluate.add_argument("--batch-size", type=positive_int, default=16, help="sentences per forward pass")
    evaluate.add_argument(
        "--json",
        type=Path,
        metavar="FILE",
        help="also write the best configuration and the whole table to FILE (in an existing folder; replaced)",
    )
    evaluate.add_argument(
        "--write-config",
        type=Path,
        metavar="MODEL_DIR",
        help="store the best configuration as `alignment` in MODEL_DIR/config.json (the model then aligns with it); "
        "the config is checked before any work and replaced in one step",
    )
    return evaluate


def run_align_eval(args: argparse.Namespace) -> int:
    """The ``align-eval`` subcommand: prints the best configurations' AER, precision and recall; returns 0."""
    import json

    from hf_vaswani.outputs import OutputPlan

    from ..alignment import (
        read_gold,
        read_lines,
        read_model_config,
        search_alignments,
        write_alignment_config,
    )
    from ..extract import extract

    if args.threshold is not None and args.method != "threshold":  # argmax reads no weights: it would be ignored
        raise ValueError(f"--threshold is read by --method threshold only, not by --method {args.method}.")
    threshold = 0.5 if args.threshold is None else args.threshold
    check_direction(args)
    check_device(args.device)
    plan = OutputPlan(inputs=[args.gold, args.source_file, args.target_file, *local_model(args)])
    json_path = plan.file(args.json, "JSON file") if args.json is not None else None
    if args.write_config is not None:
        if not (args.write_config / "config.json").is_file():
            raise FileNotFoundError(f"--write-config: no model config at {args.write_config / 'config.json'}.")
        read_model_config(args.write_config)  # a Vaswani model's config, readable: before any work
        plan.file(args.write_config / "config.json", "model config (--write-config)", into_input=True)
    plan.check()
    gold = read_gold(args.gold, args.index_base)
    sources = read_lines(args.source_file, "source file")
    targets = read_lines(args.target_file, "target file")
    if not len(sources) == len(targets) == len(gold):
        raise ValueError(
            f"{args.source_file} has {len(sources)} lines, {args.target_file} {len(targets)}, and {args.gold} "
            f"{len(gold)} sentences: they must match line by line."
        )
    model, tokenizer = load_model(args)
    command_direction(args, model, tokenizer)
    records = extract(model, tokenizer, sources, targets, direction=args.direction, batch_size=args.batch_size)
    if args.method in _attribution_methods():
        return _score_attribution(args, model, tokenizer, records, gold, plan, json_path)
    search = search_alignments(  # which first checks every gold link against its sentence pair (check_gold)
        records,
        gold,
        method=args.method,
        threshold=threshold,
        skip_punctuation=args.skip_punctuation,
        pairs_of_best=args.pairs_of_best,
    )
    _print_search(search, len(records), args.top)
    if json_path is not None:
        with plan.writing() as staged:
            staged(json_path).write_text(json.dumps(search.to_dict(), indent=2) + "\n", encoding="utf-8")
    if args.write_config is not None:
        path = write_alignment_config(args.write_config, search.best)
        print(f"wrote alignment {json.dumps(search.best)} into {path}")
    return 0


def _print_search(search: Any, sentences: int, top: int) -> None:
    import json

    from ..alignment import describe_alignment

    shown = search.table[:top]
    print(f"{len(search.table)} configurations on {sentences} sentences; the best {len(shown)}:")
    print("  AER  precision  recall  configuration")
    for rank, row in enumerate(shown):
        marker = "  <- best" if rank == 0 else ""
        print(
            f"{row.scores.aer:.3f}      {row.scores.precision:.3f}   {row.scores.recall:.3f}  "
            f"{describe_alignment(row.config)}{marker}"
        )
    print(f"best: {json.dumps(search.best)} (AER {search.scores.aer:.3f})")


def _attribution_methods() -> tuple[str, ...]:
    from ..attribution import METHODS

    return METHODS


def _score_attribution(
    args: argparse.Namespace, model: Any, tokenizer: Any, records: list, gold: list, plan: Any, json_path: Any
) -> int:
    """``--method M`` for an attribution method: M read as an aligner (argmax, then each threshold), beside the
    model's own aligner on the same sentences; with ``--write-config``, M (and its threshold) is stored as the
    model's aligner only when it has the lower AER."""
    import json

    from ..alignment import model_alignment, write_alignment_config
    from ..alignment.config import model_aligner
    from ..attribution.evaluation import best_reading, method_matrices, score_method

    scores = score_method(
        model, tokenizer, records, gold, args.method, skip_punctuation=args.skip_punctuation, progress=True
    )
    current = model_aligner(model.config) or {"method": "attention"}
    matrices, _ = method_matrices(model, tokenizer, records, current["method"])
    threshold = current.get("threshold")
    own = best_reading(matrices, records, gold, [threshold] if threshold else None, args.skip_punctuation)
    own = [reading for reading in own if reading.threshold == threshold][0]
    print(f"{args.method} as an aligner on {len(records)} sentences ({scores.ms_per_sentence:.0f} ms a sentence):")
    print("  AER  precision  recall  links")
    for rank, reading in enumerate(scores.table[: args.top]):
        marker = "  <- best" if rank == 0 else ""
        s = reading.scores
        print(f"{s.aer:.3f}      {s.precision:.3f}   {s.recall:.3f}  {reading.describe()}{marker}")
    print(f"the model's aligner ({json.dumps(current)}): AER {own.scores.aer:.3f}")
    wins = scores.best.scores.aer < own.scores.aer
    if json_path is not None:
        payload = {**scores.to_dict(), "model_aligner": {**current, **own.scores._asdict()}, "wins": wins}
        with plan.writing() as staged:
            staged(json_path).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    if args.write_config is not None:
        if wins:
            aligner = {**(model_alignment(model.config) or {}), **scores.aligner}
            path = write_alignment_config(args.write_config, aligner)
            print(f"wrote alignment {json.dumps(aligner)} into {path}")
        else:
            config = args.write_config / "config.json"
            print(f"{config} left as it is: {args.method} does not beat the model's aligner.")
    return 0


def _weight(text: str) -> float:
    """An argparse ``type`` for ``--threshold``: an attention weight above 0 and at most 1."""
    value = finite_float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a weight above 0 and at most 1, got {text!r}")
    return value
