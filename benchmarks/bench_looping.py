"""Looping translations ("la repósopululululululumpsa") and BLEU, with and without a generation guard, side by side.

    python benchmarks/bench_looping.py --pairs RUN/splits/validation.tsv          # choose the guard here
    python benchmarks/bench_looping.py --pairs RUN/splits/test.tsv --json looping_test

Each setting translates the same pairs in both directions with the shipped checkpoint (`--model`), through
`hf_vaswani.inference.translate` (PyTorch `generate()`, the reference) or, with ``--backend ctranslate2``, CTranslate2
int8 (the commands' default backend, ~5x faster), and reports, per direction, the number of looping outputs
(`is_looping`), BLEU and chrF. Each setting changes generation options of the model's generation config: ``none``
(the config as it is), ``no_repeat_ngram_size=N``, ``repetition_penalty=P``. The split files are written by
training (``RUN/splits/``); the corpus is read at run time, never copied here.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_common import machine_info, save_and_print  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

#: A run of at least 4 copies of a unit of 1-12 characters holding a letter: "ululululu", "ma ma ma ma ".
_REPEATED_UNIT = re.compile(r"(.{1,12}?)\1{3,}")


def is_looping(text: str) -> bool:
    """Whether a translation repeats a piece of text 4 or more times in a row (a decoder caught in a loop).

    Repeated punctuation or digits ("...", "1000000") are not loops; a unit must hold a letter."""
    return any(any(character.isalpha() for character in match.group(1)) for match in _REPEATED_UNIT.finditer(text))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", required=True, help="an English<TAB>Spanish file (a split of the training run)")
    parser.add_argument("--model", default=str(ROOT / "pretrained" / "vaswani-tatoeba-es-en"))
    parser.add_argument("--limit", type=int, default=None, help="use the first N pairs")
    parser.add_argument(
        "--settings",
        nargs="+",
        default=["none", "no_repeat_ngram_size=3", "no_repeat_ngram_size=4", "repetition_penalty=1.2"],
        help="generation settings to compare (default: %(default)s)",
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--backend",
        choices=["torch", "ctranslate2"],
        default="torch",
        help="PyTorch generate() (the reference) or CTranslate2 int8 (the commands' default, ~5x faster)",
    )
    parser.add_argument(
        "--quantization", default="int8", help="CTranslate2's weights: int8 (default) or float32 (PyTorch's tokens)"
    )
    parser.add_argument("--json", default="looping", help="results name: benchmarks/results/<name>.json")
    return parser.parse_args(argv)


def parse_setting(text: str) -> dict[str, Any]:
    """``"none"`` -> {}; ``"no_repeat_ngram_size=3"`` -> {"no_repeat_ngram_size": 3}."""
    if text == "none":
        return {}
    name, _, value = text.partition("=")
    return {name: float(value) if "." in value else int(value)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from hf_vaswani.data import read_pairs
    from hf_vaswani.inference import load_translator, score_translations, translate

    args = parse_args(argv)
    pairs = read_pairs(args.pairs)[: args.limit]
    if args.backend == "torch":
        model, tokenizer = load_translator(args.model, device="cpu")
    else:
        from hf_vaswani.backends import load_ctranslate2

        model = load_ctranslate2(args.model, quantization=args.quantization)
        tokenizer = model.tokenizer
    original = model.generation_config.to_dict()
    sides = {
        "es-en": ([p[1] for p in pairs], [p[0] for p in pairs]),
        "en-es": ([p[0] for p in pairs], [p[1] for p in pairs]),
    }
    results: dict[str, Any] = {"machine": machine_info(), "pairs": str(args.pairs), "count": len(pairs)}
    results.update(backend=args.backend, quantization=args.quantization, settings={})
    for setting in args.settings:
        options = parse_setting(setting)
        model.generation_config.update(**original)
        model.generation_config.update(**options)
        row: dict[str, Any] = {}
        for direction, (sources, references) in sides.items():
            start = time.perf_counter()
            if args.backend == "torch":
                hypotheses = translate(model, tokenizer, sources, direction, batch_size=args.batch_size)
            else:
                hypotheses = model.translate(sources, direction, batch_size=args.batch_size)
            looping = [i for i, text in enumerate(hypotheses) if is_looping(text)]
            scores = score_translations(hypotheses, references)
            row[direction] = {
                "looping": len(looping),
                "looping_in_reference": sum(is_looping(references[i]) for i in looping),
                "bleu": round(scores["bleu"], 2),
                "chrf": round(scores["chrf"], 2),
                "seconds": round(time.perf_counter() - start, 1),
                "examples": [[sources[i], hypotheses[i]] for i in looping[:8]],
            }
            print(setting, direction, {k: v for k, v in row[direction].items() if k != "examples"}, flush=True)
        results["settings"][setting] = row
    save_and_print(args.json, results, table(results))
    return results


def table(results: dict[str, Any]) -> str:
    """One line per setting: looping outputs, BLEU and chrF per direction."""
    lines = [
        "setting | es-en looping | es-en BLEU | es-en chrF | en-es looping | en-es BLEU | en-es chrF",
        "---|---|---|---|---|---|---",
    ]
    for setting, row in results["settings"].items():
        cells = [f"{row[d]['looping']} | {row[d]['bleu']:.2f} | {row[d]['chrf']:.2f}" for d in ("es-en", "en-es")]
        lines.append(f"{setting} | " + " | ".join(cells))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
