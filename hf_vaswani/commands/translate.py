"""``hf-vaswani translate`` and ``hf-vaswani evaluate``: `hf_vaswani.inference` from the shell."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..backends import BACKEND_CHOICES
from ..empty_input import NO_SENTENCE, check_not_empty
from ..languages import DIRECTIONS
from ..paths import DEFAULT_MODEL
from ..terminal import for_terminal
from . import beam_size, finite_float, positive_int, utf8_text

_REPORTED = 5


def _listed(labels: Sequence[str]) -> str:
    more = f" and {len(labels) - _REPORTED} more" if len(labels) > _REPORTED else ""
    return ", ".join(labels[:_REPORTED]) + more


def _decode_stdin_lines(raw: bytes) -> list[str]:
    """The lines of `raw` (UTF-8; a BOM and ``\\r\\n`` endings are accepted), or ValueError naming every line
    that is not UTF-8 (nothing is translated then)."""
    raw = raw.removeprefix(b"\xef\xbb\xbf")
    lines, bad = [], []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        try:
            lines.append(line.decode("utf-8").removesuffix("\r"))
        except UnicodeDecodeError:
            bad.append(f"line {number}")
    if bad:
        raise ValueError(f"stdin is not valid UTF-8 at {_listed(bad)}: nothing was translated.")
    if lines and lines[-1] == "" and raw.endswith(b"\n"):
        lines.pop()  # the newline that ends the last line does not start another one
    return lines


def _read_sentences(arguments: Sequence[str]) -> list[str]:
    if arguments:
        return list(arguments)
    if sys.stdin is None or sys.stdin.isatty():
        raise ValueError("No sentence to translate: pass sentences as arguments or one per line on stdin.")
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is not None:
        lines = _decode_stdin_lines(buffer.read())
    else:  # a text stream (tests)
        lines = [line.rstrip("\r\n") for line in sys.stdin]
    if not any(line.strip() for line in lines):
        raise ValueError(NO_SENTENCE)
    return lines


def _run_translate(args: argparse.Namespace) -> int:
    from ..inference import resolve_device, translate
    from ..languages import direction_to_languages

    direction_to_languages(args.direction)
    resolve_device(args.device)
    sentences = _read_sentences(args.sentences)
    if args.sentences:
        for number, sentence in enumerate(sentences, start=1):
            check_not_empty(sentence, f"sentence {number}")
    model, tokenizer = _load(args)
    # Blank stdin lines give blank output lines, so line i of the output is the translation of line i.
    wanted = [i for i, s in enumerate(sentences) if s.strip()]
    unit = "sentence" if args.sentences else "line"
    translations = translate(
        model,
        tokenizer,
        [sentences[i] for i in wanted],
        args.direction,
        num_beams=args.num_beams,
        batch_size=args.batch_size,
        max_new_tokens=args.max_new_tokens,
        length_penalty=args.length_penalty,
        labels=[f"{unit} {i + 1}" for i in wanted],
        keep_spans=args.keep_spans,
    )
    output = [""] * len(sentences)
    for i, text in zip(wanted, translations, strict=True):
        output[i] = text
    sys.stdout.write("".join(line + "\n" for line in output))
    sys.stdout.flush()
    return 0


def _load(args: argparse.Namespace) -> tuple[Any, Any]:
    """The translator of ``--backend``: CTranslate2 (exported once, kept in the user cache) or PyTorch; "auto"
    falls back to PyTorch, saying so, when the cache cannot be written."""
    from ..backends import load_ctranslate2, load_ctranslate2_or_none, resolve_backend
    from ..inference import load_translator

    if resolve_backend(args.backend, args.device) == "ctranslate2":
        _check_local_folder(args.model)  # (load_translator does it for PyTorch)
        load = load_ctranslate2 if args.backend == "ctranslate2" else load_ctranslate2_or_none
        translator = load(args.model, quantization=args.quantization, device=args.device)
        if translator is not None:
            return translator, translator.tokenizer
    return load_translator(args.model, device=args.device)


def _check_local_folder(model: str | None) -> None:
    """`hf_vaswani.model_folder.check_model_folder` on the local folder `model` names (the shipped checkpoint for
    None), before CTranslate2 exports or translates it; a Hub id is checked once loaded."""
    from ..model_folder import check_model_folder
    from ..paths import default_model_path, looks_like_local_path

    name = str(model) if model is not None else default_model_path()
    folder = Path(name).expanduser()
    if (model is None or looks_like_local_path(name)) and (folder / "config.json").is_file():
        check_model_folder(folder)


def _hypotheses_paths(output: str, directions: Sequence[str]) -> dict[str, Path]:
    """Where `--output` puts the translations of each direction: the path itself for one direction; with
    several, ``{direction}`` in the path is replaced, or the direction goes before the suffix
    (``hyp.txt`` -> ``hyp.es-en.txt``)."""
    path = Path(output)
    if "{direction}" in output:
        return {d: Path(output.replace("{direction}", d)) for d in directions}
    if len(directions) == 1 or not output:  # (an empty path names the current folder, which the plan refuses)
        return {direction: path for direction in directions}
    return {d: path.with_name(f"{path.stem}.{d}{path.suffix}") for d in directions}


def _run_evaluate(args: argparse.Namespace) -> int:
    from ..data import read_pairs
    from ..inference import evaluate_pairs, resolve_device
    from ..languages import direction_to_languages
    from ..outputs import OutputPlan

    directions = list(dict.fromkeys(args.direction or DIRECTIONS))
    for direction in directions:
        direction_to_languages(direction)
    resolve_device(args.device)
    if Path(args.data).is_dir():
        raise IsADirectoryError(f"{args.data!r} is a folder: give the file of sentence pairs inside it.")
    if not Path(args.data).is_file():
        raise FileNotFoundError(f"No such file of sentence pairs: {args.data!r}")
    # Every output is checked before any work, and written only once everything has been translated and scored.
    plan = OutputPlan(inputs=[args.data, args.model])
    shown = _hypotheses_paths(args.output, directions) if args.output is not None else {}
    outputs = {
        direction: plan.file(path, f"hypotheses file ({direction})" if len(directions) > 1 else "hypotheses file")
        for direction, path in shown.items()
    }
    json_path = plan.file(args.json, "JSON file") if args.json is not None else None
    plan.check()
    pairs = read_pairs(args.data, strict=args.strict)  # before loading the model: bad input fails fast
    if args.limit:
        pairs = pairs[: args.limit]
    model, tokenizer = _load(args)
    result = evaluate_pairs(
        model,
        tokenizer,
        pairs,
        directions,
        num_beams=args.num_beams,
        batch_size=args.batch_size,
        max_new_tokens=args.max_new_tokens,
        length_penalty=args.length_penalty,
        labels=[f"pair {i}" for i in range(1, len(pairs) + 1)],
    )
    text = json.dumps(result.scores, indent=2, ensure_ascii=False)
    with plan.writing() as staged:
        for direction, path in outputs.items():
            staged(path).write_text("".join(line + "\n" for line in result.hypotheses[direction]), encoding="utf-8")
        if json_path is not None:
            staged(json_path).write_text(text + "\n", encoding="utf-8")
    for direction, path in shown.items():
        print(f"hf-vaswani evaluate: {direction} translations written to {for_terminal(path)}", file=sys.stderr)
    print(text)
    return 0


def _add_generation_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        default=None,
        help=f"model folder or Hub id (default: {DEFAULT_MODEL} of the repository)",
    )
    parser.add_argument(
        "--num-beams", type=beam_size, default=None, help="beam size, at most 64 (default: the model's, 4)"
    )
    parser.add_argument(
        "--length-penalty",
        type=finite_float,
        default=None,
        help="beam search length penalty alpha (default: the model's, 0.6 as in sec. 6.1)",
    )
    parser.add_argument("--batch-size", type=positive_int, default=32, help="sentences per generate() call")
    parser.add_argument(
        "--max-new-tokens",
        type=positive_int,
        default=None,
        help="longest translation, in tokens: at most the model's max_position_embeddings - 1",
    )
    parser.add_argument(
        "--device", default=None, help="cpu, cuda, cuda:1 ... , checked before any work (default: cuda if available)"
    )
    parser.add_argument(
        "--backend",
        choices=BACKEND_CHOICES,
        default="auto",
        help="ctranslate2: the model exported once to CTranslate2 (cached next to it), several times faster on "
        "CPUs; torch: generate() in PyTorch; auto (default): ctranslate2 on the CPU when the [fast] extra is "
        "installed, else torch",
    )
    parser.add_argument(
        "--quantization",
        default=None,
        help="CTranslate2 weights: int8 (the CPU default), float32 (gives PyTorch's tokens), int8_float32, ...",
    )


def add_parser(subparsers: Any) -> None:
    """Add the ``translate`` and ``evaluate`` subcommands."""
    parser = subparsers.add_parser(
        "translate",
        help="translate sentences (arguments, or one per line on stdin)",
        description="Translate sentences with a trained model; prints one translation per line. From stdin, "
        "line i of the output is the translation of line i of the input (a blank line gives a blank line); "
        "stdin must be UTF-8. A sentence longer than the model accepts is cut, with a warning naming it.",
        epilog='example: echo "Tengo hambre." | hf-vaswani translate --direction es-en',
    )
    parser.add_argument(
        "sentences", nargs="*", type=utf8_text, help="sentences to translate, UTF-8 (default: read stdin)"
    )
    parser.add_argument("--direction", default="es-en", help="es-en (default) or en-es")
    parser.add_argument(
        "--keep-spans",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep numbers of 3+ digits, URLs, e-mail addresses and rare names as they are, through placeholders "
        "the model copies (default: on; docs/numbers_and_names.md)",
    )
    _add_generation_options(parser)
    parser.set_defaults(func=_run_translate)

    evaluate = subparsers.add_parser(
        "evaluate",
        help="BLEU and chrF of a model on a TSV of sentence pairs",
        description="Score a model on an English<TAB>Spanish file (for example RUN/splits/test.tsv; .csv and "
        ".jsonl too) with sacrebleu's BLEU and chrF (default settings, detokenized), per direction; prints "
        "JSON. Malformed lines are skipped with a warning giving their line numbers (--strict: rejected).",
        epilog="example: hf-vaswani evaluate runs/tatoeba-es-en/splits/test.tsv --model runs/tatoeba-es-en/averaged "
        "--num-beams 4 --length-penalty 0.6 --output hyp.txt --json scores.json",
    )
    evaluate.add_argument("data", help="English<TAB>Spanish file (TSV/CSV/JSONL)")
    evaluate.add_argument("--direction", action="append", help="es-en and/or en-es (repeatable; default: both)")
    evaluate.add_argument("--limit", type=positive_int, default=None, help="score only the first N pairs")
    evaluate.add_argument(
        "--output",
        metavar="FILE",
        help="write the translations, one line per scored pair; with both directions FILE.es-en.txt-style "
        "names (or put {direction} in FILE). Checked before any work: not the data file, not the --json file",
    )
    evaluate.add_argument("--json", metavar="FILE", help="also write the scores (the JSON printed) to FILE")
    evaluate.add_argument("--strict", action="store_true", help="reject a malformed line instead of skipping it")
    _add_generation_options(evaluate)
    evaluate.set_defaults(func=_run_evaluate)
