"""Guided alignment (hf_vaswani.training.guided_alignment): targets, the collator, the captured head and the loss."""

import pytest
import torch
from transformers import DataCollatorForSeq2Seq

from hf_vaswani import VaswaniForConditionalGeneration
from hf_vaswani.training.guided_alignment import (
    AttentionCapture,
    GuidedAlignmentCollator,
    alignment_targets,
    guided_alignment_loss,
)
from tests.helpers import tiny_config


def test_targets_are_uniform_over_linked_source_tokens_and_zero_without_links():
    targets = alignment_targets([[1, 0, 2, 0, 3, 1], []], target_length=3, source_length=5)
    assert targets.shape == (2, 3, 5)
    torch.testing.assert_close(targets[0, 0], torch.tensor([0.0, 0.5, 0.5, 0.0, 0.0]))
    torch.testing.assert_close(targets[0, 1], torch.tensor([0.0, 0.0, 0.0, 1.0, 0.0]))
    assert targets[0, 2].sum() == 0 and targets[1].sum() == 0


def test_loss_is_the_cross_entropy_over_supervised_rows():
    weights = torch.tensor([[[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]]])
    targets = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]])  # only the first row is supervised
    torch.testing.assert_close(guided_alignment_loss(weights, targets), -torch.log(torch.tensor(0.5)))
    assert guided_alignment_loss(weights, torch.zeros_like(targets)) == 0


def test_collator_pads_the_batch_and_adds_targets():
    class Tokenizer:  # what DataCollatorForSeq2Seq asks of a tokenizer, for ids that are already there
        pad_token_id, padding_side, model_input_names = 0, "right", ["input_ids", "attention_mask"]

        def pad(self, features, **kwargs):
            length = max(len(f["input_ids"]) for f in features)
            padded = {key: [f[key] + [0] * (length - len(f[key])) for f in features] for key in features[0]}
            return {key: torch.tensor(value) for key, value in padded.items()}

    features = [
        {"input_ids": [4, 7, 8, 2], "attention_mask": [1, 1, 1, 1], "labels": [9, 10, 2], "alignment": [1, 0, 2, 1]},
        {"input_ids": [4, 7, 2], "attention_mask": [1, 1, 1], "labels": [9, 2], "alignment": []},
    ]
    batch = GuidedAlignmentCollator(DataCollatorForSeq2Seq(Tokenizer()))(features)
    assert batch["alignment_targets"].shape == (2, 3, 4)
    assert batch["alignment_targets"][0, 0, 1] == 1 and batch["alignment_targets"][1].sum() == 0
    assert "alignment" not in batch


@pytest.mark.slow
def test_capture_needs_eager_attention_and_training_it_aligns_the_head():
    torch.manual_seed(0)
    model = VaswaniForConditionalGeneration(tiny_config(dropout=0.0))
    attention = model.model.decoder.layers[1].cross_attn
    capture = AttentionCapture(attention, head=1)
    input_ids = torch.randint(6, 97, (4, 6))
    labels = torch.randint(6, 97, (4, 6))
    # Label position t of every sentence is linked to source token 5 - t: an anti-diagonal no fresh head follows.
    targets = alignment_targets([[s for t in range(6) for s in (5 - t, t)]] * 4, 6, 6)
    with pytest.raises(RuntimeError, match="eager"):
        model(input_ids=input_ids, labels=labels)
    model.set_attn_implementation("eager")
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(60):
        optimizer.zero_grad()
        translation = model(input_ids=input_ids, labels=labels).loss
        alignment = guided_alignment_loss(capture.pop(), targets)
        (translation + alignment).backward()
        optimizer.step()
        losses.append(alignment.item())
    assert losses[-1] < 0.2 * losses[0]
    model(input_ids=input_ids, labels=labels)
    assert torch.equal(capture.pop().argmax(-1)[0], torch.arange(5, -1, -1))
    capture.remove()
    model(input_ids=input_ids, labels=labels)
    with pytest.raises(RuntimeError, match="No attention weights"):
        capture.pop()
