"""Attribution patching against exhaustive activation patching (`vaswani_inspect.patch_activations`), and head
patching against head ablation, on one-word substitutions of test sentences, both directions.

    python benchmarks/bench_patching.py --threads 1                 # 50 pairs a direction, 20 of them ablated
    python benchmarks/bench_patching.py --pairs 5 --ablation-pairs 2 --json /tmp/patching   # a quick check

**Pairs.** Clean sources are drawn (seeded) from the project's test split (`prepare_splits` of
``../shared/data/spa-eng/spa-eng.tsv``, 2,000 validation and 2,000 test pairs, seed 0, as `hf_vaswani.training.run`
splits), Spanish for es-en and English for en-es. One word of the source (letters only) is replaced by another word
of the same language from the corpus vocabulary (the words seen at least `--min-count` times in the whole corpus)
with the same number of pieces, drawn with the same seed, its capital kept; a pair is kept only if the two sources
tokenize to the same number of pieces (and differ). The target is the model's translation of the clean source
(`extract`, the model's generation config), teacher-forced in every run; it is made before the timing.

**Agreement.** For each pair both methods patch every site (`SITES`); per site, over its cells: Pearson and
Spearman correlation of the two effect arrays and whether both put the same cell first (the largest effect: the
cell that restores most of the clean output). Means and medians over the pairs; a pair whose clean and corrupted
metrics are equal has no effects (NaN) and is left out.

**Cost.** Wall-clock milliseconds of each `patch_activations` call (every site, one call per method, the two
interleaved), the passes it reports (exhaustive: one per cell, batched 32 copies a call, plus the clean and
corrupted runs; attribution: two forward and one backward pass) and the model calls it made.

**Heads.** On the first `--ablation-pairs` pairs of each direction, each head is switched off alone
(`vaswani_inspect.ablate_heads`) on the clean source and the same metric read (summed log-probability of the
target): its drop is the head's ablation effect. Per pair, the Spearman correlation between the heads' patching
effects (exhaustive and attribution) and their ablation drops, over all heads and per attention kind. Over the
subset, `head_importance`'s ranking (each head off, log-likelihood of the corpus references) against the heads'
mean exhaustive patching effect.

The machine is shared: the load average before and after is saved, with `--note` (what else ran).
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_common import loadavg, machine_info, save_and_print  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "spa-eng" / "spa-eng.tsv"
DIRECTIONS = ("es-en", "en-es")
#: What `correlations` measures for each pair of effect arrays.
MEASURES = ("pearson", "spearman", "top1", "top1_in_top3", "best_share")
HEAD_SITES = {"encoder_heads": "encoder", "decoder_heads": "decoder", "cross_heads": "cross"}
_WORD = re.compile(r"^(\W*)([^\W\d_]+)(\W*)$")  # punctuation, letters, punctuation


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="model folder (default: the shipped checkpoint)")
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="English<TAB>Spanish corpus the splits come from")
    parser.add_argument("--directions", nargs="+", choices=DIRECTIONS, default=list(DIRECTIONS))
    parser.add_argument("--pairs", type=int, default=50, help="substitution pairs a direction (default 50)")
    parser.add_argument("--ablation-pairs", type=int, default=20, help="of them, head-ablated (default 20)")
    parser.add_argument("--min-count", type=int, default=5, help="corpus count of a substitute word (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="which pairs, words and substitutes are drawn")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--note", default="", help="what else ran on the machine (saved with the results)")
    parser.add_argument("--json", default="patching", help="results name: benchmarks/results/<name>.json")
    parser.add_argument("--tiny", action="store_true", help="a tiny random model and the tiny corpus (tests)")
    args = parser.parse_args(argv)
    if args.pairs < 1 or args.ablation_pairs < 0:
        parser.error("--pairs must be >= 1 and --ablation-pairs >= 0")
    return args


# --- pairs ---------------------------------------------------------------------------------------------------------


def corpus(args: argparse.Namespace) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(every (English, Spanish) pair of the corpus, the test split's pairs)."""
    if args.tiny:
        from vaswani_inspect.testing import sentence_pairs

        pairs = [(english, spanish) for spanish, english in sentence_pairs()]
        return pairs, pairs
    from hf_vaswani.data import prepare_splits, read_pairs

    every = [(pair[0], pair[1]) for pair in read_pairs(args.data)]
    test = prepare_splits(every, validation_size=2000, test_size=2000, seed=0)["test"]
    return every, [(pair[0], pair[1]) for pair in test]


