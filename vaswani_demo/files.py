"""The files the demo offers for download: each session's attention record as JSON, one file per session.

`RecordFiles` writes a session's record (`save`) to the one file of that session, overwritten by its next record
(atomically, `hf_vaswani.outputs.write_text`), in a folder of its own inside one temporary folder. A session's file
goes when the session does (`forget`, when its page is closed), when more than `max_sessions` sessions have files
(the one used longest ago goes first: the same cap as the sessions whose state Gradio keeps,
`settings.MAX_SESSIONS`), or when it is older than `FILE_TTL_SECONDS`; `close` removes the whole folder (as does
the interpreter's exit, for an app nobody closed). So the temporary files stay bounded, however many sessions
call.

The folder is made inside the one Gradio serves its files from (``GRADIO_TEMP_DIR``, by default ``gradio`` in the
system's temporary folder), so that Gradio hands a record out as it is instead of copying each one into its cache.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from hf_vaswani.outputs import write_text

from .settings import FILE_TTL_SECONDS, MAX_SESSIONS

__all__ = ["RecordFiles", "served_files_folder"]

#: The session of a record saved without one (a caller outside Gradio): it has one file too.
NO_SESSION = ""


def served_files_folder() -> Path:
    """The folder Gradio serves its files from (its cache, `gradio.utils.get_upload_folder`); the system's temporary
    folder when Gradio is not installed."""
    try:
        from gradio.utils import get_upload_folder
    except ImportError:
        return Path(tempfile.gettempdir())
    return Path(get_upload_folder())


class RecordFiles:
    """The sessions' downloadable records, one file per session.

    Args:
        parent: where to make the folder (default: `served_files_folder`).
        max_sessions: the most sessions that keep a file.

    Attributes:
        folder: where they are written (a fresh ``vaswani-demo-*`` temporary folder, removed by `close`).
        closed: True once `close` has run; `save` then writes nothing.
    """

    def __init__(self, parent: str | os.PathLike[str] | None = None, max_sessions: int = MAX_SESSIONS) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}.")
        parent = Path(parent) if parent is not None else served_files_folder()
        parent.mkdir(parents=True, exist_ok=True)
        # TemporaryDirectory also removes the folder when the interpreter exits, for an app nobody closed.
        self._folder = tempfile.TemporaryDirectory(prefix="vaswani-demo-", dir=parent)
        self.folder = Path(self._folder.name)
        self.max_sessions = max_sessions
        self.closed = False
        self._sessions: OrderedDict[str, Path] = OrderedDict()  # session -> its folder, the one used last at the end
        self._lock = threading.Lock()  # Gradio's worker threads save at the same time

    def save(self, record: Any, session: str | None = None) -> str | None:
        """Write the record as JSON to `session`'s file (replacing the session's previous one); returns its path
        (None for no record, or once closed)."""
        if record is None or self.closed:
            return None
        session = session or NO_SESSION
        with self._lock:
            self._prune()
            folder = self._session_folder(session)
            # One file per session, with a plain name, attention-es-en.json: a record of the other direction
            # replaces it too.
            name = f"attention-{record.direction or 'record'}.json"
            for old in folder.glob("*.json"):
                if old.name != name:
                    old.unlink(missing_ok=True)
            return str(write_text(folder / name, record.to_json()))

    def forget(self, session: str | None) -> None:
        """Remove `session`'s file (the session has ended)."""
        with self._lock:
            folder = self._sessions.pop(session or NO_SESSION, None)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    @property
    def sessions(self) -> int:
        """How many sessions have a file."""
        return len(self._sessions)

    def _session_folder(self, session: str) -> Path:
        """`session`'s folder (made on first use, marked as used last), dropping the session used longest ago when
        there are more than `max_sessions`. The name is a digest: a session hash comes from the client."""
        folder = self._sessions.pop(session, None)
        if folder is None:
            folder = self.folder / hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        folder.mkdir(exist_ok=True)
        self._sessions[session] = folder
        while len(self._sessions) > self.max_sessions:
            _, oldest = self._sessions.popitem(last=False)
            shutil.rmtree(oldest, ignore_errors=True)
        return folder

    def _prune(self) -> None:
        """Drop the sessions whose file is older than `FILE_TTL_SECONDS`."""
        cutoff = time.time() - FILE_TTL_SECONDS
        for session, folder in list(self._sessions.items()):
            try:
                stale = folder.stat().st_mtime < cutoff
            except OSError:
                stale = True  # removed meanwhile
            if stale:
                del self._sessions[session]
                shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        """Remove the folder and every record in it."""
        self.closed = True
        with self._lock:
            self._sessions.clear()
        self._folder.cleanup()
