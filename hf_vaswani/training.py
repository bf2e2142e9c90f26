"""Training recipe of the paper (sec. 5) on `transformers.Seq2SeqTrainer`, and checkpoint averaging (sec. 6.1).

* Optimizer (sec. 5.3): Adam with beta1 = 0.9, beta2 = 0.98, eps = 1e-9 (no weight decay).
* Learning rate (sec. 5.3, eq. 3): ``lrate = d_model^-0.5 * min(step_num^-0.5, step_num * warmup_steps^-1.5)``
  (`paper_learning_rate`). `transformers`' ``inverse_sqrt`` schedule with ``timescale = warmup`` and peak
  ``d_model^-0.5 * warmup^-0.5`` is exactly this function of the step (see the tests), but `Trainer` steps the
  scheduler AFTER each update, so update k would run with the value for step k - 1 and the first update with
  a learning rate of 0. `paper_lr_lambda` shifts by one so that update k (k = 1, 2, ...) uses step_num = k,
  as in the paper.
* Regularization (sec. 5.4): residual dropout and label smoothing come from the model configuration (the
  model computes the label-smoothed loss; Trainer's `label_smoothing_factor` stays 0).
* Batching (sec. 5.1): batches of sentences of similar length (``sampling: group_by_length``, the default),
  or batches of a bounded number of tokens as in the paper (``sampling: tokens`` with ``max_tokens_per_batch``,
  `TokenBatchSampler`), with gradient accumulation; the loss is normalized by the number of target tokens of
  the whole accumulated batch.
* Checkpoint averaging (sec. 6.1): `average_checkpoints` averages the last N checkpoints.

A run is described by a YAML (or JSON) file with four sections, ``data``, ``tokenizer``, ``model`` and
``training`` (see `DEFAULT_CONFIG` and ``configs/tatoeba-es-en.yaml``); any value can be overridden with
``key.path=value`` strings (``--set training.max_steps=100`` on the command line). `validate_config` checks the
type and range of every value.

The same ``train`` runs in one process or under ``torchrun`` / ``accelerate launch`` (DDP); checkpoints are
written atomically and a resumed run continues with the data order of an uninterrupted one (`VaswaniTrainer`).

Layout of the output directory::

    config.yaml          the resolved configuration of the run
    tokenizer/           the tokenizer, trained once on the training split and reused when resuming
    splits/              validation.tsv and test.tsv (English<TAB>Spanish), for `hf-vaswani evaluate`;
                         noun_phrases.tsv, the mined phrase pairs added to training (``data.noun_phrases``)
    log.jsonl            one JSON object per Trainer log event (loss, lr, eval BLEU/chrF, tokens/s)
    checkpoint-N/        Trainer checkpoints (model, tokenizer, optimizer, scheduler, RNG states,
                         training_args.json), renamed into place from tmp-checkpoint-N/ once complete
    final/               the model at the end of training (config, generation config, tokenizer)
    averaged/            the average of the last `average_last` checkpoints (when >= 2 exist)
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import re
import shutil
import sys
import time
import warnings
import zipfile
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import torch
import yaml
from safetensors.torch import load_file, save_file
from torch.optim.lr_scheduler import LambdaLR
from transformers import (
    AutoTokenizer,
    DataCollatorForSeq2Seq,
    GenerationConfig,
    Seq2SeqTrainer,
    Seq2SeqTrainingArguments,
    TrainerCallback,
    set_seed,
)
from transformers.trainer_pt_utils import LengthGroupedSampler, safe_globals
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, rotate_checkpoints

from .commands import positive_int
from .configuration_vaswani import VaswaniConfig
from .modeling_vaswani import VaswaniForConditionalGeneration

__all__ = [
    "DEFAULT_CONFIG",
    "IncompleteCheckpointWarning",
    "JsonlLoggerCallback",
    "SAMPLING_STRATEGIES",
    "TokenBatchSampler",
    "VaswaniTrainer",
    "add_parser",
    "apply_overrides",
    "average_checkpoints",
    "build_training_arguments",
    "checkpoint_problem",
    "find_checkpoints",
    "last_checkpoint",
    "load_config",
    "paper_learning_rate",
    "paper_lr_lambda",
    "paper_peak_learning_rate",
    "train",
    "validate_config",
]

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
        "noun_phrases": False,  # add noun-phrase pairs mined from the training split (hf_vaswani.phrases)
        "max_noun_phrases": None,  # keep at most this many mined phrase pairs (the most frequent)
        "casual_copies": 0.0,  # add this fraction of training pairs again, lower-case initial, unpunctuated
    },
    "tokenizer": {
        "path": None,  # an existing tokenizer folder; None trains one on the training split
        "vocab_size": 8000,
        "model_type": "unigram",
    },
    # Any `VaswaniConfig` field; vocab_size and the special token ids come from the tokenizer.
    "model": {},
    "training": {
        "output_dir": None,  # required
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


# --------------------------------------------------------------------------------------------- schedule


def paper_learning_rate(step_num: int, d_model: int, warmup_steps: int, scale: float = 1.0) -> float:
    """Eq. 3 of the paper: ``d_model^-0.5 * min(step_num^-0.5, step_num * warmup_steps^-1.5)``, step_num >= 1."""
    if step_num < 1:
        raise ValueError(f"step_num starts at 1, got {step_num}.")
    return scale * d_model**-0.5 * min(step_num**-0.5, step_num * warmup_steps**-1.5)


def paper_peak_learning_rate(d_model: int, warmup_steps: int, scale: float = 1.0) -> float:
    """The largest value of eq. 3, reached at step_num = warmup_steps: ``d_model^-0.5 * warmup_steps^-0.5``."""
    return scale * d_model**-0.5 * warmup_steps**-0.5


def paper_lr_lambda(scheduler_step: int, *, warmup_steps: int) -> float:
    """Multiplier of the peak learning rate for `LambdaLR` so that the k-th optimizer update uses eq. 3 at
    step_num = k. `LambdaLR` evaluates the lambda at 0 before the first update and `Trainer` steps it after
    each update, so the value used by update k is lambda(k - 1)."""
    warmup_steps = max(1, int(warmup_steps))
    step_num = scheduler_step + 1
    return min(step_num**-0.5 * warmup_steps**0.5, step_num / warmup_steps)


# --------------------------------------------------------------------------------------------- configuration


def _deep_update(base: dict[str, Any], update: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _deep_update(base[key], value, f"{where}{key}.")
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
    for section in ("data", "tokenizer", "training"):
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


# --------------------------------------------------------------------------------------------- validation


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
    from .tokenization import DIRECTIONS

    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise ValueError(f"{where} must be a non-empty list of directions among {list(DIRECTIONS)}, got {value!r}.")
    for direction in value:
        _choice_value(direction, where, DIRECTIONS)
    if len(set(value)) != len(value):
        raise ValueError(f"{where} lists a direction twice: {value!r}.")
    return value


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
    data, tokenizer, training = config["data"], config["tokenizer"], config["training"]

    def check(section: dict[str, Any], name: str, key: str, convert: Any, *args: Any, **kwargs: Any) -> None:
        if key in section:
            section[key] = convert(section[key], f"{name}.{key}", *args, **kwargs)

    check(data, "data", "path", _path_value)
    check(data, "data", "directions", _directions_value)
    check(data, "data", "validation_size", _size_value)
    check(data, "data", "test_size", _size_value)
    check(data, "data", "split_seed", _int_value, 0)
    check(data, "data", "max_length", _int_value, 2)
    check(data, "data", "max_length_ratio", _float_value, 1.0, None, True)
    check(data, "data", "eval_samples", _int_value, 0, True)
    check(data, "data", "noun_phrases", _bool_value)
    check(data, "data", "max_noun_phrases", _int_value, 1, True)
    check(data, "data", "casual_copies", _float_value, 0.0, 1.0)
    check(tokenizer, "tokenizer", "path", _path_value)
    check(tokenizer, "tokenizer", "vocab_size", _int_value, 1)
    check(tokenizer, "tokenizer", "model_type", _choice_value, ("unigram", "bpe"))
    check(training, "training", "output_dir", _path_value)
    for key in ("batch_size", "gradient_accumulation_steps", "max_steps", "logging_steps", "save_steps"):
        check(training, "training", key, _int_value, 1)
    for key in ("eval_batch_size", "eval_num_beams", "num_beams", "max_new_tokens"):
        check(training, "training", key, _int_value, 1)
    for key in ("warmup_steps", "eval_steps", "seed", "average_last", "dataloader_num_workers"):
        check(training, "training", key, _int_value, 0)
    check(training, "training", "save_total_limit", _int_value, 0, True)
    check(training, "training", "max_tokens_per_batch", _int_value, 1, True)
    check(training, "training", "learning_rate", _float_value, 0.0, None, True, False)
    check(training, "training", "lr_scale", _float_value, 0.0, None, False, False)
    check(training, "training", "adam_beta1", _float_value, 0.0, 1.0)
    check(training, "training", "adam_beta2", _float_value, 0.0, 1.0)
    check(training, "training", "adam_epsilon", _float_value, 0.0)
    check(training, "training", "weight_decay", _float_value, 0.0)
    check(training, "training", "max_grad_norm", _float_value, 0.0)
    check(training, "training", "length_penalty", _float_value)
    check(training, "training", "bf16", _bool_value)
    check(training, "training", "disable_tqdm", _bool_value)
    check(training, "training", "use_cpu", _bool_value, True)
    check(training, "training", "sampling", _choice_value, SAMPLING_STRATEGIES)
    if training.get("save_dtype") is not None:
        _choice_value(str(training["save_dtype"]).replace("torch.", ""), "training.save_dtype", list(_DTYPES))
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
    report_to = training.get("report_to")
    if not (isinstance(report_to, str) or (isinstance(report_to, list) and all(isinstance(r, str) for r in report_to))):
        raise ValueError(
            f"training.report_to must be a name or a list of names (e.g. none, tensorboard), got {report_to!r}."
        )
    model = {k: v for k, v in (config.get("model") or {}).items()}
    try:
        VaswaniConfig(**model)
    except (TypeError, ValueError) as error:
        raise ValueError(f"Section 'model': {error}") from None
    return config


def load_config(path: str | os.PathLike[str] | None = None, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The defaults, updated with the YAML/JSON file at `path` and the ``key=value`` `overrides`."""
    config = copy.deepcopy(DEFAULT_CONFIG)
    if path is not None:
        path = Path(path)
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
        _check_keys(loaded)
        _deep_update(config, loaded)
    apply_overrides(config, overrides)
    return validate_config(config)


