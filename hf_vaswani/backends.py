"""Translating through CTranslate2: the fast backend of ``translate``, ``evaluate`` and the demo.

CTranslate2 (the ``[fast]`` extra) runs our model from a folder exported by `hf_vaswani.export.ctranslate2`, in int8
on a CPU by default. The export is made once and kept in the user cache (``$HF_VASWANI_CACHE/ctranslate2``, default
``~/.cache/hf_vaswani/ctranslate2``), in a folder named after a hash of the model's weights, config and tokenizer
files (``3f2a...-ctranslate2-int8/``), so that it is made again when they change. The model folder is only read: it
may be read-only, shared or a Hub cache snapshot.

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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .paths import default_model_path, looks_like_local_path

__all__ = [
    "BACKENDS",
    "BACKEND_CHOICES",
    "CTranslate2Translator",
    "ctranslate2_available",
    "default_quantization",
    "ensure_ctranslate2_export",
    "load_ctranslate2",
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
#: Written into each cached export: what it was made from.
STAMP = "hf_vaswani_export.json"
#: Changes when the export itself changes, so that older cached exports are made again.
EXPORT_VERSION = 1

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
        The CTranslate2 model folder.
    """
    from .export.ctranslate2 import QUANTIZATIONS

    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization must be one of {', '.join(QUANTIZATIONS)}, got {quantization!r}.")
    folder = _model_folder(model)
    fingerprint = _fingerprint(folder, quantization)
    target = _export_folder(folder, quantization, fingerprint, cache_dir)
    if _stamp(target).get("fingerprint") == fingerprint:
        return target
    _export_into(folder, target, quantization, fingerprint)
    return target


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


def _fingerprint(folder: Path, quantization: str) -> str:
    """A hash of what the export is made from: the weights, config and tokenizer files, and the export settings."""
    import ctranslate2

    digest = hashlib.sha256(f"{EXPORT_VERSION}|{quantization}|{ctranslate2.__version__}".encode())
    files = _weight_files(folder) + [folder / name for name in FINGERPRINTED if (folder / name).is_file()]
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
        return json.loads((target / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _export_into(folder: Path, target: Path, quantization: str, fingerprint: str) -> None:
    """Export into a fresh folder beside `target`, then swap it in: a reader never sees half an export."""
    from .export.ctranslate2 import export_ctranslate2

    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        export_ctranslate2(folder, staging, quantization=quantization, force=True)
        stamp = {"fingerprint": fingerprint, "quantization": quantization, "source": str(folder.resolve())}
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
        from transformers import AutoConfig, AutoTokenizer, GenerationConfig

        import hf_vaswani  # noqa: F401  (registers the "vaswani" config type)

        self.model_folder = model_folder
        self.export_folder = export_folder
        self.quantization = quantization
        self.device = device
        self.config = AutoConfig.from_pretrained(model_folder)
        self.tokenizer = AutoTokenizer.from_pretrained(model_folder)
        try:
            self.generation_config = GenerationConfig.from_pretrained(model_folder)
        except OSError:
            self.generation_config = GenerationConfig.from_model_config(self.config)
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
    ) -> list[str]:
        """Translate `sentences` in `direction`; the arguments and result of `hf_vaswani.inference.translate`."""
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
        from .source_checks import checked_sources, fitted_sources

        sentences = list(sentences)
        labels = list(labels) if labels is not None else [f"sentence {i}" for i in range(1, len(sentences) + 1)]
        settings = dict(num_beams=num_beams, batch_size=batch_size, max_new_tokens=max_new_tokens)
        texts = checked_sources(self, self.tokenizer, sentences, direction, labels, **settings)
        _, limit = fitted_sources(self, self.tokenizer, texts, labels)
        ids = self.tokenizer(texts, truncation=True, max_length=limit, verbose=False)["input_ids"]
        return [self.tokenizer.convert_ids_to_tokens(row) for row in ids]

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


def load_ctranslate2(
    model: str | os.PathLike[str] | None = None,
    *,
    quantization: str | None = None,
    device: str | None = None,
    threads: int | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> CTranslate2Translator:
    """A `CTranslate2Translator` for `model` (a folder or Hub id; `None`: the shipped checkpoint), exported on first
    use (`ensure_ctranslate2_export`).

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
    return CTranslate2Translator(folder, export, quantization, device=device, threads=threads)


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
