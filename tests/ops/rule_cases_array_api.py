"""Rule cases for the names NumPy 2 added for the Array API standard (srcad/ops/numpy_array_api.py):
`np.linalg`'s last-two-axes functions, `vecdot`, `matvec`, `vecmat`, the cumulative sums and
products with their `include_initial`, `svdvals`, `matrix_transpose`, `unstack` and
`np.sort(descending=True)`. Names the installed
NumPy lacks give no case."""
import inspect

import numpy as np

from tests.ops import rule_cases_fft  # noqa: F401  (the "complex" domain)
from tests.ops.rule_table import Case

V = np.array([0.3, -1.2, 0.8, 2.0])


def _cases(module, name, rows):
    """The rows `(fn, args, wrt)` for `module.name` where this NumPy has it."""
    primal = getattr(module, name, None)
    return [] if primal is None else [Case(primal, fn, args, wrt) for fn, args, wrt in rows]


def _linalg_outer(x, y):
    return np.linalg.outer(x, y)


def _linalg_cross(x, y):
    return np.linalg.cross(x, y)


def _linalg_cross_axis(x, y):
    return np.linalg.cross(x, y, axis=0)


def _linalg_tensordot(x, y):
    return np.linalg.tensordot(x, y, axes=1)


def _linalg_matmul(x, y):
    return np.linalg.matmul(x, y)


def _matrix_transpose(x):
    return np.matrix_transpose(x) * np.arange(1.0, 13.0).reshape(4, 3)


def _linalg_matrix_transpose(x):
    return np.linalg.matrix_transpose(x @ x)


def _linalg_diagonal(x):
    return np.linalg.diagonal(x) * np.linalg.diagonal(x, offset=1)[..., :1]


def _linalg_trace(x):
    return np.linalg.trace(x * x) + np.linalg.trace(x, offset=-1)


def _svdvals(x):
    return np.linalg.svdvals(x)


def _vecdot(x, y):
    return np.vecdot(x, y)


def _vecdot_axis(x, y):
    return np.vecdot(x, y, axis=0, keepdims=True)


def _linalg_vecdot(x, y):
    return np.linalg.vecdot(x, y, axis=-1)


def _matvec(a, v):
    return np.matvec(a, v)


def _vecmat(v, a):
    return np.vecmat(v, a)


def _unstack(x):
    first, _, third = np.unstack(x * x, axis=1)
    return first * third


def _sort_descending(x):
    return np.sort(x, axis=0, descending=True) * V[:, None]


def _cumulative_sum(x):
    return np.cumulative_sum(x)


def _cumulative_sum_axis(x):
    return np.cumulative_sum(x * x, axis=1, include_initial=True)


def _cumulative_prod(x):
    return np.cumulative_prod(x)


def _cumulative_prod_axis(x):
    return np.cumulative_prod(x, axis=0, include_initial=True) * V[:, None]


REAL, COMPLEX = "real", "complex"
PAIRS = [((REAL, (2, 4)), (REAL, (4,))), ((REAL, (3, 1, 4)), (REAL, (2, 4))),
         ((COMPLEX, (2, 4)), (COMPLEX, (2, 4))), ((REAL, (4,)), (COMPLEX, (3, 4)))]

CASES = (
    _cases(np.linalg, "outer", [(_linalg_outer, ((REAL, (3,)), (REAL, (4,))), (0, 1))])
    + _cases(np.linalg, "cross", [(_linalg_cross, ((REAL, (2, 3)), (REAL, (3,))), (0, 1)),
                                  (_linalg_cross_axis, ((REAL, (3, 2)), (REAL, (3, 2))), (0, 1))])
    + _cases(np.linalg, "tensordot", [(_linalg_tensordot, ((REAL, (2, 3)), (REAL, (3, 4))), (0, 1))])
    + _cases(np.linalg, "matmul", [(_linalg_matmul, ((REAL, (2, 3, 4)), (REAL, (4, 2))), (0, 1))])
    + _cases(np, "matrix_transpose", [(_matrix_transpose, ((REAL, (2, 3, 4)),), 0)])
    + _cases(np.linalg, "matrix_transpose", [(_linalg_matrix_transpose, ((REAL, (3, 3)),), 0)])
    + _cases(np.linalg, "diagonal", [(_linalg_diagonal, ((REAL, (2, 3, 4)),), 0)])
    + _cases(np.linalg, "trace", [(_linalg_trace, ((REAL, (2, 3, 3)),), 0)])
    + _cases(np.linalg, "svdvals", [(_svdvals, ((REAL, (4, 3)),), 0)])
    + _cases(np, "vecdot", [(_vecdot, pair, wrt) for pair in PAIRS for wrt in (0, 1)]
             + [(_vecdot_axis, ((REAL, (4, 3)), (COMPLEX, (4, 1))), (0, 1))])
    + _cases(np.linalg, "vecdot", [(_linalg_vecdot, ((COMPLEX, (3, 4)), (REAL, (4,))), (0, 1))])
    + _cases(np, "matvec", [(_matvec, ((REAL, (2, 3, 4)), (REAL, (4,))), (0, 1)),
                            (_matvec, ((COMPLEX, (3, 4)), (COMPLEX, (2, 4))), (0, 1))])
    + _cases(np, "vecmat", [(_vecmat, ((REAL, (3,)), (REAL, (2, 3, 4))), (0, 1)),
                            (_vecmat, ((COMPLEX, (2, 3)), (COMPLEX, (3, 4))), (0, 1))])
    + _cases(np, "unstack", [(_unstack, ((REAL, (2, 3, 4)),), 0)])
    + (_cases(np, "sort", [(_sort_descending, ((REAL, (4, 2)),), 0)])
       if "descending" in inspect.signature(np.sort).parameters else [])  # (NumPy 2.3's)
    + _cases(np, "cumulative_sum", [(_cumulative_sum, ((REAL, (5,)),), 0),
                                    (_cumulative_sum_axis, ((REAL, (2, 4)),), 0)])
    + _cases(np, "cumulative_prod", [(_cumulative_prod, (("nonzero", (5,)),), 0),
                                     (_cumulative_prod_axis, (("nonzero", (3, 2)),), 0)])
)
