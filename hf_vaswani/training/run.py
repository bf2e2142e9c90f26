"""`train`: one run of the recipe, from a run configuration to the ``final/`` and ``averaged/`` models.

The steps: check the configuration, build the training arguments (which set up the process group under
``torchrun``), choose the checkpoint to resume from and check that it is this run's (the same tokenizer and data,
`hf_vaswani.training.identity`), prepare the data (`prepare_data`), build the model (`build_model`), train with
`VaswaniTrainer`, then publish ``final/`` and average the last checkpoints into ``averaged/``. Every file a run
writes beside its checkpoints (``tokenizer/``, ``config.yaml``, ``run_identity.json``) is written whole, through a
temporary sibling renamed into place.

Long because the resume decision (which checkpoint, whether it is this run's) and the publishing of every file a
run writes share the run folder's state; they are kept in one place so that no step reads a half-made folder.
"""

from __future__ import annotations

import copy
import io
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers import (
    DataCollatorForSeq2Seq,
    GenerationConfig,
    PreTrainedTokenizerFast,
    Seq2SeqTrainingArguments,
    set_seed,
)

from ..configuration_vaswani import VaswaniConfig
from ..modeling_vaswani import VaswaniForConditionalGeneration
from .arguments import build_training_arguments, resolve_output_dir
from .averaging import average_checkpoints
from .batching import example_lengths
from .checkpoints import STAGING_PREFIX, find_checkpoints, last_checkpoint, publish_dir, remove_staging_dirs
from .config import validate_config, validate_lengths
from .guided_alignment import GuidedAlignmentCollator
from .identity import (
    RUN_TOKENIZER,
    check_reused_tokenizer,
    check_same_run,
    split_settings,
    unreadable_tokenizer_file,
    write_run_identity,
)
from .recipe_yaml import dump_recipe
from .resume import checkpoint_damage, choose_checkpoint, missing_optimizer, model_damage
from .starting_model import load_starting_model
from .trainer import JsonlLoggerCallback, VaswaniTrainer, build_compute_metrics
from .weights import cast_saved_model

__all__ = ["PreparedData", "build_model", "prepare_data", "supervised_head", "train"]


@dataclass
class PreparedData:
    """What `prepare_data` gives `train`: the tokenizer and the tokenized datasets."""

    tokenizer: Any
    train_dataset: Any
    eval_dataset: Any
    #: The direction of each evaluation row, in order (for the per-direction scores).
    eval_directions: list[str]
    #: The length of each training row (the longer side, in tokens), which the batches group by.
    train_lengths: list[int]


# --------------------------------------------------------------------------------------------- data


def _tokenizer_source(config: Mapping[str, Any], output_dir: Path) -> tuple[Path, str]:
    """Where the run takes its tokenizer from, and what a message calls it: ``tokenizer.path``, else the model of
    ``training.init_from`` (which brings its vocabulary), else ``RUN/tokenizer/`` (trained there once)."""
    section = config["tokenizer"]
    if section["path"]:
        return Path(section["path"]), "tokenizer.path"
    if config["training"]["init_from"]:
        return Path(config["training"]["init_from"]), "training.init_from"
    return output_dir / "tokenizer", RUN_TOKENIZER


def _load_tokenizer(folder: Path, what: str, output_dir: Path) -> Any:
    """The tokenizer saved in `folder`; a damaged file (cut short by a full disk, say) is an error that names it
    and says what to do."""
    damage = unreadable_tokenizer_file(folder)
    if damage is None:
        try:
            return PreTrainedTokenizerFast.from_pretrained(folder)
        except (OSError, ValueError) as error:
            damage = f"{str(folder)!r} does not load ({' '.join(str(error).split())[:200]})"
    if what != RUN_TOKENIZER:
        advice = f"repair or replace {what}"
    else:
        checkpoints = find_checkpoints(output_dir)
        advice = (
            f"copy tokenizer.json and tokenizer_config.json from {checkpoints[-1]} into it"
            if checkpoints
            else "delete the folder to train the tokenizer again (the run has no checkpoint yet)"
        )
    raise ValueError(f"{what}: {damage}: {advice}.")


