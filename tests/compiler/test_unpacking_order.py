"""`a, b = e0, e1` bound name by name where Python's order allows it (frontend/normalize.py
`_unpacked_in_order`), and through temporaries where a later value reads an earlier name
or calls what might: gradients checked against central differences."""
import numpy as np
import pytest

from srcad.compiler.pipeline import source_after
from tests.checks import assert_gradient_matches_finite_differences


def independent(x, w):
    p, q = x * w, np.sin(x) + 0.1
    return np.sum(p * q)


def swapped(x, w):
    a, b = x * w, np.cos(x)
    a, b = b, a * 2.0  # (reads `a` after `a` is bound: Python makes both values first)
    return np.sum(a * b + a)


def fibonacci_like(x):
    a, b = x, 1.0 + 0.5 * x
    for _ in range(4):
        a, b = b, a + b * 0.5
    return np.sum(a * b)


def in_a_loop(x, w):
    total = 0.0
    h = x
    for _ in range(3):
        u, v = h * w, np.tanh(h)
        h, total = u + v, total + np.sum(u * v)
    return total + np.sum(h)


def reads_through_a_closure(x):
    a = x * 0.5

    def scaled():
        return a * 3.0  # (reads `a` when called: the one before the unpacking)

    a, b = np.sin(x), scaled()
    return np.sum(a * b)


def nested_targets(x):
    (a, b), c = (x * 2.0, np.exp(x)), x + 1.0
    return np.sum(a * b * c)


def repeated_target(x):
    a, a = x * 2.0, x * 3.0  # (the last wins)
    return np.sum(a * a)


CASES = [(independent, 1), (swapped, 1), (fibonacci_like, 0), (in_a_loop, 1),
         (reads_through_a_closure, 0), (nested_targets, 0), (repeated_target, 0)]


@pytest.mark.parametrize("fn, arguments", CASES, ids=[fn.__name__ for fn, _ in CASES])
def test_gradients_match_finite_differences(fn, arguments):
    x = np.linspace(0.2, 1.1, 5)
    args = (x, 0.7)[:arguments + 1]
    assert_gradient_matches_finite_differences(fn, args, 0)


def test_independent_values_are_bound_without_temporaries():
    simple = source_after(independent, ("x",), "rev", "frontend")
    assert "    p = x * w\n" in simple and "    q = sin_0 + 0.1\n" in simple


def test_a_value_reading_a_name_rebound_before_it_reads_the_version_before():
    simple = source_after(swapped, ("x",), "rev", "frontend")
    assert "    a_1 = b\n    b_1 = a * 2.0\n" in simple
    x = np.linspace(0.2, 1.1, 5)
    b = np.cos(x)
    assert np.isclose(swapped(x, 0.7), np.sum(b * (x * 0.7 * 2.0) + b))


def test_in_a_loop_a_value_reading_a_name_bound_before_it_goes_through_a_temporary():
    simple = source_after(fibonacci_like, ("x",), "rev", "frontend")
    assert "        a, b = tuple_" in simple


def test_a_call_that_may_read_a_name_keeps_pythons_order():
    simple = source_after(reads_through_a_closure, ("x",), "rev", "frontend")
    assert "    scaled_1 = scaled(a=a)\n    a_1 = sin_0\n" in simple
    x = np.linspace(0.2, 1.1, 5)
    assert np.isclose(reads_through_a_closure(x), np.sum(np.sin(x) * x * 1.5))
