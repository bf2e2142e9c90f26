"""The files the demo offers for download: each attention record as JSON, in a folder of its own.

`RecordFiles` writes them atomically (`hf_vaswani.outputs.write_text`) into one temporary folder, prunes those older
than `FILE_TTL_SECONDS` whenever it writes another, and removes the whole folder on `close` (or, failing that, when
the interpreter exits).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from hf_vaswani.outputs import write_text

from .settings import FILE_TTL_SECONDS

__all__ = ["RecordFiles"]


class RecordFiles:
    """The session's downloadable records.

    Attributes:
        folder: where they are written (a fresh ``vaswani-demo-*`` temporary folder, removed by `close`).
        closed: True once `close` has run; `save` then writes nothing.
    """

    def __init__(self) -> None:
        # TemporaryDirectory also removes the folder when the interpreter exits, for an app nobody closed.
        self._folder = tempfile.TemporaryDirectory(prefix="vaswani-demo-")
        self.folder = Path(self._folder.name)
        self.closed = False

    def save(self, record: Any) -> str | None:
        """Write the record as JSON to a fresh file; returns its path (None for no record, or once closed)."""
        if record is None or self.closed:
            return None
        self._prune()
        # A folder per file: every download keeps its plain name, attention-es-en.json, without clashing.
        folder = Path(tempfile.mkdtemp(dir=self.folder))
        name = f"attention-{record.direction or 'record'}.json"
        return str(write_text(folder / name, record.to_json()))

    def _prune(self) -> None:
        cutoff = time.time() - FILE_TTL_SECONDS
        for folder in self.folder.glob("*"):
            try:
                if folder.stat().st_mtime < cutoff:
                    shutil.rmtree(folder, ignore_errors=True)
            except OSError:
                pass  # removed meanwhile by another request's pruning

    def close(self) -> None:
        """Remove the folder and every record in it."""
        self.closed = True
        self._folder.cleanup()
