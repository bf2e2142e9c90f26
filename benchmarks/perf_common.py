"""Shared by the CPU benchmarks: configurations, same-weights models, batches, analytic FLOPs, interleaved timing,
machine facts and results files.

Every comparison is between `VaswaniForConditionalGeneration` and `transformers.MarianMTModel` built with the same
dimensions and the same weights, so that the two compute the same function:

* ours is built with `sinusoidal_layout="concatenated"` (Marian's layout: all sines, then all cosines) and
  `layer_norm_eps=1e-5` (Marian's LayerNorms);
* the weights are copied under Marian's names (`hf_vaswani.marian.export.to_marian`, the inverse of
  `hf_vaswani.marian.convert`): both models have the same `q_proj`/`k_proj`/`v_proj`/`out_proj`, FFN and
  LayerNorm tensors;
* Marian always adds `final_logits_bias` (a zero buffer here); ours follows the paper and has no such bias
  (`final_logits_bias=False`), so Marian does one extra (batch, length, vocab) addition;
* the loss: ours is label-smoothed (eps_ls 0.1, sec. 5.4), Marian's is plain cross-entropy.

The rest (post-LN, ReLU, x sqrt(d_model) embeddings, tied embeddings and output projection, dropout 0.1 on the
embedding sums and every sub-layer output) is the same in both. A model's attention implementation (`sdpa` or
`eager`) is part of its contender name (`ours_sdpa`, `marian_eager`, ...), set with `set_attn_implementation`.
"""

from __future__ import annotations

import argparse
import copy
import datetime as _dt
import gc
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import transformers
from transformers import MarianMTModel

from hf_vaswani import VaswaniConfig, VaswaniForConditionalGeneration
from hf_vaswani.marian.export import to_marian
from hf_vaswani.marian.mapping import MARIAN_LAYER_NORM_EPS

RESULTS_DIR = Path(__file__).resolve().parent / "results"
ATTENTION_IMPLEMENTATIONS = ("sdpa", "eager")
#: The four contenders of the comparison with Marian: each model with each attention implementation.
CONTENDERS = ("ours_sdpa", "ours_eager", "marian_sdpa", "marian_eager")


# ----------------------------------------------------------------------------------------------------------------
# Configurations and models
# ----------------------------------------------------------------------------------------------------------------


def vaswani_config(size: str, vocab_size: int = 8000, **overrides: Any) -> VaswaniConfig:
    """`"base"`: `VaswaniConfig.base()` dims; `"small"`: d_model 256, 3+3 layers, 4 heads, ffn 1024.

    Both in Marian's sinusoid layout and LayerNorm eps so that a Marian twin computes the same function.
    `"tiny"` is for smoke tests only.
    """
    common: dict[str, Any] = dict(
        vocab_size=vocab_size,
        sinusoidal_layout="concatenated",
        layer_norm_eps=MARIAN_LAYER_NORM_EPS,
        max_position_embeddings=1024,
    )
    if size == "base":
        return VaswaniConfig.base(**{**common, **overrides})
    dims = {
        "small": dict(d_model=256, layers=3, heads=4, ffn=1024),
        "tiny": dict(d_model=64, layers=2, heads=2, ffn=128),
    }[size]
    return VaswaniConfig(
        **{
            **common,
            "d_model": dims["d_model"],
            "encoder_layers": dims["layers"],
            "decoder_layers": dims["layers"],
            "encoder_attention_heads": dims["heads"],
            "decoder_attention_heads": dims["heads"],
            "encoder_ffn_dim": dims["ffn"],
            "decoder_ffn_dim": dims["ffn"],
            **overrides,
        }
    )


def marian_twin(ours: VaswaniForConditionalGeneration) -> MarianMTModel:
    """A `MarianMTModel` with the dimensions and the weights of `ours` (built by `vaswani_config`), in the same
    training mode: `hf_vaswani.marian.export.to_marian`, the exact export."""
    return to_marian(ours).train(ours.training)


