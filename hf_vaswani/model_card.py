"""Model cards of the checkpoints trained with hf-vaswani, rendered by `huggingface_hub.ModelCard.from_template`.

What the cards say lives in the top-level ``model_cards/`` folder, which the package reads as ``CARDS`` (in the
checkout ``hf_vaswani/model_cards`` links to it; a wheel carries a copy, see pyproject.toml): the template
``vaswani.md``, the metadata of every such card ``vaswani.yaml``, and the shipped checkpoint's own facts
``vaswani-tatoeba-es-en.yaml``. This module only gathers the values:

- `write_model_card`: a checkpoint folder's ``README.md`` from the scores and training facts it is given
  (``scripts/release_checkpoint.py``);
- `checkpoint_card`: a released folder's card from its facts file, its ``eval_results.json`` and its
  ``config.json``. The shipped checkpoint's ``README.md`` is that card; after editing its facts, regenerate it::

      python -m hf_vaswani.model_card pretrained/vaswani-tatoeba-es-en
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml  # a dependency of huggingface_hub, which reads and writes card metadata with it
from huggingface_hub import EvalResult, ModelCard, ModelCardData

#: The card templates and the code-free parts of the cards (the top-level ``model_cards/`` folder).
CARDS = Path(__file__).resolve().parent / "model_cards"
#: The template of a checkpoint trained with hf-vaswani.
TEMPLATE = CARDS / "vaswani.md"
#: The metadata of every card rendered from `TEMPLATE`.
METADATA = CARDS / "vaswani.yaml"

__all__ = [
    "CARDS",
    "DIRECTION_NAMES",
    "METADATA",
    "REPO_URL",
    "TEMPLATE",
    "checkpoint_card",
    "model_card",
    "model_card_data",
    "read_facts",
    "render_card",
    "write_model_card",
]


def read_facts(path: str | Path) -> dict[str, Any]:
    """One YAML file of ``model_cards/`` as a dict."""
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


_METADATA = read_facts(METADATA)
REPO_URL: str = _METADATA["repo_url"]
#: How the model-index names each direction.
DIRECTION_NAMES: dict[str, str] = _METADATA["directions"]


def render_card(template: str | Path, data: ModelCardData, **fields: Any) -> ModelCard:
    """`template` (a path, or the name of a file of `CARDS`) rendered by `ModelCard.from_template` with the metadata
    `data` and the template's `fields`. Jinja drops a template's last newline, so each template of `CARDS` ends with
    an empty line: the card ends with a newline."""
    return ModelCard.from_template(data, template_path=str(CARDS / template), **fields)


def model_card_data(model_id: str, results: list[dict[str, Any]], test_pairs: int) -> ModelCardData:
    """Metadata header: `METADATA`'s fields and a `model-index` with our test-split scores."""
    wording = _METADATA["evaluation"]
    eval_results = []
    for row in results:
        direction = DIRECTION_NAMES.get(row["direction"], row["direction"])
        for metric, metric_name in wording["metric_names"].items():
            eval_results.append(
                EvalResult(
                    task_type=wording["task_type"],
                    task_name=wording["task_name"].format(direction=direction),
                    dataset_type=wording["dataset_type"],
                    dataset_name=wording["dataset_name"].format(test_pairs=test_pairs),
                    dataset_config=row["direction"],
                    dataset_split=wording["dataset_split"],
                    metric_type=metric,
                    metric_name=metric_name,
                    metric_value=round(float(row[metric]), 2),
                    metric_config=wording["metric_config"],
                )
            )
    return ModelCardData(**_METADATA["metadata"], model_name=model_id.split("/")[-1], eval_results=eval_results)


def model_card(
    model_dir: str | Path,
    *,
    model_id: str,
    results: list[dict[str, Any]],
    training: Mapping[str, Any],
    notes: Mapping[str, str] | None = None,
    template: str | Path = TEMPLATE,
) -> ModelCard:
    """The card of the checkpoint folder `model_dir` (its ``config.json`` is read), rendered from `template`.

    `results` holds one dict per direction (`direction`, `bleu`, `chrf`); `training` the facts of the run
    (`summary`, `data`, `warmup`, `steps`, `batch`, `averaged`, `hardware`, `wall_time`, `test_pairs`,
    `num_beams`, `parameters`, `weights_dtype`); `notes` optional sentences the template adds (`evaluation`: after
    the beam size; `alignment`: which heads the configuration's aligner reads, instead of the general account).
    """
    config = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))
    return render_card(
        template,
        model_card_data(model_id, results, training["test_pairs"]),
        model_name=model_id.split("/")[-1],
        model_id=model_id,
        repo_url=REPO_URL,
        config=config,
        results=results,
        parameters=training["parameters"],
        weights_dtype=training["weights_dtype"],
        training_summary=training["summary"],
        data_summary=training["data"],
        warmup=training["warmup"],
        steps=training["steps"],
        batch_description=training["batch"],
        averaged=training["averaged"],
        hardware=training["hardware"],
        wall_time=training["wall_time"],
        test_pairs=training["test_pairs"],
        num_beams=training["num_beams"],
        alignment=config.get("alignment"),
        notes=dict(notes or {}),
    )


def write_model_card(model_dir: str | Path, **card: Any) -> Path:
    """Write `model_dir/README.md`, the `model_card` of `model_dir` (its keyword arguments: `model_id`, `results`,
    `training`, `notes`, `template`), and return its path."""
    path = Path(model_dir) / "README.md"
    model_card(model_dir, **card).save(path)
    return path


def checkpoint_card(model_dir: str | Path, facts: str | Path | None = None) -> ModelCard:
    """The card of a released checkpoint folder: `facts` (default: ``model_cards/<folder name>.yaml``: `model_id`,
    `training` and `notes`) with the scores, beam size, test-split size and weights' dtype of the folder's
    ``eval_results.json`` (written by ``scripts/release_checkpoint.py``)."""
    model_dir = Path(model_dir)
    written = read_facts(facts if facts is not None else CARDS / f"{model_dir.name}.yaml")
    evaluation = json.loads((model_dir / "eval_results.json").read_text(encoding="utf-8"))
    scores = evaluation["scores"]
    training = {
        **written["training"],
        "test_pairs": next(iter(scores.values()))["sentences"],
        "num_beams": evaluation["num_beams"],
        "weights_dtype": evaluation["weights_dtype"],
    }
    results = [{"direction": d, "bleu": s["bleu"], "chrf": s["chrf"]} for d, s in scores.items()]
    return model_card(
        model_dir, model_id=written["model_id"], results=results, training=training, notes=written.get("notes")
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m hf_vaswani.model_card",
        description="Write a released checkpoint folder's README.md from its facts in model_cards/ (checkpoint_card).",
    )
    parser.add_argument("model_dir", type=Path, help="the checkpoint folder, e.g. pretrained/vaswani-tatoeba-es-en")
    parser.add_argument("--facts", type=Path, default=None, help="default: model_cards/<folder name>.yaml")
    args = parser.parse_args(argv)
    path = args.model_dir / "README.md"
    checkpoint_card(args.model_dir, args.facts).save(path)
    print(path)


if __name__ == "__main__":
    main()
