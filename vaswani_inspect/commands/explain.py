"""``hf-vaswani explain``: which source words made the model write each target word, by one or more attribution
methods side by side (`vaswani_inspect.attribution.attribute`), written as a report folder.

    hf-vaswani explain "El banco cerró mis cuentas." --method attention --method integrated_gradients --out report/
    hf-vaswani explain --pairs test.tsv --direction en-es --method saliency --out report/

Each sentence gets a folder (``00/``, ``01/`` ...; the report folder itself for one sentence) with
``attributions.json`` (every method's word-level matrix, words, source shares, links and settings), one heatmap per
method (``heatmap-METHOD.png``: target words x source words, the aligner's words) and, for the methods that measure
it, the source-vs-prefix share (``source-share-METHOD.png``: a bar per target word, the part that comes from the
source). The report folder's ``table.md`` / ``table.json`` list per sentence and method the links (argmax per target
word, Pharaoh ``i-j``), the mean source share and the time. Without ``--method`` the model's own aligner is used
(its ``config.alignment`` method, else "attention").

With ``--pairs`` (English<TAB>Spanish, as ``evaluate`` reads) each reference translation is explained
teacher-forced; with sentences, the model's translation (or ``--target`` for one sentence). Everything is checked
before the model loads: the methods' libraries, the texts or the pairs file, and the report folder
(`hf_vaswani.outputs.OutputPlan`); the report is written into a temporary sibling and renamed into place.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from hf_vaswani.commands import beam_size, positive_int, utf8_text
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
    model_name,
)

__all__ = ["add_parser", "run_explain"]

_NEEDS = ("matplotlib", "tqdm")


def add_parser(subparsers: Any) -> None:
    """Add the ``explain`` subcommand to an argparse `subparsers` object."""
    from ..attribution import METHODS
    from ..extract import AttentionUnavailableError

    parser = subparsers.add_parser(
        "explain",
        help="attribute each target word to the source words by several methods (attention, norms, gradients, "
        "value zeroing) and write matrices, heatmaps, source shares and a table",
        description="Explain translations (or reference translations, teacher-forced) with one or more attribution "
        "methods and write a report folder. Arguments, inputs and --out are checked before the model loads.",
    )
    parser.add_argument("text", nargs="*", type=utf8_text, help="source sentence(s) (or --pairs)")
    parser.add_argument("--pairs", type=Path, help="English<TAB>Spanish pairs: explain each reference translation")
    parser.add_argument("--max-pairs", type=positive_int, help="only the first N pairs of --pairs")
    parser.add_argument("--target", type=utf8_text, help="explain this reference translation (one sentence)")
    parser.add_argument(
        "--method",
        action="append",
        choices=METHODS,
        metavar="METHOD",
        help=f"attribution method, repeatable: {', '.join(METHODS)} (default: the model's aligner)",
    )
    parser.add_argument("--out", required=True, type=Path, help="report folder (must not exist or be empty)")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --out folder whole")
    parser.add_argument("--direction", default=None, help=DIRECTION_HELP)
    model_arguments(parser)
    parser.add_argument("--n-steps", type=positive_int, help="integrated gradients' steps (default: the method's, 50)")
    parser.add_argument(
        "--num-beams", type=beam_size, default=1, help="beam size when translating, at most 64 (default: 1, greedy)"
    )
    parser.add_argument("--format", choices=("png", "svg"), default="png", help="image format (default: png)")
    parser.set_defaults(func=run_explain, user_errors=(AttentionUnavailableError,))


def run_explain(args: argparse.Namespace) -> int:
    """The ``explain`` subcommand: returns 0 after writing the report."""
    from tqdm.auto import tqdm

    from hf_vaswani.outputs import OutputPlan

    from ..attribution import MODEL_METHODS, attribute
    from ..attribution.registry import method_entry
    from ..dependencies import require
    from ..extract import extract

    sources, targets = _inputs(args)
    methods = list(dict.fromkeys(args.method or []))
    needs = [*_NEEDS, *(library for method in methods for library in method_entry(method).needs)]
    require(*dict.fromkeys(needs), needed_by="hf-vaswani explain")
    plan = OutputPlan(inputs=[*local_model(args), *([args.pairs] if args.pairs else [])])
    out = plan.folder(args.out, "report folder", overwrite=args.overwrite)
    plan.check()  # before the model is loaded
    model, tokenizer = load_model(args)
    command_direction(args, model, tokenizer)
    if not methods:
        from ..alignment.config import model_aligner

        methods = [(model_aligner(model.config) or {"method": "attention"})["method"]]
    if targets is None:
        from hf_vaswani.checked_source import CheckedSource
        from hf_vaswani.inference import check_known_characters

        check_known_characters(tokenizer, sources, [f"sentence {i}" for i in range(1, len(sources) + 1)])
        sources = [CheckedSource(text, args.direction) for text in sources]  # (extract checks them no more)
    records = extract(
        model,
        tokenizer,
        sources,
        targets,
        direction=args.direction,
        generate_kwargs={"num_beams": args.num_beams},
        model_name=model_name(args, model),
    )
    rows = []
    with plan.writing() as staged:
        folder = staged(out)
        progress = tqdm(total=len(records) * len(methods), desc="explaining", unit="attribution")
        for i, record in enumerate(records):
            sub = Path() if len(records) == 1 else Path(f"{i:02d}")
            found = {}
            for method in methods:
                takes_steps = "n_steps" in method_entry(method).options
                options = {"n_steps": args.n_steps} if takes_steps and args.n_steps else {}
                start = time.perf_counter()
                found[method] = attribute(model, tokenizer, record, method=method, **options)
                found[method].details["ms"] = 1000.0 * (time.perf_counter() - start)
                progress.update()
            rows.extend(_write_sentence(folder / sub, i, found, args.format, MODEL_METHODS))
        progress.close()
        (folder / "table.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
        (folder / "table.md").write_text(_table(rows), encoding="utf-8")
    for record in records:
        print(for_terminal(f"{record.source_text} -> {record.target_text}"))  # the input's escapes shown
    print(f"report: {args.out} ({len(records)} sentences x {len(methods)} methods; table: {args.out / 'table.md'})")
    return 0


def _inputs(args: argparse.Namespace) -> tuple[list[str], list[str] | None]:
    """The source sentences and the targets to teacher-force (None: translate), checked."""
    from hf_vaswani.directions import pair_language

    check_direction(args)
    check_device(args.device)
    if args.pairs is not None and args.text:
        raise ValueError("give sentences or --pairs, not both.")
    if args.pairs is None and not args.text:
        raise ValueError("nothing to explain: give one or more sentences, or --pairs FILE.")
    if args.target is not None and (args.pairs is not None or len(args.text) != 1):
        raise ValueError("--target goes with exactly one source sentence.")
    if args.max_pairs is not None and args.pairs is None:
        raise ValueError("--max-pairs goes with --pairs.")
    if args.pairs is not None:
        from hf_vaswani.data import read_pairs

        if args.pairs.is_dir():
            raise IsADirectoryError(f"--pairs: {args.pairs} is a folder: give the file of sentence pairs inside it.")
        if not args.pairs.is_file():
            raise FileNotFoundError(f"--pairs: no such file {args.pairs}.")
        pairs = read_pairs(args.pairs)[: args.max_pairs]
        if not pairs:
            raise ValueError(f"--pairs: {args.pairs} holds no sentence pairs.")
        languages = [pair_language(code) for code in (args.direction or "es-en").split("-")]
        if sorted(languages) != ["en", "es"]:
            raise ValueError(f"--pairs holds English and Spanish: --direction {args.direction} is not one of them.")
        sources = [getattr(pair, languages[0]) for pair in pairs]
        targets: list[str] | None = [getattr(pair, languages[1]) for pair in pairs]
    else:
        sources, targets = list(args.text), None if args.target is None else [args.target]
    check_source_texts(sources)
    for number, target in enumerate(targets or (), start=1):
        check_not_empty(target, f"target {number}")
    return sources, targets


def _write_sentence(
    folder: Path, index: int, found: dict[str, Any], image_format: str, model_methods: tuple[str, ...]
) -> list[dict[str, Any]]:
    import numpy as np

    from ..plots import plot_attribution, plot_source_share, save_figure

    folder.mkdir(parents=True, exist_ok=True)
    entries, rows = {}, []
    for method, attribution in found.items():
        links = attribution.links()
        entries[method] = {
            **attribution.to_dict(),
            "links": links,
            "ms": attribution.details["ms"],
            "completeness_error": attribution.details.get("completeness_error"),
        }
        save_figure(plot_attribution(attribution), folder / f"heatmap-{method}.{image_format}")
        share = None
        if attribution.source_share is not None:
            save_figure(plot_source_share(attribution), folder / f"source-share-{method}.{image_format}")
            share = float(np.nanmean(attribution.source_share)) if np.any(~np.isnan(attribution.source_share)) else None
        rows.append(
            {
                "sentence": index,
                "source": attribution.record.source_text,
                "target": attribution.record.target_text,
                "method": method,
                "links": " ".join(f"{i}-{j}" for i, j in links),
                "mean_source_share": share,
                "ms": attribution.details["ms"],
                "runs_model": method in model_methods,
            }
        )
    (folder / "attributions.json").write_text(json.dumps(entries, indent=2) + "\n", encoding="utf-8")
    return rows


def _table(rows: list[dict[str, Any]]) -> str:
    lines = ["| sentence | method | links (source-target) | mean source share | ms |"]
    lines.append("| ---: | --- | --- | ---: | ---: |")
    for row in rows:
        share = "-" if row["mean_source_share"] is None else f"{row['mean_source_share']:.2f}"
        links = row["links"] or "(none)"
        lines.append(f"| {row['sentence']} | {row['method']} | {links} | {share} | {row['ms']:.0f} |")
    return "\n".join(lines) + "\n"
