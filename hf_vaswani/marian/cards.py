"""The model cards written with a Marian checkpoint going in or out: what was mapped, checked and noted.

- `write_converted_card`: the ``README.md`` of a folder written by `hf_vaswani.marian.convert` (the source's license
  and languages carried over from its own card, the conversion notes, how to load it with ``trust_remote_code``).
- `write_exported_card`: the ``README.md`` of a `MarianMTModel` folder written by `hf_vaswani.marian.export`.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from huggingface_hub import ModelCard, ModelCardData
from transformers.utils import cached_file

from ..configuration_vaswani import VaswaniConfig

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
    license_line = (
        f"License: `{license_id}`, carried over from the original model card of {source_ref}."
        if license_id
        else f"License: see the original model card of {source_ref}."
    )
    if max_abs_diff is None:
        check = "The logits check was skipped (the source is not float32)."
    else:
        check = (
            "At conversion time both models were run on a padded check batch: the largest absolute difference "
            f"between their logits was {max_abs_diff:.3g}."
        )
    tokenizer = (
        f"The Marian tokenizer files were copied ({', '.join(tokenizer_files)}): `AutoTokenizer` loads them."
        if tokenizer_files
        else "No tokenizer files were copied."
    )
    arch = (
        f"{config.encoder_layers} encoder and {config.decoder_layers} decoder layers, d_model {config.d_model}, "
        f"{config.encoder_attention_heads}/{config.decoder_attention_heads} heads, "
        f"FFN {config.encoder_ffn_dim}/{config.decoder_ffn_dim}, activation `{config.activation_function}`, "
        f"post-LayerNorm (eps {config.layer_norm_eps})"
    )
    body = f"""
# {name}

{source_ref} (a Marian / OPUS-MT translation model) converted with hf-vaswani (`hf-vaswani convert-marian`) into a
`VaswaniForConditionalGeneration`, the Transformer of Vaswani et al. (2017), "Attention Is All You Need".

{license_line}

## What was converted

- {arch}.
- Sinusoidal positions in Marian's layout (`sinusoidal_layout="concatenated"`, positions from 0), token embeddings
  scaled by sqrt(d_model): `{config.scale_embedding}`, Marian's `final_logits_bias` on the logits.
- Vocabulary {config.vocab_size} (decoder {config.decoder_vocab_size}); shared encoder/decoder embeddings:
  `{config.share_embeddings}`; output projection tied to the decoder embeddings: `{config.tie_word_embeddings}`.
- Every weight is copied as it is under our names (`encoder_attn` is `cross_attn`, `final_layer_norm` is
  `ffn_layer_norm`); none was dropped.
- `generation_config.json` is Marian's (beam size, maximum length, banned pad token, decoder start token, ...).

{check}

{tokenizer}

## Use

```python
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

# Without hf_vaswani installed, the model code comes with this folder: trust_remote_code=True.
tokenizer = AutoTokenizer.from_pretrained("{name}", trust_remote_code=True)
model = AutoModelForSeq2SeqLM.from_pretrained("{name}", trust_remote_code=True)
batch = tokenizer(["..."], return_tensors="pt")
print(tokenizer.batch_decode(model.generate(**batch), skip_special_tokens=True))
```
"""
    if notes:
        body += "\n## Conversion notes\n\n" + "\n".join(f"- {note}" for note in notes) + "\n"
    ModelCard(f"---\n{data.to_yaml()}\n---\n{body}").save(out_dir / "README.md")


def write_exported_card(
    out_dir: Path,
    name: str,
    config: VaswaniConfig,
    difference: float,
    tokenizer_files: list[str],
    *,
    opus_layout: bool = False,
) -> None:
    layout = (
        "the d_model dimensions reordered from the paper's interleaved sinusoid layout to Marian's (an exact "
        "change of coordinates)"
        if config.sinusoidal_layout == "interleaved"
        else "the same sinusoid layout"
    )
    tokenizer = (
        f"Tokenizer files: {', '.join(tokenizer_files)} (`AutoTokenizer` loads them)."
        if tokenizer_files
        else "No tokenizer was exported."
    )
    heads = (
        ""
        if config.encoder_attention_heads == config.decoder_attention_heads
        else " (but for the number of heads: CTranslate2's Marian converter gives the decoder the encoder's, so use "
        "`hf-vaswani export-ctranslate2` for this model)"
    )
    if opus_layout:
        start = f"""The vocabulary is laid out as OPUS-MT's: a `<pad>` with a zero embedding is appended (id
{config.vocab_size}, never predicted), it is the pad and decoder start token, and the source model's start token is
carried by row 0 of the decoder's position table, stored in `model.safetensors`. The source model's own `<pad>`
(id {config.pad_token_id}) keeps its weights as `<vaswani_pad>`; every other id is the source model's. So
CTranslate2 converts the folder (`ct2-transformers-converter --model {name} --output_dir {name}-ct2`) and translates
as this model does{heads}. `MarianMTModel.save_pretrained` does not save position tables: copy this folder's
`model.safetensors` rather than re-saving the model, or the first decoding step changes."""
    else:
        start = f"""Decoding starts from token {config.decoder_start_token_id} (`decoder_start_token_id`), as in
the source model, whose separate target vocabulary keeps its ids (CTranslate2's Marian converter takes models with
one vocabulary only: use `hf-vaswani export-ctranslate2`)."""
    text = f"""---
library_name: transformers
pipeline_tag: translation
tags: [marian, hf-vaswani]
---

# {name}

An hf-vaswani model (`VaswaniForConditionalGeneration`) exported with `hf-vaswani export-marian` as a stock
`MarianMTModel`: the same weights under Marian's names, {layout}.

{start}

At export, both models ran on a padded check batch: the largest absolute difference between their logits was
{difference:.3g}. {tokenizer}

```python
from transformers import AutoTokenizer, MarianMTModel

tokenizer = AutoTokenizer.from_pretrained("{name}")
model = MarianMTModel.from_pretrained("{name}")
```
"""
    (out_dir / "README.md").write_text(text, encoding="utf-8")
