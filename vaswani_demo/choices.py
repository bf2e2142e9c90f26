"""What the demo's controls offer for its models, read once when the demo is built: `DemoChoices`.

The directions, the layer and head dropdowns, the beam and length sliders, the ablation panel's heads and the page's
limits all come from the models served (`vaswani_demo.models.ServedModel`): the directions they serve, their
attention heads (`vaswani_inspect.architectures.head_counts`, whatever the architecture), `config.alignment` (a
model without a trained aligner starts at `vaswani_demo.readings.untrained_reading`), their generation configs and
position limits (the strictest of several models, so that no control offers what one of them refuses); the
explanation methods offered from the libraries installed (the gradient methods need captum), and their measured
faithfulness from a single model's folder (``explanations.json``, `vaswani_demo.measurements`).
`DemoChoices.from_models` reads them once, the controls' labels in every language of the page included; the page
(`vaswani_demo.layout`) and the input rules (`vaswani_demo.checks`) read this frozen value and never go back to the
models.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from hf_vaswani.languages import DIRECTIONS
from hf_vaswani.limits import MAX_NUM_BEAMS, generation_limits
from vaswani_inspect.alignment.config import model_aligner, model_alignment
from vaswani_inspect.architectures import head_counts
from vaswani_inspect.attribution.registry import method_entries, method_names
from vaswani_inspect.record import check_alignment

from .figures import settings_text
from .measurements import model_folder, read_measurements
from .models import ServedModel, is_shipped_checkpoint
from .readings import untrained_reading
from .settings import HEAD_LABEL, MAX_BEAMS, MEAN, MODEL_ALIGNER
from .texts import DEFAULT_LANGUAGE, LANGUAGES, message

__all__ = ["DemoChoices", "Serving", "head_value", "offered_methods"]

#: The longest source a model without a position limit of its own is given, in tokens.
_FALLBACK_MAX_TOKENS = 512

#: A control's choices: (label, value) pairs, in the order shown.
Options = tuple[tuple[str, str], ...]


def offered_methods() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the explanation methods the demo offers, attention first; those it cannot, for want of a library they
    need: captum for the gradient methods, each method's `needs`)."""
    entries = method_entries()
    needed = {library for method in entries for library in method.needs}
    installed = {library for library in needed if importlib.util.find_spec(library) is not None}
    missing = tuple(method.name for method in entries if not set(method.needs) <= installed)
    return tuple(method.name for method in entries if method.name not in missing), missing


def head_value(heads: list[int] | str) -> str:
    """The head dropdown's value for a list of heads (or "all"): ``"1,3"``, ``"mean"``."""
    return MEAN if heads == "all" else ",".join(str(head) for head in heads)


class Serving(NamedTuple):
    """Who serves one direction, as the page says it: the model's name, its architecture's and the backend that
    chooses its translations ("ctranslate2" or "torch")."""

    model_name: str
    architecture: str
    backend: str


class _Limits(NamedTuple):
    max_tokens: int
    max_beams: int
    max_new_tokens: int
    default_beams: int
    default_max_new_tokens: int


