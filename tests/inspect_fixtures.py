"""Fixtures of the vaswani_inspect tests, registered for all tests by ``pytest_plugins`` in tests/conftest.py: the
tiny tokenizer, a tiny random model and the record of one teacher-forced sentence. They are module-scoped (each
test module that asks for them gets its own) and a module may define its own fixture of the same name instead."""

import pytest


@pytest.fixture(scope="module")
def tokenizer():
    from vaswani_inspect.testing import tiny_tokenizer

    return tiny_tokenizer()


@pytest.fixture(scope="module")
def model(tokenizer):
    from vaswani_inspect.testing import tiny_model

    return tiny_model(len(tokenizer))


@pytest.fixture(scope="module")
def record(model, tokenizer):
    from vaswani_inspect import extract

    return extract(model, tokenizer, "el gato negro", "the black cat", direction="es-en")
