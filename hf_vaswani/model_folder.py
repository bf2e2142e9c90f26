"""What a saved model folder needs beyond `save_pretrained` to serve every standard `transformers` path, and a
check of the JSON files a loader reads from one (`check_json_files`)."""

from __future__ import annotations

import json
from pathlib import Path

from .pipeline_vaswani import add_pipeline_to_folder

__all__ = ["TOKENIZER_FILES", "check_json_files", "finish_model_folder"]

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