def _pieces(tokenizer: Any, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False).input_ids)


def vocabulary(tokenizer: Any, sentences: list[str], min_count: int) -> dict[int, list[str]]:
    """{number of pieces: sorted lower-case words seen at least `min_count` times}."""
    counts = Counter(
        match.group(2).lower() for sentence in sentences for word in sentence.split() if (match := _WORD.match(word))
    )
    words = sorted(word for word, count in counts.items() if count >= min_count)
    by_length: dict[int, list[str]] = {}
    for word in words:
        by_length.setdefault(_pieces(tokenizer, word), []).append(word)
    return by_length


def substitution_pairs(
    tokenizer: Any, sources: list[str], words: dict[int, list[str]], count: int, seed: int
) -> list[dict[str, Any]]:
    """Up to `count` {clean, corrupted, position, word, substitute} of `sources`, drawn with `seed` (module
    docstring)."""
    generator = random.Random(seed)
    found = []
    for clean in generator.sample(sources, len(sources)):
        tokens = clean.split()
        places = [i for i, word in enumerate(tokens) if _WORD.match(word)]
        if not places:
            continue
        place = generator.choice(places)
        before, word, after = _WORD.match(tokens[place]).groups()
        choices = [w for w in words.get(_pieces(tokenizer, word.lower()), []) if w != word.lower()]
        if not choices:
            continue
        substitute = generator.choice(choices)
        if word[0].isupper():
            substitute = substitute[0].upper() + substitute[1:]
        corrupted = " ".join([*tokens[:place], before + substitute + after, *tokens[place + 1 :]])
        clean_ids, corrupted_ids = tokenizer(clean).input_ids, tokenizer(corrupted).input_ids
        if len(clean_ids) != len(corrupted_ids) or clean_ids == corrupted_ids:
            continue
        found.append(dict(clean=clean, corrupted=corrupted, position=place, word=word, substitute=substitute))
        if len(found) == count:
            break
    return found


