"""Which view explains a translation? Every attribution method measured on the same test pairs, both directions:
plausibility (AER against eflomal), faithfulness (deletion: comprehensiveness and sufficiency) and cost.

    python benchmarks/bench_explanations.py                       # 40 test pairs a direction (every method of METHODS)
    python benchmarks/bench_explanations.py --test-pairs 200 --validation-pairs 50 --work /tmp/explanations

**Pairs.** The project's held-out splits as the training run makes them (`prepare_splits` of
``../shared/data/spa-eng/spa-eng.tsv``, 2,000 validation and 2,000 test pairs, seed 0: deduplicate, then
`split_pairs`, the evaluation splits unfiltered, exactly `hf_vaswani.training.run`'s split). The subset is the
first `--test-pairs` test pairs and the first `--validation-pairs` validation pairs, in split order, the same for
every method and both directions. Each reference translation is explained teacher-forced.

**Gold.** `hf-vaswani word-align` on the subset pairs, learning from the whole corpus (eflomal; sure links where
both directions agree), written to `--work` (never into the repository). AER, precision and recall skip
punctuation, as the shipped aligner's test AER (0.129 es-en / 0.122 en-es) does.

**Plausibility.** Each method read as an aligner: argmax per target word (the table), and the reading (argmax or
a threshold of `DEFAULT_THRESHOLDS`) with the lowest AER on the *validation* subset, then scored on test.

**Faithfulness** (`vaswani_inspect.attribution.faithfulness`, test subset only): for each target word the top-k
source words of the method's row (k = 1, 2, 3) are removed from the source (their pieces taken out: the deletion
baseline, the same for every method), the same target teacher-forced: comprehensiveness is the drop of the word's
log-probability (nats, higher is better), sufficiency what keeping only those k words loses (lower is better);
means over target words and k. "random" ranks the source words at random (seeded) on the same words.

**Agreement with head ablation** (`vaswani_inspect.attribution.ablation_agreement`, test subset only): does the
method rank first the source words whose heads matter? Each cross-attention head is switched off alone; the heads
whose loss lowers a target word's log-probability are the ones that matter for it, and their attention rows,
weighted by those drops, are the ablation view of the word. Top-1 agreement is the share of target words whose
top source word is the view's; Spearman the rank correlation of the two rows. Means over the target words some
head matters for (a positive total drop), punctuation left out on both sides as in AER (a final "." often holds
much of a head's attention, and the question is which word it points at); "random" ranks at random (the same
rankings as its deletion scores).

**Cost.** Milliseconds per sentence of `attribute` for each method (the record extracted once, not counted), on
`--threads` threads; the machine is shared, so the load average at the start and the end is saved with the results.

**Resumable.** Each pair's matrices, scores and times are appended to `--work/cache.jsonl` as soon as they are
measured; a rerun with the same `--work` measures only the pairs (and methods) not in it, so a larger
`--test-pairs` adds pairs. A test pair cached before the agreement was measured gets it on a rerun from its
cached matrices (the record extracted again and its heads ablated: no method runs again).

**Model summary.** `--model-summary PATH` also writes the few numbers the demo shows (AER per direction,
comprehensiveness, sufficiency, ms per sentence and top-1 ablation agreement per method, rounded), e.g. to
``pretrained/vaswani-tatoeba-es-en/explanations.json``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
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


def arguments(argv: list[str] | None) -> argparse.Namespace:
    from vaswani_inspect.attribution import METHODS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="model folder (default: the shipped checkpoint)")
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="English<TAB>Spanish corpus the splits come from")
    parser.add_argument("--test-pairs", type=int, default=40, help="first N test pairs, each direction (default 40)")
    parser.add_argument(
        "--validation-pairs", type=int, default=20, help="first N validation pairs (threshold choice; default 20)"
    )
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--n-steps", type=int, default=50, help="integrated gradients' steps (default 50)")
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 2, 3], help="top-k words removed (default 1 2 3)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0, help="the random ranking's seed")
    parser.add_argument("--work", default="/tmp/bench_explanations", help="split, gold and cache folder (not the repo)")
    parser.add_argument("--json", default="explanations", help="results name: benchmarks/results/<name>.json")
    parser.add_argument("--tiny", action="store_true", help="a tiny random model and hand-written pairs (tests)")
    parser.add_argument("--summary-only", action="store_true", help="only summarise what --work's cache holds")
    parser.add_argument("--model-summary", default=None, help="also write the demo's summary file (JSON) here")
    return parser.parse_args(argv)


def subset_pairs(args: argparse.Namespace) -> dict[str, list[Any]]:
    """split name -> the first pairs of that split (English, Spanish)."""
    if args.tiny:
        from hf_vaswani.data import SentencePair
        from vaswani_inspect.testing import sentence_pairs

        pairs = [SentencePair(english, spanish) for spanish, english in sentence_pairs()]
        return {"validation": pairs[: args.validation_pairs], "test": pairs[-args.test_pairs :]}
    from hf_vaswani.data import prepare_splits, read_pairs

    splits = prepare_splits(read_pairs(args.data), validation_size=2000, test_size=2000, seed=0)
    return {"validation": splits["validation"][: args.validation_pairs], "test": splits["test"][: args.test_pairs]}


def silver_links(args: argparse.Namespace, subsets: dict[str, list[Any]], work: Path) -> dict[tuple[str, str], list]:
    """(split, direction) -> gold alignments of the subset, from `hf-vaswani word-align` (run once per work folder:
    its pairs file is kept, and a changed subset aligns again)."""
    from hf_vaswani.data import write_pairs_tsv
    from vaswani_inspect.alignment import read_gold

    pairs = [*subsets["validation"], *subsets["test"]]
    pairs_file, silver = work / "pairs.tsv", work / "silver"
    previous = pairs_file.read_text(encoding="utf-8") if pairs_file.exists() else None
    write_pairs_tsv(pairs, work / "pairs.new.tsv")
    current = (work / "pairs.new.tsv").read_text(encoding="utf-8")
    if previous != current or not (silver / "en-es.gold").exists():
        (work / "pairs.new.tsv").replace(pairs_file)
        command = [sys.executable, "-m", "hf_vaswani.cli", "word-align", str(pairs_file), "--out", str(silver)]
        command += ["--overwrite"] + ([] if args.tiny else ["--corpus", args.data])
        print("aligning with eflomal:", " ".join(command), flush=True)
        subprocess.run(command, check=True, cwd=ROOT)
    else:
        (work / "pairs.new.tsv").unlink()
    found = {}
    count = len(subsets["validation"])
    for direction in DIRECTIONS:
        gold = read_gold(silver / f"{direction}.gold")
        found["validation", direction] = gold[:count]
        found["test", direction] = gold[count:]
    return found


def load(args: argparse.Namespace) -> tuple[Any, Any]:
    if args.tiny:
        from vaswani_inspect.testing import tiny_model, tiny_tokenizer

        tokenizer = tiny_tokenizer()
        return tiny_model(len(tokenizer)), tokenizer
    from vaswani_inspect.extract import load_model_and_tokenizer

    return load_model_and_tokenizer(args.model)


def read_cache(path: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    cache: dict[tuple[str, str, int], dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by an interrupted run
                cache.setdefault((entry["split"], entry["direction"], entry["index"]), {}).update(entry)
    return cache


def measure_pair(
    model: Any,
    tokenizer: Any,
    pair: Any,
    gold: Any,
    split: str,
    direction: str,
    index: int,
    args: argparse.Namespace,
    methods: list[str],
) -> dict[str, Any]:
    """Matrices (punctuation zeroed), gold (punctuation left out), times and, on test, deletion scores and
    ablation agreement of `methods` for one pair."""
    from vaswani_inspect.attribution import attribute
    from vaswani_inspect.attribution.evaluation import _gold_sets, without_punctuation
    from vaswani_inspect.attribution.faithfulness import deletion_scores, rankings_of

    record = pair_record(model, tokenizer, pair, direction)
    sure, possible = _gold_sets(gold, record, skip_punctuation=True)
    entry: dict[str, Any] = {
        "split": split,
        "direction": direction,
        "index": index,
        "sure": sorted(sure),
        "possible": sorted(possible | sure),
        "matrices": {},
        "ms": {},
        "faithfulness": {},
    }
    rankings = {}
    for method in methods:
        options = {"n_steps": args.n_steps} if method == "integrated_gradients" else {}
        start = time.perf_counter()
        attribution = attribute(model, tokenizer, record, method=method, **options)
        entry["ms"][method] = 1000.0 * (time.perf_counter() - start)
        entry["matrices"][method] = without_punctuation(attribution.matrix, record).tolist()
        rankings[method] = rankings_of(attribution.matrix, record)
    if split == "test" and rankings:
        rankings["random"] = random_ranking(record, args, index, direction)
        for name, scores in deletion_scores(model, record, rankings, ks=args.ks).items():
            entry["faithfulness"][name] = {
                "words": len(scores.words),
                "comprehensiveness": scores.comprehensiveness.sum(axis=1).tolist(),
                "sufficiency": scores.sufficiency.sum(axis=1).tolist(),
            }
        entry["agreement"] = agreement_scores(model, record, entry, args)
    return entry


def pair_record(model: Any, tokenizer: Any, pair: Any, direction: str) -> Any:
    """The pair's reference translation in `direction`, extracted teacher-forced."""
    from vaswani_inspect import extract

    source, target = (pair.es, pair.en) if direction == "es-en" else (pair.en, pair.es)
    return extract(model, tokenizer, source, target, direction=direction)