def build_models(
    size: str, names: tuple[str, ...] = CONTENDERS, vocab_size: int = 8000, seed: int = 0
) -> dict[str, torch.nn.Module]:
    """One model per contender name, `"ours_<attn>"` or `"marian_<attn>"` with attn `sdpa` or `eager`: all of
    `size` (`vaswani_config`) and with the same weights, drawn after `torch.manual_seed(seed)`."""
    torch.manual_seed(seed)
    reference = VaswaniForConditionalGeneration(vaswani_config(size, vocab_size))
    models: dict[str, torch.nn.Module] = {}
    for name in names:
        family, _, implementation = name.partition("_")
        if family not in ("ours", "marian") or implementation not in ATTENTION_IMPLEMENTATIONS:
            raise ValueError(f"unknown contender {name!r}: expected ours_sdpa, ours_eager, marian_sdpa or marian_eager")
        # A copy of ours has its own config: set_attn_implementation writes to the config object.
        model = copy.deepcopy(reference) if family == "ours" else marian_twin(reference)
        model.set_attn_implementation(implementation)
        models[name] = model
    return models


def training_attention(precision: str) -> str:
    """The attention implementation CPU training uses in `precision`: the training recipe
    (`hf_vaswani.training.run`) switches to `eager` under bf16 autocast, where sdpa's CPU backward is the slower
    of the two for sentence-length inputs, and keeps the model's default, `sdpa`, in float32."""
    return "eager" if precision == "bf16" else "sdpa"


def max_logit_difference(a: torch.nn.Module, b: torch.nn.Module, vocab_size: int) -> float:
    """Largest absolute logit difference between two models on a padded batch in eval mode (float32)."""
    batch = make_batch(4, 12, 10, vocab_size, seed=123)
    a.eval(), b.eval()
    with torch.no_grad():
        difference = (a(**batch).logits - b(**batch).logits).abs().max()
    a.train(), b.train()
    return float(difference)


# ----------------------------------------------------------------------------------------------------------------
# Batches and FLOPs
# ----------------------------------------------------------------------------------------------------------------


