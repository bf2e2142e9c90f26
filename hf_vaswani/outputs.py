"""How every command writes its files and folders, so that nothing is lost.

A command first declares what it will write and what it reads, in an `OutputPlan`, and checks the plan before it
does any work: every output can be written (its folder exists and accepts a new entry of that name), no output is
one of the inputs (or, for a folder, holds one), no output lies inside an input folder (a model folder is an input:
it may be read-only, shared or a Hub cache snapshot), no two outputs share a path, and an output folder that is not
empty is refused unless the command was asked to replace it (``--overwrite``). Then it writes each output into a
temporary sibling (``tmp-NAME.PID-HOST.XXXXXXXX`` next to it) and renames it into place once everything is
written: a failure part-way (a full disk, a kill) leaves the previous file or folder as it was, and a replaced
folder is replaced whole, never merged with the files it had.

A run killed outright (SIGKILL, a power cut) cannot remove its temporary siblings; the next run that writes the
same output does (`remove_stale_staging`), and only those that are surely garbage: named by this module's pattern
for that output (``tmp-NAME.PID-HOST.XXXXXXXX``, or ``tmp-NAME.old.PID-HOST.XXXXXXXX`` for a replaced folder put
aside), made on this machine (HOST) by a process (PID) that no longer runs. Anything else next to the output (a
live run's staging, another machine's on a shared disk, any other file) is left alone.

    plan = OutputPlan(inputs=[data_file])
    hypotheses = plan.file(args.output, "hypotheses file")
    report = plan.folder(args.out, "report folder", overwrite=args.overwrite)
    plan.check()                      # before loading a model: one clear error, nothing written
    ...                               # the work
    with plan.writing() as staged:    # all published together at the end of the block, or none
        staged(hypotheses).write_text(text, encoding="utf-8")
        save_figure(figure, staged(report) / "heatmap.png")

`write_text` / `write_bytes` write one file the same way; `publish_dir` is the rename step for folders (the
training checkpoints use it too). Errors are `ValueError` or `OSError` with a message naming the path, which the
``hf-vaswani`` dispatcher reports as one line.

Long because the plan's checks, the staging folders and the publishing rename are one guarantee (nothing lost
between a check and the write it allows); split, each half would have to trust the other's invariants.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import socket
import stat
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "STAGING_PREFIX",
    "Output",
    "OutputPlan",
    "StaleStagingWarning",
    "make_staging_folder",
    "publish_dir",
    "publish_file",
    "publish_into",
    "remove_stale_staging",
    "write_bytes",
    "write_text",
]

#: Temporary siblings are named ``tmp-NAME.PID-HOST.XXXXXXXX`` (NAME cut to `_NAME_KEPT` characters; PID the
#: writing process, HOST a short hash of its machine's name; XXXXXXXX `tempfile`'s random part).
STAGING_PREFIX = "tmp-"
_NAME_KEPT = 80
#: What follows ``tmp-NAME.`` in a temporary sibling's name: the owner and `tempfile`'s random part.
_OWNED = re.compile(r"(?:old\.)?(?P<pid>\d+)-(?P<host>[0-9a-f]{6})\.[a-z0-9_]{8}")


class StaleStagingWarning(UserWarning):
    """A temporary sibling left by a killed run was removed before this run wrote the same output."""


PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class Output:
    """One file or folder a command writes: where (`path`, symbolic links resolved), what it is (for messages),
    and for a folder whether an existing non-empty one may be replaced."""

    path: Path
    what: str
    is_folder: bool
    overwrite: bool = False
    #: The output is meant to be written into an input folder (``align-eval --write-config MODEL`` updates the
    #: model's config.json): the only outputs allowed there.
    into_input: bool = False


def _absolute(path: PathLike) -> Path:
    """`path` made absolute with its symbolic links resolved (the path itself need not exist); a link that
    resolves to nothing the file system can name (``/dev/stdout`` on a pipe) stays as it is."""
    absolute = os.path.abspath(os.path.expanduser(os.fspath(path)))
    resolved = os.path.realpath(absolute)
    return Path(absolute if os.path.exists(absolute) and not os.path.exists(resolved) else resolved)


def _shown(path: Path) -> str:
    return repr(str(path))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


# --------------------------------------------------------------------------------------------- checks


def _probe_new_entry(path: Path, what: str, *, folder: bool) -> None:
    """Create `path` (absent, in an existing folder) and remove it again: proves the name can be written there."""
    try:
        if folder:
            path.mkdir()
            path.rmdir()
        else:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            path.unlink()
    except OSError as error:
        raise OSError(error.errno, f"Cannot write the {what} {_shown(path)}: {error.strerror}") from None


def _probe_folder(folder: Path, what: str, path: Path) -> None:
    """Check a temporary entry can be created in `folder` (where `path`'s temporary sibling will go)."""
    try:
        descriptor, name = tempfile.mkstemp(prefix=f".{STAGING_PREFIX}probe.", dir=folder)
    except OSError as error:
        raise OSError(
            error.errno, f"Cannot write the {what} {_shown(path)}: {error.strerror} in {_shown(folder)}"
        ) from None
    os.close(descriptor)
    os.unlink(name)


def _check_file(output: Output) -> None:
    path, what = output.path, output.what
    if path.is_dir():
        raise IsADirectoryError(f"The {what} {_shown(path)} is a folder, not a file.")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"No folder {_shown(path.parent)} to write the {what} {path.name!r} into.")
    if not path.exists():
        _probe_new_entry(path, what, folder=False)
    elif path.is_file():
        _probe_folder(path.parent, what, path)
    elif not os.access(path, os.W_OK):  # a device or pipe (/dev/stdout), written in place
        raise PermissionError(f"Cannot write the {what} {_shown(path)}: permission denied.")


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _refuse_working_folders(output: Output) -> None:
    """An output that is the current folder (an empty path or "." names it), a folder above it, the file system's
    root or the home folder is refused whatever else is asked: replacing it whole would delete the user's files."""
    path, here = output.path, Path(_absolute(os.getcwd()))
    why = None
    if path == here:
        why = "the current folder (an empty path or '.' names it)"
    elif _inside(here, path):
        why = "a folder above the current one"
    elif path == Path(path.anchor):
        why = "the root of the file system"
    elif path == _absolute(Path.home()):
        why = "your home folder"
    if why is not None:
        raise ValueError(
            f"The {output.what} {_shown(path)} is {why}: writing it would replace everything in it. Name a new "
            "folder or file instead."
        )