def _resolve_output_dir(config: Mapping[str, Any]) -> Path:
    output_dir = config["training"]["output_dir"]
    if not output_dir:
        raise ValueError("training.output_dir is not set: pass --set training.output_dir=runs/NAME.")
    if Path(output_dir).exists() and not Path(output_dir).is_dir():
        raise NotADirectoryError(f"training.output_dir {str(output_dir)!r} is a file, not a folder.")
    return Path(output_dir)


def peak_learning_rate(config: Mapping[str, Any], d_model: int) -> float:
    training = config["training"]
    if training["learning_rate"] is not None:
        return float(training["learning_rate"])
    return paper_peak_learning_rate(d_model, max(1, int(training["warmup_steps"])), float(training["lr_scale"]))


def build_training_arguments(config: Mapping[str, Any], d_model: int) -> Seq2SeqTrainingArguments:
    """`Seq2SeqTrainingArguments` of a run configuration."""
    training = config["training"]
    use_cpu = training["use_cpu"]
    if use_cpu is None:
        use_cpu = not torch.cuda.is_available()
    eval_steps = int(training["eval_steps"] or 0)
    sampling = training["sampling"]
    if sampling not in SAMPLING_STRATEGIES:
        raise ValueError(f"training.sampling must be one of {', '.join(SAMPLING_STRATEGIES)}; got {sampling!r}.")
    return Seq2SeqTrainingArguments(
        output_dir=str(_resolve_output_dir(config)),
        per_device_train_batch_size=int(training["batch_size"]),
        per_device_eval_batch_size=int(training["eval_batch_size"]),
        gradient_accumulation_steps=int(training["gradient_accumulation_steps"]),
        max_steps=int(training["max_steps"]),
        learning_rate=peak_learning_rate(config, d_model),
        warmup_steps=int(training["warmup_steps"]),
        # Adam of sec. 5.3 (AdamW with weight_decay=0 is Adam); the fused kernel runs one optimizer step ~3.5x
        # faster on CPU at base() size (benchmarks), with the same state dict as the unfused one.
        optim="adamw_torch_fused",
        adam_beta1=float(training["adam_beta1"]),
        adam_beta2=float(training["adam_beta2"]),
        adam_epsilon=float(training["adam_epsilon"]),
        weight_decay=float(training["weight_decay"]),
        max_grad_norm=float(training["max_grad_norm"]),
        label_smoothing_factor=0.0,  # the model smooths its own loss (config.label_smoothing)
        train_sampling_strategy="random" if sampling == "tokens" else sampling,  # tokens: VaswaniTrainer's own
        bf16=bool(training["bf16"]),
        use_cpu=bool(use_cpu),
        seed=int(training["seed"]),
        data_seed=int(training["seed"]),
        logging_steps=int(training["logging_steps"]),
        logging_first_step=True,
        eval_strategy="steps" if eval_steps > 0 else "no",
        eval_steps=eval_steps if eval_steps > 0 else None,
        save_strategy="steps",
        save_steps=int(training["save_steps"]),
        save_total_limit=training["save_total_limit"],
        predict_with_generate=True,
        generation_num_beams=int(training["eval_num_beams"]),
        include_num_input_tokens_seen="non_padding",
        ddp_find_unused_parameters=False,  # every parameter gets a gradient (saves a graph traversal per step)
        dataloader_num_workers=int(training["dataloader_num_workers"]),
        disable_tqdm=bool(training["disable_tqdm"]),
        report_to=training["report_to"],
        remove_unused_columns=True,
    )


