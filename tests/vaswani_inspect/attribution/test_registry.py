"""The attribution-method registry: a method registered in a test (and only there) is in every list derived from
it (`METHODS` and the flag lists, the aligner methods, the ``explain`` and ``align-eval`` choices, the demo's
selector, labels and notes) and `attribute` calls it; the shipped methods keep their names and order."""

from __future__ import annotations

import json

import numpy as np
import pytest

import vaswani_inspect.alignment.config as alignment_config
import vaswani_inspect.attribution as attribution
import vaswani_inspect.attribution.gradients as gradients
from hf_vaswani.cli import build_parser, main
from vaswani_inspect.alignment import alignment_matrix
from vaswani_inspect.attribution import Attribution, Method, attribute, check_method, method_options
from vaswani_inspect.attribution.registry import method_entry, method_names, register, registered

SHIPPED = (
    "attention",
    "attention_norm",
    "rollout",
    "saliency",
    "input_x_gradient",
    "integrated_gradients",
    "value_zeroing",
    "alti_plus",
)
#: The lists each flag gives, and the flag.
FLAG_LISTS = {"MODEL_METHODS": "runs_model", "SHARE_METHODS": "measures_share", "GRADIENT_METHODS": "reads_gradients"}


def _dummy(name: str, calls: list, *, flags: bool = True, **fields) -> Method:
    """A method whose rows are uniform over the source words, noting each call in `calls`."""

    def uniform(model, record, *, weight: float = 1.0, n_steps: int = 3) -> Attribution:
        calls.append({"record": record, "weight": weight, "n_steps": n_steps})
        rows, columns = alignment_matrix(record).shape
        return Attribution(name, record, np.full((rows, columns), 1.0 / columns), settings={"weight": weight})

    texts = {
        "label": {"en": "Uniform dummy", "es": "Maniquí uniforme"},
        "about": {"en": "every source word alike.", "es": "todas las palabras fuente por igual."},
    }
    return Method(name, uniform, runs_model=flags, measures_share=flags, reads_gradients=flags, **{**texts, **fields})


@pytest.fixture
def calls() -> list:
    return []


@pytest.fixture
def dummy(calls):
    """A method with every flag set, registered for one test."""
    with registered(_dummy("uniform_dummy", calls)) as method:
        yield method


def test_the_shipped_methods_keep_their_names_and_order():
    assert attribution.METHODS == SHIPPED == alignment_config.ALIGNER_METHODS
    assert attribution.MODEL_METHODS == tuple(m for m in SHIPPED if m not in ("attention", "rollout"))
    assert set(attribution.SHARE_METHODS) == {"alti_plus", "rollout", *gradients.CAPTUM_METHODS}
    assert attribution.GRADIENT_METHODS == gradients.GRADIENT_METHODS == gradients.CAPTUM_METHODS
    assert all(method_entry(m).needs == ("captum",) for m in attribution.GRADIENT_METHODS)
    assert method_options("integrated_gradients") == {
        "n_steps": 50,
        "batch_size": 512,
        "precision": "float32",
        "contrast": None,
    }


def test_a_registered_method_is_in_every_list_and_leaves_none_behind(dummy):
    name = dummy.name
    assert attribution.METHODS == (*SHIPPED, name) == attribution.api.METHODS
    for listed in FLAG_LISTS:
        assert getattr(attribution, listed)[-1] == name
    assert gradients.GRADIENT_METHODS[-1] == name
    assert alignment_config.ALIGNER_METHODS[-1] == name
    assert alignment_config.model_aligner(_Config({"method": name})) == {"method": name}
    assert check_method(name) == name and method_options(name) == {"weight": 1.0, "n_steps": 3}
    with pytest.raises(ValueError, match="already registered"):
        register(dummy)
    with registered(_dummy("second_dummy", [], flags=False, order=15)) as second:
        assert attribution.METHODS == (SHIPPED[0], second.name, *SHIPPED[1:], name)
        for listed in FLAG_LISTS:
            assert second.name not in getattr(attribution, listed)
    assert "second_dummy" not in attribution.METHODS
    with pytest.raises(ValueError, match="^Unknown attribution method 'second_dummy': choose one of attention, "):
        check_method("second_dummy")
    with pytest.raises(ValueError, match="must name an attribution method among"):
        alignment_config.model_aligner(_Config({"method": "second_dummy"}))


def test_after_the_test_the_dummy_is_gone():
    assert attribution.METHODS == SHIPPED
    with pytest.raises(ValueError):
        method_entry("uniform_dummy")


