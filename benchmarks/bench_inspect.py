"""Benchmark of vaswani_inspect: the cost of extracting every attention matrix, and the size of the HTML views.

    OMP_NUM_THREADS=1 python benchmarks/bench_inspect.py [--model PATH] [--config base|tiny] [--json out.json]

Measured on one 40-token source/target pair (median of --repeats interleaved runs after a warm-up):

* `forward`: a plain teacher-forced forward pass (the model's default attention implementation, no weights);
* `forward+attn`: the same pass with `output_attentions=True` (the eager path computes the weights);
* `extract`: `vaswani_inspect.extract(model, tokenizer, source, target)` end to end (tokenisation, the pass with
  attentions, copying to numpy, stripping, building the record). Goal: extract / forward <= 1.5.

and the size in bytes (raw and gzip) of `head_view_html` / `model_view_html` for a pair of exactly 40 source and
40 target tokens. Without `--model`, the shipped checkpoint (`hf_vaswani.paths.default_model_path()`) is used when
it exists, else a random model of the paper's base configuration (`--config base`) with the test tokenizer.
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hf_vaswani.paths import default_model_path  # noqa: E402
from vaswani_inspect import extract, head_view_html, load_model_and_tokenizer, model_view_html  # noqa: E402
from vaswani_inspect.extract import record_from_ids  # noqa: E402
from vaswani_inspect.testing import sentence_pairs, tiny_model, tiny_tokenizer  # noqa: E402

PAIR_TOKENS = 40


def _shipped_checkpoint() -> str | None:
    try:
        return default_model_path()
    except FileNotFoundError:
        return None


def _model(args: argparse.Namespace) -> tuple[Any, Any, str]:
    path = args.model or _shipped_checkpoint()
    if path is not None:
        model, tokenizer = load_model_and_tokenizer(path)
        return model, tokenizer, str(path)
    tokenizer = tiny_tokenizer()
    if args.config == "tiny":
        return tiny_model(len(tokenizer)), tokenizer, "random tiny (d_model 32, 2+2 layers, 4 heads)"
    from hf_vaswani import VaswaniConfig, VaswaniForConditionalGeneration

    torch.manual_seed(0)
    config = VaswaniConfig.base(vocab_size=len(tokenizer), dropout=0.0)
    return VaswaniForConditionalGeneration(config).eval(), tokenizer, "random base (d_model 512, 6+6 layers, 8 heads)"


def _text_of_about(tokenizer: Any, language: int, tokens: int) -> str:
    """Sentences of the test corpus joined until the text has at least `tokens` tokens."""
    words: list[str] = []
    for pair in sentence_pairs() * 10:
        words += pair[language].split()
        if len(tokenizer(" ".join(words))["input_ids"]) >= tokens:
            break
    while len(words) > 1 and len(tokenizer(" ".join(words[:-1]))["input_ids"]) >= tokens:
        words.pop()
    return " ".join(words)


def _median_seconds(functions: dict[str, Any], repeats: int) -> dict[str, float]:
    """Median wall time of each function; the runs are interleaved so that load from other processes on a shared
    machine affects every measure alike."""
    for function in functions.values():
        function()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(repeats):
        for name, function in functions.items():
            start = time.perf_counter()
            function()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="checkpoint folder (default: shipped checkpoint, else random)")
    parser.add_argument("--config", choices=("base", "tiny"), default="base", help="random model size")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", type=Path, default=Path("outputs/bench_inspect.json"))
    args = parser.parse_args(argv)

    model, tokenizer, name = _model(args)
    source = _text_of_about(tokenizer, 0, PAIR_TOKENS - 1)  # the tokenizer adds </s>; + the language token
    target = _text_of_about(tokenizer, 1, PAIR_TOKENS - 1)  # the tokenizer adds </s>; + <s>
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record = extract(model, tokenizer, source, target, direction="es-en")
    input_ids = torch.tensor([record.source_ids])
    attention_mask = torch.ones_like(input_ids)
    decoder_input_ids = torch.tensor([record.target_ids])

    def forward(output_attentions: bool) -> None:
        with torch.inference_mode():
            model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                decoder_input_ids=decoder_input_ids,
                output_attentions=output_attentions,
                use_cache=False,
            )

    def run_extract() -> None:
        extract(model, tokenizer, source, target, direction="es-en")

    timings = _median_seconds(
        {"forward": lambda: forward(False), "forward+attn": lambda: forward(True), "extract": run_extract},
        args.repeats,
    )

    # HTML of a pair of exactly 40 + 40 tokens (ids from the tokenizer's ordinary pieces).
    vocab = [i for i in range(len(tokenizer)) if i >= 6][: PAIR_TOKENS * 2] or [6]
    body = [vocab[i % len(vocab)] for i in range(PAIR_TOKENS - 2)]
    en, eos, bos = tokenizer.convert_tokens_to_ids(">>en<<"), tokenizer.eos_token_id, tokenizer.bos_token_id
    pair = record_from_ids(model, tokenizer, [en, *body, eos], [bos, *body, eos], source_text="(40 tokens)")
    sizes = {}
    for view_name, view in (("head_view", head_view_html), ("model_view", model_view_html)):
        page = view(pair).encode("utf-8")
        sizes[view_name] = {"bytes": len(page), "gzip_bytes": len(gzip.compress(page))}

    config = model.config
    result = {
        "model": name,
        "layers_heads": {
            "encoder": [config.encoder_layers, config.encoder_attention_heads],
            "decoder": [config.decoder_layers, config.decoder_attention_heads],
        },
        "source_tokens": len(record.source_tokens),
        "target_tokens": len(record.target_tokens),
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
        "seconds": timings,
        "ratio_extract_over_forward": timings["extract"] / timings["forward"],
        "ratio_forward_attn_over_forward": timings["forward+attn"] / timings["forward"],
        "html_40_token_pair": sizes,
    }
    print(
        f"model: {name}; pair: {result['source_tokens']} source x {result['target_tokens']} target tokens; "
        f"torch threads: {result['torch_threads']}"
    )
    print(f"{'measure':<16}{'median ms':>12}{'x forward':>12}")
    for key, seconds in timings.items():
        print(f"{key:<16}{seconds * 1000:>12.2f}{seconds / timings['forward']:>12.2f}")
    goal = "met" if result["ratio_extract_over_forward"] <= 1.5 else "NOT met"
    print(f"extract / forward = {result['ratio_extract_over_forward']:.2f} (goal <= 1.5: {goal})")
    print(f"{'HTML (40+40 tokens)':<22}{'bytes':>12}{'gzip':>12}")
    for view_name, size in sizes.items():
        print(f"{view_name:<22}{size['bytes']:>12,}{size['gzip_bytes']:>12,}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