def _check_folder(output: Output) -> None:
    path, what = output.path, output.what
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"The {what} {_shown(path)} is a file, not a folder.")
    if path.is_dir():
        if not output.overwrite and any(path.iterdir()):
            raise FileExistsError(
                f"The {what} {_shown(path)} is not empty: choose a new folder, or pass --overwrite to replace "
                "it whole (its files are deleted once the new ones are written)."
            )
        _probe_folder(path.parent, what, path)
        return
    existing = _nearest_existing(path.parent)
    if not existing.is_dir():
        raise NotADirectoryError(f"Cannot create the {what} {_shown(path)}: {_shown(existing)} is a file.")
    if existing == path.parent:
        _probe_new_entry(path, what, folder=True)
    else:  # the missing parents are created when the folder is written
        _probe_folder(existing, what, path)


# --------------------------------------------------------------------------------------------- the plan


class OutputPlan:
    """The files and folders one command writes, and the paths it reads: checked together before any work
    (`check`), written into temporary siblings and published together (`writing`).

    Args:
        inputs: the files and folders the command reads; no output may be one of them, and no output folder
            may contain one (replacing the folder would delete it).
    """

    def __init__(self, inputs: Iterable[PathLike | None] = ()) -> None:
        self.inputs: list[Path] = []
        self.outputs: list[Output] = []
        self.add_inputs(inputs)

    def add_inputs(self, inputs: Iterable[PathLike | None]) -> None:
        """Declare more paths the command reads (None entries are ignored)."""
        self.inputs += [_absolute(path) for path in inputs if path is not None]

    def file(self, path: PathLike, what: str = "output file", *, into_input: bool = False) -> Path:
        """Declare a file to write (an existing file is replaced); returns the path to pass to ``staged()``.
        `into_input`: the file is meant to update an input folder (no other output may lie inside one)."""
        return self._add(Output(_absolute(path), what, is_folder=False, into_input=into_input))

    def folder(self, path: PathLike, what: str = "output folder", *, overwrite: bool = False) -> Path:
        """Declare a folder to write. An existing empty folder is replaced; a non-empty one only with
        `overwrite`, and then whole (none of its files remain)."""
        return self._add(Output(_absolute(path), what, is_folder=True, overwrite=overwrite))

    def _add(self, output: Output) -> Path:
        _refuse_working_folders(output)
        self.outputs.append(output)
        return output.path

    def check(self) -> None:
        """Raise `ValueError` / `OSError` naming the path when an output cannot be written as planned."""
        for index, output in enumerate(self.outputs):
            for other in self.outputs[:index]:
                self._check_pair(other, output)
        for output in self.outputs:
            self._check_against_inputs(output)
        for output in self.outputs:
            try:
                (_check_folder if output.is_folder else _check_file)(output)
            except OSError as error:
                if error.filename is None:  # ours, which names the output already
                    raise
                raise OSError(
                    error.errno, f"Cannot write the {output.what} {_shown(output.path)}: {error.strerror}"
                ) from None

    def _check_against_inputs(self, output: Output) -> None:
        for source in self.inputs:
            if source == output.path:
                raise ValueError(
                    f"The {output.what} {_shown(output.path)} is also an input of this command: writing it would "
                    "destroy the input. Choose another path."
                )
            if output.is_folder and _inside(source, output.path):
                raise ValueError(
                    f"The {output.what} {_shown(output.path)} holds the input {_shown(source)}: replacing the "
                    "folder would delete it. Choose another folder."
                )
            if not output.into_input and source in output.path.parents and source.is_dir():
                raise ValueError(
                    f"The {output.what} {_shown(output.path)} is inside the input folder {_shown(source)}: no "
                    "command writes into what it reads. Choose a path outside it."
                )

    @staticmethod
    def _check_pair(first: Output, second: Output) -> None:
        if first.path == second.path:
            raise ValueError(
                f"The {first.what} and the {second.what} are the same path {_shown(first.path)}: one would "
                "overwrite the other. Give them different paths."
            )
        for outer, inner in ((first, second), (second, first)):
            if outer.is_folder and _inside(inner.path, outer.path):
                raise ValueError(
                    f"The {inner.what} {_shown(inner.path)} is inside the {outer.what} {_shown(outer.path)}, "
                    "which is written as a whole: put it elsewhere."
                )

    @contextlib.contextmanager
    def writing(self) -> Iterator[Callable[[Path], Path]]:
        """Yield ``staged(path)``: the temporary sibling to write the declared output `path` into (a folder is
        created empty; a file's temporary path exists, empty). When the block ends without an error, every
        staged output is renamed into place; on an error all of them are removed and nothing is published."""
        staged: dict[Path, Path] = {}
        declared = {output.path: output for output in self.outputs}

        def stage(path: Path) -> Path:
            output = declared.get(_absolute(path))
            if output is None:
                raise ValueError(f"{_shown(Path(path))} is not an output of this plan.")
            if output.path not in staged:
                staged[output.path] = _make_staging(output)
            return staged[output.path]

        try:
            yield stage
        except OSError as error:  # a full disk, say: name the outputs, not their temporary siblings
            for temporary in staged.values():
                _remove(temporary)
            raise _unchanged(error, staged) from error
        except BaseException:
            for temporary in staged.values():
                _remove(temporary)
            raise
        for path, temporary in staged.items():
            try:
                if declared[path].is_folder:
                    publish_dir(temporary, path)
                else:
                    publish_file(temporary, path)
            except BaseException:
                for left in staged.values():
                    _remove(left)
                raise


