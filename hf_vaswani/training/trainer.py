"""`VaswaniTrainer` (`Seq2SeqTrainer` with the paper's schedule, length-grouped or token-count batches and
fault-tolerant checkpoints) and the validation BLEU/chrF of a run (the JSONL log callback is `log_file`'s)."""

from __future__ import annotations

import copy
import shutil
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import torch
from torch.optim.lr_scheduler import LambdaLR
from transformers import Seq2SeqTrainer
from transformers.trainer_pt_utils import LengthGroupedSampler, safe_globals
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, rotate_checkpoints

from .batching import TokenBatchSampler
from .checkpoints import STAGING_PREFIX, TRAINING_ARGS_JSON, find_checkpoints, publish_dir
from .guided_alignment import AttentionCapture, guided_alignment_loss
from .log_file import JsonlLoggerCallback  # (re-exported here)
from .schedule import paper_lr_lambda

__all__ = [
    "EPOCH_RNG_STATE_NAME",
    "JsonlLoggerCallback",
    "NonFiniteLossError",
    "VaswaniTrainer",
    "build_compute_metrics",
]

#: RNG states at the start of the epoch a checkpoint was written in (see `VaswaniTrainer`).
EPOCH_RNG_STATE_NAME = "epoch_rng_state.pth"
#: How `torch.save`'s C++ writer reports a failed write (a full disk, a file size limit): a RuntimeError.
_FAILED_WRITE_MARKS = (
    "iostream error",
    "PytorchStreamWriter failed",
    "unexpected pos",
    "file write failed",
    "os error",
)


def _likely_cause(folder: Path) -> str:
    """What most likely made a write into `folder` fail, as the start of a reason ("" when neither applies): a
    file size limit (``ulimit -f``) or a disk with almost no space left; `torch.save`'s own message says neither."""
    try:
        import resource  # Unix only
    except ImportError:
        resource = None
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0] if resource else None
    if resource and limit != resource.RLIM_INFINITY:
        return f"the file size limit (ulimit -f) is {limit:,} bytes; "
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return ""
    return f"the disk has {free:,} bytes free; " if free < 64 << 20 else ""


def _plain_numpy_state(state: Any) -> Any:
    """`numpy.random.get_state()` with plain Python values, so that ``torch.load(weights_only=True)`` loads it
    without allowlisting numpy; `numpy.random.set_state` takes it back as is."""
    if isinstance(state, tuple) and len(state) == 5 and hasattr(state[1], "tolist"):
        return (str(state[0]), [int(v) for v in state[1].tolist()], int(state[2]), int(state[3]), float(state[4]))
    return state


class NonFiniteLossError(ValueError):
    """The training loss (or the weights) became NaN or infinite: the run stops before saving such a model.

    A ValueError: the cause is a value of the recipe (most often a learning rate too high for the model)."""