# --- measures ------------------------------------------------------------------------------------------------------


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties sharing their mean rank (cells no metric step reads have effect 0 in both methods)."""
    ranks = np.empty(len(values))
    ranks[np.argsort(values, kind="stable")] = np.arange(1, len(values) + 1)
    _, group = np.unique(values, return_inverse=True)
    return (np.bincount(group, weights=ranks) / np.bincount(group))[group]


def correlations(a: np.ndarray, b: np.ndarray) -> dict[str, float | bool | None]:
    """Two effect arrays compared over their finite cells (None where undefined): Pearson, Spearman, whether both put
    the same cell first (``top1``), whether `a`'s first cell is among `b`'s first three (``top1_in_top3``), and `a`'s
    value at `b`'s first cell over `a`'s largest (``best_share``: how much of the best restoration `b`'s choice
    gets, with `a` the exhaustive effects)."""
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    if len(a) < 2:
        return {name: None for name in MEASURES}

    def correlation(x: np.ndarray, y: np.ndarray) -> float | None:
        return None if np.std(x) == 0 or np.std(y) == 0 else float(np.corrcoef(x, y)[0, 1])

    return {
        "pearson": correlation(a, b),
        "spearman": correlation(_ranks(a), _ranks(b)),
        "top1": bool(np.argmax(a) == np.argmax(b)),
        "top1_in_top3": bool(np.argmax(a) in np.argsort(-b, kind="stable")[:3]),
        "best_share": float(a[np.argmax(b)] / a.max()) if a.max() > 0 else None,
    }


def _rounded(value: float | bool | None) -> float | bool | None:
    return value if value is None or isinstance(value, bool) else round(value, 3)


def _summary(values: list[float | bool | None]) -> dict[str, float | int | None]:
    kept = [float(v) for v in values if v is not None]
    if not kept:
        return {"mean": None, "median": None, "n": 0}
    return {"mean": round(statistics.mean(kept), 3), "median": round(statistics.median(kept), 3), "n": len(kept)}


def _counting_calls(model: Any) -> tuple[list[int], Any]:
    calls = [0]

    def count(module: Any, args: Any, kwargs: Any) -> None:
        calls[0] += 1

    return calls, model.register_forward_pre_hook(count, with_kwargs=True)


def patch_both(model: Any, tokenizer: Any, pair: dict, target: str, direction: str) -> dict[str, Any]:
    """Both methods on one pair, exhaustive first: their results, ms, passes and model calls."""
    from vaswani_inspect import patch_activations

    found: dict[str, Any] = {}
    for method in ("exhaustive", "attribution"):
        calls, handle = _counting_calls(model)
        try:
            start = time.perf_counter()
            result = patch_activations(
                model, tokenizer, pair["clean"], pair["corrupted"], direction=direction, target=target, method=method
            )
            elapsed = time.perf_counter() - start
        finally:
            handle.remove()
        found[method] = {"result": result, "ms": 1000 * elapsed, "passes": result.passes, "model_calls": calls[0]}
    return found


def _metric(model: Any, result: Any) -> float:
    """The result's metric (summed log p of the target at its steps) on its clean source, in the model as it is."""
    device = next(model.parameters()).device
    source = torch.tensor([result.source_ids], device=device)
    target = torch.tensor([result.target_ids], device=device)
    with torch.no_grad():
        logits = model(input_ids=source, decoder_input_ids=target, use_cache=False).logits[0]
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    steps = torch.tensor(result.metric_steps, device=device)
    return float(log_probs[steps, target[0, steps + 1]].sum())


def ablation_drops(model: Any, result: Any) -> dict[str, np.ndarray]:
    """{head site: (layers, heads) drop of the metric when that head alone is switched off on the clean source}."""
    from vaswani_inspect import ablate_heads
    from vaswani_inspect.ablation import head_counts, list_heads

    clean = _metric(model, result)
    counts = head_counts(model)
    drops = {site: np.zeros(counts[kind]) for site, kind in HEAD_SITES.items()}
    site_of = {kind: site for site, kind in HEAD_SITES.items()}
    for head in list_heads(model):
        with ablate_heads(model, [head]):
            drops[site_of[head.kind]][head.layer, head.head] = clean - _metric(model, result)
    return drops


def _heads_flat(arrays: dict[str, np.ndarray]) -> np.ndarray:
    return np.concatenate([np.asarray(arrays[site], dtype=np.float64).ravel() for site in HEAD_SITES])


def head_agreement(found: dict[str, Any], drops: dict[str, np.ndarray]) -> dict[str, Any]:
    """Spearman of each method's head effects with the ablation drops: all heads, and per kind."""
    rows: dict[str, Any] = {}
    for method, run in found.items():
        effects = run["result"].effects
        rows[method] = {"all": _rounded(correlations(_heads_flat(effects), _heads_flat(drops))["spearman"])}
        for site, kind in HEAD_SITES.items():
            rows[method][kind] = _rounded(correlations(effects[site], drops[site])["spearman"])
    return rows


def importance_agreement(
    model: Any, tokenizer: Any, references: list[tuple[str, str]], direction: str, mean_effects: np.ndarray
) -> dict[str, Any]:
    """`head_importance` (each head off, reference log-likelihood and BLEU) against the mean patching effect."""
    from vaswani_inspect import head_importance
    from vaswani_inspect.ablation import list_heads

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        importance = head_importance(model, tokenizer, references, direction, curves=(), progress=False)
    heads = list_heads(model)  # encoder, decoder, cross: the order of _heads_flat
    drops = np.array([importance.head(*head).log_likelihood_drop for head in heads])
    bleu = np.array([importance.head(*head).bleu_drop for head in heads])
    return {
        "pairs": len(references),
        "spearman_log_likelihood_drop": _rounded(correlations(mean_effects, drops)["spearman"]),
        "spearman_bleu_drop": _rounded(correlations(mean_effects, bleu)["spearman"]),
        "top_heads_patching": [heads[i].label() for i in np.argsort(-mean_effects)[:3]],
        "top_heads_ablation": [heads[i].label() for i in np.argsort(-drops)[:3]],
        "seconds": round(time.perf_counter() - start, 1),
    }


