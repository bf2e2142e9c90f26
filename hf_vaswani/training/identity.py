"""Whether a resumed run is the run its checkpoints come from: the same tokenizer and the same data.

A checkpoint's embeddings mean the tokens of the tokenizer it was trained with: resuming with another one (a
``RUN/tokenizer/`` deleted and trained again, a ``tokenizer.path`` that changed) gives every id another token,
and the run would go on silently with scrambled embeddings. Resuming with other data (another ``data.path``, or
the same path with other content) draws other splits and batches; other split settings (``data.validation_size``,
``test_size``, ``split_seed``) would train on pairs the run held out. Both are refused before any work, in one
sentence that says what differs and what to do (`RunMismatchError`).

The tokenizer is compared with the one the checkpoint holds (Trainer saves ``tokenizer.json`` in every
checkpoint), else with the run's record; the data with the run's record. The record, ``RUN/run_identity.json``,
is written when a run starts: the tokenizer's fingerprint; for a local file of pairs, its path, size and SHA-256
(the same content at another path is the same data), for a Hub dataset, its id; and the split settings. A run
started by a version without the record (or without the split settings in it) is checked from the next start on.

The tokenizer's fingerprint hashes what decides the ids of a text (the vocabulary with its scores, the
normalizer, the pre-tokenizer, the post-processor, the decoder and the added tokens), not the padding and
truncation settings that a save records as well, so the copy Trainer saves into a checkpoint has the
fingerprint of the tokenizer it copies.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "RUN_IDENTITY",
    "RUN_TOKENIZER",
    "SPLIT_SETTINGS",
    "RunMismatchError",
    "check_reused_tokenizer",
    "check_same_run",
    "data_fingerprint",
    "split_settings",
    "tokenizer_file_fingerprint",
    "tokenizer_fingerprint",
    "unreadable_tokenizer_file",
    "write_run_identity",
]

#: The record of what a run was started with, in the run folder.
RUN_IDENTITY = "run_identity.json"
#: What messages call ``RUN/tokenizer/``, the tokenizer a run trains once and keeps.
RUN_TOKENIZER = "the run's tokenizer folder"
#: The sections of ``tokenizer.json`` that decide the ids of a text, and what a message calls each.
_TOKENIZER_SECTIONS = {
    "model": "vocabulary",
    "added_tokens": "added tokens",
    "normalizer": "normalizer",
    "pre_tokenizer": "pre-tokenizer",
    "post_processor": "post-processor",
    "decoder": "decoder",
}
#: The ``data`` settings that draw the splits: another value trains on pairs the run held out, and the reverse.
SPLIT_SETTINGS = ("validation_size", "test_size", "split_seed")
#: The files of a saved tokenizer that loading reads, when present.
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json")


class RunMismatchError(ValueError):
    """Resuming would continue a run with another tokenizer or other data than its checkpoints were trained on."""


# --------------------------------------------------------------------------------------------- fingerprints


def _section_digests(serialized: dict[str, Any]) -> dict[str, str]:
    def digest(value: Any) -> str:
        if isinstance(value, list):  # added tokens: only their ids and texts decide the ids of a text
            value = [[t.get("id"), t.get("content")] if isinstance(t, dict) else t for t in value]
        return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()

    return {name: digest(serialized.get(name)) for name in _TOKENIZER_SECTIONS}


def tokenizer_fingerprint(tokenizer: Any) -> dict[str, str]:
    """The fingerprint of a loaded fast tokenizer: a SHA-256 of each section of its ``tokenizer.json`` that decides
    the ids of a text."""
    return _section_digests(json.loads(tokenizer.backend_tokenizer.to_str()))


def tokenizer_file_fingerprint(path: Path) -> dict[str, str]:
    """`tokenizer_fingerprint` of a saved ``tokenizer.json``.

    Raises:
        ValueError: the file is not readable JSON, naming it.
    """
    try:
        serialized = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"{str(path)!r} is unreadable ({' '.join(str(error).split())})") from None
    if not isinstance(serialized, dict):
        raise ValueError(f"{str(path)!r} is not a tokenizer (a JSON {type(serialized).__name__})")
    return _section_digests(serialized)


def unreadable_tokenizer_file(folder: Path) -> str | None:
    """Which JSON file of the saved tokenizer in `folder` is damaged (cut short by a full disk, say) and how,
    or None when every one that is there parses."""
    for name in _TOKENIZER_FILES:
        path = folder / name
        if not path.is_file():
            continue
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            return f"{str(path)!r} is damaged ({' '.join(str(error).split())})"
    return None


def data_fingerprint(data_path: str | os.PathLike[str]) -> dict[str, Any]:
    """What identifies the data of `data_path`: a local file's absolute path, size and SHA-256; anything else is
    a Hub dataset, identified by its id (its content is not at hand)."""
    path = Path(data_path)
    if not path.is_file():
        return {"hub": str(data_path)}
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return {"path": str(path.resolve()), "size": path.stat().st_size, "sha256": digest.hexdigest()}


# --------------------------------------------------------------------------------------------- the record


def _read_identity(output_dir: Path) -> dict[str, Any]:
    path = output_dir / RUN_IDENTITY
    if not path.is_file():
        return {}
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise RunMismatchError(
            f"{str(path)!r} is damaged ({' '.join(str(error).split())}): it records the tokenizer and data the run "
            "was started with. Remove it to resume without that check, or start a new run in another "
            "training.output_dir."
        ) from None
    return record if isinstance(record, dict) else {}


def split_settings(data: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a recipe's ``data`` section that decide which pairs are trained on and which held out."""
    return {name: data.get(name) for name in SPLIT_SETTINGS}


