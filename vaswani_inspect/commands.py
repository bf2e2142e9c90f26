"""The ``hf-vaswani`` subcommands of vaswani_inspect (registered through the ``hf_vaswani.commands`` entry point):

    hf-vaswani inspect "el gato negro" --direction es-en --out report/ [--model PATH] [--num-beams N]
    hf-vaswani align-eval --gold gold.txt --source-file es.txt --target-file en.txt [--model PATH] [--write-config DIR]
    hf-vaswani compare-bert --bert bert-base-uncased --sentences FILE --out report/ [--model PATH] [--decoder]
    hf-vaswani head-importance --pairs test.tsv --direction es-en --out report/ [--max-pairs N] [--model PATH]

``inspect`` writes the attention report of a translation (its alignment read as the model's ``config.alignment``
says, unless told otherwise), ``align-eval`` searches the decoder layer, heads and shift whose cross-attention best
matches gold word alignments and can store the best in a model's config.json, ``compare-bert`` compares our heads
with a pretrained BERT's, ``head-importance`` switches each attention head off and measures what the translation
loses (`vaswani_inspect.head_importance`).
``--model`` takes a model folder or a Hub id, as ``hf-vaswani translate --model`` does; without it, the shipped
checkpoint (`hf_vaswani.paths.default_model_path()`). ``python -m vaswani_inspect`` runs the same command line.

As every ``hf-vaswani`` command, they check what they can before any work: the arguments (direction, device, beam
size and length, layers and heads, against the model's limits as soon as it is loaded), the input files (UTF-8,
gold links against the sentences) and every output (`hf_vaswani.outputs.OutputPlan`: writable, not an input, a
non-empty report folder only with ``--overwrite``, which replaces it whole). Reports are written into a temporary
sibling and renamed into place at the end. Bad input is one line ``hf-vaswani COMMAND: error: ...`` and exit code
2, as is a model that returns no attention weights (`AttentionUnavailableError`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hf_vaswani.commands import beam_size, finite_float, head_indices, non_negative_int, positive_int, utf8_text

__all__ = ["add_parser", "run_align_eval", "run_compare_bert", "run_head_importance", "run_inspect"]

#: Libraries of the [inspect] extra that each command needs, checked before any model is loaded.
_INSPECT_NEEDS = ("matplotlib", "bertviz", "mpld3", "xstatic")
_COMPARE_NEEDS = ("matplotlib", "sklearn", "tqdm")
_IMPORTANCE_NEEDS = ("matplotlib", "scipy", "tqdm")
#: Sentence pairs ``head-importance`` measures on by default: one translation of them per head and per point of the
#: pruning curves, ~2 s for 200 pairs with the shipped checkpoint, greedy, on one CPU core.
DEFAULT_MAX_PAIRS = 200


def add_parser(subparsers: Any) -> None:
    """Add the ``inspect``, ``align-eval``, ``compare-bert`` and ``head-importance`` subcommands to an argparse
    `subparsers` object."""
    from .extract import AttentionUnavailableError

    user_errors = (AttentionUnavailableError,)
    _add_inspect(subparsers).set_defaults(func=run_inspect, user_errors=user_errors)
    _add_align_eval(subparsers).set_defaults(func=run_align_eval, user_errors=user_errors)
    _add_compare_bert(subparsers).set_defaults(func=run_compare_bert, user_errors=user_errors)
    _add_head_importance(subparsers).set_defaults(func=run_head_importance, user_errors=user_errors)


def _add_inspect(subparsers: Any) -> argparse.ArgumentParser:
    inspect = subparsers.add_parser(
        "inspect",
        help="translate a sentence and write its attention report (bertviz HTML, heatmaps, alignment, head stats)",
        description="Translate (or teacher-force a --target) and write every attention view into --out. Arguments "
        "and --out are checked before the model runs; the report is written into a temporary sibling of --out and "
        "renamed into place at the end.",
    )
    inspect.add_argument(
        "text", nargs="+", type=utf8_text, help="source sentence(s); several sentences get one subfolder each"
    )
    inspect.add_argument("--out", required=True, type=Path, help="report folder (must not exist or be empty)")
    inspect.add_argument("--overwrite", action="store_true", help="replace a non-empty --out folder whole")
    inspect.add_argument("--direction", default="es-en", help="es-en (default) or en-es")
    _model_arguments(inspect)
    inspect.add_argument(
        "--target", type=utf8_text, help="inspect this reference translation instead of generating one"
    )
    inspect.add_argument(
        "--num-beams", type=beam_size, default=1, help="beam size for generation, at most 64 (default: 1, greedy)"
    )
    inspect.add_argument(
        "--max-new-tokens",
        type=positive_int,
        help="longest translation to generate, in tokens: at most the model's max_position_embeddings - 1",
    )
    inspect.add_argument(
        "--truncate",
        action="store_true",
        help="truncate (with a warning) instead of failing on text longer than the model's max_position_embeddings",
    )
    inspect.add_argument("--format", choices=("png", "svg"), default="png", help="image format (default: png)")
    inspect.add_argument(
        "--alignment-layer",
        type=_layer_choice,
        help="decoder layer for the alignment (from 0; negative counts from the last), or 'mean' (default: the "
        "model's config.alignment)",
    )
    inspect.add_argument(
        "--alignment-heads",
        type=head_indices,
        help="'all' or comma-separated heads (from 0), averaged (default: the model's config.alignment)",
    )
    inspect.add_argument(
        "--shift",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="read each target word where it is the decoder input (Chen et al. 2020), or not (--no-shift); "
        "default: the model's config.alignment",
    )
    inspect.add_argument("--skip-punctuation", action="store_true", help="punctuation words get no alignment link")
    return inspect


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
    evaluate.add_argument("--direction", default="es-en", help="es-en (default) or en-es")
    _model_arguments(evaluate)
    evaluate.add_argument(
        "--index-base",
        type=int,
        choices=(0, 1),
        help="gold indices are 0- or 1-based (default: what the file declares, else 0)",
    )
    evaluate.add_argument("--method", choices=("argmax", "threshold"), default="argmax")
    evaluate.add_argument(
        "--threshold",
        type=_weight,
        default=0.5,
        help="with --method threshold: the weight a link needs, above 0 and at most 1 (default: 0.5)",
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


def _add_compare_bert(subparsers: Any) -> argparse.ArgumentParser:
    from .compare import DEFAULT_BERT

    parser = subparsers.add_parser(
        "compare-bert",
        help="compare our heads with a pretrained BERT's (Clark et al. 2019)",
        description=(
            "Run our encoder (en->es) and a BERT on the same English sentences, merge their attention to the same "
            "words, and write per-head statistics, head-to-head Jensen-Shannon distances, an MDS map of all heads "
            "and a summary (index.md, report.json, PNGs) into --out."
        ),
    )
    parser.add_argument("--bert", default=DEFAULT_BERT, help=f"BERT Hub id or local folder (default: {DEFAULT_BERT})")
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
        help="also compare our decoder self-attention (English target, es->en) with causally masked BERT",
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
    parser.add_argument("--direction", default="es-en", help="es-en (default) or en-es")
    _model_arguments(parser)
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


def _model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", default=None, help="model folder or Hub id (default: the shipped pretrained/vaswani-tatoeba-es-en)"
    )
    parser.add_argument(
        "--device", default=None, help="torch device: cpu (default), cuda, cuda:1 ... (checked before any work)"
    )


def _load(args: argparse.Namespace) -> tuple[Any, Any]:
    """The model of ``--model`` (default: the shipped checkpoint) and its tokenizer."""
    from .extract import load_model_and_tokenizer

    return load_model_and_tokenizer(args.model, device=args.device)


def _model_name(args: argparse.Namespace, model: Any) -> str:
    """What the report calls the model: ``--model``, else the folder the default model was loaded from."""
    return str(args.model) if args.model is not None else str(getattr(model, "name_or_path", ""))


def _check_device(device: str | None) -> None:
    """Refuse a ``--device`` this machine does not have, before anything is loaded (the default is the CPU)."""
    from hf_vaswani.inference import resolve_device

    if device is not None:
        resolve_device(device)


def _local_model(args: argparse.Namespace) -> list[Path]:
    """The model folder the command reads, when it is local (an output must not replace it)."""
    from hf_vaswani.paths import default_model_path

    if args.model is None:
        try:
            return [Path(default_model_path())]
        except FileNotFoundError:
            return []  # loading the model says so
    return [Path(args.model)] if Path(args.model).exists() else []


# ---------------------------------------------------------------------------------------------------------- inspect


def run_inspect(args: argparse.Namespace) -> int:
    """The ``inspect`` subcommand: returns 0 after writing one report per sentence."""
    from hf_vaswani.inference import check_generation_settings, check_known_characters
    from hf_vaswani.outputs import OutputPlan

    from .dependencies import require
    from .extract import extract

    labels = [f"sentence {i}" for i in range(1, len(args.text) + 1)]
    _check_inspect_arguments(args, labels)
    require(*_INSPECT_NEEDS, needed_by="hf-vaswani inspect")
    plan = OutputPlan(inputs=_local_model(args))
    out = plan.folder(args.out, "report folder", overwrite=args.overwrite)
    plan.check()  # before the model is loaded
    model, tokenizer = _load(args)
    check_generation_settings(model, num_beams=args.num_beams, max_new_tokens=args.max_new_tokens)
    _check_alignment_choice(model, args.alignment_layer, args.alignment_heads)
    check_known_characters(tokenizer, list(args.text), labels)  # the rule of translate and the demo
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
        model_name=_model_name(args, model),
    )
    summaries = []
    with plan.writing() as staged:  # every report is published together, or none
        folder = staged(out)
        for i, record in enumerate(records):
            sub = Path() if len(records) == 1 else Path(f"{i:02d}")
            written = _write_inspect_report(args, record, folder / sub)
            pharaoh = written["pharaoh"].read_text(encoding="utf-8").strip() or "(none)"
            summaries.append((record, pharaoh, Path(args.out) / sub / "index.html", len(written)))
    for record, pharaoh, index, files in summaries:
        print(f"{record.source_text} -> {record.target_text}")
        print(f"  alignment: {pharaoh}")
        print(f"  report: {index} ({files} files)")
    return 0


def _check_inspect_arguments(args: argparse.Namespace, labels: list[str]) -> None:
    """The checks ``translate`` makes too: the direction, the device, the texts (none empty, no language token
    written in them)."""
    from hf_vaswani.languages import direction_to_languages, source_with_language

    _, target_language = direction_to_languages(args.direction)
    if args.target is not None and len(args.text) != 1:
        raise ValueError("--target goes with exactly one source sentence.")
    for label, text in zip(labels, args.text, strict=True):
        shown = f"{label[:1].upper()}{label[1:]}"
        if not text.strip():
            raise ValueError(f"{shown} is empty or whitespace only: there is nothing to inspect.")
        try:
            source_with_language(text, target_language)
        except ValueError as error:
            raise ValueError(f"{shown}: {error}") from None
    if args.target is not None and not args.target.strip():
        raise ValueError("--target is empty or whitespace only: there is nothing to inspect.")
    _check_device(args.device)


def _check_alignment_choice(model: Any, layer: int | str | None, heads: str | list[int] | None) -> None:
    """Refuse an ``--alignment-layer`` or ``--alignment-heads`` the model's cross-attention does not have."""
    config = model.config
    layers = int(getattr(config, "decoder_layers", 0) or 0)
    count = int(getattr(config, "decoder_attention_heads", 0) or 0)
    if isinstance(layer, int) and layers and not -layers <= layer < layers:
        raise ValueError(
            f"--alignment-layer {layer}: the model has {layers} decoder layers, 0 to {layers - 1} (or 'mean')."
        )
    outside = [head for head in heads if head >= count] if isinstance(heads, list) and count else []
    if outside:
        raise ValueError(
            f"--alignment-heads {','.join(map(str, heads))}: the model's cross-attention has {count} heads, 0 to "
            f"{count - 1} (or 'all')."
        )