# --- the run -------------------------------------------------------------------------------------------------------


def load(args: argparse.Namespace) -> tuple[Any, Any]:
    if args.tiny:
        from vaswani_inspect.testing import tiny_model, tiny_tokenizer

        tokenizer = tiny_tokenizer()
        return tiny_model(len(tokenizer)), tokenizer
    from vaswani_inspect import load_model_and_tokenizer

    return load_model_and_tokenizer(args.model)


def run_direction(
    model: Any, tokenizer: Any, pairs: list[dict], references: list[str], direction: str, args: argparse.Namespace
) -> dict[str, Any]:
    from vaswani_inspect import extract
    from vaswani_inspect.patching import SITES

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        records = extract(model, tokenizer, [pair["clean"] for pair in pairs], direction=direction)
    targets = [record.target_text for record in records]
    patch_both(model, tokenizer, pairs[0], targets[0], direction)  # warm-up
    per_pair, measures = [], {site: [] for site in SITES}
    heads, mean_effects, ablated = [], [], []
    for index, (pair, target) in enumerate(zip(pairs, targets)):
        found = patch_both(model, tokenizer, pair, target, direction)
        exhaustive = found["exhaustive"]["result"]
        row = {
            **pair,
            "target": target,
            "clean_metric": round(exhaustive.clean_metric, 4),
            "corrupted_metric": round(exhaustive.corrupted_metric, 4),
            "source_tokens": len(exhaustive.source_tokens),
            "target_tokens": len(exhaustive.target_tokens),
            **{f"{method}_{key}": round(run[key], 1) for method, run in found.items() for key in ("ms", "passes")},
            **{f"{method}_model_calls": run["model_calls"] for method, run in found.items()},
        }
        for site in SITES:
            agreement = correlations(exhaustive.effects[site], found["attribution"]["result"].effects[site])
            measures[site].append(agreement)
            row[site] = {name: _rounded(value) for name, value in agreement.items()}
        if index < args.ablation_pairs:
            drops = ablation_drops(model, exhaustive)
            row["heads"] = head_agreement(found, drops)
            heads.append(row["heads"])
            mean_effects.append(_heads_flat(exhaustive.effects))
            ablated.append(references[index])
        per_pair.append(row)
        print(
            f"{direction} {index + 1}/{len(pairs)}: {row['exhaustive_ms']:.0f} / {row['attribution_ms']:.0f} ms, "
            f"encoder Pearson {row['encoder']['pearson']}",
            flush=True,
        )
    sites = {site: {name: _summary([m[name] for m in rows]) for name in MEASURES} for site, rows in measures.items()}
    cost = {
        method: {
            "ms_per_pair_mean": round(statistics.mean(row[f"{method}_ms"] for row in per_pair), 1),
            "ms_per_pair_median": round(statistics.median(row[f"{method}_ms"] for row in per_pair), 1),
            "passes_mean": round(statistics.mean(row[f"{method}_passes"] for row in per_pair), 1),
            "model_calls_mean": round(statistics.mean(row[f"{method}_model_calls"] for row in per_pair), 1),
        }
        for method in ("exhaustive", "attribution")
    }
    head_summary: dict[str, Any] = {}
    if heads:
        head_summary = {
            method: {group: _summary([h[method][group] for h in heads]) for group in heads[0][method]}
            for method in heads[0]
        }
        if not args.tiny:
            mean = np.nanmean(np.stack(mean_effects), axis=0)
            head_summary["head_importance"] = importance_agreement(model, tokenizer, ablated, direction, mean)
    return {"pairs": len(per_pair), "sites": sites, "cost": cost, "heads": head_summary, "per_pair": per_pair}


