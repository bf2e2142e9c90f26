"""Gradient attributions through Captum: "saliency", "input_x_gradient", "integrated_gradients".

What is explained: for each predicted target piece (row t, `vaswani_inspect.attribution.pooling`), the
log-probability the model gives it, log p(y_{t+1} | source, y_0..y_t), teacher-forced on the record's target. The
inputs are the token embeddings the model reads (`inputs_embeds`: the source's AND the target prefix's, scaled as
the model scales them; the positional encodings are added inside the model and are not attributed), so every
method also says how much of each prediction comes from the source versus the prefix (`source_shares`).

* saliency (Simonyan et al. 2014; Ding et al. 2019 for NMT): the gradient d log p / d e_i of each token embedding;
* input x gradient (Shrikumar et al. 2016): e_i * d log p / d e_i;
* integrated gradients (Sundararajan et al. 2017): (e_i - e'_i) * the integral over alpha in [0, 1] of the gradient
  at e' + alpha (e - e'), with the all-zero baseline e' (Captum's and inseq's default: the model then reads the
  positional encodings alone) for the source and the prefix together, by Captum's Gauss-Legendre quadrature with
  `n_steps` nodes. Completeness: the sum of a row's attributions equals log p(x) - log p(baseline) up to the
  quadrature error, reported per row in `details["completeness_error"]`.

A token's score is the L2 norm of its attribution vector over the embedding dimensions (inseq's default reduction
too): a non-negative magnitude, what pooling and link reading need; the signed sums are kept for the completeness
check (`embedding_attributions`).

**Speed.** Every predicted piece t is explained at once, and Captum does the method (interpolation, quadrature,
multiplying by the input): what is written here is only Captum's *gradient function*, for the one structure
Captum cannot see. Captum asks for the gradient of each batch row's output, one batch row per target piece (per
piece and interpolation step for integrated gradients); but every piece of one step reads the *same* point (the
source and the whole prefix, interpolated alike; causality keeps a piece from reading the prefix after it). So the
model runs forward once per point (`n_steps` batch rows, not pieces x steps) and the graph is walked backward once
per piece (`_SharedPointGradients`): the same gradients, about a third of the work of Captum's own function, which
runs the forward of every batch row and a backward of their sum. Pieces are explained in calls of
`batch_size // steps` pieces, each decoding only the prefix its last piece reads; only the positions explained go
through the output layer. Attention runs the eager path (plain matmuls: PyTorch's fused attention has a slow
backward on the CPU, much slower in bfloat16). `precision="bfloat16"` runs the model under autocast: on a CPU with
bfloat16 matmuls (AVX-512 BF16, AMX) integrated gradients take about 2.3x less time than in float32, attributions
within about 2 % of float32's (`benchmarks/bench_attribution.py` measures both); the default is float32.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..record import AttentionRecord
from .checks import check_positive_int, check_step_cost
from .inputs import embeddings, eval_mode, log_probabilities, point_log_probabilities, record_inputs

#: The Captum algorithms `embedding_attributions` runs (each the method of that name).
CAPTUM_METHODS = ("saliency", "input_x_gradient", "integrated_gradients")
#: Every registered method that reads gradients (`vaswani_inspect.attribution.GRADIENT_METHODS`).
GRADIENT_METHODS: tuple[str, ...]
#: Integrated gradients' quadrature nodes by default: Captum's (and inseq's) default, 50 Gauss-Legendre nodes.
#: Fewer are not safe on this model: on the shipped checkpoint the completeness error of a row is often above one
#: nat at 16 nodes, about 0.1 to 1 at 50, below 0.3 at 128 (the path from the zero baseline is far from linear).
DEFAULT_STEPS = 50
#: Target pieces x interpolation steps explained per call (bounds the memory the backward graphs hold).
DEFAULT_BATCH_SIZE = 512
#: The `precision` option's values: the model's own dtype, or autocast to bfloat16 (fast on CPUs with bf16 matmuls).
PRECISIONS = ("float32", "bfloat16")


@dataclass(frozen=True)
class EmbeddingAttributions:
    """Per-dimension attributions of one record: `source` (T - 1, S, d), `prefix` (T - 1, T - 1, d) (zero for the
    decoder inputs after row t), and for integrated gradients `completeness_error` (T - 1,): the sum of a row's
    attributions minus (log p(input) - log p(baseline))."""

    source: np.ndarray
    prefix: np.ndarray
    completeness_error: np.ndarray | None = None


def _captum_method(name: str, forward: Any) -> Any:
    try:
        from captum.attr import InputXGradient, IntegratedGradients, Saliency
    except ImportError as error:  # pragma: no cover - captum is in the [explain] extra
        raise ImportError(
            f"The {name!r} attribution needs captum: pip install 'hf-vaswani[explain]' (captum and inseq)."
        ) from error
    classes = {"saliency": Saliency, "input_x_gradient": InputXGradient, "integrated_gradients": IntegratedGradients}
    return classes[name](forward)


class _SharedPointGradients:
    """Captum's gradient function (`explainer.gradient_func`) for batches whose rows come in groups of `pieces`
    consecutive rows at the same point, one row per target piece (Captum lays integrated gradients' steps out
    step after step, each step the whole batch): the model runs once per point, `point_forward(*points)` giving
    (points, pieces), and one backward per piece gives that piece's rows. Captum's own function would run every
    row forward and take the gradient of their sum (module docstring, "Speed")."""

    def __init__(self, pieces: int, point_forward: Callable[..., torch.Tensor]):
        self.pieces = pieces
        self.point_forward = point_forward

    def __call__(self, forward_fn: Any, inputs: tuple[torch.Tensor, ...], *args: Any, **kwargs: Any):
        points = tuple(self._points(x).detach().requires_grad_() for x in inputs)
        outputs = self.point_forward(*points)  # (points, pieces)
        gradients = [torch.empty_like(x) for x in inputs]
        for piece in range(self.pieces):
            found = torch.autograd.grad(outputs[:, piece].sum(), points, retain_graph=piece < self.pieces - 1)
            for gradient, part in zip(gradients, found):
                gradient[piece :: self.pieces] = part
        return tuple(gradients)

    def _points(self, rows: torch.Tensor) -> torch.Tensor:
        grouped = rows.reshape(-1, self.pieces, *rows.shape[1:])
        points = grouped[:, 0]
        if not torch.equal(grouped, points[:, None].expand_as(grouped)):
            # The layout this class relies on; a Captum that laid rows out otherwise must not give wrong numbers.
            raise RuntimeError("Captum's batch rows are not grouped by point as expected: cannot share forwards.")
        return points


def _to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """`tensor` as a numpy array; half-precision tensors (a bfloat16 model's gradients) as float32, which numpy
    has (it has no bfloat16)."""
    tensor = tensor.detach()
    if tensor.dtype in (torch.float16, torch.bfloat16):
        tensor = tensor.float()
    return tensor.cpu().numpy()


@contextlib.contextmanager
def _precision(precision: str, device: torch.device) -> Iterator[None]:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}.")
    if precision == "float32":  # the model as it is (an autocast the caller entered stays theirs)
        yield
        return
    with torch.autocast(device.type, dtype=torch.bfloat16):
        yield


def embedding_attributions(
    model: Any,
    record: AttentionRecord,
    method: str = "integrated_gradients",
    *,
    n_steps: int = DEFAULT_STEPS,
    batch_size: int = DEFAULT_BATCH_SIZE,
    precision: str = "float32",
    labels: Sequence[int] | None = None,
    contrast: Sequence[int] | None = None,
) -> EmbeddingAttributions:
    """Captum's `method` on the source and prefix token embeddings, for every predicted piece of `record` at once.

    Saliency gives the raw (signed) gradient, input x gradient and integrated gradients their attributions; see
    the module docstring. `n_steps` is used by integrated gradients only; `batch_size` bounds the batch rows of
    one call (a call explains `max(1, batch_size // steps)` target pieces); `precision` is "float32" (the model's
    dtype) or "bfloat16" (autocast; see the module docstring).

    `labels` (one piece id per row, T - 1) are the pieces whose log-probabilities are explained (default: the
    record's own next pieces, ``target_ids[1:]``); `contrast` (a foil piece per row) explains log p(label) -
    log p(foil) instead, both from the record's prefix, and rows where the two pieces agree get zero attributions
    (the contrastive attribution of Yin & Neubig 2022, inseq's ``contrast_prob_diff``): Captum attributes that
    function as it attributes any other."""
    if method not in CAPTUM_METHODS:
        raise ValueError(f"Unknown gradient method {method!r}: choose one of {', '.join(CAPTUM_METHODS)}.")
    n_steps, batch_size = check_positive_int("n_steps", n_steps), check_positive_int("batch_size", batch_size)
    if method == "integrated_gradients":
        check_step_cost(n_steps, record)
    inputs = record_inputs(model, record)
    device = inputs.labels.device
    row_labels = inputs.labels if labels is None else _row_pieces("labels", labels, inputs.rows, device)
    foils = None if contrast is None else _row_pieces("contrast", contrast, inputs.rows, device)
    steps = n_steps if method == "integrated_gradients" else 1
    per_call = max(1, batch_size // steps)
    source_parts, prefix_parts, errors = [], [], []
    with eval_mode(model), _precision(precision, device):
        source_embeds, target_embeds = embeddings(model, inputs)

        def forward(
            source: torch.Tensor,
            target: torch.Tensor,
            positions: torch.Tensor,
            labels: torch.Tensor,
            foils: torch.Tensor | None = None,
        ):
            return log_probabilities(model, source, target, positions, labels, foils)

        explainer = _captum_method(method, forward)
        for start in range(0, inputs.rows, per_call):
            positions = torch.arange(start, min(start + per_call, inputs.rows), device=device)
            count = len(positions)
            labels = row_labels[positions]
            chunk_foils = None if foils is None else foils[positions]
            point_forward = functools.partial(
                point_log_probabilities, model, positions=positions, labels=labels, contrast=chunk_foils
            )
            explainer.gradient_func = _SharedPointGradients(count, point_forward)
            # Only the prefix the chunk's last row reads is fed in (the rest cannot change its outputs).
            inputs_pair = (
                source_embeds.expand(count, -1, -1).clone().requires_grad_(),
                target_embeds[:, : int(positions.max()) + 1].expand(count, -1, -1).clone().requires_grad_(),
            )
            extra = (positions, labels) if chunk_foils is None else (positions, labels, chunk_foils)
            if method == "integrated_gradients":
                attributions, delta = explainer.attribute(
                    inputs_pair,
                    baselines=tuple(torch.zeros_like(x) for x in inputs_pair),
                    additional_forward_args=extra,
                    n_steps=n_steps,
                    method="gausslegendre",
                    return_convergence_delta=True,
                )
                errors.append(_to_numpy(delta))
            elif method == "saliency":
                attributions = explainer.attribute(inputs_pair, additional_forward_args=extra, abs=False)
            else:
                attributions = explainer.attribute(inputs_pair, additional_forward_args=extra)
            source_parts.append(_to_numpy(attributions[0]))
            prefix = np.zeros((count, inputs.rows, source_embeds.shape[-1]), dtype=np.float32)
            width = attributions[1].shape[1]
            prefix[:, :width] = _to_numpy(attributions[1])
            prefix_parts.append(prefix)
    prefix = np.concatenate(prefix_parts).astype(np.float64)
    prefix *= np.tril(np.ones((inputs.rows, inputs.rows)))[..., None]  # causality, exactly
    return EmbeddingAttributions(
        source=np.concatenate(source_parts).astype(np.float64),
        prefix=prefix,
        completeness_error=np.concatenate(errors).astype(np.float64) if errors else None,
    )


def _row_pieces(name: str, pieces: Sequence[int], rows: int, device: torch.device) -> torch.Tensor:
    if len(pieces) != rows:
        raise ValueError(f"{name} must give one piece per predicted row ({rows}), got {len(pieces)}.")
    return torch.tensor(list(pieces), dtype=torch.long, device=device)


def gradient_scores(
    model: Any,
    record: AttentionRecord,
    method: str,
    *,
    n_steps: int = DEFAULT_STEPS,
    batch_size: int = DEFAULT_BATCH_SIZE,
    precision: str = "float32",
    contrast: Sequence[int] | None = None,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any], dict[str, Any]]:
    """(source token scores (T - 1, S), prefix token scores (T - 1, T - 1), settings, details): the L2 norms of
    `embedding_attributions` over the embedding dimensions. `contrast`: a foil's decoder ids (the layout of
    ``record.target_ids``, the same length), explained as in `embedding_attributions` (its pieces, ``[1:]``)."""
    foils = None if contrast is None else list(contrast)[1:]
    found = embedding_attributions(
        model, record, method, n_steps=n_steps, batch_size=batch_size, precision=precision, contrast=foils
    )
    settings: dict[str, Any] = {
        "inputs": "token embeddings (source and target prefix)",
        "score": "L2 norm",
        "precision": precision,
    }
    details: dict[str, Any] = {}
    if foils is not None:
        rows = [t for t, (label, foil) in enumerate(zip(record.target_ids[1:], foils)) if label != foil]
        settings["explains"] = "log p(target piece) - log p(foil piece), from the target's prefix"
        details.update(contrast_ids=list(contrast), contrast_rows=rows)
    if method == "integrated_gradients":
        settings.update(n_steps=n_steps, quadrature="gausslegendre", baseline="zero embeddings")
        details["completeness_error"] = found.completeness_error.tolist()
    return np.linalg.norm(found.source, axis=-1), np.linalg.norm(found.prefix, axis=-1), settings, details


def __getattr__(name: str) -> tuple[str, ...]:
    # `GRADIENT_METHODS` is every registered method that reads gradients, read when asked: this module is imported
    # while the registry is filled.
    if name == "GRADIENT_METHODS":
        from .registry import method_names

        return method_names(reads_gradients=True)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CAPTUM_METHODS",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_STEPS",
    "GRADIENT_METHODS",
    "PRECISIONS",
    "EmbeddingAttributions",
    "embedding_attributions",
]
