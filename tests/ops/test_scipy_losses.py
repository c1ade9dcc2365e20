"""`scipy.special`'s huber, pseudo_huber and Box-Cox transforms (srcad/ops/scipy_special.py):
both arguments at once against central finite differences (the table in
tests/ops/rule_cases_scipy.py checks each alone, in float32 too), lmbda = 0, tape mode
agreeing with source mode to second order, and a Hessian.
"""
import numpy as np
import pytest

special = pytest.importorskip("scipy.special")

import srcad  # noqa: E402
from srcad.api.testing import check_grads  # noqa: E402
from tests.ops.scipy_checks import assert_hessian_matches_finite_differences  # noqa: E402

_R = np.random.default_rng(11)
X = _R.uniform(0.3, 2.0, (3, 4))
LMBDA = np.array([0.0, -0.7, 0.4, 1.3])  # 0: the logarithm's branch
R = 2.0 * _R.standard_normal((3, 4))
DELTA = np.array([0.5, 1.0, 2.0, 1.5])


def losses(delta, r):
    return np.sum(special.huber(delta, r) + special.pseudo_huber(delta, r) ** 2)


def transforms(x, lmbda):
    y = special.boxcox(x, lmbda) + special.boxcox1p(x, lmbda)
    return np.sum(special.inv_boxcox(0.2 * y, lmbda) + special.inv_boxcox1p(0.1 * y, lmbda))


@pytest.mark.parametrize("fn, args", [(losses, (DELTA, R)), (transforms, (X, LMBDA))],
                         ids=["losses", "transforms"])
def test_both_arguments_match_finite_differences(fn, args):
    check_grads(fn, args)


@pytest.mark.parametrize("fn, args", [(losses, (DELTA, R)), (transforms, (X, LMBDA))],
                         ids=["losses", "transforms"])
def test_tape_mode_agrees_with_source_mode_to_second_order(fn, args):
    source = srcad.grad(fn, wrt=(0, 1))(*args)
    tape = srcad.tape.grad(fn, wrt=(0, 1))(*args)
    for got, want in zip(tape, source):
        np.testing.assert_allclose(got, want, rtol=1e-12)

    def slope(a, b):  # nested tapes: one entry of the gradient in the second argument
        return np.ravel(srcad.tape.grad(fn, wrt=1)(a, b))[1]

    size = np.size(args[1])
    hessian_row = np.reshape(srcad.hessian(fn, wrt=1)(*args), (size, size))[1]
    np.testing.assert_allclose(np.ravel(srcad.tape.grad(slope, wrt=1)(*args)), hessian_row,
                               rtol=1e-10)


def test_hessian_matches_finite_differences_of_the_gradient():
    assert_hessian_matches_finite_differences(
        lambda x: transforms(x, LMBDA) + losses(DELTA, x), X[0])
