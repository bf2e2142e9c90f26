"""The run configuration: every key with its default (`DEFAULT_CONFIG`), reading a YAML/JSON file
(`load_config`), ``section.key=value`` overrides (`apply_overrides`) and the type and range check of every value
(`validate_config`)."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from ..configuration_vaswani import VaswaniConfig
from ..languages import DIRECTIONS
from .recipe_yaml import RecipeYAMLError, load_recipe_yaml
from .values import (
    bool_value,
    checker,
    choice_value,
    directions_value,
    float_value,
    int_value,
    path_value,
    size_value,
    validate_model_section,
)
from .weights import DTYPES

__all__ = ["DEFAULT_CONFIG", "SAMPLING_STRATEGIES", "apply_overrides", "load_config", "validate_config"]

#: The values of ``training.sampling``.
SAMPLING_STRATEGIES: tuple[str, ...] = ("group_by_length", "random", "tokens")

#: Every key a run configuration may have, with its default. `None` means "derived" (see the comments).
DEFAULT_CONFIG: dict[str, dict[str, Any]] = {
    "data": {
        "path": None,  # TSV/CSV/JSONL file of English<TAB>Spanish pairs (required)
        "directions": list(DIRECTIONS),
        "validation_size": 2000,  # pairs held out for validation (both directions are built from each pair)
        "test_size": 2000,  # pairs held out for the final test
        "split_seed": 0,  # changes which pairs are held out
        "max_length": 64,  # tokens per side, </s> and the language token included
        "max_length_ratio": None,  # drop training pairs whose longer side has more than this x the characters
        "eval_samples": 400,  # validation rows (both directions mixed) decoded at each evaluation
        "noun_phrases": False,  # add noun-phrase pairs mined from the training split (hf_vaswani.data.phrases)
        "max_noun_phrases": None,  # keep at most this many mined phrase pairs (the most frequent)
        "casual_copies": 0.0,  # add this fraction of training pairs again, lower-case initial, unpunctuated
        "noun_phrase_sentences": False,  # add the mined noun phrases again as sentences ("El gato negro.")
    },
    "tokenizer": {
        "path": None,  # an existing tokenizer folder; None trains one on the training split
        "vocab_size": 8000,
        "model_type": "unigram",
    },
    # Any `VaswaniConfig` field; vocab_size and the special token ids come from the tokenizer.
    "model": {},
    # Guided alignment (Garg et al. 2019): one encoder-decoder attention head learns statistical word alignments.
    "alignment": {
        "guided": False,  # supervise a head with eflomal alignments of the training pairs (the [align] extra)
        "layer": None,  # the decoder layer of the head; None = the penultimate one (the paper's choice)
        "head": 0,
        "weight": 0.05,  # lambda: loss = translation loss + weight x alignment loss (the paper: 0.05)
        "symmetrization": "grow-diag-final-and",  # how the two directions of eflomal are combined
    },
    "training": {
        "output_dir": None,  # required
        "init_from": None,  # a model folder to start from (its weights, and its tokenizer unless tokenizer.path)
        "batch_size": 64,  # sentences per micro-batch
        "gradient_accumulation_steps": 1,
        "max_steps": 1000,  # optimizer updates
        "warmup_steps": 4000,
        "learning_rate": None,  # peak learning rate; None = the paper's d_model^-0.5 * warmup^-0.5
        "lr_scale": 1.0,  # multiplies the paper's schedule (ignored when learning_rate is set)
        "adam_beta1": 0.9,
        "adam_beta2": 0.98,
        "adam_epsilon": 1e-9,
        "weight_decay": 0.0,
        "max_grad_norm": 0.0,  # 0 = no clipping (the paper does not clip)
        "sampling": "group_by_length",  # or "random", or "tokens" (batches of max_tokens_per_batch tokens, sec. 5.1)
        "max_tokens_per_batch": None,  # sampling: tokens: padded tokens per side of a micro-batch (batch_size unused)
        "bf16": True,  # bf16 autocast (on CPU too)
        "use_cpu": None,  # None = CPU when no CUDA device is visible
        "seed": 42,
        "logging_steps": 50,
        "eval_steps": 500,  # 0 = no evaluation during training
        "save_steps": 500,
        "save_total_limit": 5,
        "eval_batch_size": 64,
        "eval_num_beams": 1,  # beam size of the (cheap) evaluation during training
        "num_beams": 4,  # written to the generation config of the trained model (sec. 6.1: beam 4)
        "length_penalty": 0.6,  # sec. 6.1: alpha = 0.6
        "max_new_tokens": 64,
        # generation config: no token trigram twice in an output, the guard against decoding loops ("pulululu...")
        # chosen on the validation split (benchmarks/bench_looping.py); 0 switches it off
        "no_repeat_ngram_size": 3,
        "average_last": 5,  # average the last N checkpoints into output_dir/averaged (0 or 1: don't)
        "save_dtype": None,  # "bfloat16" / "float16": cast final/ and averaged/ for shipping
        "dataloader_num_workers": 0,
        "disable_tqdm": False,
        "report_to": "none",
    },
}


# --------------------------------------------------------------------------------------------- keys, overrides


def _deep_update(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _deep_update(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def _check_keys(config: Mapping[str, Any]) -> None:
    unknown_sections = set(config) - set(DEFAULT_CONFIG)
    if unknown_sections:
        raise ValueError(
            f"Unknown configuration section(s) {sorted(unknown_sections)}; the sections are {list(DEFAULT_CONFIG)}."
        )
    for section, values in config.items():
        if values is not None and not isinstance(values, Mapping):
            raise ValueError(
                f"Section {section!r} must be a mapping of key: value, got {type(values).__name__} {values!r}."
            )
    for section in ("data", "tokenizer", "alignment", "training"):
        unknown = set(config.get(section) or {}) - set(DEFAULT_CONFIG[section])
        if unknown:
            raise ValueError(
                f"Unknown key(s) {sorted(unknown)} in section {section!r}; "
                f"the keys are {sorted(DEFAULT_CONFIG[section])}."
            )
    fields = set(VaswaniConfig.__annotations__)
    unknown_model = set(config.get("model") or {}) - fields
    if unknown_model:
        raise ValueError(f"Unknown VaswaniConfig field(s) {sorted(unknown_model)} in section 'model'.")


def apply_overrides(config: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """Apply ``section.key=value`` strings to `config` (in place; also returned). Values are parsed as YAML
    (``true``, ``3``, ``1e-3``, ``[es-en]``, ``null``), so ``--set training.max_steps=100`` gives an int."""
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"Override {item!r} is not of the form section.key=value.")
        parts = key.strip().split(".")
        if len(parts) != 2 or parts[0] not in DEFAULT_CONFIG:
            raise ValueError(
                f"Override key {key!r} must be section.key with a section among {list(DEFAULT_CONFIG)}, "
                "e.g. training.max_steps=100."
            )
        try:
            value = load_recipe_yaml(raw) if raw.strip() else None
        except yaml.YAMLError as error:
            raise ValueError(f"Override {item!r}: the value is not valid YAML ({_yaml_problem(error)}).") from None
        config.setdefault(parts[0], {})[parts[1]] = value
    _check_keys(config)
    return config


def _yaml_problem(error: yaml.YAMLError) -> str:
    if isinstance(error, RecipeYAMLError):
        return str(error)
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else problem


# --------------------------------------------------------------------------------------------- validation


def _validate_data(data: dict[str, Any]) -> None:
    check = checker(data, "data")
    check("path", path_value)
    check("directions", directions_value)
    check("validation_size", size_value)
    check("test_size", size_value)
    check("split_seed", int_value, 0)
    check("max_length", int_value, 3)  # the language token, one token of text, </s>
    check("max_length_ratio", float_value, 1.0, None, True)
    check("eval_samples", int_value, 0, True)
    check("noun_phrases", bool_value)
    check("max_noun_phrases", int_value, 1, True)
    check("casual_copies", float_value, 0.0, 1.0)
    check("noun_phrase_sentences", bool_value)


def _validate_tokenizer(tokenizer: dict[str, Any]) -> None:
    check = checker(tokenizer, "tokenizer")
    check("path", path_value)
    check("vocab_size", int_value, 1)
    check("model_type", choice_value, ("unigram", "bpe"))


def _validate_alignment(alignment: dict[str, Any]) -> None:
    from ..data.word_alignment import SYMMETRIZATIONS

    check = checker(alignment, "alignment")
    check("guided", bool_value)
    check("layer", int_value, 0, True)
    check("head", int_value, 0)
    check("weight", float_value, 0.0, None, False, False)
    check("symmetrization", choice_value, SYMMETRIZATIONS)


def _validate_training(training: dict[str, Any]) -> None:
    check = checker(training, "training")
    check("output_dir", path_value)
    check("init_from", path_value)
    for key in ("batch_size", "gradient_accumulation_steps", "max_steps", "logging_steps", "save_steps"):
        check(key, int_value, 1)
    for key in ("eval_batch_size", "eval_num_beams", "num_beams", "max_new_tokens"):
        check(key, int_value, 1)
    for key in ("warmup_steps", "eval_steps", "seed", "average_last", "dataloader_num_workers", "no_repeat_ngram_size"):
        check(key, int_value, 0)
    check("save_total_limit", int_value, 0, True)
    check("max_tokens_per_batch", int_value, 1, True)
    check("learning_rate", float_value, 0.0, None, True, False)
    check("lr_scale", float_value, 0.0, None, False, False)
    check("adam_beta1", float_value, 0.0, 1.0)
    check("adam_beta2", float_value, 0.0, 1.0)
    check("adam_epsilon", float_value, 0.0, None, False, False)  # divides: never 0
    check("weight_decay", float_value, 0.0)
    check("max_grad_norm", float_value, 0.0)
    check("length_penalty", float_value)
    check("bf16", bool_value)
    check("disable_tqdm", bool_value)
    check("use_cpu", bool_value, True)
    check("sampling", choice_value, SAMPLING_STRATEGIES)
    if training.get("save_dtype") is not None:
        choice_value(str(training["save_dtype"]).replace("torch.", ""), "training.save_dtype", list(DTYPES))
    report_to = training.get("report_to")
    if not (isinstance(report_to, str) or (isinstance(report_to, list) and all(isinstance(r, str) for r in report_to))):
        raise ValueError(
            f"training.report_to must be a name or a list of names (e.g. none, tensorboard), got {report_to!r}."
        )


def _validate_sampling(data: Mapping[str, Any], training: Mapping[str, Any]) -> None:
    """``sampling: tokens`` and ``max_tokens_per_batch`` go together, and the longest pair must fit a batch."""
    if training.get("sampling") == "tokens":
        max_tokens, max_length = training.get("max_tokens_per_batch"), data.get("max_length")
        if max_tokens is None:
            raise ValueError("training.sampling: tokens needs training.max_tokens_per_batch (e.g. 4096).")
        if max_length is not None and max_tokens < max_length:
            raise ValueError(
                f"training.max_tokens_per_batch ({max_tokens}) must be at least data.max_length ({max_length}), "
                "so that the longest pair fits in a batch."
            )
    elif training.get("max_tokens_per_batch") is not None:
        raise ValueError(
            "training.max_tokens_per_batch is only used with training.sampling: tokens "
            f"(the sampling is {training.get('sampling')!r}): set both, or neither."
        )


def _validate_evaluation(data: Mapping[str, Any], training: Mapping[str, Any]) -> None:
    """Evaluation during training needs validation pairs to evaluate on."""
    eval_steps = training.get("eval_steps", DEFAULT_CONFIG["training"]["eval_steps"])
    if data.get("validation_size", DEFAULT_CONFIG["data"]["validation_size"]) == 0 and eval_steps:
        raise ValueError(
            f"data.validation_size is 0, but training.eval_steps ({eval_steps}) evaluates on the validation "
            "split: hold out validation pairs (e.g. data.validation_size=200), or set training.eval_steps=0."
        )


def validate_lengths(data: Mapping[str, Any], training: Mapping[str, Any], positions: int, where: str) -> None:
    """The longest training pair and the longest translation must fit the model's `positions`."""
    for key, value in (
        ("data.max_length", data.get("max_length")),
        ("training.max_new_tokens", training.get("max_new_tokens")),
    ):
        if value is not None and value > positions:
            raise ValueError(f"{key} ({value}) must be at most {where} ({positions}), the positions the model has.")


