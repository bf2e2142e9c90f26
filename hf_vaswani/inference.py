"""Translating with a trained model, and scoring it on a file of sentence pairs.

`load_translator` loads a model folder (or Hub id) and its tokenizer; `translate` translates a list of
sentences in one direction (``es-en`` or ``en-es``); `evaluate_file` scores a model with BLEU and chrF on an
``English<TAB>Spanish`` file. The ``translate`` and ``evaluate`` subcommands of ``hf-vaswani`` wrap them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

__all__ = [
    "DEFAULT_MODEL",
    "add_parser",
    "default_model_path",
    "evaluate_file",
    "load_translator",
    "score_translations",
    "translate",
]

#: The checkpoint shipped with the project, relative to the repository (or the installed package).
DEFAULT_MODEL = "pretrained/vaswani-tatoeba-es-en"


def default_model_path() -> str:
    """`DEFAULT_MODEL` looked up in the current directory, the repository root and the package folder; the
    relative name itself when none has it (loading then fails with a message that says where it looked)."""
    package_dir = Path(__file__).resolve().parent
    for base in (Path.cwd(), package_dir.parent, package_dir):
        candidate = base / DEFAULT_MODEL
        if (candidate / "config.json").is_file():
            return str(candidate)
    return DEFAULT_MODEL


def _looks_like_local_path(name: str) -> bool:
    return os.path.isabs(name) or name.startswith((".", "~")) or name.count("/") != 1 or os.path.exists(name)


def load_translator(
    model: str | os.PathLike[str] | None = None, device: str | None = None, dtype: str | None = None
) -> tuple[Any, Any]:
    """Load (model, tokenizer) from a model folder or a Hub id; `model=None` loads the shipped checkpoint.

    Raises:
        FileNotFoundError: if `model` is a local path that does not hold a model.
    """
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    import hf_vaswani  # noqa: F401  (registers the "vaswani" model type with the Auto classes)

    name = str(model) if model is not None else default_model_path()
    if _looks_like_local_path(name) and not (Path(name).expanduser() / "config.json").is_file():
        hint = " (the default model is not shipped in this checkout: pass --model PATH)" if model is None else ""
        raise FileNotFoundError(f"No model folder with a config.json at {name!r}{hint}.")
    if _looks_like_local_path(name):
        name = str(Path(name).expanduser())
    tokenizer = AutoTokenizer.from_pretrained(name)
    kwargs: dict[str, Any] = {}
    if dtype:
        kwargs["dtype"] = getattr(torch, dtype)
    loaded = AutoModelForSeq2SeqLM.from_pretrained(name, **kwargs)
    loaded.to(device or ("cuda" if torch.cuda.is_available() else "cpu")).eval()
    return loaded, tokenizer


def translate(
    model: Any,
    tokenizer: Any,
    sentences: Sequence[str],
    direction: str = "es-en",
    *,
    num_beams: int | None = None,
    batch_size: int = 32,
    max_new_tokens: int | None = None,
    length_penalty: float | None = None,
) -> list[str]:
    """Translate `sentences` in `direction` (``"es-en"`` or ``"en-es"``); one translation per sentence.

    Sentences are batched by length (the order of the result is the order of `sentences`); `num_beams`,
    `max_new_tokens` and `length_penalty` default to the model's generation config.

    Raises:
        ValueError: on an unknown direction, no sentences, an empty sentence, or a batch size below 1.
    """
    from .tokenization import direction_to_languages, source_with_language

    _, target_lang = direction_to_languages(direction)
    sentences = list(sentences)
    if not sentences:
        raise ValueError("No sentence to translate: the input is empty.")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
    sources = []
    for number, sentence in enumerate(sentences, start=1):
        try:
            sources.append(source_with_language(sentence, target_lang))
        except ValueError as error:
            raise ValueError(f"Sentence {number}: {error}") from None
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]), reverse=True)
    results: list[str] = [""] * len(sources)
    generate_kwargs: dict[str, Any] = {}
    if num_beams is not None:
        generate_kwargs["num_beams"] = num_beams
    if max_new_tokens is not None:
        # As max_length (the decoder start token counts), so it does not clash with the saved max_length.
        generate_kwargs["max_length"] = max_new_tokens + 1
    if length_penalty is not None:
        generate_kwargs["length_penalty"] = length_penalty
    device = next(model.parameters()).device
    for start in range(0, len(order), batch_size):
        indices = order[start : start + batch_size]
        batch = tokenizer([sources[i] for i in indices], return_tensors="pt", padding=True, truncation=True).to(device)
        with torch.inference_mode():
            output = model.generate(
                input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], **generate_kwargs
            )
        for i, text in zip(indices, tokenizer.batch_decode(output, skip_special_tokens=True), strict=True):
            results[i] = text.strip()
    return results


def score_translations(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Corpus BLEU and chrF (the metrics module when present, sacrebleu otherwise)."""
    try:
        from .metrics import compute_translation_metrics  # type: ignore[attr-defined]

        scores = compute_translation_metrics(list(hypotheses), list(references))
        return {k: float(v) for k, v in dict(scores).items() if isinstance(v, (int, float))}
    except ImportError:
        import sacrebleu

        return {
            "bleu": sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score,
            "chrf": sacrebleu.corpus_chrf(list(hypotheses), [list(references)]).score,
        }


