"""Code as libraries write it: `out=None` passed on (NumPy's own functions pass `out=out`
to the next call), NumPy's nan-functions, and the refusal of a real write through `out=`.
Numbers against the derivatives written out."""
import numpy as np
import pytest

import srcad
from srcad.errors import UnsupportedSyntaxError


def doubled_sum(x):
    return np.sum(np.add(x, x, out=None))


def squares(x, out=None):
    return np.sum(np.multiply(x, x, out=out))


def written_through_out(x):
    y = np.zeros(2)
    np.add(x, x, out=y)
    return np.sum(y)


def assigned_through_out(x, y):
    z = np.add(x, x, out=y)
    return np.sum(z)


def nan_loss(x):
    return np.nansum(x ** 2) + np.nanmean(np.sin(x))


def test_out_none_is_the_call_without_it():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(srcad.grad(doubled_sum)(x), [2.0, 2.0])
    np.testing.assert_allclose(srcad.grad(squares)(x), 2 * x)
    np.testing.assert_allclose(srcad.jvp(squares, (x,), (np.ones(2),))[1], np.sum(2 * x))


def test_a_write_through_out_is_refused_with_the_line():
    with pytest.raises(UnsupportedSyntaxError, match="`out=` arguments") as error:
        srcad.grad(written_through_out)(np.array([1.0, 2.0]))
    assert error.value.location.lineno == written_through_out.__code__.co_firstlineno + 2
    with pytest.raises(UnsupportedSyntaxError, match=r"`np.add\(...\)` is given an array"):
        srcad.grad(assigned_through_out)(np.array([1.0, 2.0]), np.zeros(2))
    with pytest.raises(UnsupportedSyntaxError, match="`out=` arguments"):
        srcad.grad(squares)(np.array([1.0, 2.0]), np.zeros(2))


def test_nan_functions_skip_their_nans():
    x = np.array([0.5, np.nan, -1.0, 2.0])
    counted = ~np.isnan(x)
    np.testing.assert_allclose(srcad.grad(np.nansum)(x), counted * 1.0)
    np.testing.assert_allclose(srcad.grad(np.nanmean)(x), counted / 3.0)
    # (a NaN's own derivative through x ** 2 is 0 * NaN: NaN, as in JAX and autograd)
    expected = np.where(counted, 2 * x + np.cos(x) / counted.sum(), np.nan)
    np.testing.assert_allclose(srcad.grad(nan_loss)(x), expected)
    np.testing.assert_allclose(srcad.tape.grad(nan_loss)(x), expected)
    tangent = srcad.jvp(nan_loss, (x,), (counted * 1.0,))[1]
    assert tangent == pytest.approx(np.sum(expected[counted]))
    rows = np.array([[1.0, np.nan], [2.0, 3.0]])
    np.testing.assert_allclose(srcad.jacobian(lambda a: np.nanmean(a, axis=1))(rows),
                               [[[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.5, 0.5]]])