def run(args: argparse.Namespace) -> dict[str, Any]:
    torch.set_num_threads(args.threads)
    before = loadavg()
    model, tokenizer = load(args)
    every, test = corpus(args)
    directions = {}
    for direction in args.directions:
        side = 1 if direction == "es-en" else 0  # the source's column of (English, Spanish)
        words = vocabulary(tokenizer, [pair[side] for pair in every], 1 if args.tiny else args.min_count)
        pairs = substitution_pairs(tokenizer, [pair[side] for pair in test], words, args.pairs, args.seed)
        reference_of = {pair[side]: pair for pair in test}
        references = [reference_of[pair["clean"]] for pair in pairs]
        directions[direction] = run_direction(model, tokenizer, pairs, references, direction, args)
    return {
        "benchmark": "patching",
        "machine": machine_info(),
        "settings": {
            "model": "tiny" if args.tiny else str(args.model or "shipped checkpoint"),
            "pairs_per_direction": args.pairs,
            "ablation_pairs": args.ablation_pairs,
            "min_count": args.min_count,
            "seed": args.seed,
            "threads": args.threads,
            "note": args.note,
        },
        "directions": directions,
        "loadavg_before": before,
        "loadavg_after": loadavg(),
    }


def _cell(summary: dict[str, Any], digits: int = 2) -> str:
    if summary["mean"] is None:
        return "-"
    return f"{summary['mean']:.{digits}f} / {summary['median']:.{digits}f}"


def _share(summary: dict[str, Any]) -> str:
    return "-" if summary["mean"] is None else f"{summary['mean']:.2f}"


def table(payload: dict[str, Any]) -> str:
    settings = payload["settings"]
    lines = [
        f"one-word substitutions of test sentences, {settings['threads']} thread(s); "
        f"load average {payload['loadavg_before']} before, {payload['loadavg_after']} after",
        "",
        "| direction | site | pairs | Pearson (mean / median) | Spearman (mean / median) | same top-1 cell | "
        "exhaustive's top-1 in attribution's top 3 | attribution's top-1 / best (mean / median) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for direction, found in payload["directions"].items():
        for site, row in found["sites"].items():
            lines.append(
                f"| {direction} | {site} | {row['pearson']['n']} | {_cell(row['pearson'])} | "
                f"{_cell(row['spearman'])} | {_share(row['top1'])} | {_share(row['top1_in_top3'])} | "
                f"{_cell(row['best_share'])} |"
            )
    lines += [
        "",
        "| direction | method | ms per pair (mean / median) | passes per pair | model calls per pair |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for direction, found in payload["directions"].items():
        for method, cost in found["cost"].items():
            lines.append(
                f"| {direction} | {method} | {cost['ms_per_pair_mean']:.0f} / {cost['ms_per_pair_median']:.0f} | "
                f"{cost['passes_mean']:.1f} | {cost['model_calls_mean']:.1f} |"
            )
    heads = [(d, found["heads"]) for d, found in payload["directions"].items() if found["heads"]]
    if heads:
        lines += [
            "",
            "| direction | patching method | Spearman with ablation: all heads | encoder | decoder | cross |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
        ]
        for direction, summary in heads:
            for method in ("exhaustive", "attribution"):
                row = summary[method]
                cells = " | ".join(_cell(row[group]) for group in ("all", "encoder", "decoder", "cross"))
                lines.append(f"| {direction} | {method} | {cells} |")
        for direction, summary in heads:
            if "head_importance" in summary:
                found = summary["head_importance"]
                lines.append(
                    f"\n{direction}: head_importance on {found['pairs']} pairs against the mean exhaustive "
                    "head effect: "
                    f"Spearman {found['spearman_log_likelihood_drop']} (log-likelihood drop), "
                    f"{found['spearman_bleu_drop']} (BLEU drop); top heads {found['top_heads_patching']} (patching), "
                    f"{found['top_heads_ablation']} (ablation)"
                )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    payload = run(args)
    save_and_print(args.json, payload, table(payload))
    return 0


if __name__ == "__main__":
    sys.exit(main())