@dataclass(frozen=True)
class DemoChoices:
    """What the controls offer and start at, read once from the models (`from_models`).

    Attributes:
        model_name: shown in the page (the folder or Hub id; several models' names joined by " + ").
        directions: the directions served, the page's first one first.
        serving: ``{direction: Serving}``: which model serves each direction, and how.
        max_tokens: the longest source, in tokens (language token or prefix and ``</s>`` included), the models read.
        decoder_layers, decoder_heads: what the layer and head choices offer (the cross-attention's).
        alignment_config: where the layer, head and shift controls start: the models' `config.alignment`, or for
            models without one, `vaswani_demo.readings.untrained_reading`.
        aligner: "trained" (every model has the same `config.alignment`), "none" (no model has one) or "some".
        heads: ``{kind: (layers, heads per layer)}``, what the ablation panel offers.
        max_beams, max_new_tokens_limit: the largest beam size and translation length accepted: the demo's
            `MAX_BEAMS`, the shared `MAX_NUM_BEAMS` and what every model can generate
            (`hf_vaswani.limits.generation_limits`).
        default_beams, default_max_new_tokens: the decoding options' defaults (the first model's generation config).
        layer_options, head_options: ``{language: ((label, value), ...)}`` of the layer and head controls
            (`layer_choices`, `head_choices`).
        defaults: the layer, head and shift controls' starting values (`default_choices`).
        ablation_labels: ``{kind: ("L0 H0", "L0 H1", ...)}``, the ablation panel's heads (`head_labels`).
        methods, missing_methods: the explanation methods offered (`vaswani_inspect.attribution.METHODS`, attention
            first) and those left out because a library they need is missing (`offered_methods`).
        default_method: the method the selector starts at: the model's aligner when its ``config.alignment``
            names an offered one, else "attention".
        measurements: the model folder's ``explanations.json`` (`vaswani_demo.measurements.read_measurements`),
            None for a model without one, or for several models (each file measures one).
    """

    model_name: str
    max_tokens: int
    decoder_layers: int
    decoder_heads: int
    alignment_config: Mapping[str, Any]
    heads: Mapping[str, tuple[int, int]]
    max_beams: int
    max_new_tokens_limit: int
    default_beams: int
    default_max_new_tokens: int
    layer_options: Mapping[str, Options]
    head_options: Mapping[str, Options]
    defaults: Mapping[str, Any]
    ablation_labels: Mapping[str, tuple[str, ...]]
    methods: tuple[str, ...] = field(default_factory=method_names)
    missing_methods: tuple[str, ...] = ()
    default_method: str = "attention"
    measurements: Mapping[str, Any] | None = None
    directions: tuple[str, ...] = DIRECTIONS
    serving: Mapping[str, Serving] = field(default_factory=lambda: MappingProxyType({}))
    aligner: str = "trained"

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any, model_name: str = "") -> DemoChoices:
        """The choices of one loaded model serving every direction it offers (`from_models`)."""
        return cls.from_models([ServedModel.of(model, tokenizer, model_name)])

    @classmethod
    def from_models(cls, models: Sequence[ServedModel]) -> DemoChoices:
        """Read the choices of the `models` served (`vaswani_demo.models.load_served_models`: their heads agree)."""
        first = models[0]
        counts = head_counts(first.model)
        layers, heads = counts["cross"]
        alignment, aligner = _starting_reading(models, layers)
        limits = _limits(models)
        methods, missing = offered_methods()
        configured = (model_aligner(first.model.config) or {}).get("method") if aligner == "trained" else None
        return cls(
            model_name=" + ".join(served.name for served in models),
            max_tokens=limits.max_tokens,
            decoder_layers=layers,
            decoder_heads=heads,
            alignment_config=MappingProxyType(alignment),
            heads=MappingProxyType(counts),
            max_beams=limits.max_beams,
            max_new_tokens_limit=limits.max_new_tokens,
            default_beams=limits.default_beams,
            default_max_new_tokens=limits.default_max_new_tokens,
            layer_options=MappingProxyType({lang: _layer_options(layers, alignment, lang) for lang in LANGUAGES}),
            head_options=MappingProxyType({lang: _head_options(heads, alignment, lang) for lang in LANGUAGES}),
            defaults=MappingProxyType(_defaults(alignment)),
            ablation_labels=MappingProxyType({kind: _labels(*counted) for kind, counted in counts.items()}),
            methods=methods,
            missing_methods=missing,
            default_method=configured if configured in methods else "attention",
            measurements=read_measurements(model_folder(first.model)) if len(models) == 1 else None,
            directions=tuple(d for served in models for d in served.directions),
            serving=MappingProxyType(
                {d: Serving(s.name, s.architecture, s.backend) for s in models for d in s.directions}
            ),
            aligner=aligner,
        )

    @property
    def ours(self) -> bool:
        """Whether every direction is served by a model of this project's architecture ("vaswani"): its tokenizer's
        special tokens are those the page's legend names."""
        return all(serving.architecture == "vaswani" for serving in self.serving.values())

    @property
    def shipped_directions(self) -> tuple[str, ...]:
        """The directions the shipped checkpoint serves (`vaswani_demo.models.is_shipped_checkpoint`): those whose
        failures to discuss the page may offer."""
        return tuple(d for d, serving in self.serving.items() if is_shipped_checkpoint(serving.model_name))

    def layer_choices(self, language: str = DEFAULT_LANGUAGE) -> list[tuple[str, str]]:
        """(label, value) of the decoder layer control, labels in `language`: the model's aligner when it averages
        several readings (value "model"), the average of all layers, then each layer."""
        return list(self.layer_options.get(language) or self.layer_options[DEFAULT_LANGUAGE])

    def head_choices(self, language: str = DEFAULT_LANGUAGE) -> list[tuple[str, str]]:
        """(label, value) of the head control, labels in `language`: the average of all heads, each head, and the
        model's configured heads when it averages several ("heads 1, 3", value "1,3")."""
        return list(self.head_options.get(language) or self.head_options[DEFAULT_LANGUAGE])

    def default_choices(self) -> dict[str, Any]:
        """The controls' starting values, from the model's alignment configuration: layer (the model's aligner when
        it averages several readings), head, shift."""
        return dict(self.defaults)

    def head_labels(self, kind: str) -> list[str]:
        """The heads of one attention kind as the ablation panel names them: ``"L0 H0"``, ``"L0 H1"``, ..."""
        return list(self.ablation_labels[kind])


