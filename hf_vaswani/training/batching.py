"""Batches of sentence pairs of similar length (sec. 5.1): the length of each training example, which both
``sampling: group_by_length`` (Trainer's `LengthGroupedSampler`) and ``sampling: tokens`` (`TokenBatchSampler`)
group by."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import torch

__all__ = ["TokenBatchSampler", "example_lengths"]


def example_lengths(dataset: Any) -> list[int]:
    """The length of each row of a tokenized translation dataset: the longer of its source (``input_ids``) and
    target (``labels``), in tokens."""
    return [
        max(len(source), len(target)) for source, target in zip(dataset["input_ids"], dataset["labels"], strict=True)
    ]


class TokenBatchSampler(torch.utils.data.Sampler[list[int]]):
    """Batches of sentence pairs of similar length with a bounded number of tokens (sec. 5.1 of the paper:
    "batched together by approximate sequence length", ~25,000 source and ~25,000 target tokens per batch).

    `lengths[i]` is the length of pair i in tokens (the longer of its source and target). The pairs are sorted
    by length (ties in a random order drawn from `seed`) and cut, in that order, into batches holding as many
    pairs as fit in `max_tokens` PADDED tokens: ``len(batch) * max(lengths of the batch) <= max_tokens``, so
    each side of a batch, padded, has at most `max_tokens` tokens (a pair longer than `max_tokens` gets a batch
    of its own). The batches are made once; every epoch visits all of them in a new random order, drawn from
    `seed` and the epoch (`set_epoch`), so the order is reproducible, also when resuming, and the same in every
    process of a distributed run (accelerate then gives each process every world_size-th batch).
    """

    def __init__(self, lengths: Sequence[int], max_tokens: int, seed: int = 0):
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}.")
        self.lengths = [int(n) for n in lengths]
        if not self.lengths:
            raise ValueError("TokenBatchSampler needs at least one example.")
        self.max_tokens = max_tokens
        self.seed = int(seed)
        self.epoch = 0
        ties = torch.randperm(len(self.lengths), generator=torch.Generator().manual_seed(self.seed)).tolist()
        order = sorted(range(len(self.lengths)), key=lambda i: (self.lengths[i], ties[i]))
        self.batches: list[list[int]] = []
        current: list[int] = []
        longest = 0
        for index in order:
            length = self.lengths[index]
            if current and max(longest, length) * (len(current) + 1) > max_tokens:
                self.batches.append(current)
                current, longest = [], 0
            current.append(index)
            longest = max(longest, length)
        self.batches.append(current)

    def set_epoch(self, epoch: int) -> None:
        """Choose the order of the batches of epoch `epoch` (called by `Trainer` at the start of each epoch)."""
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator[list[int]]:
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch + 1)
        for batch in torch.randperm(len(self.batches), generator=generator).tolist():
            yield list(self.batches[batch])