def _unchanged(error: OSError, staged: dict[Path, Path]) -> OSError:
    """`error` (raised while writing the `staged` outputs) with their final paths in its message, saying that
    none of them was touched."""
    message = str(error)
    if error.errno is not None:  # the error made below adds "[Errno N] " again
        message = message.removeprefix(f"[Errno {error.errno}] ")
    for final, temporary in staged.items():
        message = message.replace(str(temporary), str(final))
    kept = ", ".join(_shown(final) for final in staged) or "the outputs"
    message = f"{message} (nothing was written: {kept} left as before)"
    try:
        return type(error)(error.errno, message) if error.errno is not None else type(error)(message)
    except TypeError:
        return OSError(message)


# --------------------------------------------------------------------------------------------- writing


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def _mode_for(final: Path, default: int) -> int:
    """The permissions `final` has (when it exists) or a new file or folder gets (`default` less the umask)."""
    try:
        return stat.S_IMODE(final.stat().st_mode)
    except OSError:
        return default & ~_umask()


def _host() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:6]


def _staging_prefix(final: Path, aside: bool = False) -> str:
    """The start of the temporary siblings' names of `final` made by this process."""
    return f"{STAGING_PREFIX}{final.name[:_NAME_KEPT]}.{'old.' if aside else ''}{os.getpid()}-{_host()}."


