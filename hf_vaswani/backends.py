"""Translating through CTranslate2: the fast backend of ``translate``, ``evaluate`` and the demo.

CTranslate2 (the ``[fast]`` extra) runs our model from a folder exported by `hf_vaswani.export.ctranslate2`, in int8
on a CPU by default. The export is made once and kept in the user cache (``$HF_VASWANI_CACHE/ctranslate2``, default
``~/.cache/hf_vaswani/ctranslate2``), in a folder named after a hash of the model's weights, config and tokenizer
files (``3f2a...-ctranslate2-int8/``), so that it is made again when they change. The model folder is only read: it
may be read-only, shared or a Hub cache snapshot. Each export's stamp records the size and SHA-256 of every file it
wrote; an entry whose files no longer match (a truncated ``model.bin``, a file deleted) is made again, with a
`CTranslate2CacheWarning` saying so. A cache that cannot be written is a `CTranslate2CacheError`, on which
`load_ctranslate2_or_none` (``--backend auto``) falls back to PyTorch.

A Marian (OPUS-MT) model is converted by CTranslate2's own `TransformersConverter`, cached the same way, and
translated by `MarianCTranslate2Translator` (the demo serves OPUS-MT models through it); any other model type is
refused with one sentence (`ctranslate2_model_type`). Only the models of `CTRANSLATE2_MODEL_TYPES` are exported.
Long because it is one cache (fingerprint, staged export, stamp) and the two translators that read it, which share
the decoding options that make CTranslate2 choose `generate()`'s tokens; the Marian translator is a short subclass.

    from hf_vaswani.backends import load_ctranslate2

    translator = load_ctranslate2("pretrained/vaswani-tatoeba-es-en")            # int8 on the CPU
    translator.translate(["el gato negro"], "es-en")                               # ["the black cat"]

`CTranslate2Translator.translate` takes the arguments of `hf_vaswani.inference.translate` (less the model and
tokenizer) and returns the same: one string per sentence. The decoding options reproduce `generate()`'s beam search
(beam size, length penalty and maximum length from the model's generation config, stop once `num_beams`
hypotheses are finished as with ``early_stopping=True``, end-of-sentence allowed at the first step), so in float32
the tokens are ours; in int8 they are those of a model with slightly rounded weights. Attention weights do not
come from CTranslate2: run one teacher-forced PyTorch pass over the chosen output, as `vaswani_inspect.extract` does
with a target.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .paths import default_model_path, looks_like_local_path

__all__ = [
    "BACKENDS",
    "BACKEND_CHOICES",
    "CTRANSLATE2_MODEL_TYPES",
    "CTranslate2CacheError",
    "CTranslate2CacheWarning",
    "CTranslate2Translator",
    "MarianCTranslate2Translator",
    "ctranslate2_available",
    "ctranslate2_model_type",
    "default_quantization",
    "ensure_ctranslate2_export",
    "load_ctranslate2",
    "load_ctranslate2_or_none",
    "resolve_backend",
    "translate_with_ctranslate2",
    "user_cache_dir",
]

#: The values of ``--backend``: PyTorch (`generate()`) or CTranslate2.
BACKENDS = ("torch", "ctranslate2")
#: What a `--backend` option offers: "auto" (`resolve_backend`) and each backend.
BACKEND_CHOICES = ("auto", "ctranslate2", "torch")

#: Files whose content decides whether a cached export is still the model's.
FINGERPRINTED = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
#: A Marian folder's tokenizer files, fingerprinted as well (its tokenizer is SentencePiece, not tokenizer.json).
MARIAN_FINGERPRINTED = ("vocab.json", "source.spm", "target.spm")
#: The ``model_type`` values CTranslate2 translates here: ours (our own exporter) and Marian (CTranslate2's).
CTRANSLATE2_MODEL_TYPES = ("vaswani", "marian")
#: Written into each cached export: what it was made from.
STAMP = "hf_vaswani_export.json"
#: Changes when the export itself changes, so that older cached exports are made again.
EXPORT_VERSION = 1


class CTranslate2CacheError(OSError):
    """The CTranslate2 export cannot be written into the cache (a read-only or full disk, no permission).

    Attributes:
        problem: what went wrong, without the advice the message adds (for a caller that falls back).
    """

    problem: str = ""


class CTranslate2CacheWarning(UserWarning):
    """A cached CTranslate2 export was damaged (a file missing, cut short or changed) and is made again, or the
    cache cannot be written and PyTorch translates instead."""


#: What `generate()` uses for a generation setting the model's generation config leaves unset.
GENERATE_DEFAULTS = {
    "max_length": 20,
    "min_length": 0,
    "num_beams": 1,
    "length_penalty": 1.0,
    "no_repeat_ngram_size": 0,
    "repetition_penalty": 1.0,
}


def ctranslate2_available() -> bool:
    """Whether the ``[fast]`` extra (the ``ctranslate2`` package) is installed."""
    import importlib.util

    return importlib.util.find_spec("ctranslate2") is not None


def resolve_backend(backend: str | None, device: str | None = None) -> str:
    """The backend to translate with: `backend` when given, else CTranslate2 on a CPU when it is installed.

    Raises:
        ValueError: an unknown backend name.
        ModuleNotFoundError: ``"ctranslate2"`` asked for without the ``[fast]`` extra (the command line turns it
            into "needs the [fast] extra").
    """
    if backend in (None, "auto"):
        on_cpu = device is None or str(device).startswith("cpu")
        return "ctranslate2" if on_cpu and ctranslate2_available() else "torch"
    if backend not in BACKENDS:
        raise ValueError(f"backend must be auto, {' or '.join(BACKENDS)}, got {backend!r}.")
    if backend == "ctranslate2" and not ctranslate2_available():
        raise ModuleNotFoundError("No module named 'ctranslate2'", name="ctranslate2")
    return backend


def default_quantization(device: str | None = None) -> str:
    """int8 weights on a CPU (the fast path), float16 on a GPU."""
    return "float16" if device is not None and str(device).startswith("cuda") else "int8"


# ----------------------------------------------------------------------------------------------------------------
# The cached export
# ----------------------------------------------------------------------------------------------------------------


def ensure_ctranslate2_export(
    model: str | os.PathLike[str] | None = None,
    quantization: str = "int8",
    *,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """The CTranslate2 export of `model` in `quantization`, made now unless an up-to-date one is cached.

    Args:
        model: a model folder or Hub id; `None` is the shipped checkpoint.
        quantization: one of `hf_vaswani.export.ctranslate2.QUANTIZATIONS` (``"int8"``, ``"float32"``, ...).
        cache_dir: where to keep the export (``cache_dir/ctranslate2-<quantization>``); default: the user cache,
            keyed by the model's files (`user_cache_dir`).

    Returns:
        The CTranslate2 model folder. A cached one is checked first against the sizes and SHA-256 its stamp
        recorded at export time; a damaged one is made again, with a `CTranslate2CacheWarning`.

    Raises:
        CTranslate2CacheError: the export has to be made and cannot be written into the cache.
    """
    from .export.ctranslate2 import QUANTIZATIONS

    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization must be one of {', '.join(QUANTIZATIONS)}, got {quantization!r}.")
    folder = _model_folder(model)
    model_type = ctranslate2_model_type(folder)
    fingerprint = _fingerprint(folder, quantization, model_type)
    target = _export_folder(folder, quantization, fingerprint, cache_dir)
    damage = _entry_damage(target, fingerprint)
    if damage is None:
        return target
    exporter = _export_marian if model_type == "marian" else _export_vaswani
    try:
        _export_into(folder, target, quantization, fingerprint, exporter)
    except OSError as error:
        raise _cache_error(target, error, damage) from error
    if damage != _OUTDATED:
        warnings.warn(
            f"the cached CTranslate2 export {str(target)!r} was damaged ({damage}): made it again",
            CTranslate2CacheWarning,
            stacklevel=2,
        )
    return target


def ctranslate2_model_type(folder: str | os.PathLike[str]) -> str:
    """The ``model_type`` of a model folder's config.json, one of `CTRANSLATE2_MODEL_TYPES`.

    Raises:
        ValueError: the folder holds another model type (or no readable config): one sentence saying which
            models CTranslate2 translates here and that PyTorch translates the others.
    """
    try:
        model_type = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        model_type = None
    if model_type not in CTRANSLATE2_MODEL_TYPES:
        raise ValueError(
            f"CTranslate2 translates hf_vaswani and Marian (OPUS-MT) models here; {str(folder)!r} holds a "
            f"{model_type or 'model of unknown type'} model: translate it with PyTorch (backend 'torch')."
        )
    return model_type


def _model_folder(model: str | os.PathLike[str] | None) -> Path:
    name = str(model) if model is not None else default_model_path()
    if model is None or looks_like_local_path(name):
        folder = Path(name).expanduser()
        if not (folder / "config.json").is_file():
            raise FileNotFoundError(f"No model folder with a config.json at {name!r}.")
        return folder
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(name))


def _weight_files(folder: Path) -> list[Path]:
    files = sorted(folder.glob("*.safetensors")) or sorted(folder.glob("pytorch_model*.bin"))
    if not files:
        raise FileNotFoundError(f"No weights (*.safetensors or pytorch_model*.bin) in {str(folder)!r}.")
    return files


def _fingerprint(folder: Path, quantization: str, model_type: str = "vaswani") -> str:
    """A hash of what the export is made from: the weights, config and tokenizer files, and the export settings."""
    import ctranslate2

    # Our exports keep the hash they always had; another model type adds its name (another converter made it).
    kind = "" if model_type == "vaswani" else f"{model_type}|"
    digest = hashlib.sha256(f"{kind}{EXPORT_VERSION}|{quantization}|{ctranslate2.__version__}".encode())
    names = FINGERPRINTED + (MARIAN_FINGERPRINTED if model_type == "marian" else ())
    files = _weight_files(folder) + [folder / name for name in names if (folder / name).is_file()]
    for path in files:
        digest.update(path.name.encode() + b"\0")
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _export_folder(folder: Path, quantization: str, fingerprint: str, cache_dir: str | os.PathLike[str] | None) -> Path:
    name = f"ctranslate2-{quantization}"
    if cache_dir is not None:
        return Path(cache_dir) / name
    return user_cache_dir() / f"{fingerprint[:16]}-{name}"


def user_cache_dir() -> Path:
    """Where the CTranslate2 exports are kept: ``$HF_VASWANI_CACHE/ctranslate2`` (default ``~/.cache/hf_vaswani``)."""
    return Path(os.environ.get("HF_VASWANI_CACHE", Path.home() / ".cache" / "hf_vaswani")).expanduser() / "ctranslate2"


def _stamp(target: Path) -> dict[str, Any]:
    try:
        stamp = json.loads((target / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return stamp if isinstance(stamp, dict) else {}


#: What `_entry_damage` says of an entry that is absent, made from other files or by an earlier version (whose
#: stamp records no files): made again without a warning.
_OUTDATED = "absent or made from other files"


def _file_record(path: Path) -> dict[str, Any]:
    """The size and SHA-256 of a file, as a stamp records them."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return {"size": path.stat().st_size, "sha256": digest.hexdigest()}


