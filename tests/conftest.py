"""Fixtures shared by all tests: a tiny random model and a padded source batch, and the tiny tokenizer, model and
attention record of the vaswani_inspect tests (module-scoped: each test module that asks gets its own, and a module
may define its own fixture of the same name instead). What they are built from is in tests/helpers.py."""

import os
import tempfile
from collections import Counter

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The CTranslate2 exports the tests make go to a cache of this run, not the user's (subprocesses inherit it).
os.environ.setdefault("HF_VASWANI_CACHE", tempfile.mkdtemp(prefix="hf-vaswani-test-cache-"))

from hf_vaswani import VaswaniForConditionalGeneration  # noqa: E402
from tests.helpers import tiny_config  # noqa: E402


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A browser test is slow too (it starts chromium and waits on the page): the fast lane leaves it out.

    Then the files with the most slow tests go first, each file's tests kept together and in their order: the two
    workers (``--dist loadfile``) take files in this order, so the long files start early instead of leaving one
    worker to finish them alone at the end."""
    for item in items:
        if item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)
    slow_tests = Counter(_file_of(item) for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: -slow_tests[_file_of(item)])  # a stable sort: each file's order is kept


def _file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0]


@pytest.fixture
def tiny_model() -> VaswaniForConditionalGeneration:
    torch.manual_seed(0)
    return VaswaniForConditionalGeneration(tiny_config()).eval()


@pytest.fixture
def source_batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Two sources, the second one padded (pad id 0) after 5 tokens."""
    generator = torch.Generator().manual_seed(1)
    input_ids = torch.randint(6, 97, (2, 8), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 5:] = 0
    input_ids[0, -1] = 2
    input_ids[1, 4] = 2
    input_ids[1, 5:] = 0
    return input_ids, attention_mask


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


@pytest.fixture(scope="session")
def tiny_architecture_folders(tmp_path_factory):
    """{architecture: folder} of tiny random translation models of other architectures (Marian, NLLB, mBART-50,
    BART, T5), each with its real tokenizer format; built once per session by
    `vaswani_inspect.testing_models.write_tiny_architecture` (treat the folders as read-only)."""
    from vaswani_inspect.testing_models import ARCHITECTURES, write_tiny_architecture

    root = tmp_path_factory.mktemp("architectures")
    return {architecture: write_tiny_architecture(architecture, root / architecture) for architecture in ARCHITECTURES}


@pytest.fixture
def no_model(monkeypatch):
    """Fail the test if a command loads a model: the case must be refused before."""

    def load_translator(*args, **kwargs):
        raise AssertionError("the model was loaded before the bad input was refused")

    monkeypatch.setattr("hf_vaswani.inference.load_translator", load_translator)


@pytest.fixture(scope="module")
def shipped():
    """(model, tokenizer) of the shipped checkpoint, loaded as ``hf-vaswani translate`` loads it; one per test
    module (treat it as read-only)."""
    from hf_vaswani.inference import load_translator
    from tests.helpers import CHECKPOINT

    return load_translator(CHECKPOINT)
