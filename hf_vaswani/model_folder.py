"""What a saved model folder needs beyond `save_pretrained` to serve every standard `transformers` path, and the
checks of what a loader reads from one: the tokenizer's JSON files (`check_json_files`), and config.json,
generation_config.json, a Marian tokenizer's files and stray adapter files (`check_model_folder`), before anything
is built from them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .config_checks import config_problems, fallback_generation_config, generation_config_problems
from .model_checks import BrokenModelError
from .pipeline_vaswani import add_pipeline_to_folder

__all__ = [
    "ADAPTER_FILES",
    "TOKENIZER_FILES",
    "WEIGHT_FILES",
    "MARIAN_TOKENIZER_FILES",
    "check_json_files",
    "check_model_folder",
    "finish_model_folder",
    "folder_generation_config",
    "has_generation_config",
    "marian_tokenizer_problems",
    "with_decoding_settings",
]

#: The tokenizer's JSON files that transformers reads from a model folder (those present).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def check_json_files(folder: str | Path, names: tuple[str, ...] = TOKENIZER_FILES) -> None:
    """Refuse a file of `names` in `folder` that is not JSON: transformers' error says where in a file it stopped
    ("Expecting value: line 1 column 1"), not which file, and some loaders take it for a missing tokenizer.

    Raises:
        ValueError: naming the file and what is wrong with it.
    """
    for name in names:
        path = Path(folder) / name
        if not path.is_file():
            continue
        try:
            json.loads(path.read_bytes())
        except (ValueError, UnicodeDecodeError) as error:  # JSONDecodeError is a ValueError
            raise ValueError(f"{str(path)!r} is not valid JSON ({error}): the tokenizer cannot be read.") from None


#: The files a `MarianTokenizer` cannot be built without (a separate target_vocab.json is optional).
MARIAN_TOKENIZER_FILES = ("source.spm", "target.spm", "vocab.json")


def marian_tokenizer_problems(folder: str | Path) -> list[str]:
    """The `MARIAN_TOKENIZER_FILES` missing from a folder whose tokenizer is a `MarianTokenizer`: one that
    tokenizer_config.json or config.json names, or, when neither names a class and there is no tokenizer.json, that
    transformers picks for ``model_type: marian``."""
    folder = Path(folder)
    named = _tokenizer_class(folder / "tokenizer_config.json") or _tokenizer_class(folder / "config.json")
    if named is None:
        config = _read_object(folder / "config.json")[0]
        marian = isinstance(config, dict) and config.get("model_type") == "marian"
        if not marian or (folder / "tokenizer.json").is_file():
            return []
        named = "MarianTokenizer (model_type marian)"
    elif named.removesuffix("Fast") != "MarianTokenizer":
        return []
    missing = [name for name in MARIAN_TOKENIZER_FILES if not (folder / name).is_file()]
    if not missing:
        return []
    return [
        f"its tokenizer is a {named}, which reads {', '.join(MARIAN_TOKENIZER_FILES)}, but the folder has no "
        f"{', '.join(missing)}"
    ]


def _tokenizer_class(path: Path) -> str | None:
    data = _read_object(path)[0] if path.is_file() else None
    named = data.get("tokenizer_class") if isinstance(data, dict) else None
    return named if isinstance(named, str) and named else None


#: The files of full model weights `from_pretrained` reads (one of them, or a sharded index).
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)

#: The files of a PEFT adapter (LoRA) that `from_pretrained` applies on top of a folder's weights when it finds them.
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors", "adapter_model.bin")


def check_model_folder(folder: str | Path) -> None:
    """Refuse a local model folder that would load as a model that translates wrongly or not at all, before any
    model is built from it: a config.json or generation_config.json that is not a JSON object, holds a value of the
    wrong type, out of range or not finite, or settings that contradict each other (`hf_vaswani.config_checks`),
    a Marian tokenizer without the files it reads (`marian_tokenizer_problems`: transformers meets it with a
    TypeError about a None path), and LoRA adapter files next to full weights (transformers applies the adapter on
    top of the weights: twice, in effect, when they are the merged ones). A folder without generation_config.json
    passes (see `has_generation_config`).

    Raises:
        BrokenModelError: (a ValueError) naming the folder and every problem found.
    """
    folder = Path(folder)
    config, problems = _read_object(folder / "config.json")
    if not problems:
        problems = config_problems(config)
    generation_path = folder / "generation_config.json"
    if generation_path.exists():
        generation, unreadable = _read_object(generation_path)
        problems += unreadable or generation_config_problems(generation, config if not problems else None)
    problems += adapter_problems(folder)
    problems += marian_tokenizer_problems(folder)
    if problems:
        raise BrokenModelError(f"The model at {str(folder)!r} is broken: {'; '.join(problems)}.")


def folder_generation_config(folder: str | Path, config: Any) -> Any:
    """The decoding settings of a local model folder whose model `config` is loaded: its generation_config.json,
    checked (`hf_vaswani.config_checks.generation_config_problems`); without one, the project's settings for one of
    our models (`fallback_generation_config`, with one warning), transformers' (from `config`) for another.

    Raises:
        BrokenModelError: the file is not a JSON object of valid settings (naming the folder and the problems).
    """
    from transformers import GenerationConfig

    folder = Path(folder)
    if not has_generation_config(folder):
        if getattr(config, "model_type", None) == "vaswani":
            return fallback_generation_config(config, source=str(folder))
        return GenerationConfig.from_model_config(config)
    generation, problems = _read_object(folder / "generation_config.json")
    problems = problems or generation_config_problems(generation, config.to_dict())
    if problems:
        raise BrokenModelError(f"The model at {str(folder)!r} is broken: {'; '.join(problems)}.")
    return GenerationConfig.from_pretrained(folder)


def with_decoding_settings(model: Any, folder: str | Path | None, source: str) -> Any:
    """`model`, with the project's decoding settings (`fallback_generation_config`, one warning) when it is one of
    ours that came without any: a local `folder` without generation_config.json, or a Hub model whose generation
    config transformers made from its model config (greedy, at most 20 tokens). Every loader calls it, so that a
    translation, an export and the demo decode such a folder alike."""
    if getattr(model.config, "model_type", None) != "vaswani":
        return model  # (another architecture keeps what transformers gives it)
    if folder is not None:
        lacks = not has_generation_config(folder)
    else:
        lacks = bool(getattr(getattr(model, "generation_config", None), "_from_model_config", False))
    if lacks:
        model.generation_config = fallback_generation_config(model.config, source=source)
    return model


def has_generation_config(folder: str | Path) -> bool:
    """Whether a local model folder has its own decoding settings (a generation_config.json)."""
    return (Path(folder) / "generation_config.json").is_file()


def adapter_problems(folder: str | Path) -> list[str]:
    """Adapter files beside full weights: one phrase naming both, or nothing."""
    folder = Path(folder)
    adapters = [name for name in ADAPTER_FILES if (folder / name).is_file()]
    weights = [name for name in WEIGHT_FILES if (folder / name).is_file()]
    if not adapters or not weights:
        return []
    return [
        f"it holds PEFT adapter files ({', '.join(adapters)}) beside full weights ({', '.join(weights)}): "
        "transformers would apply the adapter on top of those weights, a second time if they are merged (remove "
        "the adapter files from a merged folder; keep an adapter in a folder of its own)"
    ]


def _read_object(path: Path) -> tuple[Any, list[str]]:
    """The JSON in `path`, or the problem of reading it (one phrase naming the file)."""
    try:
        return json.loads(path.read_bytes()), []
    except UnicodeDecodeError:
        return None, [f"{path.name} is not UTF-8 text"]
    except ValueError as error:  # JSONDecodeError is a ValueError
        return None, [f"{path.name} is not valid JSON ({error})"]
    except IsADirectoryError:
        return None, [f"{path.name} is a folder, not a file"]
    except OSError as error:
        return None, [f"{path.name} cannot be read ({error.strerror or error})"]


def _update_json(path: Path, **values: object) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(values)
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def finish_model_folder(folder: str | Path) -> Path:
    """Make a saved model folder (config.json, weights, tokenizer) ready for users:

    - ``dtype: float32`` and ``use_cache: true`` in config.json: `from_pretrained` loads float32 weights to train
      (whatever dtype they are stored in; ``dtype=torch.bfloat16`` on request) and `generate` caches keys and values;
    - the tokenizer's ``model_max_length`` is the model's ``max_position_embeddings``, so ``truncation=True`` cuts
      to what the model accepts;
    - the ``translation`` pipeline (`hf_vaswani.pipeline_vaswani`) is copied in and declared.
    """
    folder = Path(folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    _update_json(folder / "config.json", dtype="float32", use_cache=True)
    tokenizer_config = folder / "tokenizer_config.json"
    if tokenizer_config.is_file():
        _update_json(tokenizer_config, model_max_length=int(config["max_position_embeddings"]))
    add_pipeline_to_folder(folder)
    return folder
