"""Elements of float64 array parameters read by integer indices are numbers in `grad`'s
program (analysis/scalars.py), and their adjoints in a loop are summed as numbers and added
into the array's adjoint once (transform/element_adjoints.py): the gradients stay those of
finite differences, tape mode and value_and_grad wherever the array is also used whole,
written, indexed by a loop variable, or read in nested, zero-trip and while loops."""
import re

import numpy as np
import pytest

import srcad
from srcad.bench.workloads import rk4_pendulum
from srcad.compiler import cache
from srcad.compiler.pipeline import PASSES, source_after
from tests.checks import assert_gradient_matches_finite_differences


def rates(p, start):
    u, v = start[0], start[1]
    for _ in range(30):
        du = p[0] * u - p[1] * u * v
        dv = p[2] * u * v - p[3] * v
        u = u + 0.01 * du
        v = v + 0.01 * dv
    return u * u + v


def whole_and_elements(p, x):
    total = 0.0
    for _ in range(5):
        total = total + p[0] * np.sum(p * x) + p[-1] * total * 0.1
    return total


def written_in_the_loop(p, x):
    q = p * 1.0
    total = 0.0
    for k in range(4):
        total = total + q[1] * x[k]
        q[1] = q[1] * 0.5 + x[k]
    return total + p[0] * p[2]


def by_loop_index(p, x):
    total = 0.0
    for i in range(3):
        total = total + p[i] * x[i] + p[0] * p[i]
    return total * p[3]


def nested(W, x):
    total = 0.0
    for i in range(2):
        for j in range(3):
            total = total + np.sin(W[i, j] * x[j]) + W[0, 0] * W[1, 2]
    return total


def while_loop(p, x):
    value, steps = x[0], 0
    while steps < 7:
        value = value - 0.1 * (p[0] * value - p[1])
        steps += 1
    return value * p[2]


def maybe_no_trips(p, n):
    total = p[1] * 2.0
    for _ in range(n):
        total = total + p[0] * total
    return total


def rebound(p, x):
    for _ in range(3):
        p = p * x          # the name no longer holds the argument: not a source of numbers
        x = x + p[0]
    return np.sum(x)


def read_while_copied_into(p, state):
    s = 0.0
    for _ in range(4):
        a = state[0]                  # an argument not differentiated, written each step
        s = s + a * p[0]
        np.copyto(state, state + 1.0)
    return s


def _bump(b):
    if b[0] > 100.0:
        return 0.0                    # (a return in a branch: called, not written out)
    b[0] = b[0] + 1.0
    return 0.0


def read_while_a_helper_writes(p, buffer):
    s = 0.0
    for _ in range(4):
        a = buffer[0]
        s = s + a * p[0]
        _bump(buffer)
    return s


def read_while_another_name_writes(p, data, out):
    s = 0.0
    for _ in range(4):
        a = data[0]
        s = s + a * p[0]
        out[0] = out[0] + 1.0         # (the same array as `data` below)
    return s


@pytest.mark.parametrize("fn", [read_while_copied_into, read_while_a_helper_writes])
def test_an_element_of_an_array_written_in_the_loop_is_read_at_each_step(fn):
    """Found by review: `a = state[0]` was taken for the same number at every step, where a
    call writes into `state` (the backward sweep read its last value alone: 16 for 10)."""
    p = np.array([0.7, -0.3])
    np.testing.assert_allclose(srcad.grad(fn)(p, np.array([1.0, 2.0])), [10.0, 0.0])
    np.testing.assert_allclose(srcad.grad(fn)(p, np.array([1.0, 2.0])), [10.0, 0.0])


def test_an_element_of_an_array_another_argument_writes_is_read_at_each_step():
    p, data = np.array([0.7, -0.3]), np.array([1.0, 2.0])
    np.testing.assert_allclose(srcad.grad(read_while_another_name_writes)(p, data, data),
                               [10.0, 0.0])


def rank_by_branch(p, start, outer):
    y = np.outer(start, start) if outer else start * 1.0
    total = 0.0
    for _ in range(3):  # (y[0] is a row on one path: not a number)
        total = total + np.sum(y[0] * p[0])
        y = y * p[1]
    return total


