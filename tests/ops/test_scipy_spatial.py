"""`scipy.spatial.distance`'s cdist and pdist (srcad/ops/scipy_spatial.py): every metric in
both arguments against central finite differences, in reverse and forward mode, Hessians,
the convention at coincident points, and the refused metrics and options.
tests/ops/rule_cases_scipy.py holds the table's cases.
"""
import numpy as np
import pytest

distance = pytest.importorskip("scipy.spatial.distance")

import srcad  # noqa: E402
from srcad.errors import UnsupportedDerivativeError  # noqa: E402
from tests.ops.scipy_checks import (  # noqa: E402
    assert_hessian_matches_finite_differences, check_both_modes)

_R = np.random.default_rng(5)
XA, XB = _R.standard_normal((3, 4)), _R.standard_normal((5, 4))
METRICS = [("euclidean", {}), ("sqeuclidean", {}), ("cityblock", {}), ("minkowski", {}),
           ("minkowski", {"p": 1.0}), ("minkowski", {"p": 1.5}), ("minkowski", {"p": 3.0}),
           ("cosine", {})]
IDS = [metric + "".join(f"_p{p}" for p in kwargs.values()) for metric, kwargs in METRICS]


@pytest.mark.parametrize("metric, kwargs", METRICS, ids=IDS)
def test_cdist_and_pdist_match_finite_differences(metric, kwargs):
    def pairs(a, b):
        return distance.cdist(a, b, metric, **kwargs)

    def condensed(x):
        return distance.pdist(x, metric, **kwargs)

    check_both_modes(pairs, (XA, XB))
    check_both_modes(condensed, (XB,))


@pytest.mark.parametrize("metric, kwargs", [("euclidean", {}), ("minkowski", {"p": 1.5}),
                                            ("cosine", {})], ids=["euclidean", "p1.5", "cosine"])
def test_hessian_matches_finite_differences_of_the_gradient(metric, kwargs):
    def energy(x):
        return (np.sum(np.exp(-distance.pdist(x, metric, **kwargs)))
                + np.sum(distance.cdist(x, XA[:2, :2], metric, **kwargs) ** 2))

    assert_hessian_matches_finite_differences(energy, XB[:3, :2])


def test_coincident_points_have_derivative_zero_as_norms_do():
    """The euclidean distance of equal points has no derivative: 0, as np.linalg.norm's."""
    x = np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 0.5]])
    gradient = srcad.grad(lambda x: np.sum(distance.pdist(x)))(x)
    by_norm = srcad.grad(lambda x: sum(np.linalg.norm(x[i] - x[j])
                                       for i, j in ((0, 1), (0, 2), (1, 2))))(x)
    np.testing.assert_allclose(gradient, by_norm, rtol=1e-12)
    assert np.all(np.isfinite(gradient))


REFUSED = {  # name: (fn, words the message names)
    "chebyshev": (lambda a: distance.cdist(a, XB, "chebyshev"), "metric='chebyshev'"),
    "callable_metric": (lambda a: distance.pdist(a, lambda u, v: np.sum(u - v)), "metric="),
    "weights": (lambda a: distance.cdist(a, XB, "minkowski", p=3.0, w=np.ones(4)), "w="),
}


@pytest.mark.parametrize("name", REFUSED)
def test_refusals_name_the_function_the_option_and_the_fix(name):
    fn, words = REFUSED[name]
    with pytest.raises(UnsupportedDerivativeError) as raised:
        srcad.grad(lambda a: np.sum(fn(a)))(XA)
    message = str(raised.value)
    assert "scipy.spatial.distance." in message and words in message, message
