"""Rule cases for sorting, selecting, lookups and polynomials (srcad/ops/numpy_indexing.py),
the NumPy functions autograd differentiates that srcad's other tables lack (np.rollaxis,
np.dsplit, np.amax, np.astype), options of np.cumsum and np.cumprod, and rows that once
showed srcad bugs (np.array's `ndmin`, a float32 power with its exponent in a variable,
np.diff's `prepend`, single-argument np.where in forward mode, np.arange's `start`), and
np.r_ and np.c_."""
import operator

import numpy as np

from srcad.ops.numpy_arrays import joined_by
from srcad.ops.numpy_indexing import scattered_add
from tests.ops.rule_table import DOMAINS, binary, on, unary

DOMAINS["near_zero"] = lambda rng, shape: rng.uniform(-0.03, 0.03, shape)
DOMAINS["spacing"] = lambda rng, shape: rng.uniform(0.5, 1.5, shape)

# Constants the case functions read (globals of this module).
XP = np.array([-1.0, 0.0, 0.5, 2.0])
FP = np.array([0.5, -1.0, 2.0, 1.0])
QUERIES = np.array([-1.5, -0.3, 0.2, 1.1, 1.9, 2.5, 4.0, 6.5])
SPECIALS = np.array([np.nan, np.inf, 1.0, -np.inf, np.nan, 2.0])
FINITE = np.isfinite(SPECIALS)
NANS = np.where(FINITE, SPECIALS, np.nan)  # no infinities: they become +-1.8e308
COORDINATES = np.array([0.0, 0.5, 1.5, 1.75])
PICKS = np.array([[[2, 0, 0, 1]], [[1, 1, 2, 0]]])  # broadcast along the middle axis


# ---- sorting and selecting ------------------------------------------------------------------
def unique_with_counts(x):
    values, counts = np.unique(x, return_counts=True)
    return values * counts


def sorted_by_row_sums(x):
    return np.take_along_axis(x, np.argsort(np.sum(x, axis=2), axis=1)[..., None], axis=1)


ON_CUBE = [  # x of shape (2, 3, 4)
    (np.sort, lambda x: np.sort(x)),
    (np.sort, lambda x: np.sort(x, axis=0)),
    (np.sort, lambda x: np.sort(x, axis=None)),
    (np.sort, lambda x: np.sort(x, -2, kind="stable")),
    (np.unique, lambda x: np.unique(x)),
    (np.unique, unique_with_counts),
    (np.take, lambda x: np.take(x, [0, 2, 2], axis=1)),
    (np.take, lambda x: np.take(x, 5)),
    (np.take, lambda x: np.take(x, [[0, -1], [1, 1]], axis=-1)),
    (np.take, lambda x: np.take(x, [4, -5, 7], axis=2, mode="wrap")),
    (np.take, lambda x: np.take(x, [-1, 9], axis=0, mode="clip")),
    (np.take, lambda x: np.take(x, 1, axis=0)),
    (np.take_along_axis, lambda x: np.take_along_axis(x, np.argsort(x, axis=1), axis=1)),
    (np.take_along_axis, lambda x: np.take_along_axis(x, PICKS, axis=1)),
    (np.take_along_axis, lambda x: np.take_along_axis(x, np.array([3, 3, 0, 23]), None)),
    (np.take_along_axis, sorted_by_row_sums),
    (scattered_add, lambda x: scattered_add(x * 2.0, [0, 0, 1], np.sin(x[1]))),  # rows
    (scattered_add, lambda x: scattered_add(x, (1, [0, 2, 2], [3, 3, 1]), x[0, :3, 0] ** 2)),
    (np.rollaxis, lambda x: np.rollaxis(x, 2)),
    (np.rollaxis, lambda x: np.rollaxis(x, 0, 3)),
    (np.rollaxis, lambda x: np.rollaxis(x, -1, 1)),
    (np.rollaxis, lambda x: np.rollaxis(x, 1, start=-1)),
    (np.amax, lambda x: np.amax(x, axis=1)),
    (np.amin, lambda x: np.amin(x, axis=(0, 2), keepdims=True)),
    (np.gradient, lambda x: np.gradient(x, axis=1)),
    (np.gradient, lambda x: np.gradient(x)[0] * np.gradient(x, 0.5)[2]),
    (np.gradient, lambda x: np.gradient(x, 2.0, axis=(0, 2))[1]),
    (np.gradient, lambda x: np.gradient(x, axis=-1, edge_order=2)),
    (np.gradient, lambda x: np.gradient(x, COORDINATES, axis=2, edge_order=2)),
    (np.gradient, lambda x: np.gradient(x, COORDINATES, axis=-1)),
    (np.nan_to_num, lambda x: np.nan_to_num(x)),
    (np.cumsum, lambda x: np.cumsum(x, axis=-2, dtype=np.float64)),
    (np.cumprod, lambda x: np.cumprod(x, 0, dtype=np.float64)),
]
if hasattr(np, "astype"):  # NumPy 2.1 and later
    ON_CUBE.append((np.astype, lambda x: np.astype(x, np.float64) * 2.0))