def _load_or_train_tokenizer(
    config: Mapping[str, Any], output_dir: Path, train_pairs: Sequence[Any], save: bool = True
) -> Any:
    from ..tokenization import save_tokenizer, train_tokenizer

    saved = output_dir / "tokenizer"
    section = config["tokenizer"]
    folder, what = _tokenizer_source(config, output_dir)
    if folder != saved:
        if not (folder / "tokenizer_config.json").is_file():
            raise FileNotFoundError(f"{what}: no tokenizer folder (with a tokenizer_config.json) at {str(folder)!r}.")
        tokenizer = _load_tokenizer(folder, what, output_dir)
    elif (saved / "tokenizer.json").is_file():
        tokenizer = _load_tokenizer(saved, what, output_dir)
    else:
        texts = [text for pair in train_pairs for text in pair]
        tokenizer = train_tokenizer(texts, vocab_size=int(section["vocab_size"]), model_type=section["model_type"])
    if save and not (saved / "tokenizer.json").is_file():
        save_tokenizer(tokenizer, saved)  # whole or not at all: a full disk leaves no half-written tokenizer.json
    return tokenizer


def _training_pairs(data: Mapping[str, Any], pairs: list[Any], output_dir: Path, is_main: bool) -> list[Any]:
    """The training pairs, then the mined noun-phrase pairs and the casual copies the configuration asks for."""
    from ..data import write_pairs_tsv
    from ..data.phrases import casual_copies, mine_noun_phrase_pairs, sentence_forms

    extra = []
    if data["noun_phrases"]:
        extra += mine_noun_phrase_pairs(pairs, max_pairs=data["max_noun_phrases"])
        if is_main:
            write_pairs_tsv(extra, output_dir / "splits" / "noun_phrases.tsv")
        if data["noun_phrase_sentences"]:
            extra += sentence_forms(extra)
    if data["casual_copies"]:
        extra += casual_copies(pairs, data["casual_copies"], seed=int(data["split_seed"]))
    return [*pairs, *extra]


def _tokenizer_and_splits(
    config: Mapping[str, Any], args: Seq2SeqTrainingArguments, output_dir: Path
) -> tuple[Any, dict[str, list[Any]], dict[str, list[Any]]]:
    """Read, deduplicate and split the pairs (deterministically), train the tokenizer on the training split only
    (or load it), filter and extend the training split, and write the held-out splits; with guided alignment, align
    the training pairs (``links["train"]``). The main process does it first and saves the tokenizer and the
    alignments; the other processes of a distributed run then load them."""
    from ..data import deduplicate_pairs, filter_pairs, load_pairs, split_pairs, write_pairs_tsv
    from .alignment import training_alignments

    data, is_main = config["data"], args.process_index == 0
    pairs = deduplicate_pairs(load_pairs(data["path"]))
    splits = split_pairs(
        pairs, validation_size=data["validation_size"], test_size=data["test_size"], seed=int(data["split_seed"])
    )
    with args.main_process_first(local=False, desc="tokenizer and data splits"):
        if is_main:
            output_dir.mkdir(parents=True, exist_ok=True)
            remove_staging_dirs(output_dir)
        tokenizer = _load_or_train_tokenizer(config, output_dir, splits["train"], save=is_main)
        splits["train"] = filter_pairs(
            splits["train"],
            max_tokens=int(data["max_length"]),
            tokenizer=tokenizer,
            max_length_ratio=data["max_length_ratio"],
        )
        if not splits["train"]:
            raise ValueError(
                f"data.max_length={data['max_length']} leaves no training pair: every pair has a side of more "
                "tokens (the language token and </s> included); raise data.max_length."
            )
        splits["train"] = _training_pairs(data, splits["train"], output_dir, is_main)
        if is_main:
            for name in ("validation", "test"):
                write_pairs_tsv(splits[name], output_dir / "splits" / f"{name}.tsv")
        links = {}
        if config["alignment"]["guided"]:
            links["train"] = training_alignments(splits["train"], config["alignment"], output_dir)
    return tokenizer, splits, links


