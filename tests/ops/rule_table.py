"""The rule table's building blocks, shared by tests/ops/test_rules.py and the per-area case
modules `tests/rule_cases_*.py` (each defines `CASES`, a list of `Case`): input domains,
the `Case` row and the helpers that cross rows with shapes and `wrt`.

A case's function must be a module-level function in a file (srcad reads its source).
"""
from typing import NamedTuple

import numpy as np


# ---- input domains -----------------------------------------------------------------------
def _grid(offset):
    """Multiples of 0.2 shifted by `offset`: grids 0.1 apart never tie with each other."""
    return lambda rng, shape: 0.2 * rng.integers(-5, 6, shape) + offset


DOMAINS = {
    "real": lambda rng, shape: rng.standard_normal(shape),
    "positive": lambda rng, shape: rng.uniform(0.5, 2.0, shape),
    "nonzero": lambda rng, shape: rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 2.0, shape),
    "unit": lambda rng, shape: rng.uniform(-0.8, 0.8, shape),
    "above_one": lambda rng, shape: rng.uniform(1.2, 3.0, shape),
    "angle": lambda rng, shape: rng.uniform(-1.2, 1.2, shape),
    "exponent": lambda rng, shape: rng.uniform(-1.5, 1.5, shape),
    # x % y and x // y stay away from their jumps: x / y lies in (2.09, 2.8).
    "dividend": lambda rng, shape: rng.uniform(2.2, 2.8, shape),
    "divisor": lambda rng, shape: rng.uniform(1.0, 1.05, shape),
    # Exact zeros at every other element (the first one included).
    "with_zero": lambda rng, shape: np.abs(rng.standard_normal(shape))
    * (np.arange(np.prod(shape, dtype=int)).reshape(shape) % 2),
    "even": _grid(0.0),
    "odd": _grid(0.1),
}


class Case(NamedTuple):
    primal: object   # the registered callable this case exercises
    fn: object       # a module-level function calling it
    args: tuple      # (domain, shape) per parameter; shape None is a Python float
    wrt: object = 0
    bug: str = ""    # a known srcad bug: the case is a strict xfail


def binary(rows, shape_pairs, wrts=(0, 1, (0, 1))):
    """Cases for rows `(primal, fn, domain of x, domain of y[, bug])`."""
    return [Case(primal, fn, ((dx, sx), (dy, sy)), wrt, *bug)
            for primal, fn, dx, dy, *bug in rows for sx, sy in shape_pairs for wrt in wrts]


def unary(rows, shapes):
    """Cases for rows `(primal, fn, domain[, bug])`, one per shape."""
    return [Case(primal, fn, ((domain, shape),), 0, *bug)
            for primal, fn, domain, *bug in rows for shape in shapes]


def on(shape, rows):
    """Cases for rows `(primal, fn[, bug])` of one real argument of `shape`."""
    return [Case(primal, fn, (("real", shape),), 0, *bug) for primal, fn, *bug in rows]
