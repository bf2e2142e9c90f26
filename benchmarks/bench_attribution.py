"""Our `vaswani_inspect.attribution.attribute` against inseq's own `attribute`, same method, same steps.

    python benchmarks/bench_attribution.py                        # 200 test pairs es-en, IG (50 steps) and saliency
    python benchmarks/bench_attribution.py --pairs 20 --methods saliency

Both explain the same tokens: the reference target of each pair, teacher-forced (inseq: `generated_texts=`), the
attributed function the log-probability of each target piece (inseq: `attributed_fn="probability",
logprob=True`), on the source and target-prefix embeddings (inseq: `attribute_target=True`), integrated gradients
with the same `n_steps` and Captum's Gauss-Legendre rule. The baselines differ: ours is all-zero embeddings
(Captum's default), inseq's each token's `<unk>` embedding (`</s>` and the decoder start kept), so the two
integrated gradients are not the same numbers (same cost). Each pair is explained by one
contender then the other (interleaved), and a contender's time per sentence includes extracting the record (ours)
or inseq's own tokenization. The pairs are drawn (seeded) from the project's test split: `prepare_splits` of
``../shared/data/spa-eng/spa-eng.tsv`` with the training configuration's sizes and seed (read at run time).

A third contender, ours with `precision="bfloat16"` (autocast), is timed on the same pairs in the same loop and
compared with ours in float32 (it is not inseq's method any more: a separate column). The course sentence ("El
banco cerró mis cuentas porque no pagué la hipoteca.", es-en, its greedy translation) is explained `--course-runs`
times by each contender after the pairs: the median is the time a demo user waits for that explanation.

Agreement: per target piece, the Spearman correlation between our token scores and inseq's over the source tokens
(inseq's attribution vectors reduced by the same L2 norm), and how often both rank the same source token first.
Saliency has no baseline: there the two must agree exactly (Spearman 1). Integrated gradients agree only as far as
the two baselines lead to the same ranking (given inseq's `<unk>` baseline, ours gave inseq's attributions to
3e-7 on the pairs tried). inseq explains a piece by a separate attribution of each generation step (its own batch
per target piece); ours batches every piece and step at once.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_common import loadavg, machine_info, save_and_print  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "spa-eng" / "spa-eng.tsv"
METHODS = ("integrated_gradients", "saliency")
COURSE_SENTENCE = "El banco cerró mis cuentas porque no pagué la hipoteca."


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="model folder (default: the shipped checkpoint)")
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="English<TAB>Spanish corpus the splits come from")
    parser.add_argument("--direction", default="es-en", choices=("es-en", "en-es"))
    parser.add_argument("--pairs", type=int, default=200, help="test pairs (default 200)")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--n-steps", type=int, default=50, help="integrated gradients' steps (default 50)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0, help="which test pairs are drawn")
    parser.add_argument("--course-runs", type=int, default=5, help="timed runs on the course sentence (default 5)")
    parser.add_argument("--json", default="attribution", help="results name: benchmarks/results/<name>.json")
    parser.add_argument("--tiny", action="store_true", help="a tiny random model and hand-written pairs (tests)")
    return parser.parse_args(argv)


def test_pairs(path: str, count: int, seed: int) -> list[tuple[str, str]]:
    """`count` (English, Spanish) pairs drawn from the test split the shipped checkpoint was evaluated on."""
    from hf_vaswani.data import prepare_splits, read_pairs

    test = prepare_splits(read_pairs(path), validation_size=2000, test_size=2000, seed=0)["test"]
    return [(pair[0], pair[1]) for pair in random.Random(seed).sample(list(test), min(count, len(test)))]


def load(args: argparse.Namespace) -> tuple[Any, Any, list[tuple[str, str]]]:
    if args.tiny:
        from vaswani_inspect.testing import sentence_pairs, tiny_model, tiny_tokenizer

        tokenizer = tiny_tokenizer()
        pairs = [(english, spanish) for spanish, english in sentence_pairs()][: args.pairs]
        return tiny_model(len(tokenizer)), tokenizer, pairs
    from vaswani_inspect.extract import load_model_and_tokenizer

    model, tokenizer = load_model_and_tokenizer(args.model)
    return model, tokenizer, test_pairs(args.data, args.pairs, args.seed)


def ours(
    model: Any,
    tokenizer: Any,
    source: str,
    target: str,
    method: str,
    args: argparse.Namespace,
    precision: str = "float32",
) -> np.ndarray:
    from vaswani_inspect.attribution import attribute

    options = {"n_steps": args.n_steps} if method == "integrated_gradients" else {}
    found = attribute(
        model, tokenizer, source, target, direction=args.direction, method=method, precision=precision, **options
    )
    return found.token_scores  # (target pieces, source tokens)


def contenders(model: Any, tokenizer: Any, inseq_model: Any, method: str, args: argparse.Namespace) -> dict[str, Any]:
    """name -> function(source, target) -> token scores (target pieces, source tokens)."""
    return {
        "ours": lambda source, target: ours(model, tokenizer, source, target, method, args),
        "inseq": lambda source, target: theirs(inseq_model, source, target, method, args),
        "ours_bfloat16": lambda source, target: ours(model, tokenizer, source, target, method, args, "bfloat16"),
    }


def course_target(model: Any, tokenizer: Any, args: argparse.Namespace) -> str:
    """The course sentence's greedy translation (what the demo would explain)."""
    from vaswani_inspect import extract

    return extract(model, tokenizer, COURSE_SENTENCE, direction=args.direction).target_text


