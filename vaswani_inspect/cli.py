"""Command line: `inspect` (write an attention report for a sentence) and `align-eval` (pick the decoder layer whose
cross-attention best matches gold word alignments).

The project's main CLI (`hf-vaswani`) registers these subcommands with `add_parser(subparsers)`; every subcommand
sets `args.func`, a function of the parsed arguments that returns the exit status. On its own::

    python -m vaswani_inspect inspect "el gato negro" --direction es-en --out report/ [--model PATH] [--num-beams N]
    python -m vaswani_inspect align-eval --gold gold.txt --source-file es.txt --target-file en.txt [--model PATH]

``--model`` takes a model folder or a Hub id, as ``hf-vaswani translate --model`` does. A model that returns no
attention weights (`AttentionUnavailableError`) is reported like bad input: one line, exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hf_vaswani.paths import DEFAULT_MODEL_PATH

from .extract import AttentionUnavailableError


def add_parser(subparsers: Any) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """Add the `inspect` and `align-eval` subcommands to an argparse `subparsers` object; returns both parsers."""
    inspect = subparsers.add_parser(
        "inspect",
        help="translate a sentence and write its attention report (bertviz HTML, heatmaps, alignment, head stats)",
        description="Translate (or teacher-force a --target) and write every attention view into --out.",
    )
    inspect.add_argument("text", nargs="+", help="source sentence(s); several sentences get one subfolder each")
    inspect.add_argument("--out", required=True, type=Path, help="output folder")
    inspect.add_argument("--direction", default="es-en", help="source-target languages (default: es-en)")
    _model_arguments(inspect)
    inspect.add_argument("--target", help="inspect this reference translation instead of generating one")
    inspect.add_argument("--num-beams", type=int, default=1, help="beam size for generation (default: 1, greedy)")
    inspect.add_argument("--max-new-tokens", type=int, help="longest translation to generate")
    inspect.add_argument(
        "--truncate",
        action="store_true",
        help="truncate (with a warning) instead of failing on text longer than the model's max_position_embeddings",
    )
    inspect.add_argument("--format", choices=("png", "svg"), default="png", help="image format (default: png)")
    inspect.add_argument("--alignment-layer", default="mean", help="decoder layer for the alignment, or 'mean'")
    inspect.add_argument("--shift", action="store_true", help="shifted alignment rows (Chen et al. 2020)")
    inspect.set_defaults(func=run_inspect, user_errors=(AttentionUnavailableError,))

    evaluate = subparsers.add_parser(
        "align-eval",
        help="pick the decoder layer whose cross-attention alignments have the lowest AER on a gold file",
        description="Teacher-force each reference translation and score every decoder layer's alignments.",
    )
    evaluate.add_argument(
        "--gold", required=True, type=Path, help="gold alignments: one line per pair, 'i-j' sure, 'ipj' possible"
    )
    evaluate.add_argument("--source-file", required=True, type=Path, help="source sentences, one per line")
    evaluate.add_argument("--target-file", required=True, type=Path, help="reference translations, one per line")
    evaluate.add_argument("--direction", default="es-en", help="source-target languages (default: es-en)")
    _model_arguments(evaluate)
    evaluate.add_argument(
        "--index-base",
        type=int,
        choices=(0, 1),
        help="gold indices are 0- or 1-based (default: what the file declares, else 0)",
    )
    evaluate.add_argument("--heads", default="all", help="'all' or comma-separated head indices (averaged)")
    evaluate.add_argument("--method", choices=("argmax", "threshold"), default="argmax")
    evaluate.add_argument("--threshold", type=float, default=0.5)
    evaluate.add_argument("--shift", action="store_true", help="shifted alignment rows (Chen et al. 2020)")
    evaluate.add_argument("--batch-size", type=int, default=16)
    evaluate.add_argument("--json", type=Path, help="also write the scores as JSON here")
    evaluate.set_defaults(func=run_align_eval, user_errors=(AttentionUnavailableError,))
    return inspect, evaluate


def _model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=None, help=f"model folder or Hub id (default: {DEFAULT_MODEL_PATH})")
    parser.add_argument("--device", default=None, help="torch device, e.g. cuda (default: cpu)")


def _load(args: argparse.Namespace) -> tuple[Any, Any]:
    from .extract import load_model_and_tokenizer

    return load_model_and_tokenizer(args.model, device=args.device)


def run_inspect(args: argparse.Namespace) -> int:
    """The `inspect` subcommand."""
    from .extract import extract
    from .report import write_report

    if args.target is not None and len(args.text) != 1:
        raise ValueError("--target goes with exactly one source sentence.")
    if args.num_beams < 1:
        raise ValueError("--num-beams must be >= 1.")
    layer = _layer(args.alignment_layer)
    model, tokenizer = _load(args)
    generate_kwargs: dict[str, Any] = {"num_beams": args.num_beams}
    if args.max_new_tokens is not None:
        generate_kwargs["max_new_tokens"] = args.max_new_tokens
    records = extract(
        model,
        tokenizer,
        list(args.text),
        None if args.target is None else [args.target],
        direction=args.direction,
        generate_kwargs=generate_kwargs,
        truncation=args.truncate,
        model_name=str(args.model or DEFAULT_MODEL_PATH),
    )
    for i, record in enumerate(records):
        out = args.out if len(records) == 1 else args.out / f"{i:02d}"
        written = write_report(record, out, image_format=args.format, alignment_layer=layer, shift=args.shift)
        print(f"{record.source_text} -> {record.target_text}")
        print(f"  alignment: {(out / 'alignment.pharaoh').read_text(encoding='utf-8').strip() or '(none)'}")
        print(f"  report: {written['index']} ({len(written)} files)")
    return 0


def run_align_eval(args: argparse.Namespace) -> int:
    """The `align-eval` subcommand."""
    from .alignment import best_layer, read_gold
    from .extract import extract

    gold = read_gold(args.gold, args.index_base)
    sources = _lines(args.source_file)
    targets = _lines(args.target_file)
    if not len(sources) == len(targets) == len(gold):
        raise ValueError(
            f"{args.source_file} has {len(sources)} lines, {args.target_file} {len(targets)}, and {args.gold} "
            f"{len(gold)} sentences: they must match line by line."
        )
    heads: Any = "all" if args.heads == "all" else [int(h) for h in args.heads.split(",") if h.strip()]
    model, tokenizer = _load(args)
    records = extract(model, tokenizer, sources, targets, direction=args.direction, batch_size=args.batch_size)
    search = best_layer(records, gold, heads=heads, method=args.method, threshold=args.threshold, shift=args.shift)
    print("layer    AER  precision  recall")
    for layer, scores in search.scores.items():
        marker = "  <- best" if layer == search.best_layer else ""
        print(f"{layer:5d}  {scores.aer:.3f}      {scores.precision:.3f}   {scores.recall:.3f}{marker}")
    if args.json is not None:
        payload = {
            "best_layer": search.best_layer,
            "scores": {str(k): v._asdict() for k, v in search.scores.items()},
            "settings": {"heads": heads, "method": args.method, "threshold": args.threshold, "shift": args.shift},
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    return 0


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _layer(value: str) -> int | str:
    if value == "mean":
        return value
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"--alignment-layer must be an integer or 'mean', got {value!r}.") from None


def build_parser() -> argparse.ArgumentParser:
    """The stand-alone parser of `python -m vaswani_inspect`."""
    parser = argparse.ArgumentParser(prog="python -m vaswani_inspect", description=__doc__.split("\n\n")[0])
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the stand-alone CLI; returns the exit status (2 with a one-line message for bad input)."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (ValueError, TypeError, OSError, AttentionUnavailableError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


__all__ = ["add_parser", "build_parser", "main", "run_align_eval", "run_inspect"]
