"""bench: `python -m srcad.bench`, srcad's derivatives timed against the gradient a person
writes by hand in NumPy, the same written for numba and compiled by it where the workload is
a loop of numbers or small arrays ("hand.numba": the compiled-code reference), tape mode, and
the peers that are installed (autograd, JAX eager and jit, PyTorch eager).

Pipeline: `workloads` (the programs and their hand-written derivatives) → `contenders` (how
each tool computes the derivative) → `measure` (first call, agreement with the hand-written
result, peak memory, interleaved timing) → `report` (tables, JSON, plot), with `progress`
telling on stderr what runs and `environment` recording where; `first_call`,
`checkpointing` and `executors` measure apart how the transformation's time grows with the
function's length, what checkpointing trades, and what worker processes gain and cost. Nothing here is imported by `import srcad`; peers are
imported only when run.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import os
from pathlib import Path

from srcad.bench.contenders import CONTENDERS, missing, not_installed
from srcad.bench.environment import describe
from srcad.bench.measure import WARM_UP_ROUNDS, measure
from srcad.bench.progress import Progress
from srcad.bench.report import plot, tables, write_json
from srcad.bench.workloads import WORKLOADS
from srcad.errors import UsageError


def run(only=None, contenders=None, quick=False, json_path=None, plot_path=None, out=print,
        progress_to=None):
    """Measure the workloads named in `only` (default all) for `contenders` (default all
    that are installed; "hand" is always included, as the baseline), print the tables with
    `out`, return the results. Progress goes to `progress_to` (default stderr).

    Every option is checked before anything is timed: an unknown name, a contender or
    workload asked for by name whose package is not installed, an output that cannot be
    written, `plot_path` without matplotlib all raise `UsageError` saying what to do."""
    chosen = _select(WORKLOADS, only, lambda w: w.name, "workload")
    names = _select(list(CONTENDERS), contenders, lambda c: c, "contender")
    if "hand" not in names:
        names.insert(0, "hand")
    for path, option in ((json_path, "--json"), (plot_path, "--plot")):
        if path is not None:
            _check_writable(Path(path), option)
    if plot_path is not None:
        _check_plot(Path(plot_path))
    not_run = {name: reason for name in names if (reason := missing(name))}
    skipped = {w.name: reason for w in chosen if (reason := _missing_package(w))}
    _check_asked_for(contenders, not_run, "--contenders")
    _check_asked_for(only, skipped, "--only")
    ran = [name for name in names if name not in not_run]
    chosen = [w for w in chosen if w.name not in skipped]
    rounds, sample = (3, 0.002) if quick else (15, 0.02)
    progress = Progress(len(chosen), stream=progress_to)
    progress.run_starts(ran, f"{WARM_UP_ROUNDS} warm-up and {rounds} timed rounds each",
                        {**not_run, **skipped})
    metadata = {**describe(ran), "quick": quick, "timed_rounds": rounds,
                "warm_up_rounds": WARM_UP_ROUNDS, "sample_seconds": sample,
                "not_run": not_run, "workloads_not_run": skipped}
    results = []
    for workload in chosen:
        progress.workload_starts(workload)
        measured = measure(workload, ran, rounds, sample, progress.timing_starts)
        progress.workload_ends(measured)
        results += measured
    out(tables(results, ran, metadata, {**not_run, **skipped}))
    if json_path:
        write_json(results, metadata, json_path)
    if plot_path:
        plot(results, metadata, plot_path)
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
        raise UsageError(f"unknown {what}(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(known)}")
    return [known[n] for n in names]


def _missing_package(workload) -> str | None:
    """Why `workload` cannot run here (a package its objective imports is not installed)."""
    return next(filter(None, map(not_installed, workload.needs)), None)


def _check_asked_for(names, unavailable: dict, option: str) -> None:
    """Refuse what is not installed but was asked for by name (rather than skip it)."""
    for name in names or ():
        if name in unavailable:
            raise UsageError(f"{name} cannot run: {unavailable[name]}; or leave it out of "
                             f"{option}")


def _check_writable(path: Path, option: str) -> None:
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir() or not folder.is_dir() or not os.access(folder, os.W_OK):
        raise UsageError(f"{option} {path}: cannot write a file there (is {folder} an "
                         "existing folder you may write in?)")


def _check_plot(path: Path) -> None:
    """matplotlib is installed and knows the format `path`'s suffix names."""
    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError("--plot needs matplotlib, which is not installed: pip install "
                         "matplotlib (or pip install 'srcad[plot]')")
    from matplotlib.backend_bases import FigureCanvasBase
    formats = FigureCanvasBase.get_supported_filetypes()
    if path.suffix.lstrip(".").lower() not in formats:
        raise UsageError(f"--plot {path}: name the format by the file's suffix, one of "
                         f"{', '.join('.' + f for f in sorted(formats))}")
