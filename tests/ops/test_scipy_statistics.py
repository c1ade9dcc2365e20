"""`scipy.stats`' sample statistics (srcad/ops/scipy_statistics.py): each function with its
options against central finite differences, in reverse mode (check_grads) and forward mode
(jvp), a Hessian, and the options srcad refuses. tests/ops/rule_cases_scipy.py holds the
table's cases (float32 too).
"""
import numpy as np
import pytest

stats = pytest.importorskip("scipy.stats")

import srcad  # noqa: E402
from srcad.errors import UnsupportedDerivativeError  # noqa: E402
from tests.ops.scipy_checks import (  # noqa: E402
    assert_hessian_matches_finite_differences, check_both_modes)

_R = np.random.default_rng(7)
A = _R.standard_normal((4, 5))
P = _R.uniform(0.5, 2.0, (4, 5))
W = _R.uniform(0.5, 2.0, (4, 5))
Q = _R.uniform(0.5, 2.0, (4, 5))


CASES = {  # name: (fn, args): every option the rules take
    "moment_3": (lambda a: stats.moment(a, 3), (A,)),
    "moment_0_and_1": (lambda a: stats.moment(a, 0) + stats.moment(a, 1, axis=1)[:, None],
                       (A,)),
    "moment_about_center": (lambda a: stats.moment(a, 4, axis=1, center=0.3, keepdims=True),
                            (A,)),
    "moment_axis_none": (lambda a: stats.moment(a, 2, axis=None), (A,)),
    "moment_axes": (lambda a: stats.moment(a, order=3, axis=(0, 1)), (A,)),
    "skew": (lambda a: stats.skew(a), (A,)),
    "skew_unbiased": (lambda a: stats.skew(a, axis=1, bias=False, keepdims=True), (A,)),
    "kurtosis": (lambda a: stats.kurtosis(a, axis=-1), (A,)),
    "kurtosis_pearson_unbiased": (lambda a: stats.kurtosis(a, None, False, False), (A,)),
    "sem": (lambda a: stats.sem(a), (A,)),
    "sem_ddof": (lambda a: stats.sem(a, axis=1, ddof=2, keepdims=True), (A,)),
    "variation": (lambda a: stats.variation(a), (P,)),
    "variation_ddof": (lambda a: stats.variation(a, axis=None, ddof=1), (P,)),
    "zscore": (lambda a: stats.zscore(a), (A,)),
    "zscore_ddof_axis": (lambda a: stats.zscore(a, axis=1, ddof=1), (A,)),
    "zscore_axis_none": (lambda a: stats.zscore(a, None), (A,)),
    "gmean": (lambda a: stats.gmean(a), (P,)),
    "gmean_weights": (lambda a, w: stats.gmean(a, 1, None, w, keepdims=True), (P, W)),
    "gmean_float_dtype": (lambda a: stats.gmean(a, dtype=np.float64), (P,)),
    "hmean": (lambda a: stats.hmean(a, axis=None), (P,)),
    "hmean_weights": (lambda a: stats.hmean(a, axis=1, weights=W), (P,)),
    "pmean": (lambda a, p: stats.pmean(a, p), (P, 2.5)),
    "pmean_negative_weights": (lambda a, p: stats.pmean(a, p, axis=1, weights=W), (P, -1.5)),
    "pmean_zero": (lambda a: stats.pmean(a, 0.0, weights=W), (P,)),
    "entropy": (lambda p: stats.entropy(p), (P,)),
    "entropy_relative": (lambda p, q: stats.entropy(p, q, axis=1), (P, Q)),
    "entropy_base": (lambda p, q, b: stats.entropy(p, q, b, keepdims=True), (P, Q, 3.0)),
    "entropy_base_alone": (lambda p, b: stats.entropy(p, base=b, axis=None), (P, 2.0)),
}


@pytest.mark.parametrize("name", CASES)
def test_derivatives_match_finite_differences_in_both_modes(name):
    check_both_modes(*CASES[name])


def moments_composite(a):
    return (stats.skew(a) @ stats.kurtosis(a, bias=False) + np.sum(stats.moment(a, 3))
            + np.sum(stats.zscore(a, axis=1) * A[:3, :3])
            + np.sum(stats.sem(a) * stats.variation(a + 3)))


def means_composite(a):
    return (np.sum(stats.gmean(a, weights=W[:3, :3])) + np.sum(stats.hmean(a, axis=1))
            + np.sum(stats.pmean(a, 1.7)) + np.sum(stats.entropy(a, Q[:3, :3])))


@pytest.mark.parametrize("fn, x", [(moments_composite, A[:3, :3]),
                                   (means_composite, P[:3, :3])])
def test_hessian_matches_finite_differences_of_the_gradient(fn, x):
    assert_hessian_matches_finite_differences(fn, x)


def test_equal_elements_give_sem_and_variation_the_subgradient_zero():
    same = np.full(4, 2.0)
    np.testing.assert_array_equal(srcad.grad(lambda a: stats.sem(a))(same), np.zeros(4))
    np.testing.assert_array_equal(srcad.grad(lambda a: stats.variation(a))(same), np.zeros(4))


REFUSED = {  # name: (fn, args, words the message names)
    "nan_policy_omit": (lambda a: stats.skew(a, nan_policy="omit"), (A,), "nan_policy='omit'"),
    "integer_dtype": (lambda a: stats.gmean(a, dtype=np.int64), (P,), "dtype"),
    "several_orders": (lambda a: np.sum(stats.moment(a, [2, 3])), (A,), "one order"),
    "pmean_in_p_at_zero": (lambda p: stats.pmean(P, p), (0.0,), "p = 0"),
    "complex": (lambda a: np.real(stats.kurtosis(a)).sum(), (A + 1j,), "complex"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_refusals_name_the_function_and_the_fix(name):
    fn, args, words = REFUSED[name]
    with pytest.raises(UnsupportedDerivativeError) as raised:
        srcad.grad(lambda *a: np.sum(fn(*a)))(*args)
    message = str(raised.value)
    assert "scipy.stats." in message and words in message, message


def test_weights_of_hmean_and_pmean_are_keyword_only_and_refused_when_differentiated():
    """weights is keyword-only in hmean and pmean: no rule slot answers for it, and the
    transforms refuse a differentiated value there rather than lose its derivative."""
    with pytest.raises(srcad.errors.MissingRuleError):
        srcad.grad(lambda w: np.sum(stats.hmean(P, weights=w)))(W)


def test_tape_mode_refuses_scipy_stats_rather_than_lose_the_gradient():
    """SciPy converts a tape's tensor with np.asarray (as for logsumexp): the tape refuses."""
    with pytest.raises(srcad.tape.TapeConversionError):
        srcad.tape.grad(lambda a: np.sum(stats.skew(a)))(A)
