"""cache: transform each function once, reuse the compiled adjoint on every later call.

Keyed by the function's code object, the differentiated parameters, the options and
srcad's version. A key holds a short list of entries that differ in the objects their
transformation resolved (`np`, a helper bound to a global): an entry serves a function
only while those names are still bound to the same objects and no derivative rule was
registered since it was made (its guards). Redefining a function makes a new code object,
so a new entry.

The cache holds at most `set_cache_size` entries (512 by default), the least recently used
leaving first with their generated source, so a notebook or a sweep that differentiates
thousands of partials or closures stays bounded; an entry's guards reference the objects
they compare against, so an evicted entry frees them.
"""
from __future__ import annotations

import linecache
import threading
from collections import OrderedDict, namedtuple

from srcad.compiler import pipeline
from srcad.compiler.emit import CompiledAdjoint
from srcad.compiler.passes import switched_off
from srcad.errors import UsageError
from srcad.version import __version__

CacheInfo = namedtuple("CacheInfo", "hits misses entries")

_entries: OrderedDict[tuple, list[CompiledAdjoint]] = OrderedDict()  # oldest use first
_counts = {"hits": 0, "misses": 0, "entries": 0, "limit": 512}
_lock = threading.Lock()
_forgetters: list = []  # see forgotten_with_cache


def compiled_adjoint(fn, wrt: tuple[str, ...], has_aux: bool = False,
                     containers: frozenset = frozenset(), mode: str = "rev",
                     scalars: frozenset = frozenset(), arrays: frozenset = frozenset(),
                     backend: str = "python", leaves: tuple = ()) -> CompiledAdjoint:
    """`containers`: the `wrt` parameters that hold dicts, lists or tuples of values;
    `mode`: "rev" for the VJP maker, "fwd" for the JVP function; `scalars`: the parameters
    holding Python numbers; `arrays`: those holding float64 arrays, with their ranks (see
    pipeline.transform); `backend`: "numba" for a program made for numba_backend;
    `leaves`: container parameters taken leaf by leaf (pipeline.transform)."""
    key = (fn.__code__, wrt, mode, has_aux, containers, scalars, arrays, backend, leaves,
           switched_off(), __version__)
    with _lock:
        entries = _entries.get(key, ())
        for position, entry in enumerate(entries):
            if entry.guards_hold(fn):
                _counts["hits"] += 1
                _entries.move_to_end(key)
                entries.append(entries.pop(position))  # (the most recently used last)
                return entry
        _counts["misses"] += 1
    entry = pipeline.transform(fn, wrt, has_aux, containers, mode, scalars, arrays, backend,
                               leaves)
    with _lock:  # (entries made before a rule was registered never serve again)
        entries = _entries.pop(key, [])
        current = [e for e in entries if e.rules_edition == entry.rules_edition]
        _forget([e for e in entries if e.rules_edition != entry.rules_edition])
        _entries[key] = [*current, entry]
        _counts["entries"] += 1 - (len(entries) - len(current))
        _evict(_counts["limit"])
    return entry


def _evict(limit: int) -> None:
    """Drop the least recently used entries until at most `limit` remain (lock held); what
    layers above keep of programs goes too (`forgotten_with_cache`: a derivative kept there
    may hold one whose source just left)."""
    evicted = _counts["entries"] > limit
    while _counts["entries"] > limit:
        key, entries = next(iter(_entries.items()))
        _forget([entries.pop(0)])
        _counts["entries"] -= 1
        if not entries:
            del _entries[key]
    for forget in _forgetters if evicted else ():
        forget()


def _forget(entries) -> None:
    """Unregister the generated source of entries that leave the cache."""
    for entry in entries:
        linecache.cache.pop(entry.filename, None)


def set_cache_size(entries: int) -> int:
    """Keep at most `entries` compiled programs (least recently used leave first).

    Each transformation costs milliseconds: a limit below the number of functions a
    program differentiates in turn makes it transform them again and again.

    Returns
    -------
    int
        The previous limit (512 by default).

    Examples
    --------
    >>> previous = srcad.set_cache_size(100)
    >>> srcad.set_cache_size(previous)
    100
    """
    if type(entries) is not int or entries < 1:
        raise UsageError(f"set_cache_size takes a positive number of entries; got {entries!r}.",
                         fix="pass an int such as 512 (the default).")
    with _lock:
        previous, _counts["limit"] = _counts["limit"], entries
        _evict(entries)
    return previous


def cache_info() -> CacheInfo:
    """Hits and misses of transformation lookups, and the number of compiled programs.

    Examples
    --------
    >>> srcad.clear_cache()
    >>> srcad.grad(lambda x: x * x)(3.0)
    6.0
    >>> srcad.cache_info().misses > 0
    True
    """
    with _lock:
        return CacheInfo(_counts["hits"], _counts["misses"], _counts["entries"])


def clear_cache() -> None:
    """Forget every compiled program (and its source in linecache) and reset the counts.

    Examples
    --------
    >>> srcad.clear_cache()
    >>> srcad.cache_info()
    CacheInfo(hits=0, misses=0, entries=0)
    """
    with _lock:
        for entries in _entries.values():
            _forget(entries)
        _entries.clear()
        _counts.update(hits=0, misses=0, entries=0)
        pipeline.forget_helper_analyses()
    for forget in _forgetters:
        forget()


def cache_size() -> int:
    """How many compiled programs the cache keeps (`set_cache_size`)."""
    return _counts["limit"]


def forgotten_with_cache(forget) -> None:
    """Have `clear_cache`, and an eviction, also run `forget()` (for what a layer above keeps
    of compiled programs: api/derivative.shared)."""
    _forgetters.append(forget)