ON_VECTOR = [  # x of shape (6,)
    (np.nan_to_num, lambda x: np.nan_to_num(np.where(FINITE, x, SPECIALS), posinf=3.0,
                                            neginf=-3.0) * x),
    (np.nan_to_num, lambda x: np.nan_to_num(SPECIALS, nan=x[0], posinf=x[1], neginf=x[2])),
    (np.nan_to_num, lambda x: np.nan_to_num(NANS, True, x[3])),
    (np.gradient, lambda x: np.gradient(x)),
    (np.gradient, lambda x: np.gradient(x[:2])),
    (np.gradient, lambda x: np.gradient(x[:3], edge_order=2)),
    (np.interp, lambda x: np.interp(x, XP, FP)),
    (np.interp, lambda x: np.interp(x * 2.0, XP, FP, left=-2.0, right=3.0)),
    (np.sort, lambda x: np.sort(x)[::-1] * x),
    (np.unique, lambda x: np.unique(x, return_inverse=True)[0]),
]

ON_SCALARS = [  # Python floats and 0-d arrays
    (np.interp, lambda x: np.interp(x, XP, FP)),
    (np.sort, lambda x: np.sort(x, axis=None)),
    (np.array, lambda x: np.array(x, ndmin=2)),  # was an IndexError
]

ELEMENTWISE = [
    (np.sinc, lambda x: np.sinc(x), "real"),
    (np.sinc, lambda x: np.sinc(x), "near_zero"),
    (np.sinc, lambda x: np.sinc(x), "with_zero"),
]


# ---- two arguments ------------------------------------------------------------------------------
def power_held_in_variable(x):
    """A float32 power whose exponent is a Python float in a variable kept float64."""
    exponent = 0.5
    return x ** exponent


def numpy_power_held_in_variable(x):
    exponent = -1.5
    return np.power(x, exponent)


def increasing_knots(x, xp):
    return np.interp(x, np.cumsum(xp), FP)


