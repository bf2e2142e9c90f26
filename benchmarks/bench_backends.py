"""The translation backends side by side: PyTorch `generate()` (float32, bfloat16) and CTranslate2 (float32, int8).

    python benchmarks/bench_backends.py --threads 1          # 320 sentences, beam 4, length penalty 0.6, batches of 32
    python benchmarks/bench_backends.py --quick              # 32 sentences, one round, for development

All four translate the same sentences with the shipped checkpoint (`--model`) in the same process, one call each
in turn (interleaved rounds), so that a background load hits all of them alike; a speed-up is the median over
rounds of the per-round ratio to `torch_fp32`, a rate the median over rounds. The sentences are drawn (seeded) from
the Spanish side of the corpus file (`--data`, default ``../shared/data/spa-eng/spa-eng.tsv``, read at run time)
and translated into English (`--direction`); the model may have seen them in training, so the BLEU column compares
the backends with each other, not the model with others. `same as torch_fp32` counts identical outputs.

- ``torch_fp32`` / ``torch_bf16``: `hf_vaswani.inference.translate` on the model loaded in that dtype.
- ``ct2_fp32`` / ``ct2_int8``: `hf_vaswani.backends.CTranslate2Translator` on the model exported (into a temporary
  folder) with that weight type; float32 reproduces `torch_fp32`'s tokens.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_common import interleaved_times, loadavg, machine_info, paired_ratio, save_and_print  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "spa-eng" / "spa-eng.tsv"
CONTENDERS = ("torch_fp32", "torch_bf16", "ct2_fp32", "ct2_int8")


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="model folder (default: the shipped checkpoint)")
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="English<TAB>Spanish file to draw sentences from")
    parser.add_argument("--direction", default="es-en", choices=("es-en", "en-es"))
    parser.add_argument("--sentences", type=int, default=320, help="sentences per round (default 320)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-beams", type=int, default=4)
    parser.add_argument("--length-penalty", type=float, default=0.6)
    parser.add_argument("--threads", type=int, default=1, help="threads of each backend (default 1)")
    parser.add_argument("--contenders", nargs="+", choices=CONTENDERS, default=list(CONTENDERS))
    parser.add_argument("--seed", type=int, default=0, help="which sentences are drawn")
    parser.add_argument("--quick", action="store_true", help="32 sentences, one round")
    parser.add_argument("--json", default="backends", help="results name: benchmarks/results/<name>.json")
    args = parser.parse_args(argv)
    if args.quick:
        args.sentences, args.rounds = min(args.sentences, 32), 1
    return args


def draw_pairs(path: str, count: int, seed: int) -> list[tuple[str, str]]:
    """`count` (English, Spanish) pairs drawn without replacement from `path`, the same for the same seed."""
    from hf_vaswani.data import read_pairs

    pairs = [(pair[0], pair[1]) for pair in read_pairs(path)]
    if len(pairs) < count:
        raise SystemExit(f"{path} has {len(pairs)} pairs, fewer than the {count} asked for.")
    return random.Random(seed).sample(pairs, count)


def build_contenders(
    names: list[str], model_path: str, args: argparse.Namespace, cache: Path
) -> dict[str, Callable[[list[str]], list[str]]]:
    """name -> a function translating a list of sentences with that backend and the benchmark's settings."""
    from hf_vaswani.backends import load_ctranslate2
    from hf_vaswani.inference import load_translator, translate

    settings = dict(num_beams=args.num_beams, length_penalty=args.length_penalty, batch_size=args.batch_size)
    contenders: dict[str, Callable[[list[str]], list[str]]] = {}
    for name in names:
        backend, precision = name.split("_")
        if backend == "torch":
            dtype = {"fp32": "float32", "bf16": "bfloat16"}[precision]
            model, tokenizer = load_translator(model_path, device="cpu", dtype=dtype)

            def run(sentences, model=model, tokenizer=tokenizer):
                return translate(model, tokenizer, sentences, args.direction, **settings)

        else:
            quantization = {"fp32": "float32", "int8": "int8"}[precision]
            translator = load_ctranslate2(model_path, quantization=quantization, threads=args.threads, cache_dir=cache)

            def run(sentences, translator=translator):
                return translator.translate(sentences, args.direction, **settings)

        contenders[name] = run
    return contenders


def bleu(hypotheses: list[str], references: list[str]) -> float | None:
    try:
        import sacrebleu
    except ImportError:
        return None
    return round(sacrebleu.corpus_bleu(hypotheses, [references]).score, 2)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from hf_vaswani.paths import default_model_path

    torch.set_num_threads(args.threads)
    model_path = args.model or default_model_path()
    pairs = draw_pairs(args.data, args.sentences, args.seed)
    source, target = (1, 0) if args.direction == "es-en" else (0, 1)
    sentences = [pair[source] for pair in pairs]
    references = [pair[target] for pair in pairs]
    outputs: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as cache:
        contenders = build_contenders(args.contenders, model_path, args, Path(cache))

        def timed(name: str) -> Callable[[], None]:
            def call() -> None:
                outputs[name] = contenders[name](sentences)

            return call

        before = loadavg()
        times = interleaved_times({name: timed(name) for name in contenders}, repeats=args.rounds, warmup=1)
    reference = args.contenders[0]
    rows = {}
    for name in args.contenders:
        rows[name] = {
            "sentences_per_s": round(len(sentences) / statistics.median(times.wall[name]), 2),
            "speedup": round(paired_ratio(times.wall[reference], times.wall[name]), 2),
            "bleu": bleu(outputs[name], references),
            "same_as_reference": sum(a == b for a, b in zip(outputs[name], outputs[reference], strict=True)),
            "wall_s": [round(t, 3) for t in times.wall[name]],
        }
    return {
        "benchmark": "backends",
        "machine": machine_info(),
        "settings": {
            "model": str(model_path),
            "data": str(args.data),
            "direction": args.direction,
            "sentences": len(sentences),
            "rounds": args.rounds,
            "batch_size": args.batch_size,
            "num_beams": args.num_beams,
            "length_penalty": args.length_penalty,
            "threads": args.threads,
            "seed": args.seed,
            "reference": reference,
        },
        "rows": rows,
        "loadavg_before": before,
        "loadavg_after": loadavg(),
    }


def table(payload: dict[str, Any]) -> str:
    settings = payload["settings"]
    reference = settings["reference"]
    lines = [
        f"{settings['sentences']} sentences {settings['direction']}, beam {settings['num_beams']}, length penalty "
        f"{settings['length_penalty']}, batches of {settings['batch_size']}, {settings['threads']} thread(s), "
        f"{settings['rounds']} interleaved round(s)",
        "",
        f"| backend | sentences/s | speed-up vs {reference} | BLEU | same as {reference} |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, row in payload["rows"].items():
        lines.append(
            f"| {name} | {row['sentences_per_s']:.1f} | {row['speedup']:.2f}x | {row['bleu']} | "
            f"{row['same_as_reference']}/{settings['sentences']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    payload = run(args)
    save_and_print(args.json, payload, table(payload))
    return 0


if __name__ == "__main__":
    sys.exit(main())
