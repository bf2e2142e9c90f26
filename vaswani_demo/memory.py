"""Keeping the demo's resident memory flat: freed memory handed back to the system while the demo runs.

A request frees what it allocated, but glibc keeps freed memory for reuse (all the more under
`hf_vaswani.runtime.keep_freed_memory`, which the ``hf-vaswani`` commands set), and Gradio's pool of worker threads
spreads it over several allocator arenas: with no object kept, the resident memory of a demo serving requests of
many sizes creeps up (`benchmarks/bench_demo_memory.py` measured it). `FreedMemoryReleaser` hands it back
(`hf_vaswani.runtime.release_freed_memory`) every few seconds from a background thread; a request that runs in
the meantime still reuses what the previous one freed within that window.
"""

from __future__ import annotations

import threading

from hf_vaswani.runtime import release_freed_memory

from .settings import RELEASE_MEMORY_SECONDS

__all__ = ["FreedMemoryReleaser"]


class FreedMemoryReleaser:
    """A daemon thread that calls `release_freed_memory` every `interval` seconds until `close`.

    Attributes:
        releases: how many times it has released memory (for tests).
    """

    def __init__(self, interval: float = RELEASE_MEMORY_SECONDS) -> None:
        if not interval > 0:
            raise ValueError(f"interval must be a positive number of seconds, got {interval!r}.")
        self.interval = interval
        self.releases = 0
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="vaswani-demo-release-memory", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopped.wait(self.interval):
            if not release_freed_memory():
                return  # not glibc: nothing to hand back
            self.releases += 1

    def close(self) -> None:
        """Stop the thread and wait for it: the timer's wait ends at once, and a release in progress finishes, so
        none comes after `close` returns."""
        self._stopped.set()
        if self._thread is not threading.current_thread():
            self._thread.join()