def _running(pid: int) -> bool:
    """Whether a process `pid` runs on this machine (another user's counts: it cannot be signalled, but runs)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: someone else's process; anything else: assume it runs
        return True
    return True


def remove_stale_staging(final: PathLike) -> list[Path]:
    """Remove the temporary siblings of the output `final` that a killed run left (see the module docstring for
    which ones: ours by name, made on this machine by a process that no longer runs), with one
    `StaleStagingWarning` naming them; returns them. Called before an output is written."""
    final = _absolute(final)
    prefix, host = f"{STAGING_PREFIX}{final.name[:_NAME_KEPT]}.", _host()
    try:
        entries = sorted(final.parent.iterdir())
    except OSError:
        return []
    removed = []
    for entry in entries:
        owner = _OWNED.fullmatch(entry.name[len(prefix) :]) if entry.name.startswith(prefix) else None
        if owner and owner["host"] == host and not _running(int(owner["pid"])):
            _remove(entry)
            removed.append(entry)
    if removed:
        warnings.warn(
            "removed what a killed run left while writing " + _shown(final) + ": " + ", ".join(map(_shown, removed)),
            StaleStagingWarning,
            stacklevel=3,
        )
    return removed


def _make_staging(output: Output) -> Path:
    path = output.path
    if not output.is_folder and path.exists() and not path.is_file():
        return path  # a device or a pipe: written in place, there is nothing to rename
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(path)
    prefix = _staging_prefix(path)
    if output.is_folder:
        temporary = Path(tempfile.mkdtemp(prefix=prefix, dir=path.parent))
        os.chmod(temporary, _mode_for(path, 0o777))
    else:
        descriptor, name = tempfile.mkstemp(prefix=prefix, dir=path.parent)
        os.close(descriptor)
        temporary = Path(name)
        os.chmod(temporary, _mode_for(path, 0o666))
    return temporary


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.is_file():
        path.unlink(missing_ok=True)


def _fsync_path(path: Path) -> None:
    """Flush `path` (a file, or a folder's entries) to disk; some platforms cannot open a folder: skipped."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _fsync_tree(folder: Path) -> None:
    """Flush the files of `folder` (recursively) and the folders themselves to disk."""
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            _fsync_path(path)
    for directory in [folder, *sorted(p for p in folder.rglob("*") if p.is_dir())]:
        _fsync_path(directory)


def publish_file(staged: Path, final: Path) -> None:
    """Rename the completely written file `staged` to `final` in one step (replacing an existing `final`)."""
    if staged == final:
        return
    _fsync_path(staged)
    os.replace(staged, final)
    _fsync_path(final.parent)


def publish_dir(staged: Path, final: Path) -> None:
    """Move the completely written folder `staged` to `final`, replacing an existing `final` whole.

    Readers see the old `final` (or none) until the new one is complete; the old folder is first renamed into a
    temporary sibling (so no other path is touched), then the new one is renamed into place, then the old one is
    deleted.
    """
    _fsync_tree(staged)
    final = Path(final)
    if final.exists() or final.is_symlink():
        aside = Path(tempfile.mkdtemp(prefix=_staging_prefix(final, aside=True), dir=final.parent))
        os.replace(final, aside / final.name)
        os.replace(staged, final)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.replace(staged, final)
    _fsync_path(final.parent)


def make_staging_folder(final: PathLike) -> Path:
    """An empty temporary sibling of the folder `final` to write it into, named as `OutputPlan` names them (so
    that a run killed while writing it leaves something `remove_stale_staging` removes); the leftovers of killed
    writers of `final` are removed first. Publish it with `publish_into` or `publish_dir`."""
    return _make_staging(Output(_absolute(final), "folder", is_folder=True))


def publish_into(staged: Path, final: Path) -> None:
    """Publish the completely written folder `staged` as `final`, then remove `staged`.

    When `final` does not exist (or is empty) the folder is renamed into place whole; otherwise each file of
    `staged` replaces its namesake in `final` in one step and `final`'s other files stay. Either way no file of
    `final` is ever half-written.
    """
    final = Path(final)
    if not final.is_dir() or not any(final.iterdir()):
        publish_dir(staged, final)
        return
    for path in sorted(staged.rglob("*")):
        if path.is_file():
            target = final / path.relative_to(staged)
            target.parent.mkdir(parents=True, exist_ok=True)
            publish_file(path, target)
    shutil.rmtree(staged, ignore_errors=True)


def write_bytes(path: PathLike, data: bytes) -> Path:
    """Write `data` to the file `path` through a temporary sibling renamed into place; returns the path."""
    plan = OutputPlan()
    target = plan.file(path)
    with plan.writing() as staged:
        staged(target).write_bytes(data)
    return target


def write_text(path: PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write `text` to the file `path` through a temporary sibling renamed into place; returns the path."""
    return write_bytes(path, text.encode(encoding))