R = np.random.default_rng(7)
CASES = [
    (rates, (np.array([1.1, 0.4, 0.1, 0.4]), np.array([2.0, 1.5])), (0, 1)),
    (whole_and_elements, (R.standard_normal(4), R.standard_normal(4)), (0, 1)),
    (written_in_the_loop, (R.standard_normal(3), R.standard_normal(4)), (0, 1)),
    (by_loop_index, (R.standard_normal(4), R.standard_normal(3)), (0, 1)),
    (nested, (R.standard_normal((2, 3)), R.standard_normal(3)), (0, 1)),
    (while_loop, (R.standard_normal(3), R.standard_normal(2)), (0, 1)),
    (maybe_no_trips, (R.standard_normal(2), 3), 0),
    (maybe_no_trips, (R.standard_normal(2), 0), 0),
    (rebound, (R.standard_normal(3) * 0.5, R.standard_normal(3)), (0, 1)),
    (rank_by_branch, (np.array([0.7, 0.9]), np.array([1.0, 2.0]), True), (0, 1)),
    (rank_by_branch, (np.array([0.7, 0.9]), np.array([1.0, 2.0]), False), (0, 1)),
]


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=lambda c: getattr(c, "__name__", None))
def test_gradients_agree_with_finite_differences_tape_mode_and_value_and_grad(fn, args, wrt):
    cache.clear_cache()
    got = srcad.grad(fn, wrt=wrt)(*args)
    again = srcad.grad(fn, wrt=wrt)(*args)  # (the kept program, second call)
    assert_gradient_matches_finite_differences(fn, args, wrt)
    as_tuple = (lambda v: v if isinstance(wrt, tuple) else (v,))
    for other in (again, srcad.value_and_grad(fn, wrt=wrt)(*args)[1],
                  srcad.tape.grad(fn, wrt=wrt)(*args)):
        for a, b in zip(as_tuple(other), as_tuple(got)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def _gradient_source(fn, arrays):
    return source_after(fn, ("p",), "gradient", upto=PASSES["gradient"][-1].name,
                        arrays=frozenset(arrays))


def test_an_ode_on_array_elements_runs_as_scalar_code():
    """No unbroadcast, no rate pushed per step, one add into `b_p` per rate after the loop."""
    source = _gradient_source(rates, {("p", 1), ("start", 1)})
    assert "unbroadcast" not in source and "shape_of" not in source
    assert source.count("stack.append(") == 5  # u, v, two products, the trip count
    backward_loop = source[source.index("range(trips"):]
    body = backward_loop[:backward_loop.index("\n        b_p = ")]
    assert "add_at" not in body and "index_adjoint" not in body
    assert backward_loop.count("add_at(b_p, b_p_at") == 4


def test_an_array_also_used_whole_keeps_its_adjoint_added_in_the_loop():
    source = _gradient_source(whole_and_elements, {("p", 1), ("x", 1)})
    assert "b_p_at" not in source


def test_a_rebound_parameter_gives_no_numbers():
    source = _gradient_source(rebound, {("p", 1), ("x", 1)})
    assert "b_p_at" not in source and "unbroadcast" in source


def test_elements_of_an_array_the_function_makes_are_numbers():
    """`y[0]` of the state an RK4 integrator makes from `start` by arithmetic and buffers
    filled element by element: the products of its elements are numbers, no unbroadcast
    per operation."""
    element = re.compile(r"unbroadcast\([^,]+, (item|neg|sin|mul)_\d+\)")
    source = _gradient_source(rk4_pendulum, {("p", 1), ("start", 1)})
    assert "unbroadcast(b_sin" not in source and "unbroadcast(b_neg" not in source, source
    assert not [m for m in element.finditer(source) if "item" in m.group()]
    assert_gradient_matches_finite_differences(  # (tape mode refuses its np.zeros writes)
        rk4_pendulum, (np.array([9.81, 0.3]), np.array([1.0, 0.0])), (0, 1))
    mixed = _gradient_source(rank_by_branch, {("p", 1), ("start", 1)})
    assert [m for m in element.finditer(mixed) if "item" in m.group()], mixed
