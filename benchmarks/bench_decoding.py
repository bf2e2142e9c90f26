"""What each CPU decoding change of `modeling_vaswani.py` buys in a whole `generate()`: ablation, side by side.

    python benchmarks/bench_decoding.py --threads 1

Contenders, interleaved in one process on the same model and inputs (32 sentences x 16 tokens, 24 new tokens):

* ``ours``: the model as shipped;
* ``no_packing``: `VaswaniLinear` keeps only its column-major (W^T contiguous) copy, never MKL's packed format;
* ``plain_linear``: the projections run `nn.Linear.forward` (no inference copy of the weight at all);
* ``generic_masks_reorder``: the encoder padding mask from `create_bidirectional_mask` and the beam-search
  reorder of the whole cache (self- and encoder-decoder attention), as `transformers` does by default.

Each ratio is contender time / ours (> 1: the change helps), from the process CPU time of each call (one thread).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn
from transformers.masking_utils import create_bidirectional_mask

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_common import (  # noqa: E402
    ablation_cpu_times,
    benchmark_arguments,
    build_pair,
    loadavg,
    machine_info,
    make_batch,
    save_and_print,
)

from hf_vaswani import modeling_vaswani  # noqa: E402
from hf_vaswani.modeling_vaswani import (  # noqa: E402
    VaswaniDecoder,
    VaswaniForConditionalGeneration,
    VaswaniLinear,
)

CONTENDERS = ("ours", "no_packing", "plain_linear", "generic_masks_reorder")
_OURS = {
    "linear": VaswaniLinear.forward,
    "packing": modeling_vaswani._MKL_PACKED_LINEAR,
    "mask": VaswaniDecoder._cross_attention_mask,
    "reorder": VaswaniForConditionalGeneration._reorder_cache,
}


def _generic_mask(self: VaswaniDecoder, mask: Any, hidden_states: Any, encoder_hidden_states: Any) -> Any:
    return create_bidirectional_mask(
        config=self.config,
        inputs_embeds=hidden_states,
        attention_mask=mask,
        encoder_hidden_states=encoder_hidden_states,
    )


def _full_reorder(self: VaswaniForConditionalGeneration, cache: Any, beam_idx: torch.Tensor) -> Any:
    cache.reorder_cache(beam_idx)
    return cache


def _use(contender: str) -> None:
    VaswaniLinear.forward = nn.Linear.forward if contender == "plain_linear" else _OURS["linear"]
    modeling_vaswani._MKL_PACKED_LINEAR = _OURS["packing"] and contender != "no_packing"
    generic = contender == "generic_masks_reorder"
    VaswaniDecoder._cross_attention_mask = _generic_mask if generic else _OURS["mask"]
    VaswaniForConditionalGeneration._reorder_cache = _full_reorder if generic else _OURS["reorder"]


def measure(size: str, beams: int, repeats: int, sentences: int, new_tokens: int) -> dict[str, Any]:
    model, _ = build_pair(size, marian_attn=())
    model.eval()
    source = make_batch(sentences, 16, 16, model.config.vocab_size, seed=2)
    inputs = {"input_ids": source["input_ids"], "attention_mask": source["attention_mask"]}
    tokens: dict[str, torch.Tensor] = {}

    def call(contender: str) -> None:
        with torch.inference_mode():
            tokens[contender] = model.generate(
                **inputs, num_beams=beams, do_sample=False, max_new_tokens=new_tokens, min_new_tokens=new_tokens
            )

    before = loadavg()
    times = ablation_cpu_times(CONTENDERS, _use, call, repeats)
    cpu = {name: statistics.median(times[name]) for name in CONTENDERS}
    return {
        "size": size,
        "beams": beams,
        "cpu_seconds": cpu,
        "ratio_vs_ours": {name: cpu[name] / cpu["ours"] for name in CONTENDERS},
        "same_tokens": all(torch.equal(tokens["ours"], tokens[name]) for name in CONTENDERS),
        "loadavg_before": before,
        "loadavg_after": loadavg(),
    }


def format_table(payload: dict[str, Any]) -> str:
    lines = [
        f"generate() of {payload['settings']['sentences']} sentences x {payload['settings']['new_tokens']} new "
        "tokens, process CPU time (median of interleaved rounds); ratio = without the change / ours",
        "",
        "| dims | beams | ours ms | W^T copy only, no packed GEMM ms (ratio) | plain nn.Linear ms (ratio) "
        "| generic masks + full reorder ms (ratio) | same tokens | load before → after |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for row in payload["rows"]:
        cpu, ratio = row["cpu_seconds"], row["ratio_vs_ours"]
        lines.append(
            f"| {row['size']} | {row['beams']} | {cpu['ours'] * 1e3:.0f} | "
            f"{cpu['no_packing'] * 1e3:.0f} ({ratio['no_packing']:.2f}) | "
            f"{cpu['plain_linear'] * 1e3:.0f} ({ratio['plain_linear']:.2f}) | "
            f"{cpu['generic_masks_reorder'] * 1e3:.0f} ({ratio['generic_masks_reorder']:.2f}) | "
            f"{'yes' if row['same_tokens'] else 'NO'} | "
            f"{row['loadavg_before'][0]:.1f} → {row['loadavg_after'][0]:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args = benchmark_arguments(parser, "decoding", "small dims, 2 rounds, 8 sentences (development)", argv)
    settings = {
        "repeats": 2 if args.quick else 7,
        "sentences": 8 if args.quick else 32,
        "new_tokens": 12 if args.quick else 24,
        "sizes": ["small"] if args.quick else ["small", "base"],
    }
    payload: dict[str, Any] = {"benchmark": "decoding", "machine": machine_info(), "settings": settings, "rows": []}
    for size in settings["sizes"]:
        for beams in (1, 4):
            print(f"{size}, beams {beams} ... (load {loadavg()})", flush=True)
            payload["rows"].append(
                measure(size, beams, settings["repeats"], settings["sentences"], settings["new_tokens"])
            )
    save_and_print(args.json, payload, format_table(payload))
    return payload


if __name__ == "__main__":
    main()
