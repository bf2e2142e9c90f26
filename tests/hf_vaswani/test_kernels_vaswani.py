"""The two CPU training kernels (`hf_vaswani.kernels_vaswani`) against the plain PyTorch calls they replace."""

import pytest
import torch
from torch import nn

from hf_vaswani import kernels_vaswani
from hf_vaswani.kernels_vaswani import dropout, label_smoothed_cross_entropy

# ----------------------------------------------------------------------------------------------------------------
# Dropout: F.dropout's distribution, with a cheaper mask
# ----------------------------------------------------------------------------------------------------------------


def test_dropout_keeps_the_expected_fraction_scales_it_and_replays_with_the_seed():
    x = torch.ones(400, 500)
    torch.manual_seed(1)
    y = dropout(x, 0.1, training=True)
    kept = y != 0
    p_effective = round(0.1 * 32768) / 32768
    assert abs(kept.float().mean().item() - (1 - p_effective)) < 0.003  # 200k draws: ~4 sigma
    torch.testing.assert_close(y[kept], torch.full_like(y[kept], 1 / (1 - p_effective)))
    assert abs(y.mean().item() - 1.0) < 0.004  # inverted dropout: the expectation is kept
    torch.manual_seed(1)
    assert torch.equal(dropout(x, 0.1, training=True), y)  # same generator, same mask
    assert not torch.equal(dropout(x, 0.1, training=True), y)
    # Neighbouring elements (two halves of one 32-bit draw) are independent: P(both dropped) ~ p^2.
    both_dropped = (~kept[:, 0::2] & ~kept[:, 1::2]).float().mean().item()
    assert abs(both_dropped - p_effective**2) < 0.003
    assert dropout(x, 0.1, training=False) is x and dropout(x, 0.0, training=True) is x
    odd = torch.ones(3, 5, 7, dtype=torch.bfloat16)  # odd element count, other dtype
    out = dropout(odd, 0.5, training=True)
    assert out.dtype == torch.bfloat16 and set(out.unique().tolist()) <= {0.0, 2.0}
    assert torch.equal(dropout(x, 1.0, training=True), torch.zeros_like(x))  # F.dropout's edge case


def test_dropout_gradient_is_the_mask_times_the_scale():
    x = torch.randn(64, 33, requires_grad=True)
    torch.manual_seed(5)
    y = dropout(x, 0.3, training=True)
    y.sum().backward()
    scale = 32768 / (32768 - round(0.3 * 32768))
    kept = y != 0  # (x has no exact zeros)
    torch.testing.assert_close(x.grad, kept.float() * scale)
    torch.testing.assert_close(y, x.detach() * kept * scale)
    assert 0.6 < kept.float().mean().item() < 0.8


# ----------------------------------------------------------------------------------------------------------------
# Label-smoothed loss: F.cross_entropy(label_smoothing=...)'s value and gradient, written by the forward
# ----------------------------------------------------------------------------------------------------------------


def test_label_smoothing_zero_is_plain_cross_entropy():
    logits = torch.randn(2, 3, 11)
    labels = torch.tensor([[1, 2, -100], [4, 5, 6]])
    expected = nn.functional.cross_entropy(logits.view(-1, 11), labels.view(-1), ignore_index=-100)
    torch.testing.assert_close(label_smoothed_cross_entropy(logits, labels, 0.0), expected)


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_label_smoothed_loss_and_gradient_equal_torch_cross_entropy(smoothing):
    """The hand-written backward gives the gradient autograd computes through F.cross_entropy (float32 math)."""
    generator = torch.Generator().manual_seed(2)
    logits = torch.randn(3, 4, 13, generator=generator, dtype=torch.float64) * 3
    labels = torch.randint(0, 13, (3, 4), generator=generator)
    labels[0, 2:] = -100
    ours_logits = logits.clone().requires_grad_(True)
    ours = label_smoothed_cross_entropy(ours_logits, labels, smoothing, num_items_in_batch=7)
    (ours * 1.7).backward()
    theirs_logits = logits.clone().requires_grad_(True)
    theirs = nn.functional.cross_entropy(
        theirs_logits.view(-1, 13), labels.view(-1), ignore_index=-100, label_smoothing=smoothing, reduction="sum"
    )
    (theirs / 7 * 1.7).backward()
    torch.testing.assert_close(ours.double(), theirs / 7, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(ours_logits.grad, theirs_logits.grad, atol=1e-7, rtol=1e-5)
    assert ours.dtype == torch.float32


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_label_smoothed_loss_in_several_chunks_equals_torch_cross_entropy(dtype):
    """A vocabulary of 2^15 makes the CPU loss work in chunks of 16 rows: 40 rows are two whole chunks and a part."""
    generator = torch.Generator().manual_seed(3)
    logits = (torch.randn(40, 1 << 15, generator=generator) * 4).to(dtype)
    labels = torch.randint(0, 1 << 15, (40,), generator=generator)
    labels[[3, 17, 39]] = -100
    ours_logits = logits.clone().requires_grad_(True)
    ours = label_smoothed_cross_entropy(ours_logits, labels, 0.1)
    ours.backward()  # the incoming gradient is 1: the gradient the forward wrote is handed out as it is
    theirs_logits = logits.float().requires_grad_(True)
    theirs = nn.functional.cross_entropy(theirs_logits, labels, ignore_index=-100, label_smoothing=0.1)
    theirs.backward()
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)
    assert ours_logits.grad.dtype == dtype
    tolerance = {"atol": 1e-6, "rtol": 1e-4} if dtype == torch.float32 else {"atol": 1e-6, "rtol": 1e-2}
    torch.testing.assert_close(ours_logits.grad.float(), theirs_logits.grad, **tolerance)
    assert ours_logits.grad[[3, 17, 39]].abs().max() == 0


def test_label_smoothed_loss_backward_twice_through_one_graph():
    """The first backward hands out the gradient the forward wrote; the second (retain_graph) recomputes it."""
    logits = torch.randn(6, 50, requires_grad=True)
    labels = torch.tensor([1, 2, -100, 4, 5, 49])
    loss = label_smoothed_cross_entropy(logits, labels, 0.1)
    loss.backward(retain_graph=True)
    first = logits.grad.clone()
    logits.grad.mul_(-1.0)  # whatever happens to the first gradient must not leak into the second
    (loss * 3.0).backward()
    torch.testing.assert_close(logits.grad, 2.0 * first, atol=1e-7, rtol=1e-6)


def test_label_smoothed_loss_writes_no_gradient_without_grad_mode(monkeypatch):
    calls = []
    original = kernels_vaswani._loss_chunks

    def recording(*args):
        calls.append(args[-1])
        return original(*args)

    monkeypatch.setattr(kernels_vaswani, "_loss_chunks", recording)
    logits = torch.randn(4, 11, requires_grad=True)
    labels = torch.tensor([1, 2, -100, 4])
    with torch.no_grad():
        without = label_smoothed_cross_entropy(logits, labels, 0.1)
    with_grad = label_smoothed_cross_entropy(logits, labels, 0.1)
    assert calls == [False, True]
    torch.testing.assert_close(without, with_grad.detach())


def test_label_smoothed_loss_with_every_label_ignored_has_a_zero_gradient():
    logits = torch.randn(2, 3, 11, requires_grad=True)
    loss = label_smoothed_cross_entropy(logits, torch.full((2, 3), -100), 0.1)
    loss.backward()
    assert torch.isnan(loss)  # as F.cross_entropy's mean over no token
    assert torch.equal(logits.grad, torch.zeros_like(logits))
