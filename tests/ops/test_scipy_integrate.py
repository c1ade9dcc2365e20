"""`scipy.integrate`'s trapezoid and simpson (srcad/ops/scipy_integrate.py): derivatives in
each argument and option against central finite differences, in reverse and forward mode,
a Hessian, and simpson's refusal in x. tests/ops/rule_cases_scipy.py holds the table's cases.
"""
import numpy as np
import pytest

integrate = pytest.importorskip("scipy.integrate")

import srcad  # noqa: E402
from srcad.errors import UnsupportedDerivativeError  # noqa: E402
from tests.ops.scipy_checks import (  # noqa: E402
    assert_hessian_matches_finite_differences, check_both_modes)

_R = np.random.default_rng(3)
Y = _R.standard_normal((3, 6))
Y_TALL = _R.standard_normal((5, 2))
GRID = np.cumsum(_R.uniform(0.2, 1.0, 6))
GRIDS = np.cumsum(_R.uniform(0.2, 1.0, (3, 6)), axis=1)
GRID_TALL = np.cumsum(_R.uniform(0.2, 1.0, 5))

CASES = {  # name: (fn, args)
    "trapezoid": (lambda y: integrate.trapezoid(y), (Y,)),
    "trapezoid_in_x": (lambda y, x: integrate.trapezoid(y, x), (Y, GRID)),
    "trapezoid_in_grids": (lambda y, x: integrate.trapezoid(y, x, axis=-1), (Y, GRIDS)),
    "trapezoid_axis_0": (lambda y, x: integrate.trapezoid(y, x, axis=0), (Y_TALL, GRID_TALL)),
    "trapezoid_in_dx": (lambda y, dx: integrate.trapezoid(y, dx=dx, axis=0), (Y, 0.3)),
    "trapezoid_one_sample": (lambda y: integrate.trapezoid(y, axis=0), (Y[:1],)),
    "simpson_odd": (lambda y: integrate.simpson(y, axis=0), (Y_TALL,)),
    "simpson_even": (lambda y: integrate.simpson(y), (Y,)),
    "simpson_two": (lambda y: integrate.simpson(y, dx=0.4), (Y[:, :2],)),
    "simpson_on_x": (lambda y: integrate.simpson(y, x=GRID), (Y,)),
    "simpson_on_grids": (lambda y: integrate.simpson(y, x=GRIDS), (Y,)),
    "simpson_axis_0_dx": (lambda y: integrate.simpson(y, x=GRID_TALL, axis=0, dx=0.5),
                          (Y_TALL,)),
}


@pytest.mark.parametrize("name", CASES)
def test_derivatives_match_finite_differences_in_both_modes(name):
    check_both_modes(*CASES[name])


def quadratures(y, x):
    return (np.sum(integrate.trapezoid(y ** 2, x) ** 2)
            + np.sum(np.exp(integrate.simpson(np.sin(y), x=GRID[:4]))))


def test_hessian_matches_finite_differences_of_the_gradient():
    v = np.concatenate([Y[:2, :4].ravel(), GRID[:4]])  # (y and x together)
    assert_hessian_matches_finite_differences(lambda v: quadratures(v[:8].reshape(2, 4), v[8:]),
                                              v)


def test_simpson_refuses_its_derivative_in_x():
    with pytest.raises(UnsupportedDerivativeError, match="scipy.integrate.simpson.*`x`"):
        srcad.grad(lambda x: integrate.simpson(Y[0], x=x))(GRID)