def write_run_identity(
    output_dir: Path, tokenizer: Any, data_path: str | os.PathLike[str], splits: Mapping[str, Any] | None = None
) -> Path:
    """Record in ``output_dir/run_identity.json`` the tokenizer, the data and the split settings (`split_settings`)
    the run starts with (written whole, through a temporary file renamed into place)."""
    from ..outputs import write_text

    record = {"tokenizer": tokenizer_fingerprint(tokenizer), "data": data_fingerprint(data_path)}
    if splits is not None:
        record["splits"] = dict(splits)
    return write_text(output_dir / RUN_IDENTITY, json.dumps(record, indent=2) + "\n")


# --------------------------------------------------------------------------------------------- the checks


def _differences(expected: dict[str, str], found: dict[str, str]) -> list[str]:
    return [label for name, label in _TOKENIZER_SECTIONS.items() if expected.get(name) != found.get(name)]


def _check_tokenizer(checkpoint: Path, tokenizer_folder: Path, what: str, recorded: dict[str, str] | None) -> None:
    """Refuse a tokenizer folder that is missing, damaged, or not the one `checkpoint` was trained with."""
    saved = checkpoint / "tokenizer.json"
    try:
        expected = tokenizer_file_fingerprint(saved) if saved.is_file() else recorded
    except ValueError as error:
        raise RunMismatchError(
            f"cannot resume from {checkpoint}: {error}, so the tokenizer it was trained with is unknown: restore "
            "that file from an earlier checkpoint of the run, or remove the checkpoint."
        ) from None
    if not expected:
        return  # a checkpoint of an older version without a tokenizer, and no record: nothing to compare with
    restore = (
        f"restore it (copy {checkpoint / 'tokenizer.json'} and tokenizer_config.json into {str(tokenizer_folder)!r})"
        if saved.is_file()
        else "restore it"
    )
    new_run = "or start a new run in another training.output_dir"
    if not (tokenizer_folder / "tokenizer.json").is_file():
        if what != RUN_TOKENIZER:
            return  # a folder of the user's without tokenizer.json: loading it says what is wrong with it
        raise RunMismatchError(
            f"cannot resume from {checkpoint}: {what} {str(tokenizer_folder)!r} has no tokenizer.json, and a new "
            f"tokenizer would give the checkpoint's embeddings other tokens: {restore}, {new_run}."
        )
    try:
        found = tokenizer_file_fingerprint(tokenizer_folder / "tokenizer.json")
    except ValueError as error:
        raise RunMismatchError(f"cannot resume from {checkpoint}: {error}: {restore}, {new_run}.") from None
    differences = _differences(expected, found)
    if differences:
        raise RunMismatchError(
            f"cannot resume from {checkpoint}: the tokenizer of {what} {str(tokenizer_folder)!r} is not the one "
            f"{checkpoint.name} was trained with (its {', '.join(differences)} differ), so the checkpoint's "
            f"embeddings would mean other tokens: {restore}, {new_run}."
        )


def _shown_data(record: dict[str, Any]) -> str:
    if "hub" in record:
        return f"the Hub dataset {record['hub']!r}"
    return f"{record.get('path')!r} ({record.get('size', 0):,} bytes, SHA-256 {str(record.get('sha256'))[:12]})"


def _same_data(found: dict[str, Any], recorded: dict[str, Any]) -> bool:
    """Whether `data_fingerprint` `found` is the `recorded` data: a file by its content, a Hub dataset by its id."""
    return found.get("sha256") == recorded.get("sha256") if "sha256" in found else found == recorded


