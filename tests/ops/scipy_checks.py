"""Checks the SciPy rule tests share (tests/ops/test_scipy_*.py): a function's derivatives
in every argument against central finite differences, in reverse and forward mode, and its
Hessian against finite differences of its gradient."""
import numpy as np

import srcad
from srcad.api.testing import check_grads


def check_every_argument(fn, args):
    """check_grads of sum(sin(fn(...))) in each argument. (Named parameters: check_grads
    finds no argument to check in a function of `*args`.)"""
    scalar = [lambda a: np.sum(np.sin(fn(a))),
              lambda a, b: np.sum(np.sin(fn(a, b))),
              lambda a, b, c: np.sum(np.sin(fn(a, b, c)))][len(args) - 1]
    check_grads(scalar, args, wrt=tuple(range(len(args))))


def assert_jvp_matches_finite_differences(fn, args, eps=1e-6):
    """srcad.jvp along random tangents of every argument against central differences."""
    rng = np.random.default_rng(1)
    tangents = tuple(rng.standard_normal(np.shape(a)) if np.ndim(a) else float(
        rng.standard_normal()) for a in args)
    value, tangent = srcad.jvp(fn, args, tangents)
    ahead = fn(*(a + eps * t for a, t in zip(args, tangents)))
    behind = fn(*(a - eps * t for a, t in zip(args, tangents)))
    np.testing.assert_allclose(value, fn(*args), rtol=1e-12)
    np.testing.assert_allclose(tangent, (ahead - behind) / (2 * eps), rtol=1e-5, atol=1e-7)


def check_both_modes(fn, args):
    check_every_argument(fn, args)
    assert_jvp_matches_finite_differences(fn, args)


def assert_hessian_matches_finite_differences(fn, x, step=1e-5):
    """srcad.hessian of a scalar `fn` of one array against central differences of
    srcad.grad, one column per element of x."""
    gradient = srcad.grad(fn)
    columns = [np.ravel(gradient(x + step * e.reshape(x.shape))
                        - gradient(x - step * e.reshape(x.shape))) / (2 * step)
               for e in np.eye(x.size)]
    hessian = np.reshape(srcad.hessian(fn)(x), (x.size, x.size))
    np.testing.assert_allclose(hessian, np.stack(columns, axis=1), rtol=1e-5, atol=1e-6)