def test_an_entry_needs_both_languages_and_known_flags(calls):
    with pytest.raises(ValueError, match="'no_spanish' method's label has no text in es"):
        register(_dummy("no_spanish", calls, label={"en": "English only"}))
    with pytest.raises(TypeError, match="not callable"):
        register(Method("broken", None, runs_model=False, label={}, about={}))
    with pytest.raises(TypeError, match="takes runs_model"):
        method_names(runs_on_gpu=True)
    assert "no_spanish" not in attribution.METHODS and "broken" not in attribution.METHODS


def test_attribute_calls_the_registered_function(dummy, calls, model, tokenizer, record):
    explained = attribute(model, tokenizer, record, method=dummy.name, weight=2.0)
    assert [call["record"] for call in calls] == [record] and calls[0]["weight"] == 2.0
    assert explained.method == dummy.name and explained.settings == {"weight": 2.0}
    np.testing.assert_allclose(explained.matrix.sum(axis=1), 1.0)
    with pytest.raises(TypeError, match="takes weight, n_steps"):
        attribute(model, tokenizer, record, method=dummy.name, layers="mean")
    found = attribution.attribute_methods(model, tokenizer, record, methods=["attention", dummy.name])
    assert list(found) == ["attention", dummy.name] and len(calls) == 2


def test_the_commands_offer_it_and_explain_runs_it(dummy, calls, model, tokenizer, tmp_path, capsys):
    parser = build_parser()
    explain = parser.parse_args(["explain", "el gato", "--out", "report", "--method", dummy.name])
    assert explain.method == [dummy.name]
    files = ["--gold", "g", "--source-file", "s", "--target-file", "t"]
    assert parser.parse_args(["align-eval", *files, "--method", dummy.name]).method == dummy.name
    checkpoint = tmp_path / "model"
    model.save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    out = tmp_path / "report"
    argv = ["explain", "el gato negro", "--target", "the black cat", "--model", str(checkpoint), "--out", str(out)]
    assert main([*argv, "--method", dummy.name, "--n-steps", "7"]) == 0
    assert calls[0]["n_steps"] == 7  # --n-steps goes to every method that takes n_steps
    assert (out / f"heatmap-{dummy.name}.png").is_file()
    assert [row["method"] for row in json.loads((out / "table.json").read_text())] == [dummy.name]
    assert f"| 0 | {dummy.name} |" in (out / "table.md").read_text()
    assert "1 sentences x 1 methods" in capsys.readouterr().out


def test_the_demo_offers_it_with_its_labels_and_notes(dummy, calls):
    from vaswani_demo.choices import DemoChoices, offered_methods
    from vaswani_demo.texts import CHOICES, MESSAGES, Named, choices, message

    offered, missing = offered_methods()
    assert offered == (*SHIPPED, dummy.name) and missing == ()
    assert DemoChoices.__dataclass_fields__["methods"].default_factory() == offered
    for language in ("en", "es"):
        assert choices(language, "method")[-1] == (dummy.label[language], dummy.name)
        assert CHOICES[language]["method"][dummy.name] == dummy.label[language]
        assert Named("method", dummy.name).told(language) == dummy.label[language]
        assert message(language, f"method.about.{dummy.name}") == dummy.about[language]
        assert MESSAGES[language][f"method.about.{dummy.name}"] == dummy.about[language]
    with registered(_dummy("needy_dummy", calls, needs=("no_such_library_for_a_test",))):
        assert offered_methods() == ((*SHIPPED, dummy.name), ("needy_dummy",))
    assert dummy.name in CHOICES["en"]["method"] and "needy_dummy" not in CHOICES["en"]["method"]


@pytest.mark.parametrize("name", method_names(runs_model=False))
def test_a_method_that_does_not_run_the_model_never_calls_it(name, model, tokenizer, record):
    """What `runs_model=False` promises (the demo runs such a method without its copy of the model): no module of
    the model is called."""

    def refuse(module, inputs):
        raise AssertionError(f"{name} ran {type(module).__name__}")

    hooks = [module.register_forward_pre_hook(refuse) for module in model.modules()]
    try:
        assert attribute(model, tokenizer, record, method=name).method == name
    finally:
        for hook in hooks:
            hook.remove()


class _Config:
    """A model config holding only `alignment` (what `model_aligner` reads)."""

    def __init__(self, alignment):
        self.alignment = alignment
