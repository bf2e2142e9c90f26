"""The encoder-decoder architectures the project knows, one `Architecture` entry each, in `ARCHITECTURES`.

An entry is the one thing a new architecture adds (besides its tiny test model in
`vaswani_inspect.testing_models`): every per-architecture fact is a field of it, and every list of architectures,
model types or names elsewhere is read from the registry when it is used, so an entry added with
`register_architecture` is seen everywhere:

* `hf_vaswani.backends` translates the model types of `CTRANSLATE2_MODEL_TYPES` (entries with ``ctranslate2``);
* the demo names an architecture as `DISPLAY_NAMES` says (`vaswani_demo.settings.ARCHITECTURE_NAMES`) and offers
  CTranslate2 for the same entries;
* `vaswani_inspect.architectures` re-exports the registry and reads a model's attention where its entry says
  (``layers``, ``modules``, ``projections``, ``heads``, ``head_dim``, ``scaling``, ``position_bias``,
  ``output_scale``, ``final_norm``) and finds its positional encoding (``positions``, ``position_kind``);
* the tiny test models of `vaswani_inspect.testing_models` are keyed by the entries' names.

Why here and not in `vaswani_inspect`: `hf_vaswani` must not import the inspection toolkit (tests/test_layering.py),
yet its backends need the model types and their CTranslate2 support. The entries are plain data (names, attribute
paths, flags, a function of the config), with no torch, so the package at the bottom of the layers can hold them;
the code that walks a model's modules with them stays in `vaswani_inspect.architectures`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ARCHITECTURES",
    "CTRANSLATE2_MODEL_TYPES",
    "DIRECTION_SCHEMES",
    "DISPLAY_NAMES",
    "MODEL_TYPES",
    "Architecture",
    "architecture_for_model_type",
    "register_architecture",
]

#: How a model is told which way to translate (`vaswani_inspect.directions.scheme_of` says which one a model uses):
#: a target-language token (``>>en<<``), language codes (``src_lang`` and a forced first token), a task prefix
#: (``"translate Spanish to English: "``), or one direction per model.
DIRECTION_SCHEMES = ("target_token", "language_codes", "task_prefix", "one_direction")


def _no_scale(config: Any) -> float:
    return 1.0


def _read_from_module(config: Any) -> str | None:
    return None  # `vaswani_inspect.architectures.position_module` tells learned from fixed by the module's weights


def _sinusoidal(config: Any) -> str:
    return "sinusoidal"


def _learned(config: Any) -> str:
    return "learned"


def _relative(config: Any) -> str:
    return "relative"


def _vaswani_positions(config: Any) -> str:
    return str(config.position_encoding)  # "sinusoidal", "learned" or "none"


def _t5_output_scale(config: Any) -> float:
    # T5 rescales the decoder output before a tied output layer (transformers' `scale_decoder_outputs`).
    scaled = getattr(config, "scale_decoder_outputs", getattr(config, "tie_word_embeddings", True))
    return float(config.d_model) ** -0.5 if scaled else 1.0


@dataclass(frozen=True)
class Architecture:
    """One architecture: which models it covers, what serves and shows them, and where it keeps its attention.

    Attributes:
        name: what the project calls it ("vaswani", "marian", ...): the key of `ARCHITECTURES` and of the tiny
            test models.
        model_types: the ``config.model_type`` values it covers.
        display_name: how the demo's page names it ("Marian / OPUS-MT"); default: `name`.
        layers: the attribute of the encoder and of the decoder stack that lists their layers.
        modules: for each kind (encoder self-, decoder self-, cross-attention), the dotted path from a layer to its
            attention module.
        projections: the attribute names of the query, key, value and output projections in a module.
        heads: the module attribute holding its number of heads; `head_dim` the one holding each head's size.
        scaling: the module attribute holding the factor of the query-key dot products: 1/sqrt(d_k) in the paper,
            1 in T5 (whose initialisation folds the factor into W^Q).
        position_bias: the method of the first layer's self-attention module (of the encoder and of the decoder)
            that gives the relative position bias added to the scores, (1, heads, queries, keys) from (query
            length, key length): T5's ``compute_bias``; empty for architectures whose positions are in the
            embeddings.
        output_scale: the factor the model applies to the decoder's last states before the output layer.
        positions: the dotted path from the encoder stack to the module that gives its positional information: the
            table whose rows are added to the embeddings (sinusoidal or learned), or T5's relative position bias
            table of the first layer (its output, per query and key, is what each head adds to its scores).
        position_kind: what that module is, from the config: "sinusoidal", "learned", "relative", "none" (no
            positions at all); None: read from the module (a trained weight: learned; else sinusoidal).
        final_norm: the attribute of the encoder and of the decoder stack holding the norm applied after their last
            layer (pre-norm models); a stack without it (post-norm: Marian, BART) or with it None has none.
        ctranslate2: CTranslate2 translates it (an exact export exists): ours through `hf_vaswani.export`, any other
            through CTranslate2's own converter.
        trained_aligner: the model may carry a trained aligner (``config.alignment``).
        direction_schemes: the `DIRECTION_SCHEMES` its models may use, the usual one first (which one a model uses
            is read from its tokenizer and config).
        example: a Hub id of a model of this architecture, for messages and documentation.
    """

    name: str
    model_types: tuple[str, ...]
    display_name: str = ""
    layers: tuple[str, str] = ("layers", "layers")
    modules: tuple[str, str, str] = ("self_attn", "self_attn", "encoder_attn")
    projections: tuple[str, str, str, str] = ("q_proj", "k_proj", "v_proj", "out_proj")
    heads: str = "num_heads"
    head_dim: str = "head_dim"
    scaling: str = "scaling"
    position_bias: str = ""
    output_scale: Callable[[Any], float] = _no_scale
    positions: str = "embed_positions"
    position_kind: Callable[[Any], str | None] = _read_from_module
    final_norm: str = "layer_norm"
    ctranslate2: bool = False
    trained_aligner: bool = False
    direction_schemes: tuple[str, ...] = DIRECTION_SCHEMES
    example: str = ""

    def __post_init__(self) -> None:
        if not self.display_name:
            object.__setattr__(self, "display_name", self.name)
        unknown = set(self.direction_schemes) - set(DIRECTION_SCHEMES)
        if unknown or not self.direction_schemes:
            raise ValueError(f"direction_schemes of {self.name!r} must be some of {DIRECTION_SCHEMES}.")


#: The architectures the project is tested on, by name (add one with `register_architecture`).
ARCHITECTURES: dict[str, Architecture] = {}


def register_architecture(entry: Architecture) -> Architecture:
    """Add `entry` to `ARCHITECTURES` and return it.

    Raises:
        ValueError: its name is taken, or one of its model types belongs to another entry.
    """
    if entry.name in ARCHITECTURES:
        raise ValueError(f"An architecture named {entry.name!r} is already registered.")
    for model_type in entry.model_types:
        owner = architecture_for_model_type(model_type)
        if owner is not None:
            raise ValueError(f"model_type {model_type!r} already belongs to the architecture {owner.name!r}.")
    ARCHITECTURES[entry.name] = entry
    return entry


def architecture_for_model_type(model_type: str | None) -> Architecture | None:
    """The entry covering ``config.model_type`` `model_type`, or None."""
    return next((entry for entry in ARCHITECTURES.values() if model_type in entry.model_types), None)


class ModelTypes(Sequence[str]):
    """The model types of the entries `keep` accepts, in registration order, read from `ARCHITECTURES` at each use
    (an entry registered later counts)."""

    def __init__(self, keep: Callable[[Architecture], bool]) -> None:
        self._keep = keep

    def _types(self) -> tuple[str, ...]:
        return tuple(
            model_type for entry in ARCHITECTURES.values() if self._keep(entry) for model_type in entry.model_types
        )

    def __getitem__(self, index: Any) -> Any:
        return self._types()[index]

    def __len__(self) -> int:
        return len(self._types())

    def __iter__(self) -> Iterator[str]:
        return iter(self._types())

    def __contains__(self, model_type: object) -> bool:
        return model_type in self._types()

    def __repr__(self) -> str:
        return repr(self._types())


class DisplayNames(Mapping[str, str]):
    """``{architecture name: display name}``, read from `ARCHITECTURES` at each use."""

    def __getitem__(self, name: str) -> str:
        return ARCHITECTURES[name].display_name

    def __iter__(self) -> Iterator[str]:
        return iter(list(ARCHITECTURES))

    def __len__(self) -> int:
        return len(ARCHITECTURES)

    def __repr__(self) -> str:
        return repr(dict(self))


#: Every registered model type.
MODEL_TYPES = ModelTypes(lambda entry: True)
#: The model types CTranslate2 translates here.
CTRANSLATE2_MODEL_TYPES = ModelTypes(lambda entry: entry.ctranslate2)
#: How the demo names each architecture.
DISPLAY_NAMES = DisplayNames()

#: The architectures the project ships, registered in this order.
_SHIPPED = (
    Architecture(
        "vaswani",
        ("vaswani",),
        display_name="hf_vaswani",
        modules=("self_attn", "self_attn", "cross_attn"),
        position_kind=_vaswani_positions,
        ctranslate2=True,
        trained_aligner=True,
        direction_schemes=("target_token",),
        example="pretrained/vaswani-tatoeba-es-en",
    ),
    Architecture(
        "marian",
        ("marian",),
        display_name="Marian / OPUS-MT",
        position_kind=_sinusoidal,
        ctranslate2=True,
        trained_aligner=True,
        direction_schemes=("one_direction", "target_token"),
        example="Helsinki-NLP/opus-mt-es-en",
    ),
    Architecture(
        "m2m100",
        ("m2m_100",),
        display_name="M2M100 / NLLB",
        position_kind=_sinusoidal,
        direction_schemes=("language_codes",),
        example="facebook/nllb-200-distilled-600M",
    ),
    Architecture(
        "mbart",
        ("mbart",),
        display_name="mBART",
        position_kind=_learned,
        direction_schemes=("language_codes",),
        example="facebook/mbart-large-50-many-to-many-mmt",
    ),
    Architecture(
        "bart",
        ("bart",),
        display_name="BART",
        position_kind=_learned,
        direction_schemes=("one_direction",),
        example="facebook/bart-base",
    ),
    Architecture(
        "t5",
        ("t5", "mt5"),
        display_name="T5",
        layers=("block", "block"),
        modules=("layer.0.SelfAttention", "layer.0.SelfAttention", "layer.1.EncDecAttention"),
        projections=("q", "k", "v", "o"),
        heads="n_heads",
        head_dim="key_value_proj_dim",
        position_bias="compute_bias",
        output_scale=_t5_output_scale,
        positions="block.0.layer.0.SelfAttention.relative_attention_bias",
        position_kind=_relative,
        final_norm="final_layer_norm",
        direction_schemes=("task_prefix", "one_direction"),
        example="google-t5/t5-small",
    ),
)
for _entry in _SHIPPED:
    register_architecture(_entry)
