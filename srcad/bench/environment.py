"""environment: what a benchmark's figures were measured on, so a reader can weigh them.

`describe(ran)` → a dict of plain values (JSON-ready): the date, the machine (CPU, cores,
OS), Python, the versions of srcad, NumPy and of the packages of the contenders in `ran`,
and the BLAS NumPy was built with (from `numpy.show_config`); `summary` prints it in a few
lines. Versions are read from the installed distributions, so no peer is imported here.
"""
from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import subprocess
import warnings
from pathlib import Path

import numpy as np

from srcad.bench.contenders import PACKAGES
from srcad.version import __version__

_ALWAYS = ("numpy", "scipy", "gast")  # (every run: srcad's own and the workloads')


def describe(ran) -> dict:
    """The run's context: `ran` names the contenders that ran (their packages' versions are
    recorded, and only theirs)."""
    names = [*_ALWAYS, *(PACKAGES[c] for c in ran if c in PACKAGES)]
    versions = {"srcad": __version__}
    for name in dict.fromkeys(names):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": _cpu_name(),
        "cores": os.cpu_count(),
        "os": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "versions": versions,
        "srcad_commit": _commit(),
        "blas": _blas(),
    }


def summary(metadata: dict) -> str:
    """The metadata as the lines printed above the tables."""
    versions = ", ".join(f"{name} {version}" for name, version in metadata["versions"].items())
    commit = f" (commit {metadata['srcad_commit']})" if metadata.get("srcad_commit") else ""
    return "\n".join([
        f"Measured {metadata['date']} on {metadata['cpu']}, {metadata['cores']} cores, "
        f"{metadata['os']}",
        f"{metadata['python']}; {versions}{commit}",
        f"BLAS: {metadata['blas']}",
    ])


def _cpu_name() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), else what `platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _blas() -> str:
    """The BLAS NumPy was built with, and the OpenBLAS core type if the environment forces
    one (it changes which kernels run)."""
    with warnings.catch_warnings():  # (it asks for pyyaml, which only its printing uses)
        warnings.simplefilter("ignore")
        blas = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    text = " ".join(str(blas[key]) for key in ("name", "version") if blas.get(key)) or "unknown"
    forced = os.environ.get("OPENBLAS_CORETYPE")
    return text + (f", OPENBLAS_CORETYPE={forced}" if forced else "")


def _commit() -> str | None:
    """srcad's git commit when it runs from a checkout (a figure belongs to a version)."""
    try:
        completed = subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                   cwd=Path(__file__).parent, capture_output=True, text=True,
                                   timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if completed.returncode != 0:
        return None
    return completed.stdout.strip() or None
