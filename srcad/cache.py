"""cache: transform each function once, reuse the compiled adjoint on every later call.

Keyed by the function's code object, the differentiated parameters, the options and
srcad's version. A key holds a short list of entries that differ in the objects their
transformation resolved (`np`, a helper bound to a global): an entry serves a function
only while those names are still bound to the same objects and no derivative rule was
registered since it was made (its guards). Redefining a function makes a new code object,
so a new entry.
"""
from __future__ import annotations

import threading
from collections import namedtuple

from srcad import pipeline
from srcad.compile import CompiledAdjoint
from srcad.version import __version__

CacheInfo = namedtuple("CacheInfo", "hits misses entries")

_entries: dict[tuple, list[CompiledAdjoint]] = {}
_counts = {"hits": 0, "misses": 0}
_lock = threading.Lock()


def compiled_adjoint(fn, wrt: tuple[str, ...], has_aux: bool = False,
                     containers: frozenset = frozenset(), mode: str = "rev",
                     scalars: frozenset = frozenset(), arrays: frozenset = frozenset()
                     ) -> CompiledAdjoint:
    """`containers`: the `wrt` parameters that hold dicts, lists or tuples of values;
    `mode`: "rev" for the VJP maker, "fwd" for the JVP function; `scalars`: the parameters
    holding Python numbers; `arrays`: those holding float64 arrays, with their ranks (see
    pipeline.transform)."""
    key = (fn.__code__, wrt, mode, has_aux, containers, scalars, arrays, __version__)
    with _lock:
        for entry in _entries.get(key, ()):
            if entry.guards_hold(fn):
                _counts["hits"] += 1
                return entry
        _counts["misses"] += 1
    entry = pipeline.transform(fn, wrt, has_aux, containers, mode, scalars, arrays)
    with _lock:  # (entries made before a rule was registered never serve again)
        current = [e for e in _entries.get(key, ()) if e.rules_edition == entry.rules_edition]
        _entries[key] = [*current, entry]
    return entry


def cache_info() -> CacheInfo:
    """Hits and misses of transformation lookups, and the number of compiled adjoints."""
    with _lock:
        return CacheInfo(_counts["hits"], _counts["misses"], sum(map(len, _entries.values())))


def clear_cache() -> None:
    """Forget every compiled adjoint and reset the counts."""
    with _lock:
        _entries.clear()
        _counts.update(hits=0, misses=0)
        pipeline.forget_helper_analyses()