class VaswaniTrainer(Seq2SeqTrainer):
    """`Seq2SeqTrainer` with the paper's learning rate schedule, length grouping from precomputed lengths and
    fault-tolerant checkpoints.

    Checkpoints (what `Seq2SeqTrainer` adds to a plain ``Trainer.train`` run of transformers 5.24):

    * Atomic: a checkpoint is written into ``tmp-checkpoint-N`` and renamed to ``checkpoint-N`` when every
      process has written its part, so a ``checkpoint-N`` folder is always complete; a killed save leaves a
      ``tmp-checkpoint-N`` folder, which `train` removes. (Trainer itself writes straight into
      ``checkpoint-N``.) A save that fails (a full disk) removes ``tmp-checkpoint-N`` and stops the run with one
      OSError naming the last complete checkpoint, which the same command resumes from (`save_error`).
    * Safe to load: every file loads with ``torch.load(..., weights_only=True)``. The training arguments are
      written as ``training_args.json`` instead of the pickled ``training_args.bin`` (which resuming does not
      need), and the numpy RNG state in ``rng_state*.pth`` is stored as plain Python values.
    * Never a NaN model: a training loss that is NaN or infinite stops the run with a `NonFiniteLossError`
      (Trainer only leaves such a loss out of the logged average and goes on), and a checkpoint is not
      written when the weights are not finite, so the last checkpoint on disk is the last good one.
    * Resuming: the tied weights a checkpoint stores once are not reported as missing; a checkpoint without
      ``optimizer.pt`` (accepted only with `fresh_optimizer`, see `hf_vaswani.training.resume`) keeps its
      learning-rate schedule where it was.
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
        guided_alignment: tuple[int, int, float] | None = None,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self._alignment_capture, self._alignment_weight, self._alignment_losses = None, 0.0, []
        if guided_alignment is not None:  # (decoder layer, head, weight): see hf_vaswani.training.guided_alignment
            layer, head, self._alignment_weight = guided_alignment
            self._alignment_capture = AttentionCapture(self.model.model.decoder.layers[layer].cross_attn, head)
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

    # ------------------------------------------------------------------ no NaN model

    def training_step(self, model: Any, inputs: dict[str, Any], num_items_in_batch: Any = None) -> torch.Tensor:
        loss = super().training_step(model, inputs, num_items_in_batch)
        bad = ~torch.isfinite(loss.detach())
        if self.args.world_size > 1:  # every process stops at the same step (none is left waiting in a collective)
            bad = self.accelerator.reduce(bad.float(), reduction="sum") > 0
        if bool(bad):  # Trainer's own NaN filter already synchronizes on the loss each step
            self._stop_non_finite(f"the training loss is {loss.item()} at update {self.state.global_step + 1}")
        return loss

    def _weights_finite(self) -> bool:
        return all(bool(torch.isfinite(p).all()) for p in self.model.parameters() if p.is_floating_point())

    def _stop_non_finite(self, what: str) -> None:
        from .checkpoints import find_checkpoints

        lr = self.lr_scheduler.get_last_lr()[0] if self.lr_scheduler is not None else self.args.learning_rate
        good = find_checkpoints(self.args.output_dir)
        kept = f"the last good checkpoint is {good[-1]}" if good else "no checkpoint was written"
        raise NonFiniteLossError(
            f"{what} (learning rate {lr:.3g}): training stopped, final/ is not written and {kept}. Lower "
            "training.learning_rate (or training.lr_scale, or clip with training.max_grad_norm) and train again."
        )

    def ensure_finite_weights(self) -> None:
        """Raise `NonFiniteLossError` when a weight of the model is NaN or infinite (before saving it)."""
        if not self._weights_finite():
            self._stop_non_finite(f"the weights are not finite after update {self.state.global_step}")

    # ------------------------------------------------------------------ resuming

    def optimizer_parameters(self) -> list[torch.nn.Parameter]:
        """The model's trainable parameters in the order of the optimizer Trainer builds (the weight-decay group,
        then the others), which is the order of the parameter states in ``optimizer.pt``."""
        decay = set(self.get_decay_parameter_names(self.model))
        named = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
        return [p for n, p in named if n in decay] + [p for n, p in named if n not in decay]

    def _issue_warnings_after_load(self, load_result: Any) -> None:
        from .resume import tied_parameter_names

        tied = tied_parameter_names(self.model)
        missing = [key for key in load_result.missing_keys if key not in tied]
        super()._issue_warnings_after_load(load_result._replace(missing_keys=missing))

    def _load_optimizer_and_scheduler(self, checkpoint: str | None) -> None:
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is None or (Path(checkpoint) / "optimizer.pt").is_file():
            return
        # Trainer loads the schedule only together with the optimizer: without this, a fresh optimizer would
        # also start the warmup again.
        scheduler = Path(checkpoint) / "scheduler.pt"
        if scheduler.is_file() and self.lr_scheduler is not None:
            self.lr_scheduler.load_state_dict(torch.load(scheduler, weights_only=True, map_location="cpu"))
            for group, lr in zip(self.optimizer.param_groups, self.lr_scheduler.get_last_lr()):
                group["lr"] = lr

    # ------------------------------------------------------------------ guided alignment

    def compute_loss(
        self, model: Any, inputs: dict[str, Any], return_outputs: bool = False, num_items_in_batch: Any = None
    ) -> Any:
        """The translation loss, plus ``weight`` x the guided-alignment loss of the batch's ``alignment_targets``."""
        targets = inputs.pop("alignment_targets", None)
        result = super().compute_loss(
            model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch
        )
        if targets is None or self._alignment_capture is None:
            return result
        loss, outputs = result if return_outputs else (result, None)
        alignment = guided_alignment_loss(self._alignment_capture.pop(), targets)
        self._alignment_losses.append(alignment.detach())
        if num_items_in_batch is not None:  # the translation loss is already a share of the accumulated batch's
            alignment = alignment / self.args.gradient_accumulation_steps
        loss = loss + self._alignment_weight * alignment
        return (loss, outputs) if return_outputs else loss

    def prediction_step(self, model: Any, inputs: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        """`Seq2SeqTrainer.prediction_step`, leaving the model's generation config as it was: the parent fills in
        every default (max_length=20 among them), which would then be saved and make every `generate(...,
        max_new_tokens=...)` call of a user warn that both lengths are set."""
        inputs.pop("alignment_targets", None)  # generate() takes no such argument
        generation_config = copy.deepcopy(self.model.generation_config)
        try:
            return super().prediction_step(model, inputs, *args, **kwargs)
        finally:
            self.model.generation_config = generation_config

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        if "loss" in logs and self._alignment_losses:
            logs["alignment_loss"] = round(torch.stack(self._alignment_losses).mean().item(), 4)
            self._alignment_losses.clear()
        super().log(logs, *args, **kwargs)

    # ------------------------------------------------------------------ batches

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
        self.ensure_finite_weights()  # a NaN checkpoint would also rotate a good one away
        run_dir = Path(super()._get_output_dir(trial=trial))
        name = f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"
        staging = run_dir / f"{STAGING_PREFIX}{name}"
        if self.args.should_save and staging.exists():
            shutil.rmtree(staging)  # left by a save that was killed
        self.accelerator.wait_for_everyone()
        self._staging_dir = staging  # Trainer writes into staging/checkpoint-N (see _get_output_dir)
        try:
            super()._save_checkpoint(model, trial)
        except self.save_errors() as error:
            if not self.is_failed_write(error):
                raise
            shutil.rmtree(staging, ignore_errors=True)  # frees the space the partial save took
            raise self.save_error(error, name, "goes on") from error
        finally:
            self._staging_dir = None
        self.accelerator.wait_for_everyone()  # every process has written its rng_state_*.pth
        if self.args.should_save:
            publish_dir(staging / name, run_dir / name)
            shutil.rmtree(staging, ignore_errors=True)
            rotate_checkpoints(
                output_dir=str(run_dir),
                save_total_limit=self.args.save_total_limit,
                best_model_checkpoint=self.state.best_model_checkpoint,
                use_mtime=True,
            )
        self.accelerator.wait_for_everyone()

    @staticmethod
    def save_errors() -> tuple[type[BaseException], ...]:
        """What a failed write of a checkpoint or of ``final/`` can raise: an OSError (from Python or the
        tokenizers library, converted), the RuntimeError of `torch.save`'s writer, safetensors' own error."""
        from safetensors import SafetensorError

        return (OSError, RuntimeError, SafetensorError)

    @staticmethod
    def is_failed_write(error: BaseException) -> bool:
        """Whether `error` (one of `save_errors`) reports a failed write rather than a fault of the program."""
        if isinstance(error, RuntimeError):
            return any(mark in str(error) for mark in _FAILED_WRITE_MARKS)
        return True

    def save_error(self, error: BaseException, what: str, then: str) -> OSError:
        """`error`, met while writing `what`, as one OSError: what failed, that the last complete checkpoint is
        kept, and that the same command resumes from it (and `then`)."""
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error).splitlines()[0]
        run_dir = super()._get_output_dir(trial=None)
        reason = f"{_likely_cause(Path(run_dir))}{' '.join(reason.split())[:160]}"
        checkpoints = find_checkpoints(run_dir)
        if checkpoints:
            kept = f"the last complete checkpoint, {checkpoints[-1]}, is kept as it was"
            again = f"run the same command again: it resumes from {checkpoints[-1].name} and {then}"
        else:
            kept, again = "no checkpoint was written yet", "run the same command again"
        message = (
            f"could not write {what} at step {self.state.global_step} ({reason}): nothing "
            f"half-written is left in its place; {kept}. Free disk space (or raise the file size limit) and {again}."
        )
        errno = error.errno if isinstance(error, OSError) else None
        return OSError(errno, message) if errno else OSError(message)

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


# --------------------------------------------------------------------------------------------- metrics


def build_compute_metrics(tokenizer: Any, directions: Sequence[str] | None = None) -> Any:
    """The ``compute_metrics`` of a run: `hf_vaswani.metrics.make_compute_metrics` (or a minimal sacrebleu-based
    one when the `evaluate` metric cannot be imported), which gives BLEU/chrF over all validation rows; with
    `directions` (the direction of each validation row, in order) also ``bleu_es-en``, ``chrf_es-en``, ... per
    direction. Trainer hands the predictions over in the order of the evaluation dataset (also when several
    processes evaluate), so row i has direction i."""
    try:
        from ..metrics import make_compute_metrics

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
