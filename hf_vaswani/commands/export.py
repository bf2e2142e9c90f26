"""``hf-vaswani export-marian``, ``export-ctranslate2`` and ``export-onnx``: `hf_vaswani.export` from the shell.

The three write their OUT folder the way every command does (`hf_vaswani.outputs`): checked before the model is
loaded (writable, not the source folder and not holding it, not empty unless ``--overwrite``), written into a
temporary sibling and renamed into place once the export is complete and checked; ``--overwrite`` replaces OUT
whole.
"""

from __future__ import annotations

import argparse
from typing import Any

#: CTranslate2's weight types (`hf_vaswani.export.ctranslate2.QUANTIZATIONS`, listed here so that building the
#: parser does not import ctranslate2).
QUANTIZATIONS = ("float32", "int8", "int8_float32", "int8_bfloat16", "bfloat16", "int16", "float16", "int8_float16")


class DeprecatedOptionWarning(FutureWarning):
    """An option that still works but goes away: its message names the one to use."""


def add_parser(subparsers: Any) -> None:
    """Add the three export commands."""
    marian = subparsers.add_parser(
        "export-marian",
        help="export a model as a stock transformers MarianMTModel, exactly",
        description="Write MODEL as a MarianMTModel folder (the inverse of convert-marian): the same weights under "
        "Marian's names, the interleaved sinusoid layout reordered into Marian's, decoding from <s>. Fails if the "
        "two models' logits differ on a check batch.",
        epilog="example: hf-vaswani export-marian pretrained/vaswani-tatoeba-es-en vaswani-es-en-marian",
    )
    _arguments(marian, "folder to write the MarianMTModel into")
    marian.add_argument(
        "--dtype", choices=("float32", "bfloat16", "float16"), default=None, help="weight dtype (default: float32)"
    )
    marian.set_defaults(func=_run_marian)

    ct2 = subparsers.add_parser(
        "export-ctranslate2",
        help="export a model to CTranslate2 (needs the [fast] extra)",
        description="Write MODEL as a CTranslate2 model folder with every vocabulary entry, decoding from <s>. In "
        "float32 CTranslate2's beam search gives the model's tokens; int8 is smaller and faster on a CPU.",
        epilog="example: hf-vaswani export-ctranslate2 pretrained/vaswani-tatoeba-es-en vaswani-ct2 "
        "--quantization int8",
    )
    _arguments(ct2, "folder to write the CTranslate2 model into")
    ct2.add_argument("--quantization", choices=QUANTIZATIONS, default="float32", help="weight type (default: float32)")
    ct2.add_argument("--force", action="store_true", help="deprecated: the same as --overwrite")
    ct2.set_defaults(func=_run_ctranslate2)

    onnx = subparsers.add_parser(
        "export-onnx",
        help="export encoder and decoder to ONNX (needs the [onnx] extra)",
        description="Write MODEL's encoder and decoder as ONNX graphs (torch.onnx.export with dynamo=True, dynamic "
        "batch and lengths) with its config and tokenizer; hf_vaswani.export.onnx.OnnxGreedyTranslator decodes "
        "with them on onnxruntime. Fails if onnxruntime's logits differ from PyTorch's on a check batch.",
        epilog="example: hf-vaswani export-onnx pretrained/vaswani-tatoeba-es-en vaswani-onnx",
    )
    _arguments(onnx, "folder to write encoder.onnx and decoder.onnx into")
    onnx.set_defaults(func=_run_onnx)


def _arguments(parser: argparse.ArgumentParser, out_help: str) -> None:
    """MODEL, OUT and --overwrite, the same for the three exports."""
    parser.add_argument("model", metavar="MODEL", help="hf_vaswani model folder or Hub id")
    parser.add_argument(
        "out_dir",
        metavar="OUT",
        help=f"{out_help}: must not exist or be empty, nor be or hold MODEL; written whole (a failure leaves an "
        "existing folder as it was)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a non-empty OUT whole, none of its old files kept (without it such a folder is refused before "
        "anything is loaded)",
    )


def _run_marian(args: argparse.Namespace) -> int:
    from ..marian.export import export_marian  # its ExportError is a ValueError: one line, exit 2

    out_dir = export_marian(args.model, args.out_dir, dtype=args.dtype, overwrite=args.overwrite)
    print(f"Exported {args.model} as a MarianMTModel into {out_dir}")
    return 0


def _run_ctranslate2(args: argparse.Namespace) -> int:
    import warnings

    from ..export.ctranslate2 import export_ctranslate2

    if args.force:
        warnings.warn("--force is deprecated: use --overwrite (the same).", DeprecatedOptionWarning, stacklevel=1)
    overwrite = args.overwrite or args.force
    out_dir = export_ctranslate2(args.model, args.out_dir, quantization=args.quantization, overwrite=overwrite)
    print(f"Exported {args.model} to CTranslate2 ({args.quantization}) into {out_dir}")
    return 0


def _run_onnx(args: argparse.Namespace) -> int:
    from ..export.onnx import export_onnx

    out_dir = export_onnx(args.model, args.out_dir, overwrite=args.overwrite)
    print(f"Exported {args.model} to ONNX (encoder.onnx, decoder.onnx) into {out_dir}")
    return 0
