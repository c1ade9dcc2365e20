"""bench: `python -m srcad.bench`, srcad's derivatives timed against the gradient a person
writes by hand in NumPy, tape mode, and the peers that are installed (autograd, JAX eager and
jit, PyTorch eager).

Pipeline: `workloads` (the programs and their hand-written derivatives) → `contenders` (how
each tool computes the derivative) → `measure` (first call, agreement with the hand-written
result, peak memory, interleaved timing) → `report` (tables, JSON, plot); `first_call`
measures apart how the transformation's time grows with the function's length. Nothing here
is imported by `import srcad`; peers are imported only when run.
"""
from __future__ import annotations

import ctypes
import ctypes.util

from srcad.bench.contenders import CONTENDERS
from srcad.bench.measure import measure
from srcad.bench.report import plot, tables, write_json
from srcad.bench.workloads import WORKLOADS


def run(only=None, contenders=None, quick=False, json_path=None, plot_path=None, out=print):
    """Measure the workloads named in `only` (default all) for `contenders` (default all;
    "hand" is always included, as the baseline), print the tables, return the results."""
    chosen = _select(WORKLOADS, only, lambda w: w.name, "workload")
    names = _select(list(CONTENDERS), contenders, lambda c: c, "contender")
    if "hand" not in names:
        names.insert(0, "hand")
    rounds, sample = (3, 0.002) if quick else (15, 0.02)
    results = []
    for workload in chosen:
        results += measure(workload, names, rounds, sample)
    out(tables(results, names))
    if json_path:
        write_json(results, json_path)
    if plot_path:
        plot(results, names, plot_path)
    return results


def steady_heap() -> bool:
    """Keep freed memory in the process (glibc), so no contender pays page faults by chance.

    glibc hands the top of the heap back to the system once 128 KiB are free there, and
    serves blocks above an adaptive threshold by mmap: whether a workload's ~100 KB arrays
    come back as fresh pages on every call then depends on what ran before (the hand-written
    Rosenbrock gradient measured 27 us or 165 us by that alone). A long-running program's
    heap settles; fixing both thresholds high makes every run measure that steady state.
    False where the C library is not glibc (nothing is changed)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        set_option = libc.mallopt
    except (OSError, AttributeError):
        return False
    trim_threshold, mmap_threshold = -1, -3  # M_TRIM_THRESHOLD, M_MMAP_THRESHOLD
    return bool(set_option(trim_threshold, 1 << 30) and set_option(mmap_threshold, 1 << 25))


def _select(items, names, name_of, what):
    if names is None:
        return list(items)
    known = {name_of(item): item for item in items}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown {what}(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(known)}")
    return [known[n] for n in names]
