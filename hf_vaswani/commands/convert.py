"""``hf-vaswani convert-marian``: `hf_vaswani.marian.convert` from the shell."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(subparsers: Any) -> None:
    """Add ``convert-marian MODEL_ID_OR_PATH OUT_DIR [--dtype ...] [--overwrite]``."""
    parser = subparsers.add_parser(
        "convert-marian",
        help="convert a Marian (OPUS-MT) model into an hf_vaswani one, exactly",
        description="Convert a Marian (OPUS-MT) translation model into an hf_vaswani model that computes the same "
        "function; the conversion fails if the two models' logits differ on a check batch.",
    )
    parser.add_argument("model_id_or_path", metavar="MODEL_ID_OR_PATH", help="Hub id or folder of a MarianMTModel")
    parser.add_argument(
        "out_dir",
        metavar="OUT_DIR",
        help="folder to write the hf_vaswani model into (written whole: a failure leaves an existing folder as it was)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a non-empty OUT_DIR whole, none of its old files kept (without it such a folder is refused "
        "before anything is loaded)",
    )
    parser.add_argument(
        "--dtype",
        choices=("bfloat16", "float16", "float32"),
        default=None,
        help="store the weights in this dtype (default: the source's)",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..marian.convert import convert_marian  # its MarianConversionError is a ValueError: one line, exit 2

    out_dir = convert_marian(args.model_id_or_path, args.out_dir, dtype=args.dtype, overwrite=args.overwrite)
    print(f"Converted {args.model_id_or_path} into {out_dir}")
    return 0
