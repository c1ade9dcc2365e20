"""Calls with `*args` and `**kwargs` in differentiated code (`f(*args, **kwargs)` in a
wrapper, `x.reshape(*shape)`, `f(x, *rest)`), and decorators, which run their wrapper: the
frontend writes such a call as `starred_call`, which runtime/calls.py differentiates as the
call spelled out for the arguments it gets. Numbers against the derivatives written out, in
reverse, forward and second order; tape mode, which runs the code as it is, agrees."""
import functools

import numpy as np
import pytest

import srcad
from srcad.errors import UnsupportedDerivativeError
from srcad.ops.python_builtins import starred_call
from srcad.runtime import calls


def scaled_square(x, y):
    return x * y ** 2


def passes_on(*args, **kwargs):
    return scaled_square(*args, **kwargs)


def spreads(x, ys):
    return scaled_square(x, *ys)


def by_keywords(x, y):
    options = {"y": y}
    return scaled_square(x, **options)


def between(x, y):
    middle = (y,)
    return scaled_square(*middle, *(x,))


def reshaped(x, shape):
    return np.sum(x.reshape(*shape) ** 2 * np.arange(6.0).reshape(2, 3))


def doubled(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return 2.0 * fn(*args, **kwargs)
    return wrapper


@doubled
def doubled_sine(x, y):
    return x * np.sin(y)


def logged(fn):
    calls = []

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        calls.append(len(args))
        return fn(*args, **kwargs)
    wrapper.calls = calls
    return wrapper


@logged
def logged_cube(x):
    return np.sum(x ** 3)


def test_a_wrapper_passing_its_arguments_on():
    assert srcad.grad(passes_on, wrt=(0, 1))(2.0, 3.0) == (9.0, 12.0)
    assert srcad.grad(passes_on)(2.0, y=3.0) == 9.0
    x, y = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    np.testing.assert_allclose(srcad.grad(lambda a, b: np.sum(passes_on(a, b)), wrt=1)(x, y),
                               2 * x * y)


def test_spread_tuples_and_dicts():
    assert srcad.grad(spreads, wrt=(0, 1))(2.0, (3.0,)) == (9.0, (12.0,))
    assert srcad.grad(spreads, wrt=1)(2.0, [3.0]) == [12.0]
    assert srcad.grad(by_keywords, wrt=(0, 1))(2.0, 3.0) == (9.0, 12.0)
    assert srcad.grad(between, wrt=(0, 1))(2.0, 3.0) == (12.0, 4.0)


def test_a_method_called_with_a_spread_shape():
    x = np.arange(6.0)
    np.testing.assert_allclose(srcad.grad(reshaped)(x, (2, 3)), 2 * x * np.arange(6.0))


def test_forward_mode_and_second_derivatives():
    assert srcad.jvp(passes_on, (2.0, 3.0), (1.0, 1.0)) == (18.0, 21.0)
    assert srcad.hessian(passes_on, wrt=1)(2.0, 3.0) == pytest.approx(4.0)
    assert srcad.grad(srcad.grad(spreads), wrt=0)(2.0, (3.0,)) == 0.0
    np.testing.assert_allclose(
        srcad.jacobian(passes_on, wrt=0, mode="fwd")(np.ones(2), np.arange(2.0)),
        np.diag(np.arange(2.0) ** 2))


def test_tape_mode_agrees():
    for wrt in (0, 1):
        assert srcad.tape.grad(passes_on, wrt=wrt)(2.0, 3.0) == \
            srcad.grad(passes_on, wrt=wrt)(2.0, 3.0)


def test_a_decorator_that_changes_the_value_is_differentiated_as_it_runs():
    """The wrapper is what runs: `functools.wraps` once made srcad differentiate the wrapped
    function instead, a silent factor of 2 here."""
    assert srcad.grad(doubled_sine, wrt=1)(2.0, 0.5) == pytest.approx(2 * 2.0 * np.cos(0.5))
    assert srcad.grad(doubled_sine, wrt="y")(2.0, 0.5) == pytest.approx(2 * 2.0 * np.cos(0.5))
    assert srcad.jvp(doubled_sine, (2.0, 0.5), (1.0, 0.0))[1] == pytest.approx(
        2 * np.sin(0.5))
    assert srcad.hessian(doubled_sine, wrt=1)(2.0, 0.5) == pytest.approx(-4.0 * np.sin(0.5))


def test_a_decorator_with_effects_runs_them():
    before = len(logged_cube.calls)
    x = np.array([1.0, -2.0])
    np.testing.assert_allclose(srcad.grad(logged_cube)(x), 3 * x ** 2)
    assert len(logged_cube.calls) > before


def test_spreading_a_generator_expression_and_refusing_an_iterator():
    def from_generator(x):
        return scaled_square(*(v for v in (x, x)))

    def from_iterator(x):
        return scaled_square(*iter((x, x)))
    assert srcad.grad(from_generator)(2.0) == 12.0
    with pytest.raises(srcad.errors.MissingRuleError, match="`iter`"):
        srcad.grad(from_iterator)(2.0)
    with pytest.raises(UnsupportedDerivativeError, match="tuple, list or array") as error:
        calls.spread(starred_call, (scaled_square, {2.0, 3.0}, {}))  # (a set: no order)
    assert "tuple(" in error.value.fix
