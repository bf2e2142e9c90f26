"""Two training kernels of the Vaswani model that run faster on the CPU: dropout and the label-smoothed loss.

Both compute what a plain PyTorch call computes, and fall back to that call on accelerators and under
`torch.compile`/tracing, where the plain call is already fast (or the compiler fuses it):

- `dropout(x, p, training)` is `F.dropout(x, p, training)` (sec. 5.4), with a cheaper random mask on the CPU.
- `label_smoothed_cross_entropy(logits, labels, eps, n)` is `F.cross_entropy(logits, labels,
  label_smoothing=eps, ignore_index=-100, reduction="sum") / n` (sec. 5.4), with the gradient written by the
  forward pass on the CPU.

Why they exist, and what they gain in a training step, is measured in docs/benchmarks.md; the tests check them
against the plain calls. This module imports only `torch`, so that `save_pretrained` can ship it next to
`modeling_vaswani.py` for `trust_remote_code`.
"""

from typing import Any

import torch
from torch.nn import functional as F


def _compiling() -> bool:
    return torch.compiler.is_compiling() or torch.jit.is_tracing()


# --------------------------------------------------------------------------------------------------------------
# Dropout
# --------------------------------------------------------------------------------------------------------------


def dropout(hidden_states: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Inverted dropout: zero each element with probability p, scale the others by 1 / (1 - p).

    PyTorch's CPU dropout draws one 32-bit random number per element, which is most of its cost. This draws one
    per *two* elements from the same generator (so `torch.manual_seed` and activation checkpointing replay it) and
    keeps an element when 15 of its bits are >= round(p * 2^15). The drop probability is therefore rounded to a
    multiple of 2^-15 (0.1 becomes 0.100006), and the scale uses that exact value.
    """
    if not training or p == 0.0:
        return hidden_states
    threshold = round(p * 32768)
    if hidden_states.device.type != "cpu" or not 0 < threshold < 32768 or _compiling():
        return F.dropout(hidden_states, p=p, training=True)
    count = hidden_states.numel()
    pairs = torch.empty((count + 1) // 2, dtype=torch.int32).random_()  # 31 random bits each
    bits = pairs.view(torch.int16)[:count].view(hidden_states.shape).bitwise_and_(0x7FFF)
    keep = (bits >= threshold).to(hidden_states.dtype).mul_(32768 / (32768 - threshold))
    return hidden_states * keep


# --------------------------------------------------------------------------------------------------------------
# Label-smoothed cross-entropy
# --------------------------------------------------------------------------------------------------------------


def label_smoothed_cross_entropy(
    logits: torch.Tensor,
    labels: torch.Tensor,
    smoothing: float,
    num_items_in_batch: int | torch.Tensor | None = None,
) -> torch.Tensor:
    """Cross-entropy against (1 - eps) one-hot + eps uniform, summed over the tokens whose label is not -100 and
    divided by `num_items_in_batch` (default: the number of such tokens). Computed in float32.

    `Trainer` passes the token count of the whole accumulated batch as `num_items_in_batch`, so that k
    micro-batches give the gradient of one batch k times larger.
    """
    logits = logits.reshape(-1, logits.shape[-1])
    labels = labels.reshape(-1).to(logits.device)
    if num_items_in_batch is None:
        num_items_in_batch = (labels != -100).sum()
    divisor = torch.as_tensor(num_items_in_batch, dtype=torch.float32, device=logits.device)
    if logits.device.type != "cpu" or _compiling():
        loss = F.cross_entropy(logits.float(), labels, label_smoothing=smoothing, reduction="sum")
        return loss / divisor
    return _LabelSmoothedCrossEntropy.apply(logits, labels, float(smoothing), divisor, torch.is_grad_enabled())


class _LabelSmoothedCrossEntropy(torch.autograd.Function):
    """The loss above with a backward that has nothing left to compute.

    Autograd through `F.cross_entropy` builds a dense (tokens, V) gradient for the smoothing term and then runs the
    log-softmax backward over it: with a vocabulary of thousands that is most of the loss's cost. The gradient is
    known in closed form, p - (1 - eps) one-hot(y) - eps / V on the tokens that count, so the forward writes it,
    a chunk of rows at a time while that chunk's log-probabilities are in the core's cache, and the backward hands
    it out (scaled, when the incoming gradient is not 1).
    """

    @staticmethod
    def forward(
        ctx: Any, logits: torch.Tensor, labels: torch.Tensor, smoothing: float, divisor: torch.Tensor, grad: bool
    ) -> torch.Tensor:
        valid = labels != -100
        targets = labels.masked_fill(~valid, 0)
        scale = torch.where(valid, 1.0 / divisor, 0.0).to(torch.float32)[:, None]
        # forward() itself always runs with grad mode off, so the caller says whether a gradient is wanted
        with_gradient = grad and ctx.needs_input_grad[0]
        picked, summed, gradient = _loss_chunks(logits, targets, scale, smoothing, with_gradient)
        row_loss = -(1.0 - smoothing) * picked - (smoothing / logits.shape[1]) * summed
        ctx.save_for_backward(logits, targets, scale)
        ctx.smoothing, ctx.gradient = smoothing, gradient
        return torch.where(valid, row_loss, 0.0).sum() / divisor

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, None, None, None, None]:
        gradient, ctx.gradient = ctx.gradient, None  # a second backward through the graph must recompute it
        if gradient is None:
            logits, targets, scale = ctx.saved_tensors
            scale = scale * grad_output.to(torch.float32)
            gradient = _loss_chunks(logits, targets, scale, ctx.smoothing, True)[2]
        elif grad_output.item() != 1.0:
            gradient.mul_(grad_output.to(gradient.dtype))  # nobody else holds it yet
        return gradient, None, None, None, None


def _loss_chunks(
    logits: torch.Tensor, targets: torch.Tensor, scale: torch.Tensor, smoothing: float, with_gradient: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """log p_y and sum_j log p_j of every row (float32), and, `with_gradient`, the gradient of
    sum_rows scale_row * loss_row with respect to the logits: scale_row * (p - eps / V - (1 - eps) one-hot(y))."""
    rows, vocab = logits.shape
    chunk_rows = max(16, (1 << 18) // max(vocab, 1))  # ~1 MB of float32: stays in cache between the passes
    float32 = {"dtype": torch.float32, "device": logits.device}
    picked, summed = torch.empty(rows, 1, **float32), torch.empty(rows, **float32)
    gradient = torch.empty_like(logits) if with_gradient else None
    cast = logits.dtype != torch.float32
    work = torch.empty(min(chunk_rows, rows), vocab, **float32)
    log_probs = torch.empty_like(work)
    for start in range(0, rows, chunk_rows):
        part = slice(start, start + chunk_rows)
        chunk = logits[part]
        if cast:
            chunk = work[: chunk.shape[0]].copy_(chunk)
        chunk_log_probs = torch.log_softmax(chunk, dim=1, out=log_probs[: chunk.shape[0]])
        torch.gather(chunk_log_probs, 1, targets[part, None], out=picked[part])
        torch.sum(chunk_log_probs, dim=1, out=summed[part])
        if gradient is None:
            continue
        chunk_gradient = chunk if cast else gradient[part]  # the float32 copy is not needed any more: reuse it
        torch.exp(chunk_log_probs, out=chunk_gradient).mul_(scale[part]).sub_(scale[part] * (smoothing / vocab))
        chunk_gradient.scatter_add_(1, targets[part, None], scale[part] * -(1.0 - smoothing))
        if cast:
            gradient[part].copy_(chunk_gradient)
    return picked.squeeze(1), summed, gradient