def _entry_damage(target: Path, fingerprint: str) -> str | None:
    """None when `target` is a complete export made from the files `fingerprint` hashes: its stamp matches and
    every file the stamp records is there with its size and SHA-256. Else what is wrong (`_OUTDATED` when the
    entry is absent or was made from other files, which is no damage)."""
    if not target.is_dir():
        return _OUTDATED
    stamp = _stamp(target)
    if not stamp:
        return f"{STAMP} is missing or unreadable"
    if stamp.get("fingerprint") != fingerprint:
        return _OUTDATED
    files = stamp.get("files")
    if not isinstance(files, dict) or not files:
        return _OUTDATED  # made by an earlier version, which recorded no files: made again like an outdated one
    for name, record in sorted(files.items()):
        path = target / name
        if not path.is_file():
            return f"{name} is missing"
        if not isinstance(record, dict) or not isinstance(record.get("size"), int):
            return f"{STAMP} records no size for {name}"
        size = path.stat().st_size
        if size != record["size"]:
            return f"{name} has {size:,} bytes, the export wrote {record['size']:,}"
        if _file_record(path)["sha256"] != record.get("sha256"):
            return f"{name} is not the file the export wrote (its SHA-256 differs)"
    return None


def _cache_error(target: Path, error: OSError, damage: str) -> CTranslate2CacheError:
    """`error`, met while writing the export `target`, as one sentence naming the cache and what to do."""
    reason = error.strerror or str(error)
    what = (
        f"the cached export {str(target)!r} is damaged ({damage}) and cannot be made again"
        if damage != _OUTDATED
        else f"cannot write the CTranslate2 export into the cache {str(target.parent)!r}"
    )
    problem = f"{what[:1].upper()}{what[1:]} ({reason})"
    cache_error = CTranslate2CacheError(
        error.errno,
        f"{problem}: set HF_VASWANI_CACHE to a writable folder with free space, or translate with PyTorch "
        "(--backend torch).",
    )
    cache_error.problem = problem
    return cache_error


