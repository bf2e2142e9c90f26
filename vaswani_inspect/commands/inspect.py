"""``hf-vaswani inspect``: translate a sentence (or teacher-force a ``--target``) and write its attention report
(`vaswani_inspect.write_report`), its alignment read as the model's ``config.alignment`` says unless told otherwise."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hf_vaswani.commands import beam_size, head_indices, positive_int, utf8_text
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

__all__ = ["add_parser", "run_inspect"]

#: Libraries of the [inspect] extra the command needs, checked before any model is loaded.
_INSPECT_NEEDS = ("matplotlib", "bertviz", "mpld3", "xstatic")


def add_parser(subparsers: Any) -> None:
    """Add the ``inspect`` subcommand to an argparse `subparsers` object."""
    from ..extract import AttentionUnavailableError

    _add_inspect(subparsers).set_defaults(func=run_inspect, user_errors=(AttentionUnavailableError,))


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
    inspect.add_argument("--direction", default=None, help=DIRECTION_HELP)
    model_arguments(inspect)
    inspect.add_argument(
        "--target", type=utf8_text, help="inspect this reference translation instead of generating one"
    )
    inspect.add_argument(
        "--num-beams",
        type=beam_size,
        default=None,
        help="beam size for generation, at most 64; 1 is greedy (default: the model's generation_config, as in the "
        "demo: 4 for the shipped model, with its length_penalty and no_repeat_ngram_size)",
    )
    inspect.add_argument(
        "--max-new-tokens",
        type=positive_int,
        help="longest translation to generate, in tokens: at most the model's max_position_embeddings - 1 "
        "(default: the model's generation_config, as in the demo)",
    )
    inspect.add_argument(
        "--steps",
        action="store_true",
        help="also write the decoding step by step: steps.json (every step's candidates, attention rows and the "
        "beam search tree) and its figures under steps/ (the tree and one figure per step, SVG and PNG)",
    )
    inspect.add_argument(
        "--steps-language",
        choices=("en", "es"),
        default="en",
        help="language of the --steps and --lens figures' labels (default: en)",
    )
    inspect.add_argument(
        "--lens",
        action="store_true",
        help="also write the logit lens (what each decoder layer would write at each position) as lens.json, "
        "lens.csv and a figure lens.png / lens.svg, with the decoder lens (the greedy translation from each "
        "encoder layer's output) in lens.json",
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


def run_inspect(args: argparse.Namespace) -> int:
    """The ``inspect`` subcommand: returns 0 after writing one report per sentence."""
    from hf_vaswani.checked_source import CheckedSource
    from hf_vaswani.inference import check_generation_settings, check_known_characters
    from hf_vaswani.outputs import OutputPlan

    from ..dependencies import require
    from ..extract import extract

    labels = [f"sentence {i}" for i in range(1, len(args.text) + 1)]
    _check_inspect_arguments(args)
    require(*_INSPECT_NEEDS, needed_by="hf-vaswani inspect")
    plan = OutputPlan(inputs=local_model(args))
    out = plan.folder(args.out, "report folder", overwrite=args.overwrite)
    plan.check()  # before the model is loaded
    model, tokenizer = load_model(args)
    command_direction(args, model, tokenizer)
    generate_kwargs = _decoding_settings(args, model)
    check_generation_settings(model, **generate_kwargs)
    _check_alignment_choice(model, args.alignment_layer, args.alignment_heads)
    check_known_characters(tokenizer, list(args.text), labels)  # the rule of translate and the demo
    sources = [CheckedSource(text, args.direction) for text in args.text]  # (extract and the trace check no more)
    records = extract(
        model,
        tokenizer,
        sources,
        None if args.target is None else [args.target],
        direction=args.direction,
        generate_kwargs=generate_kwargs,
        truncation=args.truncate,
        model_name=model_name(args, model),
    )
    traces = [_trace(args, model, tokenizer, text, generate_kwargs) for text in sources] if args.steps else None
    summaries = []
    with plan.writing() as staged:  # every report is published together, or none
        folder = staged(out)
        for i, record in enumerate(records):
            sub = Path() if len(records) == 1 else Path(f"{i:02d}")
            written = _write_inspect_report(args, record, folder / sub)
            if traces is not None:
                written.update(_write_steps(traces[i], folder / sub, args.steps_language))
            if args.lens:
                written.update(_write_lens(model, tokenizer, record, folder / sub, args))
            pharaoh = written["pharaoh"].read_text(encoding="utf-8").strip() or "(none)"
            summaries.append((record, pharaoh, Path(args.out) / sub / "index.html", len(written)))
    for record, pharaoh, index, files in summaries:
        print(for_terminal(f"{record.source_text} -> {record.target_text}"))  # the input's escapes shown
        print(f"  alignment: {pharaoh}")
        print(f"  report: {index} ({files} files)")
    return 0


def _decoding_settings(args: argparse.Namespace, model: Any) -> dict[str, Any]:
    """``generate()`` settings: the model's generation_config defaults as the demo takes them
    (`vaswani_inspect.steps.generation_defaults`), then ``--num-beams`` and ``--max-new-tokens``."""
    from ..steps import generation_defaults

    settings = generation_defaults(model)
    if args.num_beams is not None:
        settings["num_beams"] = args.num_beams
    if args.max_new_tokens is not None:
        settings["max_new_tokens"] = args.max_new_tokens
    return settings


def _trace(args: argparse.Namespace, model: Any, tokenizer: Any, text: str, settings: dict[str, Any]) -> Any:
    """The decoding trace of one sentence, with the settings the report's translation used."""
    from ..steps import trace_decoding

    return trace_decoding(model, tokenizer, text, args.direction, **settings)