def validate_config(config: dict[str, Any]) -> dict[str, Any]:
    """Check the type and range of every value of a run configuration (in place; also returned).

    Numbers given as strings (YAML reads ``1e-9`` without a dot as a string) are converted; a bad value
    raises a ValueError that names the key, e.g. ``training.max_steps must be a positive integer, got 'abc'``.
    The ``model`` section's fields are checked one by one (`validate_model_section`), then together by
    building a `VaswaniConfig` from them.
    """
    _check_keys(config)
    for section in DEFAULT_CONFIG:
        if config.get(section) is None:
            config[section] = {}
    config["alignment"] = {**DEFAULT_CONFIG["alignment"], **config["alignment"]}  # configs written without it
    _validate_data(config["data"])
    _validate_tokenizer(config["tokenizer"])
    _validate_training(config["training"])
    _validate_alignment(config["alignment"])
    _validate_sampling(config["data"], config["training"])
    _validate_evaluation(config["data"], config["training"])
    validate_model_section(config["model"])
    try:
        model = VaswaniConfig(**dict(config["model"]))
    except (TypeError, ValueError) as error:
        raise ValueError(f"Section 'model': {error}") from None
    if not config["training"].get("init_from"):  # a model to start from brings its own (checked when loaded)
        validate_lengths(
            config["data"], config["training"], model.max_position_embeddings, "model.max_position_embeddings"
        )
    if config["alignment"].get("guided") and not config["training"].get("init_from"):
        layer, head = config["alignment"].get("layer"), config["alignment"].get("head", 0)
        if layer is not None and layer >= model.decoder_layers:
            raise ValueError(f"alignment.layer must be a decoder layer in [0, {model.decoder_layers}), got {layer}.")
        if head >= model.decoder_attention_heads:
            raise ValueError(f"alignment.head must be in [0, {model.decoder_attention_heads}), got {head}.")
    return config


