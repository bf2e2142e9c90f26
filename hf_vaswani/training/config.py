"""The run configuration: every key with its default (`DEFAULT_CONFIG`), reading a YAML/JSON file
(`load_config`), ``section.key=value`` overrides (`apply_overrides`) and the type and range check of every value
(`validate_config`)."""

from __future__ import annotations

import copy
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from ..configuration_vaswani import VaswaniConfig
from ..languages import DIRECTIONS
from .weights import DTYPES

__all__ = ["DEFAULT_CONFIG", "SAMPLING_STRATEGIES", "apply_overrides", "load_config", "validate_config"]

#: The values of ``training.sampling``.
SAMPLING_STRATEGIES: tuple[str, ...] = ("group_by_length", "random", "tokens")

#: Every key a run configuration may have, with its default. `None` means "derived" (see the comments).
DEFAULT_CONFIG: dict[str, dict[str, Any]] = {
    "data": {
        "path": None,  # TSV/CSV/JSONL file of English<TAB>Spanish pairs (required)
        "directions": ["es-en", "en-es"],
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
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError as error:
            raise ValueError(f"Override {item!r}: the value is not valid YAML ({_yaml_problem(error)}).") from None
        config.setdefault(parts[0], {})[parts[1]] = value
    _check_keys(config)
    return config


def _yaml_problem(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else problem


# --------------------------------------------------------------------------------------------- values


def _int_value(value: Any, where: str, minimum: int | None = None, nullable: bool = False) -> int | None:
    if value is None and nullable:
        return None
    number: Any = value
    if isinstance(value, str):
        try:
            number = float(value) if any(c in value for c in ".eE") else int(value)
        except ValueError:
            number = None
    if isinstance(number, float) and number.is_integer():
        number = int(number)
    if isinstance(number, bool) or not isinstance(number, int) or (minimum is not None and number < minimum):
        bound = {None: "an integer", 0: "an integer >= 0", 1: "a positive integer"}.get(
            minimum, f"an integer >= {minimum}"
        )
        raise ValueError(f"{where} must be {bound}{' or null' if nullable else ''}, got {value!r}.")
    return number


def _float_value(
    value: Any,
    where: str,
    low: float | None = None,
    high: float | None = None,
    nullable: bool = False,
    low_inclusive: bool = True,
) -> float | None:
    if value is None and nullable:
        return None
    number: Any = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    ok = isinstance(number, (int, float)) and not isinstance(number, bool) and math.isfinite(number)
    if ok and low is not None:
        ok = number >= low if low_inclusive else number > low
    if ok and high is not None:
        ok = number < high
    if not ok:
        bounds = []
        if low is not None:
            bounds.append(f"{'>=' if low_inclusive else '>'} {low:g}")
        if high is not None:
            bounds.append(f"< {high:g}")
        wanted = "a number" + (f" {' and '.join(bounds)}" if bounds else "") + (" or null" if nullable else "")
        raise ValueError(f"{where} must be {wanted}, got {value!r}.")
    return float(number)


def _bool_value(value: Any, where: str, nullable: bool = False) -> bool | None:
    if value is None and nullable:
        return None
    if not isinstance(value, bool):
        raise ValueError(f"{where} must be true or false{' or null' if nullable else ''}, got {value!r}.")
    return value


def _path_value(value: Any, where: str) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, (str, int, os.PathLike)) and not isinstance(value, bool):
        return os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    raise ValueError(f"{where} must be a path, got {value!r}.")


def _choice_value(value: Any, where: str, choices: Sequence[Any]) -> Any:
    if value not in choices:
        raise ValueError(f"{where} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}.")
    return value


def _size_value(value: Any, where: str) -> int | float:
    if isinstance(value, str):
        try:
            value = float(value) if any(c in value for c in ".eE") else int(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{where} must be a number of pairs (int >= 0) or a fraction in [0, 1), got {value!r}.")
    return value


def _directions_value(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise ValueError(f"{where} must be a non-empty list of directions among {list(DIRECTIONS)}, got {value!r}.")
    for direction in value:
        _choice_value(direction, where, DIRECTIONS)
    if len(set(value)) != len(value):
        raise ValueError(f"{where} lists a direction twice: {value!r}.")
    return value


# --------------------------------------------------------------------------------------------- validation


def _checker(section: dict[str, Any], name: str) -> Any:
    """``check(key, convert, *args)``: replace ``section[key]`` (when present) by its checked value."""

    def check(key: str, convert: Any, *args: Any) -> None:
        if key in section:
            section[key] = convert(section[key], f"{name}.{key}", *args)

    return check


def _validate_data(data: dict[str, Any]) -> None:
    check = _checker(data, "data")
    check("path", _path_value)
    check("directions", _directions_value)
    check("validation_size", _size_value)
    check("test_size", _size_value)
    check("split_seed", _int_value, 0)
    check("max_length", _int_value, 2)
    check("max_length_ratio", _float_value, 1.0, None, True)
    check("eval_samples", _int_value, 0, True)
    check("noun_phrases", _bool_value)
    check("max_noun_phrases", _int_value, 1, True)
    check("casual_copies", _float_value, 0.0, 1.0)
    check("noun_phrase_sentences", _bool_value)


def _validate_tokenizer(tokenizer: dict[str, Any]) -> None:
    check = _checker(tokenizer, "tokenizer")
    check("path", _path_value)
    check("vocab_size", _int_value, 1)
    check("model_type", _choice_value, ("unigram", "bpe"))


def _validate_alignment(alignment: dict[str, Any]) -> None:
    from ..data.word_alignment import SYMMETRIZATIONS

    check = _checker(alignment, "alignment")
    check("guided", _bool_value)
    check("layer", _int_value, 0, True)
    check("head", _int_value, 0)
    check("weight", _float_value, 0.0, None, False, False)
    check("symmetrization", _choice_value, SYMMETRIZATIONS)


def _validate_training(training: dict[str, Any]) -> None:
    check = _checker(training, "training")
    check("output_dir", _path_value)
    check("init_from", _path_value)
    for key in ("batch_size", "gradient_accumulation_steps", "max_steps", "logging_steps", "save_steps"):
        check(key, _int_value, 1)
    for key in ("eval_batch_size", "eval_num_beams", "num_beams", "max_new_tokens"):
        check(key, _int_value, 1)
    for key in ("warmup_steps", "eval_steps", "seed", "average_last", "dataloader_num_workers"):
        check(key, _int_value, 0)
    check("save_total_limit", _int_value, 0, True)
    check("max_tokens_per_batch", _int_value, 1, True)
    check("learning_rate", _float_value, 0.0, None, True, False)
    check("lr_scale", _float_value, 0.0, None, False, False)
    check("adam_beta1", _float_value, 0.0, 1.0)
    check("adam_beta2", _float_value, 0.0, 1.0)
    check("adam_epsilon", _float_value, 0.0)
    check("weight_decay", _float_value, 0.0)
    check("max_grad_norm", _float_value, 0.0)
    check("length_penalty", _float_value)
    check("bf16", _bool_value)
    check("disable_tqdm", _bool_value)
    check("use_cpu", _bool_value, True)
    check("sampling", _choice_value, SAMPLING_STRATEGIES)
    if training.get("save_dtype") is not None:
        _choice_value(str(training["save_dtype"]).replace("torch.", ""), "training.save_dtype", list(DTYPES))
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


def validate_config(config: dict[str, Any]) -> dict[str, Any]:
    """Check the type and range of every value of a run configuration (in place; also returned).

    Numbers given as strings (YAML reads ``1e-9`` without a dot as a string) are converted; a bad value
    raises a ValueError that names the key, e.g. ``training.max_steps must be a positive integer, got 'abc'``.
    The ``model`` section is checked by building a `VaswaniConfig` from it.
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
    try:
        model = VaswaniConfig(**dict(config["model"]))
    except (TypeError, ValueError) as error:
        raise ValueError(f"Section 'model': {error}") from None
    if config["alignment"].get("guided") and not config["training"].get("init_from"):
        layer, head = config["alignment"].get("layer"), config["alignment"].get("head", 0)
        if layer is not None and layer >= model.decoder_layers:
            raise ValueError(f"alignment.layer must be a decoder layer in [0, {model.decoder_layers}), got {layer}.")
        if head >= model.decoder_attention_heads:
            raise ValueError(f"alignment.head must be in [0, {model.decoder_attention_heads}), got {head}.")
    return config


# --------------------------------------------------------------------------------------------- loading


def _read_config_file(path: Path) -> Mapping[str, Any]:
    if not path.is_file():
        raise FileNotFoundError(f"No such configuration file: {str(path)!r}")
    try:
        with open(path, encoding="utf-8") as handle:
            loaded = json.load(handle) if path.suffix.lower() == ".json" else yaml.safe_load(handle)
    except yaml.YAMLError as error:
        raise ValueError(f"{path}: not valid YAML ({_yaml_problem(error)}).") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error}).") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start}).") from None
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
