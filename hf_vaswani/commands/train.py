"""``hf-vaswani train`` and ``hf-vaswani average-checkpoints``: `hf_vaswani.training` from the shell."""

from __future__ import annotations

import argparse
from typing import Any

from . import positive_int


def _run_train(args: argparse.Namespace) -> int:
    import json

    from ..training import load_config, train

    config = load_config(args.config, args.set or [])
    summary = train(
        config,
        resume=args.resume,
        overwrite=args.overwrite,
        resume_from_previous=args.resume_from_previous,
        fresh_optimizer=args.fresh_optimizer,
    )
    if summary.get("process_index", 0) == 0:  # one summary for a distributed run
        print(json.dumps(summary, indent=2))
    return 0


def _run_average(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..training import average_checkpoints, find_checkpoints

    paths = [Path(p) for p in args.checkpoints]
    for path in paths:
        if not path.exists():
            raise FileNotFoundError(f"No such checkpoint or run folder: {str(path)!r}")
    run_dir = None
    if len(paths) == 1 and paths[0].is_dir() and not any(paths[0].glob("model*.safetensors")):
        # A run directory: take its last N complete checkpoints.
        run_dir = paths[0]
        found = find_checkpoints(run_dir, warn=True)
        if not found:
            raise FileNotFoundError(f"No complete checkpoint-N folder with a model in {str(run_dir)!r}.")
        paths = found[-args.last :]
    out = average_checkpoints(
        paths, args.output, dtype=args.dtype, overwrite=args.overwrite, inputs=[run_dir] if run_dir else ()
    )
    print(f"Averaged {len(paths)} checkpoints ({', '.join(p.name for p in paths)}) into {out}")
    return 0


def _add_train(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train a model with the paper's recipe (Seq2SeqTrainer)",
        description=(
            "Train (or resume) a Transformer from a YAML/JSON run configuration. Resumes from the last "
            "checkpoint of training.output_dir when there is one, unless --no-resume; every file it resumes from "
            "is checked first, and a resume with another tokenizer or other data than the run started with is "
            "refused (exit code 2). A failed save (a full disk) leaves nothing half-written. A loss that becomes "
            "NaN or infinite stops the run (exit code 2), keeping the last "
            "good checkpoint and writing no final/ model."
        ),
        epilog="example: hf-vaswani train configs/tatoeba-es-en.yaml --set data.path=pairs.tsv "
        "--set training.output_dir=runs/tatoeba --set training.max_steps=100",
    )
    parser.add_argument("config", help="run configuration (.yaml or .json)")
    parser.add_argument(
        "--set",
        action="append",
        metavar="SECTION.KEY=VALUE",
        help="override a configuration value (repeatable), e.g. --set training.batch_size=128",
    )
    parser.add_argument(
        "--resume",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="resume from the last checkpoint (default: when one exists); --no-resume refuses to reuse a "
        "directory that has checkpoints",
    )
    parser.add_argument(
        "--resume-from-previous",
        action="store_true",
        help="when the last checkpoint is damaged (trainer_state.json, scheduler.pt, optimizer.pt, the RNG states "
        "or the weights missing or not what a run writes), resume from the newest checkpoint that is not, saying "
        "which it skipped; without it such a checkpoint is an error that names the file",
    )
    parser.add_argument(
        "--fresh-optimizer",
        action="store_true",
        help="resume from a checkpoint that has no optimizer.pt, starting Adam again (the learning-rate schedule "
        "goes on where it was; the losses depart from an unbroken run's); without it such a checkpoint is refused",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="train even when training.output_dir is (or is inside) a model folder, e.g. the shipped checkpoint: "
        "the run writes its files beside the model's; without it such a folder is refused before any work",
    )
    parser.set_defaults(func=_run_train)


def _add_average(subparsers: Any) -> None:
    average = subparsers.add_parser(
        "average-checkpoints",
        help="average the weights of the last N checkpoints (sec. 6.1)",
        description="Average checkpoints into a loadable model folder. Pass checkpoint folders, or one run "
        "directory to average its last --last checkpoints.",
    )
    average.add_argument("checkpoints", nargs="+", help="checkpoint folders, or one run directory")
    average.add_argument(
        "-o",
        "--output",
        required=True,
        help="folder to write the averaged model to (written whole: a failure leaves an existing folder as it was)",
    )
    average.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a non-empty --output folder whole (without it such a folder is refused before any work)",
    )
    average.add_argument(
        "--last", type=positive_int, default=5, help="with a run directory: how many checkpoints (default 5)"
    )
    average.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], help="cast the average")
    average.set_defaults(func=_run_average)


def add_parser(subparsers: Any) -> None:
    """Add the ``train`` and ``average-checkpoints`` subcommands."""
    _add_train(subparsers)
    _add_average(subparsers)