# --------------------------------------------------------------------------------------------- loading


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise ValueError(f"the key(s) {twice} are given twice in one object; keep one of each")
    return dict(pairs)


def _read_config_file(path: Path) -> Mapping[str, Any]:
    if not path.is_file():
        raise FileNotFoundError(f"No such configuration file: {str(path)!r}")
    try:
        with open(path, encoding="utf-8") as handle:
            if path.suffix.lower() == ".json":
                loaded = json.load(handle, object_pairs_hook=_unique_keys)
            else:
                loaded = load_recipe_yaml(handle)
    except RecipeYAMLError as error:
        raise ValueError(f"{path}: {error}.") from None
    except yaml.YAMLError as error:
        raise ValueError(f"{path}: not valid YAML ({_yaml_problem(error)}).") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error}).") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start}).") from None
    except ValueError as error:  # a key given twice in a JSON object
        raise ValueError(f"{path}: {error}.") from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, Mapping):
        raise ValueError(f"{path}: a configuration must be a mapping of sections, got {type(loaded).__name__}.")
    return loaded


def load_config(path: str | os.PathLike[str] | None = None, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The defaults, updated with the YAML/JSON file at `path` and the ``key=value`` `overrides`, validated
    (`validate_config`)."""
    config = copy.deepcopy(DEFAULT_CONFIG)
    if path is not None:
        loaded = _read_config_file(Path(path))
        _check_keys(loaded)
        _deep_update(config, loaded)
    apply_overrides(config, overrides)
    return validate_config(config)