def prepare_data(config: Mapping[str, Any], args: Seq2SeqTrainingArguments, output_dir: Path) -> PreparedData:
    """The tokenizer and the tokenized training and evaluation datasets of a run (both directions of each pair;
    ``data.eval_samples`` shuffled validation rows), writing ``tokenizer/`` and ``splits/`` to `output_dir`."""
    from ..data import build_translation_datasets, tokenize_pairs

    data = config["data"]
    tokenizer, splits, links = _tokenizer_and_splits(config, args, output_dir)
    datasets = build_translation_datasets(splits, data["directions"], word_links=links)
    eval_samples = int(data["eval_samples"] or 0)
    validation = datasets["validation"].shuffle(seed=int(data["split_seed"]))
    if eval_samples and eval_samples < len(validation):
        validation = validation.select(range(eval_samples))
    max_length = int(data["max_length"])
    train_dataset = tokenize_pairs(datasets["train"], tokenizer, max_length)
    return PreparedData(
        tokenizer=tokenizer,
        train_dataset=train_dataset,
        eval_dataset=tokenize_pairs(validation, tokenizer, max_length),
        eval_directions=list(validation["direction"]),
        train_lengths=example_lengths(train_dataset),
    )


# --------------------------------------------------------------------------------------------- model


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
        max_new_tokens=int(training["max_new_tokens"]),
        no_repeat_ngram_size=int(training["no_repeat_ngram_size"]),
        early_stopping=True,
        bos_token_id=model_config.bos_token_id,
        eos_token_id=model_config.eos_token_id,
        pad_token_id=model_config.pad_token_id,
        decoder_start_token_id=model_config.decoder_start_token_id,
    )


def build_model(config: Mapping[str, Any], tokenizer: Any) -> VaswaniForConditionalGeneration:
    """A freshly initialized model (seeded with ``training.seed``) of the ``model`` section, with the vocabulary
    and special token ids of `tokenizer` and the generation config of the ``training`` section; or, with
    ``training.init_from``, that model in float32 (the ``model`` section may change its dropout and the like).
    With guided alignment, the supervised head is the model's alignment configuration."""
    set_seed(int(config["training"]["seed"]))
    init_from = config["training"]["init_from"]
    if init_from:
        model = load_starting_model(init_from, config["model"])
        validate_lengths(
            config["data"],
            config["training"],
            model.config.max_position_embeddings,
            "the max_position_embeddings of training.init_from",
        )
        if model.config.vocab_size != len(tokenizer):
            raise ValueError(
                f"training.init_from has {model.config.vocab_size} tokens, the tokenizer {len(tokenizer)}."
            )
    else:
        model = VaswaniForConditionalGeneration(_model_config(config, tokenizer))
    model.generation_config = _generation_config(model.config, config["training"])
    if config["alignment"]["guided"]:
        layer, head = supervised_head(config, model.config)
        model.config.alignment = {"layer": layer, "heads": [head], "shift": False}
    return model


def supervised_head(config: Mapping[str, Any], model_config: VaswaniConfig) -> tuple[int, int]:
    """The (decoder layer, head) guided alignment supervises: ``alignment.layer`` (default: the penultimate
    layer, as Garg et al.) and ``alignment.head``, checked against the model."""
    layers, heads = model_config.decoder_layers, model_config.decoder_attention_heads
    layer = config["alignment"]["layer"]
    layer = max(layers - 2, 0) if layer is None else layer
    head = config["alignment"]["head"]
    if not (0 <= layer < layers and 0 <= head < heads):
        raise ValueError(
            f"alignment: the model has {layers} decoder layers of {heads} heads, no layer {layer} head {head}."
        )
    return layer, head


def _use_training_attention(
    model: VaswaniForConditionalGeneration, args: Seq2SeqTrainingArguments, guided: bool
) -> None:
    """Train on the eager attention path (two matmuls and a softmax) with guided alignment, which needs the
    weights only that path returns, and on the CPU under bf16/fp16 autocast.

    There PyTorch's `sdpa` backward is about 1.65x slower than the eager path for sentence-length inputs (the
    measurement is in docs/benchmarks.md); in float32 and on GPUs the model keeps its default, `sdpa`. The choice
    is not saved: config.json does not record the attention implementation, so checkpoints, ``final/`` and
    ``averaged/`` load with the default.
    """
    if guided or (args.device.type == "cpu" and (args.bf16 or args.fp16)):
        model.set_attn_implementation("eager")


