"""The analyses' fixpoints (activity, numbers, ranks, aliasing liveness) skip in their later
sweeps what cannot change: programs whose answer needs more than one sweep, checked
against central finite differences."""
import numpy as np
import pytest

from tests.checks import assert_gradient_matches_finite_differences


def read_before_it_varies(x, w):
    a = np.ones(3)
    total = 0.0
    for i in range(3):
        total = total + np.sum(a * x)  # (`a` varies from the second trip on)
        a = x * w[i]
    return total


def partly_unpacked(x, w):
    pair = (x * 2.0, w * 3.0)
    first, second = pair
    kept = (first, second)
    a, _ = kept
    return np.sum(a * a)


def numbers_made_in_a_loop(x, w):
    s = 0.0
    for i in range(3):
        s = s + np.sum(x * w[i])
    y = x * s
    y[0] = s * 2.0
    return np.sum(y * y)


def written_after_it_is_read(x, w):
    y = np.zeros(3)
    z = y * 2.0
    y[0] = x[0]
    if x[1] > 0.0:
        y[1] = w[1, 1] * x[1]
    return np.sum(z) + np.sum(y * x)


@pytest.mark.parametrize("fn", [read_before_it_varies, partly_unpacked, numbers_made_in_a_loop,
                                written_after_it_is_read], ids=lambda fn: fn.__name__)
def test_a_fixpoint_needing_several_sweeps_gives_the_gradient(fn):
    x = np.array([0.3, 0.7, -0.4])
    w = np.arange(9.0).reshape(3, 3) / 10.0 + 0.1
    assert_gradient_matches_finite_differences(fn, (x, w), (0, 1))