PAIRS = [  # (primal, fn, domains, shape pairs)
    (np.interp, lambda x, fp: np.interp(x, XP, fp), ("real", "real"),
     [((5,), (4,)), (None, (4,)), ((2, 3), (4,))]),
    (np.interp, lambda x, fp: np.interp(x, XP, fp, left=0.5, right=fp[0]), ("real", "real"),
     [((7,), (4,))]),
    (np.interp, lambda left, right: np.interp(QUERIES, XP, FP, left, right), ("real", "real"),
     [(None, None), ((), ())]),
    (np.interp, increasing_knots, ("real", "spacing"), [((6,), (4,)), ((), (4,))]),
    (np.interp, lambda xp, fp: np.interp(QUERIES, np.cumsum(xp), fp), ("spacing", "real"),
     [((4,), (4,))]),
    (np.polyval, lambda p, x: np.polyval(p, x), ("real", "real"),
     [((3,), (5,)), ((4,), (2, 3)), ((3,), None), ((1,), (2,)), ((3, 2), (2,)),
      ((3, 1), (4,))]),
    (np.polyval, lambda p, x: np.polyval([p, 2.0, p * x], x), ("real", "real"),
     [(None, None), ((), ())]),
    (np.linspace, lambda x, y: np.linspace(x, y, 5), ("real", "real"),
     [(None, None), ((), ()), ((3,), (3,)), ((3,), None), ((2, 3), (3,))]),
    (np.linspace, lambda x, y: np.linspace(x, y, num=4, axis=-1, endpoint=False),
     ("real", "real"), [((2, 3), (3,)), (None, (2,))]),
    (np.linspace, lambda x, y: np.linspace(x, y, 1, axis=1), ("real", "real"),
     [((2, 3), (2, 3))]),
    (np.full, lambda x, y: np.full((2, 3), x) * y, ("real", "real"),
     [(None, (3,)), ((), ()), ((3,), (2, 3))]),
    (np.full_like, lambda x, y: np.full_like(y, x) * y, ("real", "real"),
     [(None, (3,)), ((2, 1), (2, 3))]),
    (np.dsplit, lambda a, b: np.dsplit(a, 2)[1] * b, ("real", "real"), [((2, 3, 4), (2, 3, 2))]),
    (np.diff, lambda x, y: np.diff(x, prepend=y), ("real", "real"),  # y had no gradient
     [((4,), None), ((4,), ()), ((2, 3), (2, 1))]),
    (np.diff, lambda x, y: np.diff(x, axis=0, prepend=y, append=2.0 * y), ("real", "real"),
     [((3, 2), (1, 2)), ((3, 2), None)]),
    (np.diff, lambda x, y: np.diff(x, 2, append=y), ("real", "real"), [((2, 4), (2, 2))]),
    (np.array, lambda x, y: np.array([x, y], ndmin=3), ("real", "real"),  # was an IndexError
     [(None, None), ((2,), (2,))]),
    (np.array, lambda x, y: np.array([[x], [y]], ndmin=4) * x, ("real", "real"),
     [((2,), (2,))]),
    (np.arange, lambda x, s: np.arange(x, x + 2.0, s), ("real", "spacing"),  # x had no gradient
     [(None, None), ((), ())]),
    (np.arange, lambda x, s: np.arange(start=x, stop=2.5, step=s) * x, ("unit", "spacing"),
     [(None, None)]),
    # np.r_ and np.c_ join what they are indexed with: the index carries the derivative
    (joined_by, lambda x, y: np.r_[x, XP, y, 1:3] * np.r_[y, XP, 0.5 * x, 3:5],
     ("real", "real"), [((4,), (4,)), ((), ())]),
    (joined_by, lambda x, y: np.c_[x, y, x] ** 2, ("real", "real"), [((3, 2), (3, 1))]),
    (joined_by, lambda x, y: np.r_["0,2", x, y], ("real", "real"), [((3,), (3,))]),
]

CASES = (
    on((2, 3, 4), ON_CUBE) + on((6,), ON_VECTOR) + on(None, ON_SCALARS) + on((), ON_SCALARS)
    + unary(ELEMENTWISE, [None, (), (5,), (2, 3)])
    + [case for primal, fn, (dx, dy), pairs in PAIRS
       for case in binary([(primal, fn, dx, dy)], pairs)]
    + unary([(operator.pow, power_held_in_variable, "positive"),  # float32 gave float64
             (np.power, numpy_power_held_in_variable, "positive")], [None, (), (2, 3)])
    + on((2, 3), [(np.where, lambda x: x[np.where(x)] * 2.0)])  # its JVP refused one argument
    + on((4,), [(sorted, lambda x: np.stack(sorted(x)) * np.arange(1.0, 5.0)),
                (sorted, lambda x: np.stack(sorted(list(x * x), key=abs, reverse=True)) * x)])
    + on((3, 2), [(sorted, lambda x: np.stack(sorted(x, key=lambda row: row[1])) ** 2)])
    + unary([(np.arange, lambda x: np.arange(x, x + 3.0) ** 2, "real"),
             (np.arange, lambda x: np.arange(x + 1.0) * x, "spacing"),  # x is the stop
             (np.arange, lambda s: np.arange(3, step=s), "spacing")], [None, ()])
)
