"""A ``translation`` pipeline for models whose source names the target language with a token such as ``>>en<<``.

transformers 5 removed its own translation pipeline; a checkpoint can still offer one as a custom pipeline: this
file is copied next to the weights and named in config.json's ``custom_pipelines`` (`add_pipeline_to_folder`), so

    translator = pipeline("translation", model="hf-vaswani/vaswani-tatoeba-es-en", trust_remote_code=True)
    translator("El gato negro.", tgt_lang="en")   # [{"translation_text": "The black cat."}]

works with or without the hf_vaswani package (which passes ``pipeline_class=VaswaniTranslationPipeline`` instead
of running remote code). It imports only `torch` and `transformers`, like the model files.
"""

import json
import re
import shutil
import warnings
from pathlib import Path
from typing import Any

from transformers import Pipeline

LANGUAGE_TOKEN = re.compile(r">>([^\s<>]+)<<")


class VaswaniTranslationPipeline(Pipeline):
    """Translate text into `tgt_lang` (``"en"``, ``"es"``: the languages of the model's ``>>xx<<`` tokens). A model
    without such tokens translates into one language (a converted OPUS-MT model): `tgt_lang` may then be left out.

    Keyword arguments other than `tgt_lang` go to `generate()` (``num_beams``, ``max_new_tokens``, ...); the model's
    generation config gives the rest. Returns ``[{"translation_text": ...}]`` for a text, one such list per text for a
    list of texts, as the translation pipeline of earlier transformers versions did.
    """

    def _sanitize_parameters(self, tgt_lang: str | None = None, src_lang: str | None = None, **generate_kwargs: Any):
        preprocess = {"tgt_lang": tgt_lang} if tgt_lang is not None else {}
        return preprocess, generate_kwargs, {}

    def target_languages(self) -> list[str]:
        """The language codes that have a ``>>xx<<`` token in the tokenizer's vocabulary."""
        return sorted(m.group(1) for token in self.tokenizer.get_vocab() if (m := LANGUAGE_TOKEN.fullmatch(token)))

    def preprocess(self, text: str, tgt_lang: str | None = None) -> dict[str, Any]:
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"The pipeline translates non-empty strings, got {text!r}.")
        languages = self.target_languages()
        if not languages:  # one target language: the text goes in as it is
            only = getattr(self.tokenizer, "target_lang", None)
            if tgt_lang is not None and only is not None and tgt_lang != only:
                raise ValueError(f"This model translates into {only!r} only, got tgt_lang={tgt_lang!r}.")
            return self._encode(text.strip(), text)
        if tgt_lang is None:
            raise ValueError(f"Say which language to translate into: tgt_lang={' or '.join(map(repr, languages))}.")
        if tgt_lang not in languages:
            raise ValueError(f"tgt_lang={tgt_lang!r} is not a language of this model: choose one of {languages}.")
        found = LANGUAGE_TOKEN.search(text)
        if found and found.group(1) not in languages:  # the tokenizer would split it into pieces read as words
            raise ValueError(
                f"The text contains {found.group(0)}, which is not a language token of this model (languages: "
                f"{languages}): the target language is tgt_lang, not a token in the text."
            )
        if found:
            raise ValueError(f"The text contains a language token ({found.group(0)}): pass tgt_lang.")
        return self._encode(f">>{tgt_lang}<< {text.strip()}", text)

    def _encode(self, source: str, text: str) -> dict[str, Any]:
        """The model inputs for `source` (the `text` with its language token), cut to the model's positions."""
        limit = getattr(self.model.config, "max_position_embeddings", None)
        inputs = self.tokenizer(source, return_tensors="pt", truncation=limit is not None, max_length=limit)
        if _unknown_share(self.tokenizer, text) > 0.5:
            message = (
                f"Most of {text!r} is outside the model's vocabulary (<unk>) or special tokens: the translation "
                "means little."
            )
            warnings.warn(message, stacklevel=4)
        return inputs

    def _forward(self, model_inputs: dict[str, Any], **generate_kwargs: Any) -> dict[str, Any]:
        return {"output_ids": self.model.generate(**model_inputs, **generate_kwargs)}

    def postprocess(self, model_outputs: dict[str, Any]) -> list[dict[str, str]]:
        texts = self.tokenizer.batch_decode(model_outputs["output_ids"], skip_special_tokens=True)
        return [{"translation_text": text.strip()} for text in texts]


def _unknown_share(tokenizer: Any, text: str) -> float:
    """The share of the text's non-space characters that the tokenizer can only map to its unknown token or reads as
    special tokens (``<pad> <pad>``, ``</s>``: markers, not words). A tokenizer without character offsets (a
    SentencePiece `MarianTokenizer`) gives the share of such tokens instead."""
    unread = {tokenizer.unk_token_id, *tokenizer.all_special_ids}
    try:
        encoded = tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)
    except NotImplementedError:  # some tokenizers refuse the option, others leave the offsets out
        encoded = tokenizer(text, add_special_tokens=False)
    if "offset_mapping" not in encoded:
        return sum(token in unread for token in encoded["input_ids"]) / max(1, len(encoded["input_ids"]))
    spans = zip(encoded["input_ids"], encoded["offset_mapping"], strict=True)
    unknown = sum(len(text[start:end].strip()) for token, (start, end) in spans if token in unread)
    return unknown / max(1, sum(not character.isspace() for character in text))


def add_pipeline_to_folder(folder: str | Path) -> None:
    """Copy this file into a saved model folder and declare it in config.json as its ``translation`` pipeline."""
    folder = Path(folder)
    shutil.copyfile(__file__, folder / "pipeline_vaswani.py")
    config_file = folder / "config.json"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    config["custom_pipelines"] = {
        "translation": {
            "impl": "pipeline_vaswani.VaswaniTranslationPipeline",
            "pt": ["AutoModelForSeq2SeqLM"],
            "tf": [],
            "type": "text",
        }
    }
    config_file.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