def _changed_splits(recorded: dict[str, Any], splits: Mapping[str, Any]) -> list[str]:
    """The split settings whose value in `splits` is not the `recorded` one."""
    return [name for name in SPLIT_SETTINGS if name in recorded and recorded[name] != splits.get(name)]


def _check_data(checkpoint: Path, recorded: dict[str, Any] | None, data_path: str) -> None:
    """Refuse data whose content (a local file) or id (a Hub dataset) is not what the run was started with."""
    if not isinstance(recorded, dict) or not recorded:
        return
    advice = (
        f"point data.path at that data, or start a new run in another training.output_dir (with "
        f"training.init_from={checkpoint} to start from these weights)"
    )
    if "sha256" in recorded and not Path(data_path).is_file():
        raise RunMismatchError(
            f"cannot resume from {checkpoint}: data.path {str(data_path)!r} is not a file, and the run was started "
            f"with {_shown_data(recorded)}: {advice}."
        )
    found = data_fingerprint(data_path)
    same = _same_data(found, recorded)
    if not same:
        raise RunMismatchError(
            f"cannot resume from {checkpoint}: data.path is {_shown_data(found)}, not the data the run was started "
            f"with, {_shown_data(recorded)}, so the splits and batches would differ: {advice}."
        )


def _check_splits(checkpoint: Path, recorded: Any, splits: Mapping[str, Any] | None) -> None:
    """Refuse split settings other than those the run was started with: other pairs would be held out."""
    if not isinstance(recorded, dict) or splits is None:
        return
    changed = _changed_splits(recorded, splits)
    if changed:
        shown = ", ".join(f"data.{name} {splits.get(name)!r} (the run's: {recorded[name]!r})" for name in changed)
        raise RunMismatchError(
            f"cannot resume from {checkpoint}: {shown}: the run would train on pairs it held out for validation "
            "and test. Set them back, or start a new run in another training.output_dir (with "
            f"training.init_from={checkpoint} to start from these weights)."
        )


def check_same_run(
    output_dir: Path,
    checkpoint: Path,
    tokenizer_folder: Path,
    tokenizer_what: str,
    data_path: str,
    splits: Mapping[str, Any] | None = None,
) -> None:
    """Refuse to resume from `checkpoint` of the run in `output_dir` with another tokenizer, other data or other
    split settings (`split_settings` of the recipe, when given).

    Args:
        tokenizer_folder: where the run takes its tokenizer from (``RUN/tokenizer/``, ``tokenizer.path`` or
            ``training.init_from``); `tokenizer_what` names it in messages.
        data_path: the run's ``data.path``.

    Raises:
        RunMismatchError: one sentence naming what differs and what to do.
    """
    record = _read_identity(output_dir)
    _check_tokenizer(checkpoint, tokenizer_folder, tokenizer_what, record.get("tokenizer"))
    _check_data(checkpoint, record.get("data"), data_path)
    _check_splits(checkpoint, record.get("splits"), splits)


def check_reused_tokenizer(output_dir: Path, data_path: str, splits: Mapping[str, Any]) -> None:
    """Refuse a run that starts without a checkpoint in `output_dir` but finds ``RUN/tokenizer/`` from an earlier
    start there (it would be reused) when that start recorded other data or other split settings: the vocabulary
    was fitted to other sentences, and the held-out pairs may be among those it saw. An earlier start without a
    record (an older version) is not checked.

    Raises:
        RunMismatchError: one sentence naming what differs and what to do.
    """
    folder = output_dir / "tokenizer"
    record = _read_identity(output_dir)
    if not (folder / "tokenizer.json").is_file() or not record:
        return
    differences = []
    recorded_data = record.get("data")
    if isinstance(recorded_data, dict) and recorded_data:
        found = data_fingerprint(data_path)
        if not _same_data(found, recorded_data):
            differences.append(f"data.path is {_shown_data(found)}, not {_shown_data(recorded_data)}")
    recorded_splits = record.get("splits")
    if isinstance(recorded_splits, dict):
        differences += [
            f"data.{name} is {splits.get(name)!r}, not {recorded_splits[name]!r}"
            for name in _changed_splits(recorded_splits, splits)
        ]
    if differences:
        raise RunMismatchError(
            f"{str(folder)!r} was trained by an earlier start of a run in {str(output_dir)!r} on other pairs "
            f"({'; '.join(differences)}), and a new run there would reuse it: remove {str(folder)!r} and "
            f"{str(output_dir / RUN_IDENTITY)!r} to train a new one, or start in another training.output_dir."
        )