# --------------------------------------------------------------------------------------------- train


def _holds_model(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(
        (folder / name).is_file()
        for name in (
            "model.safetensors",
            "model.safetensors.index.json",
            "pytorch_model.bin",
            "pytorch_model.bin.index.json",
        )
    )


def _check_output_dir(output_dir: Path, overwrite: bool) -> None:
    """A run writes its checkpoints, splits and logs into `output_dir`: never into a model folder (the shipped
    checkpoint, ``init_from``, a final/ of another run) or a folder inside one, unless `overwrite`."""
    if overwrite:
        return
    for folder in (output_dir, *output_dir.resolve().parents):
        if _holds_model(folder):
            where = "is" if folder == output_dir else f"is inside {str(folder)!r}, which is"
            raise FileExistsError(
                f"training.output_dir {str(output_dir)!r} {where} a model folder (config.json and weights): a run "
                "would write its checkpoints and files into it. Choose another training.output_dir, or pass "
                "--overwrite to train into it anyway."
            )


@dataclass
class ResumeOptions:
    """How `train` resumes: from the newest checkpoint (`resume`: None = when there is one), and what it may do
    when that checkpoint is damaged."""

    resume: bool | None = None
    #: Go back to the newest checkpoint without damage (else damage is an error that offers it).
    from_previous: bool = False
    #: Accept a checkpoint without optimizer.pt, starting Adam again (else such a checkpoint is damaged).
    fresh_optimizer: bool = False


def _checkpoint_to_resume(output_dir: Path, options: ResumeOptions, args: Seq2SeqTrainingArguments) -> str | None:
    resume, is_main = options.resume, args.process_index == 0
    found = last_checkpoint(output_dir, warn=resume is not False and is_main)
    if resume is True and found is None:
        raise FileNotFoundError(f"--resume: no complete checkpoint-N folder in {str(output_dir)!r} to resume from.")
    if resume is False and found is not None:
        raise FileExistsError(
            f"{str(output_dir)!r} already has checkpoints (the last is {found.name}): resume "
            "from it (--resume), or choose another training.output_dir."
        )
    if found is None or resume is False:
        return None
    return str(_resumable(find_checkpoints(output_dir), options, args, lambda checkpoint: None))


def _resumable(
    checkpoints: list[Path],
    options: ResumeOptions,
    args: Seq2SeqTrainingArguments,
    more_damage: Any,
    final: bool = False,
) -> Path:
    """The checkpoint to resume from among `checkpoints` (see `choose_checkpoint`), saying what it skips and,
    when the choice is `final`, whether the optimizer starts again."""

    def damage(checkpoint: Path) -> str | None:
        found = checkpoint_damage(checkpoint, args.world_size, args.process_index, options.fresh_optimizer)
        return found or more_damage(checkpoint)

    chosen, skipped = choose_checkpoint(checkpoints, damage, options.from_previous, checkpoints[-1].parent)
    if args.process_index == 0:
        for note in skipped:
            print(
                f"hf-vaswani train: warning: skipping the damaged {note}; resuming from {chosen.name}", file=sys.stderr
            )
        if final and missing_optimizer(chosen):
            print(
                f"hf-vaswani train: note: {chosen.name} has no optimizer.pt: the optimizer starts again (Adam's "
                "moments at zero, the learning-rate schedule where it was); the losses depart from an unbroken run's.",
                file=sys.stderr,
            )
    return chosen


def _describe_run(
    config: Mapping[str, Any], args: Seq2SeqTrainingArguments, prepared: PreparedData, model: Any, resume_from: Any
) -> str:
    data, training = config["data"], config["training"]
    return (
        f"hf-vaswani train: {len(prepared.train_dataset):,} training rows ({', '.join(data['directions'])}), "
        f"{len(prepared.eval_dataset):,} validation rows, {model.num_parameters():,} parameters, "
        f"peak lr {args.learning_rate:.3g} at step {int(training['warmup_steps'])}, "
        + (f"{args.world_size} processes, " if args.world_size > 1 else "")
        + (
            f"batches of <= {training['max_tokens_per_batch']:,} tokens per side, "
            if training["sampling"] == "tokens"
            else ""
        )
        + (f"resuming from {resume_from}" if resume_from else f"starting from {training['init_from'] or 'scratch'}")
    )


def _save_final(trainer: VaswaniTrainer, tokenizer: Any, output_dir: Path, save_dtype: str | None) -> Path:
    """Write the trained model and the tokenizer into ``tmp-final/`` and rename it to ``final/``, like the
    checkpoints. Every process takes part (FSDP / DeepSpeed gather the weights collectively). A failed write (a
    full disk) removes ``tmp-final/`` and is an OSError that says the checkpoints are kept."""
    from ..tokenization import save_tokenizer

    final_dir = output_dir / "final"
    staging = output_dir / f"{STAGING_PREFIX}final"
    is_main = trainer.args.process_index == 0
    if is_main and staging.exists():
        shutil.rmtree(staging)
    trainer.accelerator.wait_for_everyone()
    try:
        trainer.save_model(str(staging))
        if is_main:
            save_tokenizer(tokenizer, staging)
            if save_dtype:
                cast_saved_model(staging, save_dtype)
            publish_dir(staging, final_dir)
    except trainer.save_errors() as error:
        if not trainer.is_failed_write(error):
            raise
        shutil.rmtree(staging, ignore_errors=True)
        raise trainer.save_error(error, "final/", "writes final/") from error
    return final_dir


def _write_run_files(config: Mapping[str, Any], output_dir: Path, tokenizer: Any, resumed: bool) -> None:
    """Write ``config.yaml`` and, for a run that starts (or one started by a version without it),
    ``run_identity.json``, each whole (`hf_vaswani.outputs.write_text`)."""
    from ..outputs import write_text
    from .identity import RUN_IDENTITY

    recipe = io.StringIO()
    dump_recipe(config, recipe)
    write_text(output_dir / "config.yaml", recipe.getvalue())
    if not resumed or not (output_dir / RUN_IDENTITY).is_file():
        write_run_identity(output_dir, tokenizer, config["data"]["path"], split_settings(config["data"]))


def _average_last(output_dir: Path, training: Mapping[str, Any]) -> Path | None:
    """Average the last ``training.average_last`` checkpoints into ``averaged/`` (when there are two or more),
    replacing the previous ``averaged/`` whole once the new one is complete (a kill part-way leaves the old one,
    or none, and a ``tmp-averaged.*`` folder that the next run removes)."""
    checkpoints = find_checkpoints(output_dir)
    n_average = int(training["average_last"] or 0)
    if n_average < 2 or len(checkpoints) < 2:
        return None
    return average_checkpoints(
        checkpoints[-n_average:], output_dir / "averaged", dtype=training["save_dtype"], overwrite=True
    )


def train(
    config: Mapping[str, Any],
    resume: bool | None = None,
    *,
    overwrite: bool = False,
    resume_from_previous: bool = False,
    fresh_optimizer: bool = False,
) -> dict[str, Any]:
    """Run (or resume) the training described by `config` (see `load_config`).

    Args:
        resume: True resumes from the last checkpoint of the output directory (error if there is none);
            False starts from scratch (error if the output directory already has checkpoints); None (default)
            resumes when a checkpoint exists and starts from scratch otherwise.
        overwrite: allow a ``training.output_dir`` that is (or is inside) a model folder; refused otherwise.
        resume_from_previous: when the newest checkpoint is damaged (a file missing or not what a run writes,
            see `hf_vaswani.training.resume`), resume from the newest one that is not; without it, that is an
            error naming the file.
        fresh_optimizer: accept a checkpoint without ``optimizer.pt`` and start the optimizer again.

    Raises:
        NonFiniteLossError: the loss or the weights became NaN or infinite (nothing is saved after that).
        DamagedCheckpointError: the checkpoint to resume from is damaged.
        RunMismatchError: the checkpoint to resume from was trained with another tokenizer or other data.
        OSError: a checkpoint, the tokenizer or final/ could not be written (a full disk): nothing half-written
            is left in their place, and the last complete checkpoint is kept.

    Returns:
        A summary: output_dir, the resumed checkpoint (or None), global_step, the final training loss, the
        paths of the final and averaged models, the number of processes and this process's index.
    """
    from ..languages import direction_to_languages

    config = validate_config(copy.deepcopy(dict(config)))
    data, training = config["data"], config["training"]
    output_dir = resolve_output_dir(config)
    _check_output_dir(output_dir, overwrite)
    if not data["path"]:
        raise ValueError("data.path is not set: pass --set data.path=/path/to/pairs.tsv.")
    for direction in data["directions"]:
        direction_to_languages(direction)

    # The training arguments first: under torchrun / accelerate launch they set up the process group, which
    # the data preparation below needs (the main process trains the tokenizer while the others wait).
    d_model = int((config["model"] or {}).get("d_model", VaswaniConfig().d_model))
    args = build_training_arguments(config, d_model)
    is_main = args.process_index == 0
    options = ResumeOptions(resume, resume_from_previous, fresh_optimizer)
    resume_from = _checkpoint_to_resume(output_dir, options, args)
    if resume_from is not None:  # before any work: the tokenizer and the data must be those of its run
        check_same_run(
            output_dir,
            Path(resume_from),
            *_tokenizer_source(config, output_dir),
            str(data["path"]),
            split_settings(data),
        )
    elif _tokenizer_source(config, output_dir)[1] == RUN_TOKENIZER:  # a tokenizer/ left by an earlier start
        check_reused_tokenizer(output_dir, str(data["path"]), split_settings(data))

    prepared = prepare_data(config, args, output_dir)
    model = build_model(config, prepared.tokenizer)
    prepared.tokenizer.model_max_length = model.config.max_position_embeddings  # what the model accepts
    config["model"] = {**(config["model"] or {}), "vocab_size": model.config.vocab_size}
    if is_main:
        _write_run_files(config, output_dir, prepared.tokenizer, resumed=resume_from is not None)
    guided = config["alignment"]["guided"]
    _use_training_attention(model, args, guided)  # eager on the CPU in bf16 (sdpa's backward is slower there)
    collator = DataCollatorForSeq2Seq(prepared.tokenizer, model=model, label_pad_token_id=-100)

    trainer = VaswaniTrainer(
        model=model,
        args=args,
        train_dataset=prepared.train_dataset,
        eval_dataset=prepared.eval_dataset if args.eval_strategy != "no" else None,
        data_collator=GuidedAlignmentCollator(collator) if guided else collator,
        processing_class=prepared.tokenizer,
        compute_metrics=build_compute_metrics(prepared.tokenizer, prepared.eval_directions),
        callbacks=[JsonlLoggerCallback(output_dir / "log.jsonl")],
        train_lengths=prepared.train_lengths,
        max_tokens_per_batch=training["max_tokens_per_batch"] if training["sampling"] == "tokens" else None,
        guided_alignment=(*supervised_head(config, model.config), config["alignment"]["weight"]) if guided else None,
    )
    if resume_from is not None:  # the weights and the optimizer's state against the model just built
        parameters = trainer.optimizer_parameters()
        checkpoints = find_checkpoints(output_dir)
        candidates = checkpoints[: checkpoints.index(Path(resume_from)) + 1]
        chosen = _resumable(candidates, options, args, lambda c: model_damage(c, model, parameters), final=True)
        resume_from = str(chosen)
    if is_main:
        print(_describe_run(config, args, prepared, model, resume_from), file=sys.stderr)
    result = trainer.train(resume_from_checkpoint=resume_from)
    trainer.ensure_finite_weights()  # a last update may have made them NaN (its loss, computed before, was not)

    final_dir = _save_final(trainer, prepared.tokenizer, output_dir, training["save_dtype"])
    averaged_dir = _average_last(output_dir, training) if is_main else None
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
