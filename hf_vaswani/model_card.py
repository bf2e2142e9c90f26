"""Model card and training curves for a trained checkpoint, built with `huggingface_hub.ModelCard`."""

import json
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

#: The model card template, shipped inside the package (package data).
TEMPLATE = Path(__file__).resolve().parent / "templates" / "model_card.md"
REPO_URL = "https://github.com/hf-vaswani/hf-vaswani"
DIRECTION_NAMES = {"es-en": "Spanish to English", "en-es": "English to Spanish"}


def model_card_data(model_id: str, results: list[dict[str, Any]], test_pairs: int) -> ModelCardData:
    """Metadata header: languages, license, datasets, metrics and a `model-index` with our test-split scores."""
    eval_results = []
    for row in results:
        for metric in ("bleu", "chrf"):
            eval_results.append(
                EvalResult(
                    task_type="translation",
                    task_name=f"Translation {DIRECTION_NAMES.get(row['direction'], row['direction'])}",
                    dataset_type="tatoeba",
                    dataset_name=f"Tatoeba/Anki spa-eng, our held-out test split ({test_pairs} pairs)",
                    dataset_config=row["direction"],
                    dataset_split="test",
                    metric_type=metric,
                    metric_name="BLEU" if metric == "bleu" else "chrF",
                    metric_value=round(float(row[metric]), 2),
                    metric_config="sacrebleu defaults, detokenized",
                )
            )
    return ModelCardData(
        language=["es", "en"],
        license="cc-by-2.0",
        library_name="transformers",
        pipeline_tag="translation",
        tags=["translation", "vaswani", "transformer", "attention-is-all-you-need", "hf-vaswani"],
        datasets=["tatoeba"],
        metrics=["bleu", "chrf"],
        model_name=model_id.split("/")[-1],
        eval_results=eval_results,
    )


def write_model_card(
    model_dir: str | Path,
    *,
    model_id: str,
    results: list[dict[str, Any]],
    training: dict[str, Any],
    template: str | Path = TEMPLATE,
) -> Path:
    """Write `model_dir/README.md` from `TEMPLATE` (hf_vaswani/templates/model_card.md).

    `results` holds one dict per direction (`direction`, `bleu`, `chrf`); `training` the facts of the run
    (`summary`, `data`, `warmup`, `steps`, `batch`, `averaged`, `hardware`, `wall_time`, `test_pairs`,
    `num_beams`, `parameters`, `weights_dtype`).
    """
    model_dir = Path(model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    card = ModelCard.from_template(
        model_card_data(model_id, results, training["test_pairs"]),
        template_path=str(template),
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
    )
    path = model_dir / "README.md"
    card.save(path)
    return path