def make_batch(
    batch: int, source_length: int, target_length: int, vocab_size: int, seed: int = 0, padded: bool = True
) -> dict[str, torch.Tensor]:
    """A translation batch of random ids (>= 4, so no special token inside), right-padded like a collator's.

    With `padded`, the source and target lengths of each row are drawn in [length // 2, length] and the rest is
    padding (id 0, mask 0, label -100); the row of maximal length guarantees the padded shape.
    """
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(4, vocab_size, (batch, source_length), generator=generator)
    labels = torch.randint(4, vocab_size, (batch, target_length), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    if padded and batch > 1:
        source_lengths = torch.randint(source_length // 2, source_length + 1, (batch,), generator=generator)
        target_lengths = torch.randint(target_length // 2, target_length + 1, (batch,), generator=generator)
        source_lengths[0], target_lengths[0] = source_length, target_length
        positions_s = torch.arange(source_length)[None]
        positions_t = torch.arange(target_length)[None]
        attention_mask = (positions_s < source_lengths[:, None]).long()
        input_ids = input_ids.masked_fill(attention_mask == 0, 0)
        labels = labels.masked_fill(positions_t >= target_lengths[:, None], -100)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


@dataclass
class FlopCount:
    """Analytic FLOPs of one forward and one training step of the encoder-decoder on a (B, S) -> (B, T) batch."""

    forward: float
    training: float
    weight_flops: float
    attention_flops: float


def training_step(
    model: torch.nn.Module, batch: dict[str, torch.Tensor], bf16: bool, forward: Callable | None = None
) -> Callable[[], None]:
    """A closure running one training step (forward, backward, AdamW) of `model` on `batch`; `forward` replaces
    `model` for the forward pass (e.g. its `torch.compile`d version), the optimizer still updates `model`."""
    # fused=True: PyTorch's one-kernel-per-tensor AdamW, several times faster on a CPU than the default foreach one.
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    forward = forward if forward is not None else model
    model.train()

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = forward(**batch).loss
        loss.backward()
        optimizer.step()

    return step


def generate_call(
    model: torch.nn.Module, inputs: dict[str, torch.Tensor], beams: int, new_tokens: int
) -> Callable[[], None]:
    """A closure running `model.generate()` (eval mode, inference mode, no sampling) on `inputs`, forced to exactly
    `new_tokens` new tokens; the last output is kept in the closure's `outputs["tokens"]`."""
    model.eval()
    outputs: dict[str, torch.Tensor] = {}

    def run() -> None:
        with torch.inference_mode():
            outputs["tokens"] = model.generate(
                **inputs,
                num_beams=beams,
                do_sample=False,
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
            )

    run.outputs = outputs  # type: ignore[attr-defined]
    return run


def transformer_flops(config: VaswaniConfig, batch: int, source_length: int, target_length: int) -> FlopCount:
    r"""Count FLOPs analytically (1 multiply-add = 2 FLOPs) over the padded positions, which are all computed.

    Per source token and encoder layer: the projections q, k, v, out (4 d^2 weights) and the FFN (2 d d_ff), plus
    the attention scores and weighted sum, 2 S d multiply-adds. Per target token and decoder layer:
    self-attention projections 4 d^2, cross-attention q and out 2 d^2, FFN 2 d d_ff, self-attention 2 T d and
    cross-attention 2 S d multiply-adds; plus the cross-attention keys and values, 2 d^2 per *source* token and
    decoder layer. Per target token, the output projection d V.

        forward  = 2 x (weights touched per token, summed over tokens) + 2 x (attention multiply-adds)
        training = 3 x forward      (the backward computes gradients w.r.t. inputs and weights: 2 x forward)

    This is the usual "6 x parameters x tokens" rule with the attention terms written out. The causal
    self-attention is counted in full (eager attention computes the masked half too). Embedding lookups,
    LayerNorm, softmax, dropout, the loss and the optimizer are not counted: they are memory-bound, not FLOPs.
    """
    d, v = config.d_model, config.decoder_vocab_size
    s_tokens, t_tokens = batch * source_length, batch * target_length
    encoder_weights = config.encoder_layers * (4 * d * d + 2 * d * config.encoder_ffn_dim)
    decoder_weights = config.decoder_layers * (6 * d * d + 2 * d * config.decoder_ffn_dim) + d * v
    cross_kv_weights = config.decoder_layers * 2 * d * d
    weight_macs = (encoder_weights + cross_kv_weights) * s_tokens + decoder_weights * t_tokens
    attention_macs = (
        config.encoder_layers * s_tokens * 2 * source_length * d
        + config.decoder_layers * t_tokens * 2 * (target_length + source_length) * d
    )
    forward = 2.0 * (weight_macs + attention_macs)
    return FlopCount(
        forward=forward, training=3.0 * forward, weight_flops=2.0 * weight_macs, attention_flops=2.0 * attention_macs
    )


# ----------------------------------------------------------------------------------------------------------------
# Timing
# ----------------------------------------------------------------------------------------------------------------


def loadavg() -> list[float]:
    """The 1, 5 and 15 minute load averages (`os.getloadavg`), rounded."""
    return [round(value, 2) for value in os.getloadavg()]


@dataclass
class Timings:
    """Seconds per call of each contender, one entry per round: wall clock and process CPU time."""

    wall: dict[str, list[float]]
    cpu: dict[str, list[float]]


def interleaved_times(
    functions: dict[str, Callable[[], Any]], repeats: int, warmup: int = 1, min_time: float = 0.0
) -> Timings:
    """Run every function `warmup` times, then `repeats` rounds of one call each, in turn (a, b, c, a, b, c...).

    Interleaving makes a background load that comes and goes hit every contender alike: compare medians, or
    better the per-round ratios (`paired_ratio`). With `min_time`, one timing is the mean over as many calls as
    fit in that time (decided from the warm-up), for very short functions. Process CPU time is recorded too: with
    one thread it is barely affected by other processes (with several, it includes OpenMP's spinning threads).
    """
    calls: dict[str, int] = {}
    for name, function in functions.items():
        start = time.perf_counter()
        for _ in range(max(warmup, 1)):
            function()
        elapsed = (time.perf_counter() - start) / max(warmup, 1)
        calls[name] = max(1, int(min_time / elapsed)) if min_time and elapsed > 0 else 1
    wall: dict[str, list[float]] = {name: [] for name in functions}
    cpu: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(repeats):
        for name, function in functions.items():
            gc.collect()
            start, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(calls[name]):
                function()
            wall[name].append((time.perf_counter() - start) / calls[name])
            cpu[name].append((time.process_time() - start_cpu) / calls[name])
    return Timings(wall=wall, cpu=cpu)


def ablation_cpu_times(
    contenders: tuple[str, ...], use: Callable[[str], None], call: Callable[[str], None], repeats: int
) -> dict[str, list[float]]:
    """Process CPU seconds per round of `call(name)` for each contender, interleaved, after `use(name)` switched
    the model to that variant; `use(contenders[0])` (the model as shipped) is restored at the end."""

    def variant(name: str) -> Callable[[], None]:
        def run() -> None:
            use(name)
            call(name)

        return run

    try:
        return interleaved_times({name: variant(name) for name in contenders}, repeats=repeats, warmup=1).cpu
    finally:
        use(contenders[0])


def training_step_ablation(
    size: str,
    precision: str,
    contenders: tuple[str, ...],
    use: Callable[[str], None],
    repeats: int,
    batch_size: int,
) -> dict[str, Any]:
    """Process CPU time of our training step (`batch_size` x (16 + 16) tokens, forward with labels, backward,
    fused AdamW; the attention implementation of `training_attention(precision)`) under each contender
    (`contenders[0]`: the model as shipped), interleaved; `ratios[name]` is the median over rounds of that
    contender's time / ours (> 1: the shipped model is faster)."""
    name = f"ours_{training_attention(precision)}"
    model = build_models(size, (name,))[name]
    step = training_step(model, make_batch(batch_size, 16, 16, model.config.vocab_size, seed=1), precision == "bf16")
    before = loadavg()
    times = ablation_cpu_times(contenders, use, lambda contender: step(), repeats)
    return {
        "size": size,
        "precision": precision,
        "attention": training_attention(precision),
        "cpu_seconds": {name: statistics.median(times[name]) for name in contenders},
        "ratios": {name: paired_ratio(times[name], times[contenders[0]]) for name in contenders[1:]},
        "loadavg_before": before,
        "loadavg_after": loadavg(),
    }


def run_training_step_ablations(
    name: str, contenders: tuple[str, ...], use: Callable[[str], None], args: argparse.Namespace
) -> dict[str, Any]:
    """A whole ablation suite: `training_step_ablation` for small and base dims (small only with `--quick`), fp32
    and bf16; returns the payload (machine, settings, rows) that `save_and_print` writes."""
    settings = {
        "repeats": 2 if args.quick else 7,
        "batch": 16 if args.quick else 64,
        "sizes": ["small"] if args.quick else ["small", "base"],
    }
    payload: dict[str, Any] = {"benchmark": name, "machine": machine_info(), "settings": settings, "rows": []}
    for size in settings["sizes"]:
        for precision in ("fp32", "bf16"):
            print(f"{size}, {precision} ... (load {loadavg()})", flush=True)
            row = training_step_ablation(size, precision, contenders, use, settings["repeats"], settings["batch"])
            payload["rows"].append(row)
    return payload


def paired_ratio(numerator: list[float], denominator: list[float]) -> float:
    """Median over rounds of numerator[i] / denominator[i]: robust to load that changes between rounds."""
    return statistics.median(a / b for a, b in zip(numerator, denominator, strict=True))


# ----------------------------------------------------------------------------------------------------------------
# Machine and results
# ----------------------------------------------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    """CPU model, core count, threads torch uses, library versions, date and the load average."""
    cpu_model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
        flags = next(
            (line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags")), ""
        ).split()
    except OSError:
        flags = []
    isa = [flag for flag in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if flag in flags]
    return {
        "cpu": cpu_model,
        "isa": isa,
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "loadavg": loadavg(),
    }


def write_json(name: str, payload: dict[str, Any]) -> Path:
    """Write `benchmarks/results/<name>.json` (indented; an absolute `name` puts the file there instead, as tests
    do) and return its path."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")
    return path


def benchmark_arguments(
    parser: argparse.ArgumentParser, default_json: str, quick_help: str, argv: list[str] | None
) -> argparse.Namespace:
    """Add the options every suite shares (`--quick`, `--threads`, `--json`), parse, and apply `--threads`."""
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--json", default=default_json, help="results name: benchmarks/results/<name>.json")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    return args


def save_and_print(name: str, payload: dict[str, Any], table: str) -> Path:
    """Write the results JSON, print the suite's table and where the JSON went."""
    path = write_json(name, payload)
    print(table)
    print(f"\nwrote {path}")
    return path