def _write_steps(trace: Any, folder: Path, language: str) -> dict[str, Path]:
    from ..step_plots import write_steps

    return write_steps(trace, folder, language=language)


def _write_lens(model: Any, tokenizer: Any, record: Any, folder: Path, args: argparse.Namespace) -> dict[str, Path]:
    """The logit lens of the record's translation (its own ids: the report's translation, teacher-forced) and the
    decoder lens of its source (greedy, at most ``--max-new-tokens``): lens.json (both), lens.csv (one row per layer
    and position), lens.png and lens.svg (labels in ``--steps-language``)."""
    import csv
    import json

    from ..lens import decoder_lens_from_ids, logit_lens_from_ids
    from ..lens_plots import plot_logit_lens

    lens = logit_lens_from_ids(
        model,
        tokenizer,
        record.source_ids,
        record.target_ids,
        target_text=record.target_text,
        direction=record.direction,
    )
    decoded = decoder_lens_from_ids(
        model, tokenizer, record.source_ids, direction=record.direction, max_new_tokens=args.max_new_tokens
    )
    folder.mkdir(parents=True, exist_ok=True)
    paths = {name: folder / f"lens.{name}" for name in ("json", "csv", "png", "svg")}
    content = {"logit_lens": lens.to_dict(), "decoder_lens": decoded.to_dict()}
    paths["json"].write_text(json.dumps(content, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    with paths["csv"].open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        k = lens.top_ids.shape[-1]
        tops = [f"top{n}" for n in range(1, k + 1)]
        writer.writerow(["layer", "position", "reads", "next", *tops, *(f"{top}_p" for top in tops), "next_p", "kl"])
        for layer, name in enumerate(lens.layers):
            for position in range(lens.positions):
                writer.writerow(
                    [
                        name,
                        position,
                        lens.target_tokens[position],
                        lens.target_tokens[position + 1],
                        *lens.top_tokens[layer][position],
                        *(f"{p:.6f}" for p in lens.top_probs[layer, position]),
                        f"{lens.target_probs[layer, position]:.6f}",
                        f"{lens.kl_to_final[layer, position]:.6f}",
                    ]
                )
    figure = plot_logit_lens(lens, language=args.steps_language)
    for kind in ("png", "svg"):
        figure.savefig(paths[kind], dpi=120)
    return {f"lens_{kind}": path for kind, path in paths.items()}


def _check_inspect_arguments(args: argparse.Namespace) -> None:
    """The checks ``translate`` makes too: the direction's form, the device, the texts (none empty, no language
    token written in them). Whether the model translates the direction is checked once it is loaded."""

    check_direction(args)
    if args.target is not None and len(args.text) != 1:
        raise ValueError("--target goes with exactly one source sentence.")
    if args.target is not None and args.steps:
        raise ValueError("--steps traces the model's own decoding: it does not go with --target.")
    check_source_texts(list(args.text))
    if args.target is not None:
        check_not_empty(args.target, "--target")
    check_device(args.device)


def _check_alignment_choice(model: Any, layer: int | str | None, heads: str | list[int] | None) -> None:
    """Refuse an ``--alignment-layer`` or ``--alignment-heads`` the model's cross-attention does not have."""
    from ..architectures import head_counts

    layers, count = head_counts(model)["cross"]
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
    from ..report import write_report

    return write_report(
        record,
        folder,
        image_format=args.format,
        alignment_layer=args.alignment_layer,
        alignment_heads=args.alignment_heads,
        shift=args.shift,
        skip_punctuation=args.skip_punctuation,
    )


def _layer_choice(text: str) -> int | str:
    """An argparse ``type`` for ``--alignment-layer``: ``mean`` or a layer index (negative counts from the last);
    the model's number of decoder layers bounds it, checked once the model is loaded."""
    if text.strip() == "mean":
        return "mean"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a layer number such as 0 or 'mean', got {text!r}") from None
