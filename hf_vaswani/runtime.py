"""Process settings for running the model on a CPU (used by the ``hf-vaswani`` commands and the demo).

Only the applications call this; the model files never change the process they are imported into.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys

__all__ = ["KEEP_FREED_MEMORY_ENV", "KEEP_FREED_MEMORY_TUNABLES", "keep_freed_memory", "release_freed_memory"]

#: Set to 0 to leave the C library's allocator as it is.
KEEP_FREED_MEMORY_ENV = "HF_VASWANI_KEEP_FREED_MEMORY"

# glibc's mallopt parameters (malloc.h) and the largest mmap threshold it accepts on 64-bit systems.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD_MAX = 32 * 1024 * 1024
_TRIM_THRESHOLD = 1 << 30

#: The same settings as glibc environment variables, for a process started with them (read by glibc at start-up).
KEEP_FREED_MEMORY_TUNABLES = {
    "MALLOC_MMAP_THRESHOLD_": str(_MMAP_THRESHOLD_MAX),
    "MALLOC_TRIM_THRESHOLD_": str(_TRIM_THRESHOLD),
}


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (only glibc has `gnu_get_libc_version`; musl's `mallopt` does nothing), loaded
    once; None on other systems."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018
        libc.mallopt, libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def keep_freed_memory() -> bool:
    """Make glibc's `malloc` keep freed memory for reuse instead of handing it back to the system.

    By default glibc returns the top of the heap to the system whenever more than a few megabytes are free there,
    and serves blocks above an adaptive size with fresh `mmap`ed pages; a model that allocates and frees tensors of
    megabytes in every step then touches new pages again and again, each first touch a page fault (a few
    microseconds per 4 KB page in a virtual machine). Here the heap is trimmed only above 1 GiB free and blocks up to
    32 MiB come from the heap: `benchmarks/bench_allocator.py` measured a CPU training step up to 1.19x and
    `generate()` with beam search up to 1.20x as fast, for a process that keeps its peak memory. The same as
    ``MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824`` in the environment, but it can be set
    from Python after start-up.

    Returns whether the settings were applied: not on other C libraries or systems, not when the environment
    already sets glibc's ``MALLOC_*`` tunables (the user's choice wins), and not when ``HF_VASWANI_KEEP_FREED_MEMORY``
    is ``0``.
    """
    if os.environ.get(KEEP_FREED_MEMORY_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    if any(name.startswith("MALLOC_") for name in os.environ) or "GLIBC_TUNABLES" in os.environ:
        return False
    libc = _glibc()
    if libc is None:
        return False
    mallopt = libc.mallopt
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    # Both together: setting either one turns off glibc's adaptive thresholds, and the trim threshold alone would
    # leave blocks above 128 KB to mmap, each with fresh pages.
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)) and bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))


def release_freed_memory() -> bool:
    """Hand the memory that glibc's `malloc` holds freed back to the system (``malloc_trim(0)``, every arena).

    For a process that stays up and serves requests of many sizes (the demo): what one request freed is kept for
    the next by `keep_freed_memory`, and a pool of worker threads spreads it over several arenas, so the resident
    memory creeps up without any object being kept. Called between requests, it keeps the memory flat at the cost
    of a few milliseconds. Returns False where there is no glibc (nothing to do).
    """
    libc = _glibc()
    if libc is None:
        return False
    malloc_trim = libc.malloc_trim
    malloc_trim.argtypes, malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    malloc_trim(0)
    return True
