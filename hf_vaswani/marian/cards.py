"""The model cards written with a Marian checkpoint going in or out: what was mapped, checked and noted, rendered
by `huggingface_hub.ModelCard.from_template` from the templates of ``model_cards/`` (`hf_vaswani.model_card.CARDS`).

- `write_converted_card`: the ``README.md`` of a folder written by `hf_vaswani.marian.convert` (the source's license
  and languages carried over from its own card, the conversion notes, how to load it with ``trust_remote_code``):
  ``model_cards/marian-convert.md``.
- `write_exported_card`: the ``README.md`` of a `MarianMTModel` folder written by `hf_vaswani.marian.export`:
  ``model_cards/marian-export.md``.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from huggingface_hub import ModelCard, ModelCardData
from transformers.utils import cached_file

from ..configuration_vaswani import VaswaniConfig
from ..model_card import render_card

__all__ = ["IN_MEMORY", "write_converted_card", "write_exported_card"]

logger = logging.getLogger(__name__)

#: How a card names a source that came as a model in memory rather than a folder or a Hub id.
IN_MEMORY = "an in-memory MarianMTModel"
_HUB_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?$")


def _source_card(files_source: str | None) -> ModelCard | None:
    if files_source is None:
        return None
    path = cached_file(
        files_source,
        "README.md",
        _raise_exceptions_for_missing_entries=False,
        _raise_exceptions_for_connection_errors=False,
        _raise_exceptions_for_gated_repo=False,
    )
    if not path:
        return None
    try:
        return ModelCard.load(path)
    except Exception as error:  # a malformed card must not stop the conversion
        logger.warning("Could not read the source model card %s: %s", path, error)
        return None


def write_converted_card(
    out_dir: Path,
    source_id: str,
    files_source: str | None,
    config: VaswaniConfig,
    tokenizer_files: list[str],
    max_abs_diff: float | None,
    notes: list[str],
    *,
    name: str,
) -> None:
    """Write the model card ``README.md`` into `out_dir` (the folder being written; `name` is the final folder's)."""
    source_card = _source_card(files_source)
    license_id = source_card.data.license if source_card is not None else None
    language = source_card.data.language if source_card is not None else None
    is_hub_id = files_source is not None and not Path(files_source).exists() and bool(_HUB_ID.match(files_source))
    data = ModelCardData(
        license=license_id,
        language=language,
        library_name="transformers",
        pipeline_tag="translation",
        tags=["hf-vaswani", "translation", "marian"],
        base_model=files_source if is_hub_id else None,
    )
    source_ref = source_id if source_id == IN_MEMORY else f"`{source_id}`"
    card = render_card(
        "marian-convert.md",
        data,
        name=name,
        source_ref=source_ref,
        license=license_id,
        config=config,
        max_abs_diff=max_abs_diff,
        tokenizer_files=tokenizer_files,
        notes=notes,
    )
    card.save(out_dir / "README.md")


def write_exported_card(
    out_dir: Path,
    name: str,
    config: VaswaniConfig,
    difference: float,
    tokenizer_files: list[str],
    *,
    opus_layout: bool = False,
) -> None:
    """Write the model card ``README.md`` of an exported `MarianMTModel` into `out_dir` (`name` is the final
    folder's; `difference` the largest logit difference of the export's check)."""
    data = ModelCardData(library_name="transformers", pipeline_tag="translation", tags=["marian", "hf-vaswani"])
    card = render_card(
        "marian-export.md",
        data,
        name=name,
        config=config,
        difference=difference,
        tokenizer_files=tokenizer_files,
        opus_layout=opus_layout,
    )
    card.save(out_dir / "README.md")
