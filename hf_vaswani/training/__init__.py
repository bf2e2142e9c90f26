"""Training recipe of the paper (sec. 5) on `transformers.Seq2SeqTrainer`, and checkpoint averaging (sec. 6.1).

* Optimizer (sec. 5.3): Adam with beta1 = 0.9, beta2 = 0.98, eps = 1e-9 (no weight decay).
* Learning rate (sec. 5.3, eq. 3): ``lrate = d_model^-0.5 * min(step_num^-0.5, step_num * warmup_steps^-1.5)``,
  with update k (k = 1, 2, ...) at step_num = k (`paper_learning_rate`, `paper_lr_lambda`).
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
type and range of every value, the ``model`` section's `VaswaniConfig` fields included, before any work; the YAML
reader refuses a key given twice and anchors or aliases. A run never trains into a model folder (unless
``overwrite``), stops with `NonFiniteLossError` when the loss becomes NaN or infinite (keeping the last good
checkpoint, writing no ``final/``), checks every file it resumes from (`DamagedCheckpointError`) and that it resumes
with the tokenizer and data of its checkpoints (`RunMismatchError`), and writes nothing half: a full disk leaves the
last complete checkpoint and no partial file.

The same `train` runs in one process or under ``torchrun`` / ``accelerate launch`` (DDP); checkpoints are
written atomically and a resumed run continues with the data order of an uninterrupted one (`VaswaniTrainer`).

What lives where (everything public is importable from here):

* `config`: `DEFAULT_CONFIG`, `load_config`, `apply_overrides`, `validate_config`.
* `values`: the checks of single values, and of the ``model`` section's fields (`validate_model_section`).
* `recipe_yaml`: the strict YAML reader of recipes and the alias-free writer of ``config.yaml``.
* `schedule`: the learning rate of sec. 5.3 (`paper_learning_rate`, `paper_peak_learning_rate`,
  `paper_lr_lambda`).
* `arguments`: `build_training_arguments`, the `Seq2SeqTrainingArguments` of a configuration.
* `batching`: `TokenBatchSampler` and the example lengths that batches are grouped by.
* `trainer`: `VaswaniTrainer` and the validation BLEU/chrF; `log_file`: `JsonlLoggerCallback` (``log.jsonl``).
* `checkpoints`: finding complete checkpoints (`find_checkpoints`, `last_checkpoint`, `checkpoint_problem`)
  and publishing folders atomically.
* `weights`: reading, checking and casting saved safetensors weights.
* `resume`: what a resume reads, checked first (`checkpoint_damage`, `model_damage`, `DamagedCheckpointError`).
* `identity`: the tokenizer and data a run started with, checked when it resumes (`check_same_run`).
* `starting_model`: the ``training.init_from`` model, checked against the recipe (`load_starting_model`).
* `averaging`: `average_checkpoints`.
* `run`: `train`, from the configuration to the ``final/`` and ``averaged/`` models.

The ``hf-vaswani train`` and ``hf-vaswani average-checkpoints`` commands are in `hf_vaswani.commands.train`.

Layout of the output directory::

    config.yaml          the resolved configuration of the run
    run_identity.json    the tokenizer's fingerprint and the data (path, size, SHA-256) the run started with
    tokenizer/           the tokenizer, trained once on the training split and reused when resuming
    splits/              validation.tsv and test.tsv (English<TAB>Spanish), for `hf-vaswani evaluate`;
                         noun_phrases.tsv, the mined phrase pairs added to training (``data.noun_phrases``)
    log.jsonl            one JSON object per Trainer log event (loss, lr, eval BLEU/chrF, tokens/s)
    checkpoint-N/        Trainer checkpoints (model, tokenizer, optimizer, scheduler, RNG states,
                         training_args.json), renamed into place from tmp-checkpoint-N/ once complete
    final/               the model at the end of training (config, generation config, tokenizer)
    averaged/            the average of the last `average_last` checkpoints (when >= 2 exist)
"""

from .arguments import build_training_arguments
from .averaging import average_checkpoints
from .batching import TokenBatchSampler
from .checkpoints import IncompleteCheckpointWarning, checkpoint_problem, find_checkpoints, last_checkpoint
from .config import DEFAULT_CONFIG, SAMPLING_STRATEGIES, apply_overrides, load_config, validate_config
from .identity import RunMismatchError
from .resume import DamagedCheckpointError
from .run import train
from .schedule import paper_learning_rate, paper_lr_lambda, paper_peak_learning_rate
from .trainer import JsonlLoggerCallback, NonFiniteLossError, VaswaniTrainer

__all__ = [
    "DEFAULT_CONFIG",
    "DamagedCheckpointError",
    "IncompleteCheckpointWarning",
    "JsonlLoggerCallback",
    "NonFiniteLossError",
    "RunMismatchError",
    "SAMPLING_STRATEGIES",
    "TokenBatchSampler",
    "VaswaniTrainer",
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