def course_times(explain: dict[str, Any], target: str, runs: int) -> dict[str, float]:
    """Median ms per contender over `runs` explanations of the course sentence, contenders interleaved."""
    times: dict[str, list[float]] = {name: [] for name in explain}
    for _ in range(runs):
        for name, function in explain.items():
            start = time.perf_counter()
            function(COURSE_SENTENCE, target)
            times[name].append(time.perf_counter() - start)
    return {name: round(1000 * statistics.median(values), 1) for name, values in times.items()}


def theirs(inseq_model: Any, source: str, target: str, method: str, args: argparse.Namespace) -> np.ndarray:
    language = args.direction.split("-")[1]
    options: dict[str, Any] = {"n_steps": args.n_steps} if method == "integrated_gradients" else {}
    output = inseq_model.attribute(
        f">>{language}<< {source}",
        generated_texts=target,
        method=method,
        attribute_target=True,
        attributed_fn="probability",
        logprob=True,
        show_progress=False,
        **options,
    )
    source_attributions = output.sequence_attributions[0].source_attributions  # (S, pieces, d)
    return source_attributions.float().norm(dim=-1).T.numpy()


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    rank_a, rank_b = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    if np.std(rank_a) == 0 or np.std(rank_b) == 0:
        return float("nan")
    return float(np.corrcoef(rank_a, rank_b)[0, 1])


def run(args: argparse.Namespace) -> dict[str, Any]:
    import inseq

    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    model, tokenizer, pairs = load(args)
    source_side, target_side = (1, 0) if args.direction == "es-en" else (0, 1)
    before = loadavg()
    rows: dict[str, Any] = {}
    course = COURSE_SENTENCE if args.direction == "es-en" and not args.tiny else None
    target_of_course = course_target(model, tokenizer, args) if course else None
    for method in args.methods:
        inseq_model = inseq.load_model(model, method, tokenizer=tokenizer)
        explain = contenders(model, tokenizer, inseq_model, method, args)
        first = pairs[0]
        for function in explain.values():  # warm-up, every contender
            function(first[source_side], first[target_side])
        times: dict[str, list[float]] = {name: [] for name in explain}
        correlations, same_first, compared = [], 0, 0
        bfloat16_differences, bfloat16_same_first, bfloat16_pieces = [], 0, 0
        for pair in pairs:
            source, target = pair[source_side], pair[target_side]
            found = {}
            for name, function in explain.items():
                start = time.perf_counter()
                found[name] = function(source, target)
                times[name].append(time.perf_counter() - start)
            mine, other, fast = found["ours"], found["inseq"], found["ours_bfloat16"]
            bfloat16_differences.append(float(np.abs(fast - mine).max() / max(np.abs(mine).max(), 1e-12)))
            bfloat16_same_first += int((fast.argmax(-1) == mine.argmax(-1)).sum())
            bfloat16_pieces += len(mine)
            if mine.shape != other.shape:  # a tokenization difference: no comparison for this pair
                continue
            for row_ours, row_theirs in zip(mine, other):
                correlations.append(spearman(row_ours, row_theirs))
                same_first += int(np.argmax(row_ours) == np.argmax(row_theirs))
                compared += 1
        ms = {name: 1000 * statistics.mean(values) for name, values in times.items()}
        rows[method] = {
            "ours_ms_per_sentence": round(ms["ours"], 1),
            "inseq_ms_per_sentence": round(ms["inseq"], 1),
            "speedup": round(ms["inseq"] / ms["ours"], 2),
            "ours_bfloat16_ms_per_sentence": round(ms["ours_bfloat16"], 1),
            "bfloat16_speedup": round(ms["inseq"] / ms["ours_bfloat16"], 2),
            "mean_spearman": round(float(np.nanmean(correlations)), 3) if correlations else None,
            "top1_agreement": round(same_first / compared, 3) if compared else None,
            "pieces_compared": compared,
            "bfloat16_max_relative_difference": round(float(np.median(bfloat16_differences)), 4),
            "bfloat16_top1_agreement_with_float32": round(bfloat16_same_first / bfloat16_pieces, 3),
            "course_sentence_ms": course_times(explain, target_of_course, args.course_runs) if course else None,
        }
    return {
        "benchmark": "attribution",
        "machine": machine_info(),
        "settings": {
            "model": "tiny" if args.tiny else str(args.model or "shipped checkpoint"),
            "direction": args.direction,
            "pairs": len(pairs),
            "n_steps": args.n_steps,
            "threads": args.threads,
            "seed": args.seed,
            "course_sentence": course,
            "course_translation": target_of_course,
            "course_runs": args.course_runs,
        },
        "rows": rows,
        "loadavg_before": before,
        "loadavg_after": loadavg(),
    }


def table(payload: dict[str, Any]) -> str:
    settings = payload["settings"]
    lines = [
        f"{settings['pairs']} test pairs {settings['direction']}, teacher-forced on the reference, "
        f"integrated gradients with {settings['n_steps']} steps, {settings['threads']} thread(s)",
        "",
        "| method | ours ms/sentence | inseq ms/sentence | speed-up | ours bf16 ms/sentence | bf16 speed-up | "
        "mean Spearman | top-1 agreement | course sentence ms (ours / inseq / ours bf16) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in payload["rows"].items():
        course = row["course_sentence_ms"]
        course_cell = f"{course['ours']:.0f} / {course['inseq']:.0f} / {course['ours_bfloat16']:.0f}" if course else "-"
        lines.append(
            f"| {name} | {row['ours_ms_per_sentence']:.1f} | {row['inseq_ms_per_sentence']:.1f} | "
            f"{row['speedup']:.2f}x | {row['ours_bfloat16_ms_per_sentence']:.1f} | {row['bfloat16_speedup']:.2f}x | "
            f"{row['mean_spearman']} | {row['top1_agreement']} | {course_cell} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    payload = run(args)
    save_and_print(args.json, payload, table(payload))
    return 0


if __name__ == "__main__":
    sys.exit(main())