# --------------------------------------------------------------------------------------------- trainer


#: A checkpoint is written into ``tmp-checkpoint-N`` and renamed to ``checkpoint-N`` once complete.
STAGING_PREFIX = "tmp-"
#: The training arguments, as JSON (instead of Trainer's pickled ``training_args.bin``).
TRAINING_ARGS_JSON = "training_args.json"
#: RNG states at the start of the epoch a checkpoint was written in (see `VaswaniTrainer`).
EPOCH_RNG_STATE_NAME = "epoch_rng_state.pth"


class IncompleteCheckpointWarning(UserWarning):
    """A ``checkpoint-N`` folder is incomplete (a save was interrupted) and is skipped."""


def _plain_numpy_state(state: Any) -> Any:
    """`numpy.random.get_state()` with plain Python values, so that ``torch.load(weights_only=True)`` loads it
    without allowlisting numpy; `numpy.random.set_state` takes it back as is."""
    if isinstance(state, tuple) and len(state) == 5 and hasattr(state[1], "tolist"):
        return (str(state[0]), [int(v) for v in state[1].tolist()], int(state[2]), int(state[3]), float(state[4]))
    return state


def _fsync_tree(folder: Path) -> None:
    """Flush the files of `folder` (recursively) and the folder itself to disk."""
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
    for directory in [folder, *sorted(p for p in folder.rglob("*") if p.is_dir())]:
        try:
            descriptor = os.open(directory, os.O_RDONLY)
        except OSError:  # some platforms cannot open a directory
            continue
        try:
            os.fsync(descriptor)
        except OSError:
            pass
        finally:
            os.close(descriptor)


def _publish_dir(staged: Path, final: Path) -> None:
    """Move the completely written folder `staged` to `final` in one rename, replacing an existing `final`.

    Readers see either the old `final` (or none) or the complete new one, never a partial folder.
    """
    _fsync_tree(staged)
    if final.exists():
        # os.replace cannot replace a non-empty folder: move the old one aside first, then delete it.
        old = staged.parent / f"{final.name}.old"
        if old.exists():
            shutil.rmtree(old)
        os.replace(final, old)
        os.replace(staged, final)
        shutil.rmtree(old)
    else:
        os.replace(staged, final)
    try:
        descriptor = os.open(final.parent, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
    except OSError:
        pass


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

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch + 1)
        for batch in torch.randperm(len(self.batches), generator=generator).tolist():
            yield list(self.batches[batch])