def _export_vaswani(folder: Path, staging: Path, quantization: str) -> None:
    from .export.ctranslate2 import export_ctranslate2

    export_ctranslate2(folder, staging, quantization=quantization, force=True)


def _export_marian(folder: Path, staging: Path, quantization: str) -> None:
    """CTranslate2's own converter: it drops the ``<pad>`` transformers appends to OPUS-MT vocabularies (the last
    id, so the other ids are unchanged) and starts the decoder from a zero embedding, as Marian does."""
    from ctranslate2.converters import TransformersConverter

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Recommended: pip install sacremoses")
        TransformersConverter(str(folder)).convert(str(staging), quantization=quantization, force=True)


def _export_into(
    folder: Path, target: Path, quantization: str, fingerprint: str, exporter: Callable[[Path, Path, str], None]
) -> None:
    """Export into a fresh folder beside `target`, then swap it in: a reader never sees half an export."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        exporter(folder, staging, quantization)
        # What every later use checks the entry against (`_entry_damage`).
        files = {path.name: _file_record(path) for path in sorted(staging.iterdir()) if path.is_file()}
        stamp = {
            "fingerprint": fingerprint,
            "quantization": quantization,
            "source": str(folder.resolve()),
            "files": files,
        }
        (staging / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
        if target.exists():
            old = target.with_name(f".{target.name}-old-{os.getpid()}")
            target.rename(old)
            shutil.rmtree(old, ignore_errors=True)
        try:
            staging.rename(target)
        except OSError:
            if _stamp(target).get("fingerprint") != fingerprint:  # another process was not exporting the same
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# ----------------------------------------------------------------------------------------------------------------
# Translating
# ----------------------------------------------------------------------------------------------------------------


class CTranslate2Translator:
    """A CTranslate2 translator for one exported model, with its tokenizer and generation settings.

    Attributes:
        translator: the `ctranslate2.Translator`.
        tokenizer: the model's tokenizer (ids are shared with the export).
        config: the model's `VaswaniConfig`; generation_config: its `GenerationConfig`.
        model_folder: the model folder; export_folder: the CTranslate2 folder; quantization: its weight type.
    """

    is_ctranslate2 = True

    def __init__(
        self,
        model_folder: Path,
        export_folder: Path,
        quantization: str,
        *,
        device: str = "cpu",
        threads: int | None = None,
    ):
        import ctranslate2
        import torch
        from transformers import AutoConfig, AutoTokenizer

        import hf_vaswani  # noqa: F401  (registers the "vaswani" config type)

        from .model_folder import folder_generation_config

        self.model_folder = model_folder
        self.export_folder = export_folder
        self.quantization = quantization
        self.device = device
        self.config = AutoConfig.from_pretrained(model_folder)
        with warnings.catch_warnings():  # MarianTokenizer's advice, which concerns its training-time normaliser
            warnings.filterwarnings("ignore", message="Recommended: pip install sacremoses")
            self.tokenizer = AutoTokenizer.from_pretrained(model_folder)
        # Checked; without the file, the project's decoding settings, not transformers' 20-token greedy search.
        self.generation_config = folder_generation_config(model_folder, self.config)
        device_type, _, index = str(device).partition(":")
        self.translator = ctranslate2.Translator(
            str(export_folder),
            device=device_type,
            device_index=int(index or 0),
            compute_type="default",  # what the weights were exported in (int8: int8 matrix products)
            inter_threads=1,
            intra_threads=threads or torch.get_num_threads(),  # as many as PyTorch uses, unless told
        )

    def translate(
        self,
        sentences: Sequence[str],
        direction: str = "es-en",
        *,
        num_beams: int | None = None,
        batch_size: int = 32,
        max_new_tokens: int | None = None,
        length_penalty: float | None = None,
        labels: Sequence[str] | None = None,
        keep_spans: bool = False,
    ) -> list[str]:
        """Translate `sentences` in `direction`; the arguments and result of `hf_vaswani.inference.translate`."""
        from .placeholders import check_keep_spans

        check_keep_spans(keep_spans)
        if keep_spans:  # numbers, URLs, e-mail addresses and rare names through placeholders
            from .placeholders import translate_keeping_spans, vocabulary_of
            from .source_checks import cut_to_model_limit

            return translate_keeping_spans(
                lambda texts, names: self.translate(
                    texts,
                    direction,
                    num_beams=num_beams,
                    batch_size=batch_size,
                    max_new_tokens=max_new_tokens,
                    length_penalty=length_penalty,
                    labels=names,
                ),
                sentences,
                vocabulary_of(self.tokenizer),
                labels,
                cut=lambda texts, names: cut_to_model_limit(self, self.tokenizer, texts, direction, names),
            )
        ids = self.translate_ids(
            sentences,
            direction,
            num_beams=num_beams,
            batch_size=batch_size,
            max_new_tokens=max_new_tokens,
            length_penalty=length_penalty,
            labels=labels,
        )
        return [text.strip() for text in self.tokenizer.batch_decode(ids, skip_special_tokens=True)]

    def translate_ids(
        self,
        sentences: Sequence[str],
        direction: str = "es-en",
        *,
        num_beams: int | None = None,
        batch_size: int = 32,
        max_new_tokens: int | None = None,
        length_penalty: float | None = None,
        labels: Sequence[str] | None = None,
    ) -> list[list[int]]:
        """As `translate`, but the chosen output of each sentence as token ids, without the start and end tokens
        (what a teacher-forced pass for attention weights takes)."""
        from .limits import check_generation_settings
        from .source_checks import check_not_one_text

        check_not_one_text(sentences, "sentences", "translator.translate(['el gato negro'])")
        check_generation_settings(self, length_penalty=length_penalty)
        sources = self._sources(sentences, direction, labels, batch_size, num_beams, max_new_tokens)
        options = self._decoding_options(num_beams, max_new_tokens, length_penalty)
        order = sorted(range(len(sources)), key=lambda i: len(sources[i]), reverse=True)
        results: list[list[int]] = [[] for _ in sources]
        for start in range(0, len(order), batch_size):
            indices = order[start : start + batch_size]
            outputs = self.translator.translate_batch([sources[i] for i in indices], **options)
            for i, output in zip(indices, outputs, strict=True):
                results[i] = self.tokenizer.convert_tokens_to_ids(output.hypotheses[0])
        return results

    def _sources(
        self,
        sentences: Sequence[str],
        direction: str,
        labels: Sequence[str] | None,
        batch_size: int,
        num_beams: int | None,
        max_new_tokens: int | None,
    ) -> list[list[str]]:
        """The source token strings (``>>lang<<`` ... ``</s>``), checked and cut as the PyTorch path does."""
        from .source_checks import fitted_sources

        sentences = list(sentences)
        labels = list(labels) if labels is not None else [f"sentence {i}" for i in range(1, len(sentences) + 1)]
        settings = dict(num_beams=num_beams, batch_size=batch_size, max_new_tokens=max_new_tokens)
        texts = self._checked_texts(sentences, direction, labels, **settings)
        _, limit = fitted_sources(self, self.tokenizer, texts, labels)
        ids = self.tokenizer(texts, truncation=True, max_length=limit, verbose=False)["input_ids"]
        return [self.tokenizer.convert_ids_to_tokens(row) for row in ids]

    def _checked_texts(self, sentences: list[str], direction: str, labels: list[str], **settings: Any) -> list[str]:
        """The texts to encode, once every input and setting is checked: each sentence after its language token."""
        from .source_checks import checked_sources

        return checked_sources(self, self.tokenizer, sentences, direction, labels, **settings)

    def _decoding_options(
        self, num_beams: int | None, max_new_tokens: int | None, length_penalty: float | None
    ) -> dict[str, Any]:
        """`generate()`'s beam search as CTranslate2 options: the generation config's settings, hypotheses scored
        by log-probability / length ** length_penalty, and the search stops once `num_beams` hypotheses are
        finished, which is `generate()` with ``early_stopping=True`` (the shipped model's setting; with ``False``,
        `generate()` may search on while a running beam could still win, and rarely picks another output)."""
        generation = self.generation_config

        def setting(name: str) -> Any:  # transformers leaves unset fields None and applies its defaults in generate()
            value = getattr(generation, name, None)
            return GENERATE_DEFAULTS[name] if value is None else value

        if max_new_tokens is None:
            # generate()'s max_length counts the decoder start token.
            max_new_tokens = generation.max_new_tokens or max(1, setting("max_length") - 1)
        max_new_tokens = min(max_new_tokens, self.config.max_position_embeddings - 1)
        eos = self.config.eos_token_id
        return {
            "beam_size": num_beams or setting("num_beams"),
            "length_penalty": float(length_penalty if length_penalty is not None else setting("length_penalty")),
            "patience": 1.0,
            "max_decoding_length": max_new_tokens,
            "min_decoding_length": max(0, setting("min_length") - 1),  # min_length counts the start token
            "max_input_length": 0,  # the sources are already cut to the model's limit
            "end_token": self.tokenizer.convert_ids_to_tokens(eos if isinstance(eos, list) else [eos]),
            # the generation config's guards against loops, as generate() applies them
            "no_repeat_ngram_size": int(setting("no_repeat_ngram_size")),
            "repetition_penalty": float(setting("repetition_penalty")),
        }


class MarianCTranslate2Translator(CTranslate2Translator):
    """A Marian (OPUS-MT) model converted by CTranslate2's `TransformersConverter`; `translate` and `translate_ids`
    as `CTranslate2Translator`'s. A one-direction model translates its own direction whatever `direction` says (the
    caller chose the model for it); a multilingual one (``>>es<<`` tokens in its vocabulary) gets the target's
    token first, as OPUS-MT models ask."""

    def _checked_texts(self, sentences: list[str], direction: str, labels: list[str], **settings: Any) -> list[str]:
        """The texts to encode, once every input and setting is checked: each sentence, after the target's token
        for a multilingual model."""
        from .limits import check_generation_settings
        from .source_checks import check_known_characters

        if len(labels) != len(sentences):
            raise ValueError(f"Got {len(labels)} labels for {len(sentences)} sentences.")
        if not sentences:
            raise ValueError("No sentence to translate: the input is empty.")
        batch_size = settings["batch_size"]
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}.")
        check_generation_settings(self, num_beams=settings["num_beams"], max_new_tokens=settings["max_new_tokens"])
        for label, sentence in zip(labels, sentences, strict=True):
            if not isinstance(sentence, str) or not sentence.strip():
                raise ValueError(f"{label[:1].upper()}{label[1:]} is empty or not a text: nothing to translate.")
        check_known_characters(self.tokenizer, sentences, labels)
        token = self._target_token(direction)
        return [f"{token} {sentence.strip()}" if token else sentence.strip() for sentence in sentences]

    def _decoding_options(
        self, num_beams: int | None, max_new_tokens: int | None, length_penalty: float | None
    ) -> dict[str, Any]:
        """`CTranslate2Translator`'s options; with ``forced_eos_token_id`` (OPUS-MT's generation configs),
        `generate()` spends its last step on ``</s>``, so CTranslate2 decodes one token less."""
        options = super()._decoding_options(num_beams, max_new_tokens, length_penalty)
        if getattr(self.generation_config, "forced_eos_token_id", None) is not None:
            options["max_decoding_length"] = max(1, options["max_decoding_length"] - 1)
        return options

    def _target_token(self, direction: str) -> str:
        """``>>yy<<`` for a multilingual model asked for "xx-yy", "" for a one-direction model (no such tokens)."""
        from .languages import LANGUAGE_TOKEN_PATTERN

        known = sorted(token for token in self.tokenizer.get_vocab() if LANGUAGE_TOKEN_PATTERN.fullmatch(token))
        if not known:
            return ""
        target = str(direction).rpartition("-")[2]
        if f">>{target}<<" not in known:
            shown = ", ".join(known[:12]) + (" ..." if len(known) > 12 else "")
            raise ValueError(f"The model has no target-language token >>{target}<< for {direction!r}; it has {shown}.")
        return f">>{target}<<"


def load_ctranslate2(
    model: str | os.PathLike[str] | None = None,
    *,
    quantization: str | None = None,
    device: str | None = None,
    threads: int | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> CTranslate2Translator:
    """A `CTranslate2Translator` for `model` (a folder or Hub id; `None`: the shipped checkpoint), exported on first
    use (`ensure_ctranslate2_export`); a `MarianCTranslate2Translator` for a Marian (OPUS-MT) model.

    Args:
        quantization: the weight type; default `default_quantization(device)` (int8 on a CPU).
        device: ``"cpu"`` (default), ``"cuda"`` or ``"cuda:1"``.
        threads: CPU threads for one translation (default: as many as PyTorch uses, `torch.get_num_threads()`).
        cache_dir: where the export is kept (see `ensure_ctranslate2_export`).
    """
    device = device or "cpu"
    quantization = quantization or default_quantization(device)
    folder = _model_folder(model)
    export = ensure_ctranslate2_export(folder, quantization, cache_dir=cache_dir)
    kind = MarianCTranslate2Translator if ctranslate2_model_type(folder) == "marian" else CTranslate2Translator
    return kind(folder, export, quantization, device=device, threads=threads)


def load_ctranslate2_or_none(
    model: str | os.PathLike[str] | None = None,
    *,
    quantization: str | None = None,
    device: str | None = None,
    threads: int | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> CTranslate2Translator | None:
    """`load_ctranslate2` for ``--backend auto``: None, with a `CTranslate2CacheWarning` saying that PyTorch
    translates instead, when the export cannot be written into the cache (`CTranslate2CacheError`)."""
    try:
        return load_ctranslate2(model, quantization=quantization, device=device, threads=threads, cache_dir=cache_dir)
    except CTranslate2CacheError as error:
        warnings.warn(
            f"{error.problem}: translating with PyTorch (set HF_VASWANI_CACHE to a writable folder for CTranslate2)",
            CTranslate2CacheWarning,
            stacklevel=2,
        )
        return None


def translate_with_ctranslate2(
    model: str | os.PathLike[str] | None,
    sentences: Sequence[str],
    direction: str = "es-en",
    *,
    quantization: str | None = None,
    device: str | None = None,
    threads: int | None = None,
    **options: Any,
) -> list[str]:
    """`load_ctranslate2(model, ...).translate(sentences, direction, **options)` in one call; `options` are those
    of `hf_vaswani.inference.translate` (`num_beams`, `batch_size`, `max_new_tokens`, `length_penalty`, `labels`)."""
    translator = load_ctranslate2(model, quantization=quantization, device=device, threads=threads)
    return translator.translate(sentences, direction, **options)
