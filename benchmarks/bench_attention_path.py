"""Which attention path our CPU training step takes, by dtype: ablation, side by side.

    python benchmarks/bench_attention_path.py --threads 1

Models configured with `attn_implementation="sdpa"` (the default) train on the CPU with PyTorch's sdpa in float32
and with two matmuls and a softmax (`eager_attention_forward`) in bf16/fp16, whose sdpa backward is slow for
sentence-length inputs. Contenders, interleaved in one process on the same model and batch (the training step of
`bench_vs_marian.py`: 64 x (16 + 16) tokens, forward with labels, backward, fused AdamW):

* ``ours``: that rule;
* ``math_always``: the math path in every dtype (the rule before float32 training moved to sdpa);
* ``sdpa_always``: sdpa in every dtype.

Each ratio is contender time / ours (> 1: ours is faster), from the process CPU time of each step (one thread).
In each precision one contender is the same path as ours, so its ratio measures the noise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_common import benchmark_arguments, run_training_step_ablations, save_and_print  # noqa: E402

from hf_vaswani import modeling_vaswani  # noqa: E402

CONTENDERS = ("ours", "math_always", "sdpa_always")
_OURS = modeling_vaswani.VaswaniAttention._attention_function


def _math_always(self: Any, kwargs: dict, query: Any) -> Any:
    return modeling_vaswani.eager_attention_forward


def _sdpa_always(self: Any, kwargs: dict, query: Any) -> Any:
    return ALL_ATTENTION_FUNCTIONS.get_interface("sdpa", modeling_vaswani.eager_attention_forward)


def _use(contender: str) -> None:
    choice = {"math_always": _math_always, "sdpa_always": _sdpa_always}.get(contender, _OURS)
    modeling_vaswani.VaswaniAttention._attention_function = choice


def format_table(payload: dict[str, Any]) -> str:
    settings = payload["settings"]
    lines = [
        f"Training step (fwd + bwd + AdamW), {settings['batch']} sentences x (16 + 16) tokens, process CPU time "
        f"(median of {settings['repeats']} interleaved rounds); ratio = contender / ours",
        "",
        "| dims | precision | ours ms | math path always ms (ratio) | sdpa always ms (ratio) | load before → after |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for row in payload["rows"]:
        cpu, ratio = row["cpu_seconds"], row["ratios"]
        lines.append(
            f"| {row['size']} | {row['precision']} | {cpu['ours'] * 1e3:.0f} | "
            f"{cpu['math_always'] * 1e3:.0f} ({ratio['math_always']:.2f}) | "
            f"{cpu['sdpa_always'] * 1e3:.0f} ({ratio['sdpa_always']:.2f}) | "
            f"{row['loadavg_before'][0]:.1f} → {row['loadavg_after'][0]:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args = benchmark_arguments(parser, "attention_path", "small dims, 2 rounds, 16 sentences (development)", argv)
    payload = run_training_step_ablations("attention_path", CONTENDERS, _use, args)
    save_and_print(args.json, payload, format_table(payload))
    return payload


if __name__ == "__main__":
    main()