class VaswaniTrainer(Seq2SeqTrainer):
    """`Seq2SeqTrainer` with the paper's learning rate schedule, length grouping from precomputed lengths and
    fault-tolerant checkpoints.

    Checkpoints (what `Seq2SeqTrainer` adds to a plain ``Trainer.train`` run of transformers 5.24):

    * Atomic: a checkpoint is written into ``tmp-checkpoint-N`` and renamed to ``checkpoint-N`` when every
      process has written its part, so a ``checkpoint-N`` folder is always complete; a killed save leaves a
      ``tmp-checkpoint-N`` folder, which `train` removes. (Trainer itself writes straight into
      ``checkpoint-N``.)
    * Safe to load: every file loads with ``torch.load(..., weights_only=True)``. The training arguments are
      written as ``training_args.json`` instead of the pickled ``training_args.bin`` (which resuming does not
      need), and the numpy RNG state in ``rng_state*.pth`` is stored as plain Python values.
    * Same data order after resuming: Trainer draws the permutation of an epoch from the RNG state at the
      start of that epoch, which it does not save (it saves the state at the checkpoint), so a run resumed in
      epoch e >= 1 would replay the first epoch's order. ``epoch_rng_state.pth`` keeps the RNG states of the
      start of the checkpoint's epoch (the global CPU generator and the sampler's own generator, if any), and
      they are restored before the resumed epoch's order is drawn. Checkpoints without that file (written by
      an older version) resume as before.
    """

    def __init__(
        self,
        *args: Any,
        train_lengths: Sequence[int] | None = None,
        max_tokens_per_batch: int | None = None,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self.train_lengths = list(train_lengths) if train_lengths is not None else None
        self.max_tokens_per_batch = max_tokens_per_batch
        if max_tokens_per_batch is not None and self.train_lengths is None:
            raise ValueError("max_tokens_per_batch needs train_lengths (the length of each training example).")
        self._staging_dir: Path | None = None
        self._train_sampler_ref: Any = None
        self._epoch_start_rng: dict[str, Any] | None = None

    def create_scheduler(
        self, num_training_steps: int, optimizer: torch.optim.Optimizer | None = None
    ) -> torch.optim.lr_scheduler.LRScheduler:
        if self.lr_scheduler is None:
            optimizer = optimizer if optimizer is not None else self.optimizer
            warmup = self.args.get_warmup_steps(num_training_steps)
            self.lr_scheduler = LambdaLR(optimizer, partial(paper_lr_lambda, warmup_steps=warmup))
            self._created_lr_scheduler = True
        return self.lr_scheduler

    def get_train_dataloader(self) -> torch.utils.data.DataLoader:
        """Trainer's loader, or with `max_tokens_per_batch` one whose batches come from a `TokenBatchSampler`."""
        if self.max_tokens_per_batch is None:
            return super().get_train_dataloader()
        from transformers.trainer_utils import seed_worker

        dataset = self._remove_unused_columns(self.train_dataset, description="Training")
        if len(dataset) != len(self.train_lengths):
            raise ValueError(f"{len(self.train_lengths)} train_lengths for {len(dataset)} training examples.")
        seed = self.args.data_seed if self.args.data_seed is not None else self.args.seed
        sampler = TokenBatchSampler(self.train_lengths, int(self.max_tokens_per_batch), seed=seed)
        self._train_sampler_ref = sampler
        loader = torch.utils.data.DataLoader(
            dataset,
            batch_sampler=sampler,
            collate_fn=self.data_collator,
            num_workers=self.args.dataloader_num_workers,
            pin_memory=self.args.dataloader_pin_memory,
            persistent_workers=self.args.dataloader_persistent_workers and self.args.dataloader_num_workers > 0,
            worker_init_fn=partial(
                seed_worker, num_workers=self.args.dataloader_num_workers, rank=self.args.process_index
            ),
        )
        return self.accelerator.prepare(loader)

    def _get_train_sampler(self, train_dataset: Any = None) -> torch.utils.data.Sampler | None:
        dataset = train_dataset if train_dataset is not None else self.train_dataset
        if (
            self.args.train_sampling_strategy == "group_by_length"
            and self.train_lengths is not None
            and dataset is not None
            and len(dataset) == len(self.train_lengths)
        ):
            sampler = LengthGroupedSampler(
                self.args.train_batch_size * self.args.gradient_accumulation_steps, lengths=self.train_lengths
            )
        else:
            sampler = super()._get_train_sampler(train_dataset)
        self._train_sampler_ref = sampler
        return sampler

    # ------------------------------------------------------------------ same data order after resuming

    def _rng_file_name(self, stem: str) -> str:
        return f"{stem}.pth" if self.args.world_size <= 1 else f"{stem}_{self.args.process_index}.pth"

    def _sampler_generator(self) -> torch.Generator | None:
        generator = getattr(self._train_sampler_ref, "generator", None)
        return generator if isinstance(generator, torch.Generator) else None

    def _run_epoch(self, **kwargs: Any) -> Any:
        epoch = kwargs["epoch"]
        checkpoint = kwargs.get("resume_from_checkpoint")
        if (
            checkpoint is not None
            and epoch == kwargs.get("epochs_trained")
            and kwargs.get("steps_trained_in_current_epoch")
        ):
            self._restore_epoch_rng_state(checkpoint, epoch)
        generator = self._sampler_generator()
        self._epoch_start_rng = {
            "epoch": int(epoch),
            "cpu": torch.get_rng_state(),
            **({"sampler": generator.get_state()} if generator is not None else {}),
        }
        if hasattr(self._train_sampler_ref, "set_epoch"):
            self._train_sampler_ref.set_epoch(epoch)
        return super()._run_epoch(**kwargs)

    def _restore_epoch_rng_state(self, checkpoint: str, epoch: int) -> None:
        path = Path(checkpoint) / self._rng_file_name(Path(EPOCH_RNG_STATE_NAME).stem)
        if not path.is_file():
            print(
                f"hf-vaswani train: note: {Path(checkpoint).name} has no {path.name} (written by an older version): "
                "the order of the rest of the resumed epoch may differ from an uninterrupted run.",
                file=sys.stderr,
            )
            return
        saved = torch.load(path, weights_only=True)
        if int(saved.get("epoch", -1)) != int(epoch):
            return  # saved at the end of an epoch: Trainer restores the checkpoint's own RNG state instead
        torch.set_rng_state(saved["cpu"])
        generator = self._sampler_generator()
        if generator is not None and "sampler" in saved:
            generator.set_state(saved["sampler"])

    # ------------------------------------------------------------------ atomic, weights-only checkpoints

    def _get_output_dir(self, trial: Any) -> str:
        if self._staging_dir is not None:
            return str(self._staging_dir)
        return super()._get_output_dir(trial=trial)

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        run_dir = Path(super()._get_output_dir(trial=trial))
        name = f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"
        staging = run_dir / f"{STAGING_PREFIX}{name}"
        if self.args.should_save and staging.exists():
            shutil.rmtree(staging)  # left by a save that was killed
        self.accelerator.wait_for_everyone()
        self._staging_dir = staging  # Trainer writes into staging/checkpoint-N (see _get_output_dir)
        try:
            super()._save_checkpoint(model, trial)
        finally:
            self._staging_dir = None
        self.accelerator.wait_for_everyone()  # every process has written its rng_state_*.pth
        if self.args.should_save:
            _publish_dir(staging / name, run_dir / name)
            shutil.rmtree(staging, ignore_errors=True)
            rotate_checkpoints(
                output_dir=str(run_dir),
                save_total_limit=self.args.save_total_limit,
                best_model_checkpoint=self.state.best_model_checkpoint,
                use_mtime=True,
            )
        self.accelerator.wait_for_everyone()

    def _save_rng_state(self, output_dir: str) -> None:
        super()._save_rng_state(output_dir)
        path = Path(output_dir) / self._rng_file_name("rng_state")
        if path.is_file():
            with safe_globals():
                states = torch.load(path, weights_only=True)
            if "numpy" in states:
                states["numpy"] = _plain_numpy_state(states["numpy"])
            torch.save(states, path)
        if self._epoch_start_rng is not None:
            torch.save(self._epoch_start_rng, Path(output_dir) / self._rng_file_name(Path(EPOCH_RNG_STATE_NAME).stem))

    def _save(self, output_dir: str | None = None, state_dict: dict | None = None) -> None:
        super()._save(output_dir, state_dict=state_dict)
        if self.args.should_save:
            folder = Path(output_dir if output_dir is not None else self.args.output_dir)
            (folder / "training_args.bin").unlink(missing_ok=True)
            (folder / TRAINING_ARGS_JSON).write_text(self.args.to_json_string(), encoding="utf-8")


class JsonlLoggerCallback(TrainerCallback):
    """Appends every Trainer log event to a JSONL file (one object a line), with the wall time, the step and,
    for training logs, the number of source tokens per second since the previous log."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._last: tuple[float, int] | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        self._last = (time.time(), int(state.num_input_tokens_seen or 0))

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        now = time.time()
        record: dict[str, Any] = {"time": now, "step": state.global_step, "epoch": state.epoch, **logs}
        tokens = int(state.num_input_tokens_seen or 0)
        if self._last is not None and "loss" in logs and now > self._last[0] and tokens > self._last[1]:
            record["source_tokens_per_second"] = (tokens - self._last[1]) / (now - self._last[0])
            self._last = (now, tokens)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, default=float) + "\n")


# --------------------------------------------------------------------------------------------- metrics


def _compute_metrics_factory(tokenizer: Any, directions: Sequence[str] | None = None) -> Any:
    """`make_compute_metrics` of the metrics module (or a minimal sacrebleu-based one if it is missing), which
    gives BLEU/chrF over all validation rows; with `directions` (the direction of each validation row, in
    order) also ``bleu_es-en``, ``chrf_es-en``, ... per direction. Trainer hands the predictions over in the
    order of the evaluation dataset (also when several processes evaluate), so row i has direction i."""
    try:
        from .metrics import make_compute_metrics  # type: ignore[attr-defined]

        compute = make_compute_metrics(tokenizer)
    except ImportError:
        compute = _fallback_compute_metrics(tokenizer)
    if not directions or len(set(directions)) < 2:
        return compute
    import numpy as np

    directions = list(directions)
    rows = {
        direction: np.array([i for i, d in enumerate(directions) if d == direction])
        for direction in dict.fromkeys(directions)
    }

    def compute_with_directions(eval_prediction: Any) -> dict[str, float]:
        predictions, labels = eval_prediction[0], eval_prediction[1]
        if isinstance(predictions, tuple):
            predictions = predictions[0]
        predictions, labels = np.asarray(predictions), np.asarray(labels)
        if len(predictions) > len(directions) == len(labels[: len(directions)]):
            # Several processes: the last batches were padded with repeated rows to give every process a full
            # batch; the first len(directions) rows are the evaluation dataset, in order.
            predictions, labels = predictions[: len(directions)], labels[: len(directions)]
        scores = dict(compute((predictions, labels)))
        if len(predictions) == len(directions):
            for direction, indices in rows.items():
                part = compute((predictions[indices], labels[indices]))
                scores[f"bleu_{direction}"] = part["bleu"]
                scores[f"chrf_{direction}"] = part["chrf"]
        return scores

    return compute_with_directions


def _fallback_compute_metrics(tokenizer: Any) -> Any:
    import numpy as np
    import sacrebleu

    def compute(eval_prediction: Any) -> dict[str, float]:
        predictions, labels = eval_prediction[0], eval_prediction[1]
        if isinstance(predictions, tuple):
            predictions = predictions[0]
        predictions = np.where(predictions < 0, tokenizer.pad_token_id, predictions)
        labels = np.where(labels < 0, tokenizer.pad_token_id, labels)
        hypotheses = tokenizer.batch_decode(predictions, skip_special_tokens=True)
        references = tokenizer.batch_decode(labels, skip_special_tokens=True)
        return {
            "bleu": sacrebleu.corpus_bleu(hypotheses, [references]).score,
            "chrf": sacrebleu.corpus_chrf(hypotheses, [references]).score,
        }

    return compute


# --------------------------------------------------------------------------------------------- train


def _model_config(config: Mapping[str, Any], tokenizer: Any) -> VaswaniConfig:
    values = dict(config["model"] or {})
    values.update(
        vocab_size=len(tokenizer),
        decoder_vocab_size=None,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.bos_token_id,
    )
    return VaswaniConfig(**values)


def _generation_config(model_config: VaswaniConfig, training: Mapping[str, Any]) -> GenerationConfig:
    return GenerationConfig(
        num_beams=int(training["num_beams"]),
        length_penalty=float(training["length_penalty"]),
        max_length=int(training["max_new_tokens"]) + 1,  # the decoder start token counts in max_length
        early_stopping=True,
        bos_token_id=model_config.bos_token_id,
        eos_token_id=model_config.eos_token_id,
        pad_token_id=model_config.pad_token_id,
        decoder_start_token_id=model_config.decoder_start_token_id,
    )


def _load_or_train_tokenizer(
    config: Mapping[str, Any], output_dir: Path, train_pairs: Sequence[Any], save: bool = True
) -> Any:
    from .tokenization import train_tokenizer

    saved = output_dir / "tokenizer"
    section = config["tokenizer"]
    if section["path"]:
        if not (Path(section["path"]) / "tokenizer_config.json").is_file():
            raise FileNotFoundError(
                f"tokenizer.path: no tokenizer folder (with a tokenizer_config.json) at {section['path']!r}."
            )
        tokenizer = AutoTokenizer.from_pretrained(section["path"])
    elif (saved / "tokenizer.json").is_file():
        tokenizer = AutoTokenizer.from_pretrained(saved)
    else:
        texts = [text for pair in train_pairs for text in pair]
        tokenizer = train_tokenizer(texts, vocab_size=int(section["vocab_size"]), model_type=section["model_type"])
    if save and not (saved / "tokenizer.json").is_file():
        tokenizer.save_pretrained(saved)
    return tokenizer


def _checkpoint_step(path: Path) -> int:
    match = re.fullmatch(r"checkpoint-(\d+)", path.name)
    return int(match.group(1)) if match else -1


def _safetensors_problem(path: Path) -> str | None:
    """Why the safetensors file at `path` is unreadable (truncated, bad header), or None. Reads the header only."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            raw = handle.read(8)
            if len(raw) < 8:
                return f"{path.name} is truncated"
            header_size = int.from_bytes(raw, "little")
            if header_size > size - 8:
                return f"{path.name} is truncated"
            header = json.loads(handle.read(header_size))
    except (OSError, ValueError) as error:
        return f"{path.name} is unreadable ({error})"
    ends = [entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"]
    if 8 + header_size + max(ends, default=0) > size:
        return f"{path.name} is truncated"
    return None


def checkpoint_problem(folder: str | os.PathLike[str]) -> str | None:
    """Why `folder` is not a complete Trainer checkpoint, or None when it is complete.

    Checked: the model weights (``model.safetensors``, or a sharded index and all its shards) are readable and
    not truncated; ``trainer_state.json`` (which Trainer writes last) is valid JSON and, for a ``checkpoint-N``
    folder, records step N; every ``*.pt`` / ``*.pth`` file is a complete archive. This catches checkpoints
    cut short by a crash in the middle of a save by a version without atomic saves (`VaswaniTrainer` renames a
    checkpoint into place only once it is complete).
    """
    folder = Path(folder)
    if not folder.is_dir():
        return "not a folder"
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            with open(index, encoding="utf-8") as handle:
                shards = sorted(set(json.load(handle)["weight_map"].values()))
        except (OSError, ValueError, KeyError) as error:
            return f"{index.name} is unreadable ({error})"
        weights = [folder / shard for shard in shards]
    else:
        weights = [folder / "model.safetensors"]
    for path in weights:
        if not path.is_file():
            return f"{path.name} is missing"
        problem = _safetensors_problem(path)
        if problem:
            return problem
    state_path = folder / "trainer_state.json"
    if not state_path.is_file():
        return "trainer_state.json is missing"
    try:
        with open(state_path, encoding="utf-8") as handle:
            state = json.load(handle)
    except (OSError, ValueError) as error:
        return f"trainer_state.json is unreadable ({error})"
    step = _checkpoint_step(folder)
    if step >= 0 and state.get("global_step") != step:
        return f"trainer_state.json records step {state.get('global_step')}, not {step}"
    for path in sorted([*folder.glob("*.pt"), *folder.glob("*.pth")]):
        if not zipfile.is_zipfile(path):
            return f"{path.name} is truncated or not a torch archive"
    return None


def find_checkpoints(output_dir: str | os.PathLike[str], *, warn: bool = False) -> list[Path]:
    """The complete ``checkpoint-N`` folders of `output_dir` (see `checkpoint_problem`), in increasing N.

    Incomplete ones are left out, with an `IncompleteCheckpointWarning` when `warn`.
    """
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        return []
    found = []
    for path in sorted(
        (p for p in output_dir.iterdir() if p.is_dir() and _checkpoint_step(p) >= 0), key=_checkpoint_step
    ):
        problem = checkpoint_problem(path)
        if problem is None:
            found.append(path)
        elif warn:
            warnings.warn(
                f"skipping the incomplete checkpoint {path} ({problem}); an interrupted save leaves this.",
                IncompleteCheckpointWarning,
                stacklevel=2,
            )
    return found


def last_checkpoint(output_dir: str | os.PathLike[str], *, warn: bool = True) -> Path | None:
    """The complete checkpoint of `output_dir` with the highest step, or None; newer incomplete checkpoints are
    skipped (with an `IncompleteCheckpointWarning` when `warn`)."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        return None
    complete = find_checkpoints(output_dir)
    newest = _checkpoint_step(complete[-1]) if complete else -1
    if warn:
        for path in output_dir.iterdir():
            if path.is_dir() and _checkpoint_step(path) > newest:
                problem = checkpoint_problem(path)
                warnings.warn(
                    f"skipping the incomplete checkpoint {path.name} ({problem}): "
                    + (f"resuming from {complete[-1].name} instead." if complete else "no complete checkpoint."),
                    IncompleteCheckpointWarning,
                    stacklevel=2,
                )
    return complete[-1] if complete else None


def _remove_staging_dirs(output_dir: Path) -> None:
    """Delete the ``tmp-checkpoint-N`` folders that killed saves left behind."""
    if not output_dir.is_dir():
        return
    for path in output_dir.iterdir():
        if path.is_dir() and path.name.startswith(f"{STAGING_PREFIX}{PREFIX_CHECKPOINT_DIR}-"):
            print(f"hf-vaswani train: removing {path}, left by an interrupted checkpoint save", file=sys.stderr)
            shutil.rmtree(path, ignore_errors=True)


def train(config: Mapping[str, Any], resume: bool | None = None) -> dict[str, Any]:
    """Run (or resume) the training described by `config` (see `load_config`).

    Args:
        resume: True resumes from the last checkpoint of the output directory (error if there is none);
            False starts from scratch (error if the output directory already has checkpoints); None (default)
            resumes when a checkpoint exists and starts from scratch otherwise.

    Returns:
        A summary: output_dir, the resumed checkpoint (or None), global_step, the final training loss, the
        paths of the final and averaged models.
    """
    from .data import (
        build_translation_datasets,
        deduplicate_pairs,
        filter_pairs,
        load_pairs,
        split_pairs,
        tokenize_pairs,
        write_pairs_tsv,
    )
    from .phrases import casual_copies, mine_noun_phrase_pairs
    from .tokenization import direction_to_languages

    config = validate_config(copy.deepcopy(dict(config)))
    data, training = config["data"], config["training"]
    output_dir = _resolve_output_dir(config)
    if not data["path"]:
        raise ValueError("data.path is not set: pass --set data.path=/path/to/pairs.tsv.")
    for direction in data["directions"]:
        direction_to_languages(direction)

    # The training arguments first: under torchrun / accelerate launch they set up the process group, which
    # the data preparation below needs (the main process trains the tokenizer while the others wait).
    d_model = int((config["model"] or {}).get("d_model", VaswaniConfig().d_model))
    args = build_training_arguments(config, d_model)
    is_main = args.process_index == 0

    found = last_checkpoint(output_dir, warn=resume is not False and is_main)
    if resume is True and found is None:
        raise FileNotFoundError(f"--resume: no complete checkpoint-N folder in {str(output_dir)!r} to resume from.")
    if resume is False and found is not None:
        raise FileExistsError(
            f"{str(output_dir)!r} already has checkpoints (the last is {found.name}): resume "
            "from it (--resume), or choose another training.output_dir."
        )
    resume_from = str(found) if found is not None and resume is not False else None

    # Data: read, deduplicate, split (deterministic), tokenizer trained on the training split only.
    pairs = deduplicate_pairs(load_pairs(data["path"]))
    splits = split_pairs(
        pairs, validation_size=data["validation_size"], test_size=data["test_size"], seed=int(data["split_seed"])
    )
    with args.main_process_first(local=False, desc="tokenizer and data splits"):
        if is_main:
            output_dir.mkdir(parents=True, exist_ok=True)
            _remove_staging_dirs(output_dir)
        tokenizer = _load_or_train_tokenizer(config, output_dir, splits["train"], save=is_main)
        max_length = int(data["max_length"])
        splits["train"] = filter_pairs(
            splits["train"], max_tokens=max_length, tokenizer=tokenizer, max_length_ratio=data["max_length_ratio"]
        )
        sentences, extra = splits["train"], []
        if data["noun_phrases"]:
            extra += mine_noun_phrase_pairs(sentences, max_pairs=data["max_noun_phrases"])
            if is_main:
                write_pairs_tsv(extra, output_dir / "splits" / "noun_phrases.tsv")
        if data["casual_copies"]:
            extra += casual_copies(sentences, data["casual_copies"], seed=int(data["split_seed"]))
        splits["train"] = [*sentences, *extra]
        if is_main:
            for name in ("validation", "test"):
                write_pairs_tsv(splits[name], output_dir / "splits" / f"{name}.tsv")
    datasets = build_translation_datasets(splits, data["directions"])
    eval_samples = int(data["eval_samples"] or 0)
    validation = datasets["validation"].shuffle(seed=int(data["split_seed"]))
    if eval_samples and eval_samples < len(validation):
        validation = validation.select(range(eval_samples))
    train_dataset = tokenize_pairs(datasets["train"], tokenizer, max_length)
    eval_dataset = tokenize_pairs(validation, tokenizer, max_length)
    train_lengths = [
        max(len(source), len(target))
        for source, target in zip(train_dataset["input_ids"], train_dataset["labels"], strict=True)
    ]

    # Model.
    set_seed(int(training["seed"]))
    model_config = _model_config(config, tokenizer)
    model = VaswaniForConditionalGeneration(model_config)
    model.generation_config = _generation_config(model_config, training)
    config["model"] = {**(config["model"] or {}), "vocab_size": model_config.vocab_size}
    if is_main:
        with open(output_dir / "config.yaml", "w", encoding="utf-8") as handle:
            yaml.safe_dump(config, handle, sort_keys=False, allow_unicode=True)

    trainer = VaswaniTrainer(
        model=model,
        args=args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset if args.eval_strategy != "no" else None,
        data_collator=DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100),
        processing_class=tokenizer,
        compute_metrics=_compute_metrics_factory(tokenizer, validation["direction"]),
        callbacks=[JsonlLoggerCallback(output_dir / "log.jsonl")],
        train_lengths=train_lengths,
        max_tokens_per_batch=training["max_tokens_per_batch"] if training["sampling"] == "tokens" else None,
    )
    if is_main:
        print(
            f"hf-vaswani train: {len(train_dataset):,} training rows ({', '.join(data['directions'])}), "
            f"{len(eval_dataset):,} validation rows, {model.num_parameters():,} parameters, "
            f"peak lr {args.learning_rate:.3g} at step {int(training['warmup_steps'])}, "
            + (f"{args.world_size} processes, " if args.world_size > 1 else "")
            + (
                f"batches of <= {training['max_tokens_per_batch']:,} tokens per side, "
                if training["sampling"] == "tokens"
                else ""
            )
            + (f"resuming from {resume_from}" if resume_from else "starting from scratch"),
            file=sys.stderr,
        )
    result = trainer.train(resume_from_checkpoint=resume_from)

    # final/ is written into tmp-final/ and renamed, like the checkpoints.
    final_dir = output_dir / "final"
    staging = output_dir / f"{STAGING_PREFIX}final"
    if is_main and staging.exists():
        shutil.rmtree(staging)
    trainer.accelerator.wait_for_everyone()
    trainer.save_model(str(staging))  # every process: FSDP / DeepSpeed gather the weights collectively
    save_dtype = training["save_dtype"]
    averaged_dir = None
    if is_main:
        tokenizer.save_pretrained(staging)
        if save_dtype:
            _cast_saved_model(staging, save_dtype)
        _publish_dir(staging, final_dir)
        checkpoints = find_checkpoints(output_dir)
        n_average = int(training["average_last"] or 0)
        if n_average >= 2 and len(checkpoints) >= 2:
            averaged_dir = output_dir / "averaged"
            average_checkpoints(checkpoints[-n_average:], averaged_dir, dtype=save_dtype)
    trainer.accelerator.wait_for_everyone()
    return {
        "output_dir": str(output_dir),
        "resumed_from": resume_from,
        "global_step": trainer.state.global_step,
        "training_loss": result.training_loss,
        "final": str(final_dir),
        "averaged": str(averaged_dir) if averaged_dir else None,
        "world_size": args.world_size,
        "process_index": args.process_index,
    }


# --------------------------------------------------------------------------------------------- averaging

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _dtype(name: str | torch.dtype | None) -> torch.dtype | None:
    if name is None or isinstance(name, torch.dtype):
        return name
    key = str(name).replace("torch.", "").lower()
    key = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}.get(
        key, key
    )
    if key not in _DTYPES:
        raise ValueError(f"Unknown dtype {name!r}: choose one of {', '.join(_DTYPES)}.")
    return _DTYPES[key]


def _read_state_dict(folder: Path) -> dict[str, torch.Tensor]:
    if not folder.exists():
        raise FileNotFoundError(f"No such checkpoint folder: {str(folder)!r}")
    if not folder.is_dir():
        raise NotADirectoryError(f"{str(folder)!r} is a file, not a checkpoint folder.")
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            with open(index, encoding="utf-8") as handle:
                shards = sorted(set(json.load(handle)["weight_map"].values()))
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{index}: not a valid safetensors index ({error}).") from None
        files = [folder / shard for shard in shards]
    else:
        files = [folder / "model.safetensors"]
        if not files[0].is_file():
            raise FileNotFoundError(f"{str(folder)!r} has no model.safetensors (or sharded index): not a checkpoint.")
    state: dict[str, torch.Tensor] = {}
    for path in files:
        if not path.is_file():
            raise FileNotFoundError(f"{str(folder)!r}: the shard {path.name} of its index is missing.")
        problem = _safetensors_problem(path)
        if problem:
            raise ValueError(f"{str(folder)!r}: {problem}.")
        state.update(load_file(str(path)))
    return state


def average_checkpoints(
    paths: Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    dtype: str | torch.dtype | None = None,
) -> Path:
    """Average the weights of several checkpoints of one model (sec. 6.1) into a loadable model folder.

    The safetensors weights are averaged in float32; tensors that are not floating point (integer buffers)
    must be equal in all checkpoints and are copied. `out_dir` gets ``model.safetensors``, the config and
    generation config, the tokenizer files and the modeling code of the LAST checkpoint (no optimizer or
    trainer state). With `dtype` (``"bfloat16"``/``"float16"``) the average is cast for shipping.

    Raises:
        ValueError: on fewer than one path, or checkpoints with different tensor names or shapes.
    """
    folders = [Path(p) for p in paths]
    if not folders:
        raise ValueError("average_checkpoints needs at least one checkpoint.")
    if len({f.resolve() for f in folders}) != len(folders):
        raise ValueError("The same checkpoint is listed twice: it would count double in the average.")
    target = Path(out_dir).resolve()
    if any(target == f.resolve() for f in folders):
        raise ValueError(f"The output folder {str(out_dir)!r} is one of the checkpoints: choose another one.")
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise NotADirectoryError(f"The output {str(out_dir)!r} is a file, not a folder.")
    target_dtype = _dtype(dtype)
    total: dict[str, torch.Tensor] = {}
    reference: dict[str, torch.Tensor] = {}
    for index, folder in enumerate(folders):
        state = _read_state_dict(folder)
        if index == 0:
            reference = state
            total = {k: v.to(torch.float32).clone() if v.is_floating_point() else v for k, v in state.items()}
            continue
        if set(state) != set(reference):
            missing = sorted(set(reference) ^ set(state))[:5]
            raise ValueError(f"{folder} does not have the same tensors as {folders[0]} (differences: {missing}).")
        for key, value in state.items():
            if value.shape != reference[key].shape:
                raise ValueError(
                    f"{key}: shape {tuple(value.shape)} in {folder}, {tuple(reference[key].shape)} in {folders[0]}."
                )
            if value.is_floating_point():
                total[key] += value.to(torch.float32)
            elif not torch.equal(value, reference[key]):
                raise ValueError(f"{key} is not floating point and differs between {folders[0]} and {folder}.")
    averaged = {}
    for key, value in total.items():
        if value.is_floating_point():
            value = value / len(folders)
            value = value.to(target_dtype or reference[key].dtype)
        averaged[key] = value.contiguous()

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    last = folders[-1]
    skip = {"optimizer.pt", "scheduler.pt", "trainer_state.json", "training_args.bin", TRAINING_ARGS_JSON}
    skip |= {"model.safetensors", "averaged_from.json"}
    for item in last.iterdir():
        if (
            item.is_file()
            and item.name not in skip
            and not item.name.startswith(("rng_state", "model-", "model.safetensors"))
            and item.suffix in (".json", ".py", ".txt", ".model", ".md")
        ):
            shutil.copy2(item, out_dir / item.name)
    save_file(averaged, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
    if target_dtype is not None:
        _set_config_dtype(out_dir, target_dtype)
    with open(out_dir / "averaged_from.json", "w", encoding="utf-8") as handle:
        json.dump({"checkpoints": [str(f) for f in folders]}, handle, indent=2)
    return out_dir


def _set_config_dtype(folder: Path, dtype: torch.dtype) -> None:
    config_path = folder / "config.json"
    if config_path.is_file():
        with open(config_path, encoding="utf-8") as handle:
            values = json.load(handle)
        values["dtype"] = str(dtype).replace("torch.", "")
        with open(config_path, "w", encoding="utf-8") as handle:
            json.dump(values, handle, indent=2, sort_keys=True)
            handle.write("\n")


def _cast_saved_model(folder: Path, dtype: str | torch.dtype) -> None:
    target = _dtype(dtype)
    state = _read_state_dict(folder)
    cast = {k: (v.to(target) if v.is_floating_point() else v).contiguous() for k, v in state.items()}
    save_file(cast, str(folder / "model.safetensors"), metadata={"format": "pt"})
    _set_config_dtype(folder, target)


# --------------------------------------------------------------------------------------------- CLI


def _run_train(args: argparse.Namespace) -> int:
    config = load_config(args.config, args.set or [])
    summary = train(config, resume=args.resume)
    if summary.get("process_index", 0) == 0:  # one summary for a distributed run
        print(json.dumps(summary, indent=2))
    return 0


def _run_average(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.checkpoints]
    for path in paths:
        if not path.exists():
            raise FileNotFoundError(f"No such checkpoint or run folder: {str(path)!r}")
    if len(paths) == 1 and paths[0].is_dir() and not any(paths[0].glob("model*.safetensors")):
        # A run directory: take its last N complete checkpoints.
        found = find_checkpoints(paths[0], warn=True)
        if not found:
            raise FileNotFoundError(f"No complete checkpoint-N folder with a model in {str(paths[0])!r}.")
        paths = found[-args.last :]
    out = average_checkpoints(paths, args.output, dtype=args.dtype)
    print(f"Averaged {len(paths)} checkpoints ({', '.join(p.name for p in paths)}) into {out}")
    return 0


def add_parser(subparsers: Any) -> None:
    """Add the ``train`` and ``average-checkpoints`` subcommands."""
    parser = subparsers.add_parser(
        "train",
        help="train a model with the paper's recipe (Seq2SeqTrainer)",
        description=(
            "Train (or resume) a Transformer from a YAML/JSON run configuration. Resumes from the last "
            "checkpoint of training.output_dir when there is one, unless --no-resume."
        ),
        epilog="example: hf-vaswani train configs/tatoeba-es-en.yaml --set data.path=pairs.tsv "
        "--set training.output_dir=runs/tatoeba --set training.max_steps=100",
    )
    parser.add_argument("config", help="run configuration (.yaml or .json)")
    parser.add_argument(
        "--set",
        action="append",
        metavar="SECTION.KEY=VALUE",
        help="override a configuration value (repeatable), e.g. --set training.batch_size=128",
    )
    parser.add_argument(
        "--resume",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="resume from the last checkpoint (default: when one exists); --no-resume refuses to reuse a "
        "directory that has checkpoints",
    )
    parser.set_defaults(func=_run_train)

    average = subparsers.add_parser(
        "average-checkpoints",
        help="average the weights of the last N checkpoints (sec. 6.1)",
        description="Average checkpoints into a loadable model folder. Pass checkpoint folders, or one run "
        "directory to average its last --last checkpoints.",
    )
    average.add_argument("checkpoints", nargs="+", help="checkpoint folders, or one run directory")
    average.add_argument("-o", "--output", required=True, help="folder to write the averaged model to")
    average.add_argument(
        "--last", type=positive_int, default=5, help="with a run directory: how many checkpoints (default 5)"
    )
    average.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], help="cast the average")
    average.set_defaults(func=_run_average)
