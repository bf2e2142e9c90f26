"""The two patching results of the tiny model the patching tests read (built once per test file)."""

from __future__ import annotations

import pytest

from tests.vaswani_inspect.patching.hand_hooks import CLEAN, CORRUPTED, TARGET
from vaswani_inspect import patch_activations


@pytest.fixture(scope="module")
def exhaustive(model, tokenizer):
    return patch_activations(model, tokenizer, CLEAN, CORRUPTED, direction="es-en", target=TARGET, batch_size=3)


@pytest.fixture(scope="module")
def attribution(model, tokenizer):
    return patch_activations(model, tokenizer, CLEAN, CORRUPTED, direction="es-en", target=TARGET, method="attribution")
