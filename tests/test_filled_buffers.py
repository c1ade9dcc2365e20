"""A buffer made by `np.zeros(n)`/`np.empty(n)` and filled element by element before any
other use is one `filled(...)` call with a rule per element (frontend/desugar.py
buffers_filled, ops/numpy_arrays.filled): the derivatives stay those of finite
differences and tape mode, in every mode and order; a buffer read, written twice, partly
filled or of another dtype keeps its writes."""
import numpy as np
import pytest

import srcad
from srcad.compiler.pipeline import PASSES, source_after
from srcad.ops.numpy_arrays import filled
from tests.checks import assert_gradient_matches_finite_differences


def rhs(y, p):
    dy = np.zeros(2)
    dy[0] = y[1]
    dy[1] = -p[0] * np.sin(y[0]) - p[1] * y[1]
    return dy


def integrated(p, y):
    for _ in range(5):
        slope = rhs(y, p)                 # (a whole statement: written out, frontend/inline.py)
        y = y + 0.1 * slope
    return np.sum(y * y)


def out_of_order(x):
    out = np.empty((3,))
    out[-1] = x[0] * x[1]
    s = np.sin(x[1])                  # (a statement between that does not touch `out`)
    out[0] = s
    out[1] = x[0] ** 2
    return np.sum(out * np.array([1.0, 2.0, 3.0]))


def with_a_dtype(x):
    out = np.zeros(2, dtype=float)
    out[0], = (x[0],)                 # (an unpacking: not an element write it follows)
    out[1] = x[1] * 3.0
    return np.sum(out ** 2)


def read_between(x):
    out = np.zeros(2)
    out[0] = x[0]
    total = np.sum(out)               # read before it is full: kept as writes
    out[1] = x[1] * total
    return np.sum(out ** 2)


def written_twice(x):
    out = np.zeros(2)
    out[0] = x[0]
    out[0] = out[0] * x[1]
    out[1] = x[1]
    return np.sum(out ** 2)


def partly_filled(x):
    out = np.zeros(3)
    out[0] = x[0]
    out[2] = x[1]
    return np.sum(out ** 2)


def integers(x):
    out = np.zeros(2, dtype=int)
    out[0] = 3
    out[1] = 4
    return np.sum(x * out)


R = np.random.default_rng(11)
CASES = [
    (integrated, (np.array([9.81, 0.3]), np.array([1.0, 0.2])), (0, 1), True),
    (out_of_order, (R.standard_normal(2),), 0, True),
    (with_a_dtype, (R.standard_normal(2),), 0, False),
    (read_between, (R.standard_normal(2),), 0, False),
    (written_twice, (R.standard_normal(2),), 0, False),
    (partly_filled, (R.standard_normal(2),), 0, False),
    (integers, (R.standard_normal(2),), 0, False),
]


@pytest.mark.parametrize("fn, args, wrt, made", CASES, ids=lambda c: getattr(c, "__name__", None))
def test_derivatives_agree_with_finite_differences_and_tape_mode(fn, args, wrt, made):
    assert_gradient_matches_finite_differences(fn, args, wrt)
    as_tuple = (lambda v: v if isinstance(wrt, tuple) else (v,))
    for got, taped in zip(as_tuple(srcad.grad(fn, wrt=wrt)(*args)),
                          as_tuple(srcad.tape.grad(fn, wrt=wrt)(*args))):
        np.testing.assert_allclose(got, taped, rtol=1e-10, atol=1e-12)
    first = wrt[0] if isinstance(wrt, tuple) else wrt
    direction = np.ones_like(args[first])
    step = 1e-6
    shifted = [list(args), list(args)]
    shifted[0][first], shifted[1][first] = args[first] + step * direction, \
        args[first] - step * direction
    along = (srcad.grad(fn, wrt=first)(*shifted[0]) - srcad.grad(fn, wrt=first)(*shifted[1])) \
        / (2 * step)
    np.testing.assert_allclose(srcad.hvp(fn, wrt=first)(*args, direction), along, rtol=1e-5,
                               atol=1e-6)
    source = source_after(fn, tuple(fn.__code__.co_varnames[:1]), "rev",
                          PASSES["rev"][-1].name)
    assert ("filled(" in source) == made


def test_filled_makes_what_the_writes_make():
    np.testing.assert_array_equal(filled(1, 2.5, np.float32(3.0)), np.array([1.0, 2.5, 3.0]))
    assert filled(1, 2).dtype == np.float64
    with pytest.raises(TypeError):
        filled(1j, 0.0)
    _, tangent = srcad.jvp(lambda a, b: filled(a * 2.0, b), (1.0, 2.0), (1.0, 0.5))
    np.testing.assert_allclose(tangent, [2.0, 0.5])