def evaluate_file(
    model: Any,
    tokenizer: Any,
    path: str | os.PathLike[str],
    directions: Sequence[str] = ("es-en", "en-es"),
    *,
    limit: int | None = None,
    num_beams: int | None = None,
    batch_size: int = 32,
    max_new_tokens: int | None = None,
) -> dict[str, dict[str, float]]:
    """BLEU/chrF of the model on the pairs of `path` (``English<TAB>Spanish``), per direction.

    Raises:
        FileNotFoundError: if `path` does not exist. ValueError: on an unknown direction.
    """
    from .data import LANGUAGES, read_pairs
    from .tokenization import direction_to_languages

    for direction in directions:
        direction_to_languages(direction)
    pairs = read_pairs(path)
    if limit:
        pairs = pairs[:limit]
    results = {}
    for direction in directions:
        source_lang, target_lang = direction_to_languages(direction)
        sources = [pair[LANGUAGES.index(source_lang)] for pair in pairs]
        references = [pair[LANGUAGES.index(target_lang)] for pair in pairs]
        hypotheses = translate(
            model,
            tokenizer,
            sources,
            direction,
            num_beams=num_beams,
            batch_size=batch_size,
            max_new_tokens=max_new_tokens,
        )
        results[direction] = {**score_translations(hypotheses, references), "sentences": len(pairs)}
    return results


# --------------------------------------------------------------------------------------------- CLI


def _read_sentences(arguments: Sequence[str]) -> list[str]:
    if arguments:
        return list(arguments)
    if sys.stdin is None or sys.stdin.isatty():
        raise ValueError("No sentence to translate: pass sentences as arguments or one per line on stdin.")
    lines = [line.rstrip("\r\n") for line in sys.stdin]
    if not any(line.strip() for line in lines):
        raise ValueError("No sentence to translate: the input is empty.")
    return lines


def _run_translate(args: argparse.Namespace) -> int:
    from .tokenization import direction_to_languages

    direction_to_languages(args.direction)
    sentences = _read_sentences(args.sentences)
    model, tokenizer = load_translator(args.model, device=args.device)
    # Blank stdin lines give blank output lines, so line i of the output is the translation of line i.
    wanted = [i for i, s in enumerate(sentences) if s.strip()]
    if len(wanted) != len(sentences) and args.sentences:
        empty = next(i for i, s in enumerate(sentences) if not s.strip()) + 1
        raise ValueError(f"Sentence {empty} is empty: there is nothing to translate.")
    translations = translate(
        model,
        tokenizer,
        [sentences[i] for i in wanted],
        args.direction,
        num_beams=args.num_beams,
        batch_size=args.batch_size,
        max_new_tokens=args.max_new_tokens,
    )
    output = [""] * len(sentences)
    for i, text in zip(wanted, translations, strict=True):
        output[i] = text
    sys.stdout.write("".join(line + "\n" for line in output))
    sys.stdout.flush()
    return 0


def _run_evaluate(args: argparse.Namespace) -> int:
    directions = args.direction or ["es-en", "en-es"]
    from .tokenization import direction_to_languages

    for direction in directions:
        direction_to_languages(direction)
    if not Path(args.data).is_file():
        raise FileNotFoundError(f"No such file of sentence pairs: {args.data!r}")
    model, tokenizer = load_translator(args.model, device=args.device)
    results = evaluate_file(
        model,
        tokenizer,
        args.data,
        directions,
        limit=args.limit,
        num_beams=args.num_beams,
        batch_size=args.batch_size,
        max_new_tokens=args.max_new_tokens,
    )
    print(json.dumps(results, indent=2))
    return 0


def _add_generation_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        default=None,
        help=f"model folder or Hub id (default: {DEFAULT_MODEL} of the repository)",
    )
    parser.add_argument("--num-beams", type=int, default=None, help="beam size (default: the model's, 4)")
    parser.add_argument("--batch-size", type=int, default=32, help="sentences per generate() call")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="longest translation, in tokens")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: cuda if available)")


def add_parser(subparsers: Any) -> None:
    """Add the ``translate`` and ``evaluate`` subcommands."""
    parser = subparsers.add_parser(
        "translate",
        help="translate sentences (arguments, or one per line on stdin)",
        description="Translate sentences with a trained model; prints one translation per line.",
        epilog='example: echo "Tengo hambre." | hf-vaswani translate --direction es-en',
    )
    parser.add_argument("sentences", nargs="*", help="sentences to translate (default: read stdin)")
    parser.add_argument("--direction", default="es-en", help="es-en (default) or en-es")
    _add_generation_options(parser)
    parser.set_defaults(func=_run_translate)

    evaluate = subparsers.add_parser(
        "evaluate",
        help="BLEU and chrF of a model on a TSV of sentence pairs",
        description="Score a model on an English<TAB>Spanish file (for example RUN/splits/test.tsv); "
        "prints JSON with BLEU and chrF per direction.",
    )
    evaluate.add_argument("data", help="English<TAB>Spanish file (TSV/CSV/JSONL)")
    evaluate.add_argument("--direction", action="append", help="es-en and/or en-es (repeatable; default: both)")
    evaluate.add_argument("--limit", type=int, default=None, help="score only the first N pairs")
    _add_generation_options(evaluate)
    evaluate.set_defaults(func=_run_evaluate)