def _layer_options(layers: int, alignment: Mapping[str, Any], language: str) -> Options:
    each = [(message(language, "layer.one", layer=i), str(i)) for i in range(layers)]
    options = [(message(language, "layer.mean"), MEAN), *each]
    if alignment.get("average_with"):
        described = settings_text(alignment, language)
        options.insert(0, (message(language, "layer.model", settings=described), MODEL_ALIGNER))
    return tuple(options)


def _head_options(heads: int, alignment: Mapping[str, Any], language: str) -> Options:
    each = [(message(language, "head.one", head=i), str(i)) for i in range(heads)]
    options = [(message(language, "head.mean"), MEAN), *each]
    configured = alignment["heads"]
    if configured != "all" and len(configured) > 1:
        listed = ", ".join(str(head) for head in configured)
        options.append((message(language, "head.several", heads=listed), head_value(configured)))
    return tuple(options)


def _defaults(alignment: Mapping[str, Any]) -> dict[str, Any]:
    layer = MODEL_ALIGNER if alignment.get("average_with") else alignment["layer"]
    return {
        "layer": layer if layer in (MEAN, MODEL_ALIGNER) else str(layer),
        "head": head_value(alignment["heads"]),
        "shift": bool(alignment["shift"]),
    }


def _labels(layers: int, heads: int) -> tuple[str, ...]:
    return tuple(HEAD_LABEL.format(layer=layer, head=head) for layer in range(layers) for head in range(heads))


def _starting_reading(models: Sequence[ServedModel], layers: int) -> tuple[dict[str, Any], str]:
    """(where the alignment controls start, "trained", "none" or "some"): the models' shared `config.alignment`
    (checked against their layers and heads here, where it is read, as extract() does for records), else the
    reading for models without a trained aligner."""
    readings = [check_alignment(model_alignment(served.model.config)) for served in models]
    if readings[0] is not None and all(reading == readings[0] for reading in readings):
        return dict(readings[0]), "trained"
    return untrained_reading(layers), "none" if all(reading is None for reading in readings) else "some"


def _model_limits(model: Any, tokenizer: Any) -> _Limits:
    """One model's limits and decoding defaults (`DemoChoices` attributes of the same names)."""
    config = model.config
    source_limits = [int(getattr(config, "max_position_embeddings", 0) or 0)]
    tokenizer_limit = int(getattr(tokenizer, "model_max_length", 0) or 0)
    if 0 < tokenizer_limit < 10**6:  # tokenizers without a limit report a huge sentinel
        source_limits.append(tokenizer_limit)
    positive = [limit for limit in source_limits if limit > 0]
    max_tokens = min(positive) if positive else _FALLBACK_MAX_TOKENS
    limits = generation_limits(model)
    max_beams = max(1, min(MAX_BEAMS, MAX_NUM_BEAMS, limits.num_beams))
    max_new_tokens = max(1, min(limits.max_new_tokens, max_tokens - 1))
    generation = getattr(model, "generation_config", None)
    new_tokens = getattr(generation, "max_new_tokens", None)
    if not new_tokens and getattr(generation, "max_length", None):
        new_tokens = int(generation.max_length) - 1  # the decoder start token counts in max_length
    beams = int(getattr(generation, "num_beams", None) or 1)
    return _Limits(max_tokens, max_beams, max_new_tokens, beams, int(new_tokens or 64))


def _limits(models: Sequence[ServedModel]) -> _Limits:
    """The strictest limits of `models`, and the first one's decoding defaults within them."""
    each = [_model_limits(served.model, served.tokenizer) for served in models]
    max_beams = min(limits.max_beams for limits in each)
    max_new_tokens = min(limits.max_new_tokens for limits in each)
    return _Limits(
        max_tokens=min(limits.max_tokens for limits in each),
        max_beams=max_beams,
        max_new_tokens=max_new_tokens,
        default_beams=max(1, min(max_beams, each[0].default_beams)),
        default_max_new_tokens=max(1, min(each[0].default_max_new_tokens, max_new_tokens)),
    )
