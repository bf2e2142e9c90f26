"""The attribution methods, one `Method` entry each, from which every list of methods is read.

An entry says what `attribute` calls (`function`), what the method does (runs the model, measures the
source-vs-prefix share, reads gradients), which libraries it needs, and how the demo names and describes it in
each of `LANGUAGES`. Each method registers its entry in its own module of `vaswani_inspect.attribution.methods`
(`register`); `method_entries` imports every module there the first time it is asked, so a new module is a new
method, with nothing else to edit. Every list is derived here and read when asked (so a method registered later,
by a test or a plugin, is in all of them): `METHODS`, `MODEL_METHODS`, `SHARE_METHODS`, `GRADIENT_METHODS`
(`vaswani_inspect.attribution`), the aligner methods (`vaswani_inspect.alignment.config`), the ``explain`` and
``align-eval`` commands' ``--method`` choices, and the demo's selector, labels and notes (`vaswani_demo`).

    >>> from vaswani_inspect.attribution.registry import method_entry, method_names
    >>> method_names(runs_model=False)
    ('attention', 'rollout')
    >>> method_entry("alti_plus").label["es"]
    'ALTI+ (contribuciones)'
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LANGUAGES",
    "Method",
    "method_entries",
    "method_entry",
    "method_names",
    "register",
    "registered",
    "unregister",
]

#: The languages every entry's `label` and `about` are written in (the demo's: `vaswani_demo.texts.LANGUAGES`).
LANGUAGES = ("en", "es")
#: Where a method without an `order` of its own comes: after every method shipped.
LAST = 1000


@dataclass(frozen=True)
class Method:
    """One attribution method.

    Attributes:
        name: what `attribute(..., method=name)` and every ``--method`` take.
        function: ``function(model, record, **options) -> Attribution``, `record` a checked token-level
            `AttentionRecord`; its keyword-only parameters, with their defaults, are the method's `options`.
        runs_model: whether it runs the model (False: it reads the record's attention only). `MODEL_METHODS`.
        measures_share: whether its `Attribution.source_share` is not None. `SHARE_METHODS`.
        reads_gradients: whether it reads gradients. `GRADIENT_METHODS`.
        needs: the libraries it imports beyond the base install (checked before any work by ``explain``; the demo
            leaves out a method whose library is missing).
        label: its name in the demo's selector and titles, by language (each of `LANGUAGES`).
        about: what it reads, one sentence for the note under the demo's selector, by language.
        order: where it comes in `METHODS` and the selectors, smaller first (registration order among equals).
    """

    name: str
    function: Callable[..., Any]  # returns an `Attribution` (not imported: the methods import the registry)
    runs_model: bool
    label: Mapping[str, str]
    about: Mapping[str, str]
    measures_share: bool = False
    reads_gradients: bool = False
    needs: tuple[str, ...] = ()
    order: int = LAST

    @property
    def options(self) -> dict[str, Any]:
        """The options `attribute(..., **options)` passes on: the function's keyword-only parameters and their
        defaults."""
        return {
            name: parameter.default
            for name, parameter in inspect.signature(self.function).parameters.items()
            if parameter.kind is inspect.Parameter.KEYWORD_ONLY
        }


_ENTRIES: dict[str, Method] = {}
_DISCOVERY = threading.RLock()  # re-entrant: a method's module may read the registry while it is imported
_discovered = False


def register(method: Method) -> Method:
    """Add `method` to the registry (called by its module at import); returns it.

    Raises:
        ValueError: a name already registered, or a `label` or `about` missing one of `LANGUAGES`.
        TypeError: a `function` that cannot be called.
    """
    if not callable(method.function):
        raise TypeError(f"The {method.name!r} method's function is not callable: {method.function!r}.")
    if method.name in _ENTRIES:
        raise ValueError(f"An attribution method named {method.name!r} is already registered.")
    for part in ("label", "about"):
        texts = getattr(method, part)
        missing = [language for language in LANGUAGES if not isinstance(texts.get(language), str)]
        if missing:
            raise ValueError(f"The {method.name!r} method's {part} has no text in {', '.join(missing)}.")
    _ENTRIES[method.name] = method
    return method


def unregister(name: str) -> Method:
    """Take the method `name` out of the registry; returns its entry (KeyError for a name not registered)."""
    return _ENTRIES.pop(name)


@contextmanager
def registered(method: Method) -> Iterator[Method]:
    """`method` registered inside the ``with`` block only (a test's dummy method, an experiment in a notebook)."""
    register(method)
    try:
        yield method
    finally:
        unregister(method.name)


def method_entries() -> tuple[Method, ...]:
    """Every registered method, in `METHODS` order (`order`, then registration)."""
    _discover()
    return tuple(sorted(_ENTRIES.values(), key=lambda method: method.order))  # a stable sort: registration order


def method_names(**flags: bool) -> tuple[str, ...]:
    """The names of the methods whose attributes equal `flags` (none: every method), in `METHODS` order, e.g.
    ``method_names(runs_model=True)`` is `MODEL_METHODS`."""
    unknown = sorted(set(flags) - {"runs_model", "measures_share", "reads_gradients"})
    if unknown:
        raise TypeError(f"method_names() takes runs_model, measures_share or reads_gradients, not {unknown}.")
    return tuple(
        method.name
        for method in method_entries()
        if all(getattr(method, flag) == wanted for flag, wanted in flags.items())
    )


def method_entry(name: str) -> Method:
    """The entry of the method `name`.

    Raises:
        ValueError: no method of that name, saying which there are.
    """
    _discover()
    if not isinstance(name, str) or name not in _ENTRIES:
        raise ValueError(f"Unknown attribution method {name!r}: choose one of {', '.join(method_names())}.")
    return _ENTRIES[name]


def _discover() -> None:
    """Import every module of `vaswani_inspect.attribution.methods` once: each registers its methods."""
    global _discovered
    if _discovered:
        return
    with _DISCOVERY:
        if _discovered:
            return
        import vaswani_inspect.attribution.methods as methods  # a folder of modules, found by name

        for module in sorted(pkgutil.iter_modules(methods.__path__), key=lambda found: found.name):
            importlib.import_module(f"{methods.__name__}.{module.name}")
        _discovered = True