def random_ranking(record: Any, args: argparse.Namespace, index: int, direction: str) -> dict[int, list[int]]:
    """The random baseline's ranking of one pair: seeded by the pair, so a rerun draws the same one."""
    from vaswani_inspect.attribution.faithfulness import random_rankings

    return random_rankings(record, np.random.default_rng([args.seed, index, len(direction)]))


def agreement_scores(model: Any, record: Any, entry: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """Per method of `entry` (its cached matrices, punctuation zeroed) and "random": the ablation agreement on the
    pair (means over its target words some head matters for, and how many words each mean is over)."""
    from vaswani_inspect.attribution.ablation_agreement import ablation_agreement, ablation_view

    view = ablation_view(model, record)
    matrices = {method: np.asarray(rows, dtype=np.float64) for method, rows in entry["matrices"].items()}
    ranking = random_ranking(record, args, entry["index"], entry["direction"])
    matrices["random"] = np.zeros(view.matrix.shape)
    for j, order in ranking.items():
        matrices["random"][j, order] = np.arange(len(order), 0, -1)  # the first word ranked highest
    found = {}
    for name, matrix in matrices.items():
        found[name] = ablation_agreement(matrix.reshape(view.matrix.shape), view, skip_punctuation=True).means()
    return found


def needs_agreement(entry: dict[str, Any]) -> bool:
    """A cached test pair measured before the ablation agreement was (or without it for some of its methods)."""
    return entry.get("split") == "test" and bool(
        {*entry.get("matrices", {}), "random"} - set(entry.get("agreement", {}))
    )


def corpus_aer(entries: list[dict[str, Any]], method: str, threshold: float | None) -> dict[str, float]:
    from vaswani_inspect.alignment.aer import scores_from_counts
    from vaswani_inspect.alignment.links import links_of

    counts = np.zeros(4, dtype=np.int64)
    for entry in entries:
        matrix = np.asarray(entry["matrices"][method], dtype=np.float64).reshape(len(entry["matrices"][method]), -1)
        reading = "argmax" if threshold is None else "threshold"
        targets, sources = np.nonzero(links_of(matrix, reading, threshold or 0.5)) if matrix.size else ((), ())
        predicted = {(int(i), int(j)) for j, i in zip(targets, sources)}
        sure = {tuple(link) for link in entry["sure"]}
        possible = {tuple(link) for link in entry["possible"]}
        counts += (len(predicted), len(sure), len(predicted & sure), len(predicted & possible))
    return scores_from_counts(*counts)._asdict()


def summarise(cache: dict, methods: list[str], args: argparse.Namespace, counts: dict[str, int]) -> dict[str, Any]:
    from vaswani_inspect.attribution.evaluation import DEFAULT_THRESHOLDS

    rows: dict[str, dict[str, Any]] = {}
    for method in [*methods, "random"]:
        row: dict[str, Any] = {}
        faith = {"comprehensiveness": np.zeros(len(args.ks)), "sufficiency": np.zeros(len(args.ks)), "words": 0}
        times = []
        agreements = []
        for direction in DIRECTIONS:
            test = [cache["test", direction, i] for i in range(counts["test"]) if ("test", direction, i) in cache]
            validation = [
                cache["validation", direction, i]
                for i in range(counts["validation"])
                if ("validation", direction, i) in cache
            ]
            test = [e for e in test if method in e["faithfulness"]]
            agreements += [e["agreement"][method] for e in test if method in e.get("agreement", {})]
            for entry in test:
                scores = entry["faithfulness"][method]
                faith["words"] += scores["words"]
                for name in ("comprehensiveness", "sufficiency"):
                    faith[name] += np.asarray(scores[name])
                times.append(entry["ms"].get(method))
            if method == "random" or not test:
                continue
            row[f"aer_{direction}"] = corpus_aer(test, method, None)
            validation = [e for e in validation if method in e["matrices"]]
            if validation:
                candidates = [None, *DEFAULT_THRESHOLDS]
                chosen = min(candidates, key=lambda t: corpus_aer(validation, method, t)["aer"])
                row[f"chosen_{direction}"] = {
                    "links": "argmax" if chosen is None else "threshold",
                    "threshold": chosen,
                    "validation": corpus_aer(validation, method, chosen),
                    "test": corpus_aer(test, method, chosen),
                }
            row[f"pairs_{direction}"] = len(test)
        words = max(1, faith["words"])
        for name in ("comprehensiveness", "sufficiency"):
            per_k = (faith[name] / words).tolist()
            row[name] = float(np.mean(per_k))
            row[f"{name}_per_k"] = dict(zip(map(str, args.ks), per_k))
        row["target_words"] = faith["words"]
        row.update(pooled_agreement(agreements))
        measured = [t for t in times if t is not None]
        row["ms_per_sentence"] = float(np.mean(measured)) if measured else None
        rows[method] = row
    return rows


def pooled_agreement(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """The ablation agreement over every target word of `pairs` (each pair's means weighted by its words); None
    where no word was scored, and how many test pairs had it."""
    found: dict[str, Any] = {"ablation_pairs": len(pairs)}
    for name, words in (("top1", "words"), ("spearman", "spearman_words")):
        total = sum(pair[words] for pair in pairs)
        weighted = sum(pair[name] * pair[words] for pair in pairs if pair[words])
        found[f"ablation_{name}"] = weighted / total if total else None
        found[f"ablation_{words}"] = total
    return found


def table(rows: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| method | AER es-en | AER en-es | comprehensiveness ↑ | sufficiency ↓ | ablation top-1 ↑ | ablation ρ ↑ "
        "| ms / sentence |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]

    def aer(row: dict[str, Any], direction: str) -> str:
        if f"aer_{direction}" not in row:
            return "-"
        text = f"{row[f'aer_{direction}']['aer']:.3f}"
        chosen = row.get(f"chosen_{direction}")
        if chosen and chosen["threshold"] is not None:
            text += f" ({chosen['test']['aer']:.3f} at {chosen['threshold']:g})"
        return text

    def number(value: float | None, digits: int) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    for method, row in rows.items():
        lines.append(
            f"| {method} | {aer(row, 'es-en')} | {aer(row, 'en-es')} | {row['comprehensiveness']:.3f} | "
            f"{row['sufficiency']:.3f} | {number(row['ablation_top1'], 3)} | {number(row['ablation_spearman'], 3)} | "
            f"{number(row.get('ms_per_sentence'), 0)} |"
        )
    return "\n".join(lines)


def model_summary(
    rows: dict[str, dict[str, Any]], counts: dict[str, int], args: argparse.Namespace, argv: list[str]
) -> dict[str, Any]:
    """The demo's summary of `rows`: what was measured, and per method its AER (argmax links) per direction,
    comprehensiveness, sufficiency, ms per sentence and top-1 ablation agreement, rounded to 4 decimals (ms to
    1); "random" has no AER and no time."""
    split = (
        "the hand-written pairs of vaswani_inspect.testing (tiny random model)"
        if args.tiny
        else "the project's test split (Tatoeba, 2,000 pairs, seed 0), first pairs in split order, reference "
        "translations teacher-forced"
    )
    measured = {
        "test_pairs": counts["test"],
        "validation_pairs": counts["validation"],
        "directions": list(DIRECTIONS),
        "split": split,
        "gold": "eflomal links (hf-vaswani word-align), punctuation skipped",
        "ks": list(args.ks),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": shlex.join(["python", "benchmarks/bench_explanations.py", *argv]),
    }

    def rounded(value: float | None, digits: int = 4) -> float | None:
        return None if value is None else round(float(value), digits)

    methods: dict[str, dict[str, Any]] = {}
    for method, row in rows.items():
        summary: dict[str, Any] = {}
        if method != "random":
            summary["aer"] = {d: rounded(row.get(f"aer_{d}", {}).get("aer")) for d in DIRECTIONS}
        summary["comprehensiveness"] = rounded(row["comprehensiveness"])
        summary["sufficiency"] = rounded(row["sufficiency"])
        if method != "random":
            summary["ms_per_sentence"] = rounded(row.get("ms_per_sentence"), 1)
        summary["ablation_agreement"] = rounded(row["ablation_top1"])
        methods[method] = summary
    return {"measured": measured, "methods": methods}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = arguments(argv)
    torch.set_num_threads(args.threads)
    started = {"loadavg": loadavg(), "time": time.time()}
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    cache_path = work / "cache.jsonl"
    cache = read_cache(cache_path)
    if args.summary_only:  # what the cache holds so far (e.g. while a long run goes on)
        splits = ("validation", "test")
        counts = {split: 1 + max((i for s, _, i in cache if s == split), default=-1) for split in splits}
        subsets = {split: [None] * count for split, count in counts.items()}
    else:
        subsets = subset_pairs(args)
        counts = {split: len(pairs) for split, pairs in subsets.items()}
        gold = silver_links(args, subsets, work)
        model, tokenizer = load(args)
    from tqdm.auto import tqdm

    # Round-robin over splits and directions, so that an interrupted run leaves a balanced subset to summarise.
    jobs = [
        (split, direction, index, subsets[split][index])
        for index in range(max(counts.values()))
        for split in ("test", "validation")
        for direction in DIRECTIONS
        if index < counts[split]
    ]
    with cache_path.open("a", encoding="utf-8") as out:
        for split, direction, index, pair in tqdm([] if args.summary_only else jobs, desc="pairs", unit="pair"):
            done = cache.get((split, direction, index), {})
            missing = [m for m in args.methods if m not in done.get("matrices", {})]
            if not missing:
                if needs_agreement(done):  # cached before the agreement was measured: only that, from the cache
                    record = pair_record(model, tokenizer, pair, direction)
                    update = {"split": split, "direction": direction, "index": index}
                    update["agreement"] = agreement_scores(model, record, done, args)
                    out.write(json.dumps(update) + "\n")
                    out.flush()
                    done.update(update)
                continue
            # The deletion scores compare rankings on the same words: a pair is measured again whole.
            entry = measure_pair(
                model, tokenizer, pair, gold[split, direction][index], split, direction, index, args, args.methods
            )
            out.write(json.dumps(entry) + "\n")
            out.flush()
            cache[split, direction, index] = entry
    rows = summarise(cache, args.methods, args, counts)
    payload = {
        "settings": {
            "test_pairs": counts["test"],
            "validation_pairs": counts["validation"],
            "methods": args.methods,
            "n_steps": args.n_steps,
            "ks": args.ks,
            "threads": args.threads,
            "deletion_baseline": "the source word's pieces removed (language token and </s> kept)",
            "gold": "hf-vaswani word-align (eflomal) on the subset, learning from the whole corpus",
            "skip_punctuation": True,
            "ablation_agreement": "each cross-attention head switched off alone; top-1 and Spearman against the "
            "drop-weighted attention of the heads that matter, punctuation skipped",
            "work": str(work),
            "tiny": args.tiny,
        },
        "machine": machine_info(),
        "loadavg_start": started["loadavg"],
        "loadavg_end": loadavg(),
        "wall_s": time.time() - started["time"],
        "rows": rows,
    }
    save_and_print(args.json, payload, table(rows))
    without = sum(needs_agreement(entry) for entry in cache.values())
    if without:
        print(f"{without} cached test pairs have no ablation agreement yet: rerun without --summary-only to add it.")
    if args.model_summary:
        summary = model_summary(rows, counts, args, argv)
        Path(args.model_summary).write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"model summary: {args.model_summary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