def _write_inspect_report(args: argparse.Namespace, record: Any, folder: Path) -> dict[str, Path]:
    from .report import write_report

    return write_report(
        record,
        folder,
        image_format=args.format,
        alignment_layer=args.alignment_layer,
        alignment_heads=args.alignment_heads,
        shift=args.shift,
        skip_punctuation=args.skip_punctuation,
    )


# ------------------------------------------------------------------------------------------------------- align-eval


def run_align_eval(args: argparse.Namespace) -> int:
    """The ``align-eval`` subcommand: prints the best configurations' AER, precision and recall; returns 0."""
    import json

    from hf_vaswani.languages import direction_to_languages
    from hf_vaswani.outputs import OutputPlan

    from .alignment import (
        read_gold,
        read_lines,
        read_model_config,
        search_alignments,
        write_alignment_config,
    )
    from .extract import extract

    direction_to_languages(args.direction)
    _check_device(args.device)
    plan = OutputPlan(inputs=[args.gold, args.source_file, args.target_file, *_local_model(args)])
    json_path = plan.file(args.json, "JSON file") if args.json is not None else None
    if args.write_config is not None:
        if not (args.write_config / "config.json").is_file():
            raise FileNotFoundError(f"--write-config: no model config at {args.write_config / 'config.json'}.")
        read_model_config(args.write_config)  # a Vaswani model's config, readable: before any work
        plan.file(args.write_config / "config.json", "model config (--write-config)")
    plan.check()
    gold = read_gold(args.gold, args.index_base)
    sources = read_lines(args.source_file, "source file")
    targets = read_lines(args.target_file, "target file")
    if not len(sources) == len(targets) == len(gold):
        raise ValueError(
            f"{args.source_file} has {len(sources)} lines, {args.target_file} {len(targets)}, and {args.gold} "
            f"{len(gold)} sentences: they must match line by line."
        )
    model, tokenizer = _load(args)
    records = extract(model, tokenizer, sources, targets, direction=args.direction, batch_size=args.batch_size)
    search = search_alignments(  # which first checks every gold link against its sentence pair (check_gold)
        records,
        gold,
        method=args.method,
        threshold=args.threshold,
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

    from .alignment import describe_alignment

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


# ----------------------------------------------------------------------------------------------------- compare-bert


def run_compare_bert(args: argparse.Namespace) -> int:
    """The ``compare-bert`` subcommand: returns 0 after writing the report."""
    from hf_vaswani.outputs import OutputPlan

    from .compare import check_bert, compare_bert, load_bert, load_ours, read_sentences, write_compare_report
    from .dependencies import require

    _check_device(args.device)
    require(*_COMPARE_NEEDS, needed_by="hf-vaswani compare-bert")
    bert_folder = Path(str(args.bert)).expanduser()  # a local BERT is an input too; a Hub id is not
    plan = OutputPlan(inputs=[args.sentences, *_local_model(args), bert_folder if bert_folder.exists() else None])
    out = plan.folder(args.out, "report folder", overwrite=args.overwrite)
    plan.check()
    sentences = read_sentences(args.sentences, args.max_sentences)
    check_bert(str(args.bert))  # fail fast, before loading anything large
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
        model_name=_model_name(args, model),
        bert_name=str(args.bert),
    )
    with plan.writing() as staged:
        written = write_compare_report(result, staged(out), image_format=args.format)
    for kind, comparison in result.comparisons.items():
        summary = comparison.summary()
        print(
            f"{kind}: {comparison.sentences} sentences, {summary['heads_a']} of our heads vs {summary['heads_b']} "
            f"BERT heads; {summary['same_tag_as_nearest']} of ours share the category of their nearest BERT head."
        )
    if result.skipped:
        print(f"skipped {len(result.skipped)} sentence(s); see report.json")
    print(f"report: {Path(args.out) / 'index.md'} ({len(written)} files)")
    return 0


