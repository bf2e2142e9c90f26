"""``hf-vaswani patch``: activation patching from a clean source into a corrupted one (`vaswani_inspect.patching`):
which layer, source position and head restore the clean translation, written as a report folder.

    hf-vaswani patch "Me senté en el banco de la plaza." "Me senté en el sofá de la plaza." --direction es-en --out why/
    hf-vaswani patch CLEAN CORRUPTED --site encoder --site cross_heads --method attribution --out why/

The folder gets ``patching.json`` (`PatchingResult.as_dict`: effects per site, both metrics, tokens, settings,
seconds) and one heatmap per site (``patching-SITE.png`` and ``.svg``: layers down, positions or heads across).
Arguments and --out are checked before the model loads; the folder is written into a temporary sibling and renamed
into place.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from hf_vaswani.commands import utf8_text
from hf_vaswani.empty_input import check_not_empty
from hf_vaswani.terminal import for_terminal

from .common import (
    DIRECTION_HELP,
    check_device,
    check_direction,
    check_source_texts,
    command_direction,
    load_model,
    local_model,
    model_arguments,
)

__all__ = ["add_parser", "run_patch"]

_NEEDS = ("matplotlib",)


def add_parser(subparsers: Any) -> None:
    """Add the ``patch`` subcommand to an argparse `subparsers` object."""
    from ..patching import METHODS, SITES

    parser = subparsers.add_parser(
        "patch",
        help="activation patching: which layers, source positions and heads carry what makes the clean source's "
        "translation, and write heatmaps and a JSON",
        description="Run CORRUPTED with one activation at a time taken from CLEAN's run (or its gradient "
        "approximation) and measure how much of the clean translation's log-probability comes back. Arguments and "
        "--out are checked before the model loads.",
    )
    parser.add_argument("clean", type=utf8_text, help="the clean source sentence")
    parser.add_argument("corrupted", type=utf8_text, help="the corrupted source: as many tokens, one word changed")
    parser.add_argument("--out", required=True, type=Path, help="report folder (must not exist or be empty)")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --out folder whole")
    parser.add_argument("--direction", default=None, help=DIRECTION_HELP)
    parser.add_argument(
        "--site",
        action="append",
        choices=SITES,
        metavar="SITE",
        help=f"site to patch, repeatable: {', '.join(SITES)} (default: all)",
    )
    parser.add_argument(
        "--method",
        choices=METHODS,
        default="exhaustive",
        help="exhaustive (one patched run per cell, batched; default) or attribution (one forward and backward pass)",
    )
    parser.add_argument(
        "--target", type=utf8_text, help="teacher-force this translation (default: the model's translation of CLEAN)"
    )
    model_arguments(parser)
    parser.set_defaults(func=run_patch)


def run_patch(args: argparse.Namespace) -> int:
    """The ``patch`` subcommand: returns 0 after writing the report."""
    from hf_vaswani.outputs import OutputPlan

    from ..dependencies import require
    from ..patching import patch_activations
    from ..patching_plots import save_patching_figures

    check_direction(args)
    check_device(args.device)
    check_source_texts([args.clean, args.corrupted])
    if args.target is not None:
        check_not_empty(args.target, "target")
    require(*_NEEDS, needed_by="hf-vaswani patch")
    plan = OutputPlan(inputs=local_model(args))
    out = plan.folder(args.out, "report folder", overwrite=args.overwrite)
    plan.check()  # before the model is loaded
    model, tokenizer = load_model(args)
    command_direction(args, model, tokenizer)
    sites = list(dict.fromkeys(args.site)) if args.site else None
    options = {"sites": sites} if sites else {}
    start = time.perf_counter()
    result = patch_activations(
        model,
        tokenizer,
        args.clean,
        args.corrupted,
        direction=args.direction,
        target=args.target,
        method=args.method,
        **options,
    )
    seconds = time.perf_counter() - start
    with plan.writing() as staged:
        folder = staged(out)
        folder.mkdir(parents=True, exist_ok=True)
        figures = save_patching_figures(result, folder)
        data = {**result.as_dict(), "seconds": seconds}
        (folder / "patching.json").write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(for_terminal(f"{result.source_text} -> {result.target_text}"))
    print(f"metric: clean {result.clean_metric:.3f}, corrupted {result.corrupted_metric:.3f} ({result.metric})")
    for site, effects in result.effects.items():
        print(f"  {site}: largest effect {float(_nan_max(effects)):.2f}")
    print(f"report: {args.out} ({len(figures) + 1} files, {result.method}, {seconds:.1f} s)")
    return 0


def _nan_max(values: Any) -> float:
    import numpy as np

    finite = values[np.isfinite(values)]
    return float(finite.max()) if finite.size else float("nan")
