"""One `Architecture` entry (`hf_vaswani.architectures`) is all a new architecture adds besides its tiny model: a
dummy one, registered in the test and removed afterwards, is read by `architecture_of` and the attention helpers,
the demo's names and its CTranslate2 choice, the CTranslate2 backend's model types, the model types compare-bert
takes and the tiny-model registry; before it is registered, and once it is removed, none of them knows it."""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from hf_vaswani import architectures
from hf_vaswani.architectures import Architecture, register_architecture
from hf_vaswani.backends import CTRANSLATE2_MODEL_TYPES, ctranslate2_model_type
from tests.helpers import ROOT
from vaswani_demo.models import _known_architecture, architecture_name, translation_backend
from vaswani_demo.settings import ARCHITECTURE_NAMES
from vaswani_inspect import testing_models
from vaswani_inspect.architectures import ARCHITECTURES, UnsupportedModelError, architecture_of, head_counts
from vaswani_inspect.compare.models import OUR_MODEL_TYPES, our_model_problem
from vaswani_inspect.loading import model_type_of

DUMMY = Architecture(
    "dummy",
    ("dummy_mt",),
    display_name="Dummy MT",
    layers=("blocks", "blocks"),
    modules=("attend", "attend", "look_back"),
    projections=("wq", "wk", "wv", "wo"),
    heads="n_heads",
    ctranslate2=True,
    direction_schemes=("one_direction",),
)


class _Attention(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wq, self.wk, self.wv, self.wo = (torch.nn.Linear(8, 8) for _ in range(4))
        self.n_heads = 2


class _Layer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attend, self.look_back = _Attention(), _Attention()


class _Stack(torch.nn.Module):
    def __init__(self, layers: int) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(_Layer() for _ in range(layers))


class _DummyModel(torch.nn.Module):
    """An encoder-decoder whose attention is where no known layout (nor the generic one) puts it."""

    def __init__(self) -> None:
        super().__init__()
        self.config = SimpleNamespace(model_type="dummy_mt", is_encoder_decoder=True)
        self.encoder, self.decoder = _Stack(3), _Stack(2)

    def get_encoder(self) -> _Stack:
        return self.encoder

    def get_decoder(self) -> _Stack:
        return self.decoder


def _write_dummy(folder: Path) -> None:
    (folder / "config.json").write_text(json.dumps({"model_type": "dummy_mt"}), encoding="utf-8")


def _dummy_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "dummy"
    folder.mkdir(exist_ok=True)
    _write_dummy(folder)
    return folder


@pytest.fixture
def dummy() -> Iterator[Architecture]:
    """The dummy entry and its tiny model, registered for one test."""
    register_architecture(DUMMY)
    try:
        testing_models.tiny_model(DUMMY.name)(_write_dummy)
        yield DUMMY
    finally:
        architectures.ARCHITECTURES.pop(DUMMY.name)
        testing_models.TINY_MODELS.pop(DUMMY.name, None)


def _known_everywhere(tmp_path: Path) -> dict[str, bool]:
    """Whether each reader of the registry knows the dummy architecture."""
    folder = _dummy_folder(tmp_path)
    try:
        read = architecture_of(_DummyModel()).name == "dummy"
    except UnsupportedModelError:
        read = False
    try:
        translated = ctranslate2_model_type(folder) == "dummy_mt"
    except ValueError:
        translated = False
    bart = ARCHITECTURES["bart"]
    with pytest.raises(ValueError, match="The CTranslate2 backend serves") as refused:
        translation_backend("ctranslate2", bart, "cpu", "a BART model")
    return {
        "inspect registry": "dummy" in ARCHITECTURES,
        "architecture_of": read,
        "demo name": ARCHITECTURE_NAMES.get("dummy") == architecture_name("dummy") == "Dummy MT",
        "demo folder": getattr(_known_architecture(model_type_of(str(folder))), "name", None) == "dummy",
        "demo ctranslate2": "Dummy MT" in str(refused.value),
        "ctranslate2 types": "dummy_mt" in CTRANSLATE2_MODEL_TYPES,
        "ctranslate2 folder": translated,
        "compare-bert": "dummy_mt" in OUR_MODEL_TYPES and our_model_problem({"model_type": "dummy_mt"}) is None,
        "tiny model": "dummy" in testing_models.ARCHITECTURES,
    }


def test_an_unregistered_architecture_is_known_nowhere(tmp_path):
    assert not any(_known_everywhere(tmp_path).values()), _known_everywhere(tmp_path)


def test_a_registered_architecture_is_known_everywhere(dummy, tmp_path):
    known = _known_everywhere(tmp_path)
    assert all(known.values()), known
    assert head_counts(_DummyModel()) == {"encoder": (3, 2), "decoder": (2, 2), "cross": (2, 2)}
    written = testing_models.write_tiny_architecture("dummy", tmp_path / "tiny")
    assert json.loads((written / "config.json").read_text())["model_type"] == "dummy_mt"


def test_an_entry_without_ctranslate2_stays_out_of_the_ctranslate2_types(tmp_path):
    register_architecture(Architecture("slow", ("slow_mt",)))
    try:
        assert "slow_mt" not in CTRANSLATE2_MODEL_TYPES and ARCHITECTURE_NAMES["slow"] == "slow"
    finally:
        architectures.ARCHITECTURES.pop("slow")


def test_a_name_or_model_type_is_registered_once(dummy):
    with pytest.raises(ValueError, match="already registered"):
        register_architecture(Architecture("dummy", ("other",)))
    with pytest.raises(ValueError, match="already belongs to the architecture 'dummy'"):
        register_architecture(Architecture("other", ("dummy_mt",)))
    with pytest.raises(ValueError, match="already has a tiny model"):
        testing_models.tiny_model("dummy")(_write_dummy)
    assert "other" not in ARCHITECTURES


def test_a_tiny_model_needs_a_registered_architecture():
    with pytest.raises(ValueError, match="no architecture of hf_vaswani.architectures"):
        testing_models.tiny_model("unregistered")(_write_dummy)
    assert "unregistered" not in testing_models.TINY_MODELS


def test_an_unknown_direction_scheme_is_refused():
    with pytest.raises(ValueError, match="direction_schemes"):
        Architecture("odd", ("odd",), direction_schemes=("telepathy",))


def test_the_entry_of_the_extending_page_registers(tmp_path):
    """docs/extending.md's example entry, run as written: the architecture is then known by name and model type."""
    page = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    section = page.split("## Add an architecture", 1)[1].split("\n## ", 1)[0]
    example = textwrap.dedent(re.findall(r"```python\n(.*?)```", section, flags=re.S)[0])
    exec(compile(example, "docs/extending.md", "exec"), {"__name__": "docs"})
    try:
        assert ARCHITECTURE_NAMES["pegasus"] == "Pegasus"
        assert architectures.architecture_for_model_type("pegasus") is ARCHITECTURES["pegasus"]
    finally:
        architectures.ARCHITECTURES.pop("pegasus")