# -------------------------------------------------------------------------------------------------- head-importance


def run_head_importance(args: argparse.Namespace) -> int:
    """The ``head-importance`` subcommand: returns 0 after writing the report."""
    import importlib.util
    import time

    from hf_vaswani.data import read_pairs
    from hf_vaswani.inference import check_generation_settings
    from hf_vaswani.languages import direction_to_languages
    from hf_vaswani.outputs import OutputPlan

    from .dependencies import require

    direction_to_languages(args.direction)
    _check_device(args.device)
    require(*_IMPORTANCE_NEEDS, needed_by="hf-vaswani head-importance")
    if importlib.util.find_spec("sacrebleu") is None:  # BLEU and chrF; the dispatcher names its extra
        raise ModuleNotFoundError("No module named 'sacrebleu'", name="sacrebleu")
    plan = OutputPlan(inputs=[args.pairs, *_local_model(args)])
    out = plan.folder(args.out, "report folder", overwrite=args.overwrite)
    plan.check()  # before the model is loaded or anything measured
    pairs = read_pairs(args.pairs)[: args.max_pairs]
    from .importance import head_importance
    from .importance_report import write_importance_report

    started = time.perf_counter()
    model, tokenizer = _load(args)
    check_generation_settings(model, num_beams=args.num_beams, max_new_tokens=args.max_new_tokens)
    result = head_importance(
        model,
        tokenizer,
        pairs,
        args.direction,
        num_beams=args.num_beams,
        max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size,
        curves=() if args.no_pruning else ("encoder", "decoder", "cross", "all"),
        prune_by=args.prune_by,
        progress=not args.no_progress,
        model_name=_model_name(args, model),
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


# ------------------------------------------------------------------------------------------------ argument types


def _layer_choice(text: str) -> int | str:
    """An argparse ``type`` for ``--alignment-layer``: ``mean`` or a layer index (negative counts from the last);
    the model's number of decoder layers bounds it, checked once the model is loaded."""
    if text.strip() == "mean":
        return "mean"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a layer number such as 0 or 'mean', got {text!r}") from None


def _weight(text: str) -> float:
    """An argparse ``type`` for ``--threshold``: an attention weight above 0 and at most 1."""
    value = finite_float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a weight above 0 and at most 1, got {text!r}")
    return value
