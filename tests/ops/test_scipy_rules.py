"""SciPy's rules beyond the rule table (tests/ops/rule_cases_scipy.py): loading them lazily,
calling `scipy.stats` methods as users spell them, tape mode, second derivatives, and the
derivatives srcad refuses to take.
"""
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest
import scipy.linalg as linalg
from scipy import special, stats

import srcad
from srcad.errors import UnsupportedDerivativeError
from tests.ops.test_rules import (TOLERANCES, assert_jvp_matches_finite_differences,
                              assert_vjp_matches_finite_differences)


@pytest.fixture
def run_fresh(tmp_path):
    """Run code in a new interpreter (nothing imported yet), from a file (srcad reads the
    source of what it differentiates); its standard output."""
    def run(code: str) -> str:
        script = tmp_path / "fresh.py"
        script.write_text(textwrap.dedent(code))
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout
    return run


# ---- loading lazily ------------------------------------------------------------------------
def test_import_srcad_does_not_import_scipy(run_fresh):
    out = run_fresh("""
        import sys
        import numpy as np
        import srcad
        f = lambda x: np.sum(np.sin(x) ** 2)
        srcad.grad(f)(np.ones(3)), srcad.tape.grad(f)(np.ones(3)), srcad.hessian(f)(np.ones(2))
        print(sorted(m for m in sys.modules if m.split(".")[0] == "scipy"
                     or m.startswith("srcad.ops.scipy")))
    """)
    assert out.strip() == "[]"


FIRST_LOOKUPS = {  # the first SciPy callable srcad looks up, and how
    "ufunc": "registry.vjp_rules(special.gamma)",
    "function": "registry.jvp_rules(special.logsumexp)",
    "bound method": "registry.vjp_rules(stats.norm.logpdf)",
    "linalg": "registry.jvp_rules(linalg.expm)",
    "non-differentiable": "registry.is_nondifferentiable(special.round)",
}


@pytest.mark.parametrize("lookup", FIRST_LOOKUPS.values(), ids=FIRST_LOOKUPS.keys())
def test_first_scipy_lookup_loads_the_rules(run_fresh, lookup):
    out = run_fresh(f"""
        import sys
        import numpy as np
        import scipy.linalg as linalg
        from scipy import special, stats
        from srcad.ops import registry
        loaded = lambda: sorted(m for m in sys.modules if m.startswith("srcad.ops.scipy"))
        numpy_ones = registry.vjp_rules(np.sin), registry.is_nondifferentiable(np.cos)
        before = loaded()
        print(numpy_ones[0] is not None, numpy_ones[1], before, bool({lookup}), loaded())
    """)
    assert out.split() == ["True", "False", "[]", "True", "['srcad.ops.scipy_integrate',",
                           "'srcad.ops.scipy_linalg',", "'srcad.ops.scipy_multivariate',",
                           "'srcad.ops.scipy_spatial',", "'srcad.ops.scipy_special',",
                           "'srcad.ops.scipy_statistics',", "'srcad.ops.scipy_stats']"]


def test_threads_looking_up_at_once_all_find_the_rules(run_fresh):
    """While one thread imports the rules, the others wait for it rather than see a
    half-filled registry."""
    out = run_fresh("""
        import threading
        import scipy.linalg as linalg
        from scipy import special, stats
        from srcad.ops import registry

        wanted = [stats.beta.logsf, linalg.solve_sylvester, special.kl_div, special.erf] * 4
        start, found = threading.Barrier(len(wanted)), []

        def look_up(fn):
            start.wait()
            found.append(registry.vjp_rules(fn) is not None)

        threads = [threading.Thread(target=look_up, args=(fn,)) for fn in wanted]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(len(found), all(found))
    """)
    assert out.split() == ["16", "True"]


def test_source_and_forward_mode_load_the_rules_themselves(run_fresh):
    out = run_fresh("""
        import numpy as np
        import srcad
        from scipy import stats

        def f(x):
            return np.sum(stats.norm.logpdf(x, 1.0, 2.0))

        x = np.array([0.5, 2.0])
        print(*srcad.grad(f)(x).tolist(), float(srcad.jvp(f, (x,), (np.ones(2),))[1]))
    """)
    assert out.split() == ["0.125", "-0.25", "-0.125"]


def test_tape_mode_loads_the_rules_itself(run_fresh):
    out = run_fresh("""
        import numpy as np
        import srcad
        from scipy import special

        print(*srcad.tape.grad(lambda x: np.sum(special.erf(x)))(np.zeros(2)).tolist())
    """)
    np.testing.assert_allclose(np.array(out.split(), float), 2 / np.sqrt(np.pi))


def test_a_rule_registered_before_loading_is_kept(run_fresh):
    out = run_fresh("""
        import numpy as np
        import srcad
        from scipy import special
        from srcad.ops import registry

        srcad.defvjp(special.erf, lambda g, ans, x: 7.0 * g)
        print(srcad.grad(lambda x: special.erf(x))(0.0),
              registry.vjp_rules(special.gamma) is not None)
    """)
    assert out.split() == ["7.0", "True"]


# ---- scipy.stats as users write it: `stats.norm.logpdf(...)` -------------------------------
def norm_all(x, m, s):
    return (stats.norm.logpdf(x, m, s) + stats.norm.pdf(x, loc=m, scale=s)
            + stats.norm.cdf(x, m, s) + stats.norm.logcdf(x, m, s) + stats.norm.sf(x, m, s)
            + stats.norm.logsf(x, m, s))


def t_all(x, df, m, s):
    return (stats.t.logpdf(x, df, m, s) + stats.t.pdf(x, df, loc=m, scale=s)
            + stats.t.cdf(x, 3.0, m, s) + stats.t.logcdf(x, 3.0, m) + stats.t.sf(x, 3.0, m, s)
            + stats.t.logsf(x, 3.0, scale=s))


def gamma_all(x, a, m, s):
    return (stats.gamma.logpdf(x, a, m, s) + stats.gamma.pdf(x, a=a, loc=m, scale=s)
            + stats.gamma.cdf(x, 1.5, m, s) + stats.gamma.logcdf(x, 1.5, m, s)
            + stats.gamma.sf(x, 1.5, m, s) + stats.gamma.logsf(x, 1.5, loc=m, scale=s))


def chi2_all(x, df, m, s):
    return (stats.chi2.logpdf(x, df, m, s) + stats.chi2.pdf(x, df=df, loc=m, scale=s)
            + stats.chi2.cdf(x, 2.5, m, s) + stats.chi2.logcdf(x, 2.5, m, s)
            + stats.chi2.sf(x, 2.5, m, s) + stats.chi2.logsf(x, 2.5, scale=s))


def beta_all(x, a, b, s):
    return (stats.beta.logpdf(x, a, b, 0.0, s) + stats.beta.pdf(x, a, b=b, scale=s)
            + stats.beta.cdf(x, 2.0, 3.0, 0.0, s) + stats.beta.logcdf(x, 2.0, 3.0, 0.0, s)
            + stats.beta.sf(x, 2.0, 3.0, scale=s) + stats.beta.logsf(x, 2.0, 3.0, scale=s))


def poisson_all(k, mu):
    return (stats.poisson.pmf(k, mu) + stats.poisson.logpmf(k, mu) + stats.poisson.cdf(k, mu)
            + stats.poisson.logcdf(k, mu) + stats.poisson.sf(k, mu) + stats.poisson.logsf(k, mu))


def dirichlet_both(x, alpha):
    return stats.dirichlet.logpdf(x, alpha) + stats.dirichlet.pdf(x, alpha)


def mvn_all(x, mean, a):
    cov = a @ a.T + np.eye(2)
    return (stats.multivariate_normal.logpdf(x, mean, cov)
            + stats.multivariate_normal.pdf(x, mean=mean, cov=cov)
            + stats.multivariate_normal.entropy(mean, cov))


_R = np.random.default_rng(5)
AS_WRITTEN = [  # (fn, args, wrt)
    (norm_all, (_R.standard_normal(4), 0.3, 1.7), (0, 1, 2)),
    (t_all, (_R.standard_normal(4), 2.5, 0.3, 1.7), (0, 1, 2, 3)),
    (gamma_all, (_R.uniform(1.0, 3.0, 4), 2.5, 0.1, 1.3), (0, 1, 2, 3)),
    (chi2_all, (_R.uniform(1.0, 3.0, 4), 2.5, 0.1, 1.3), (0, 1, 2, 3)),
    (beta_all, (_R.uniform(0.2, 1.5, 4), 2.5, 1.5, 2.0), (0, 1, 2, 3)),
    (poisson_all, (np.array([0.0, 1.0, 3.0, 4.0]), 2.2), 1),
    (dirichlet_both, (_R.uniform(0.1, 0.4, (2, 3)), np.array([1.5, 2.0, 0.8])), (0, 1)),
    (mvn_all, (_R.standard_normal((4, 2)), _R.standard_normal(2),
                _R.standard_normal((2, 2))), (0, 1, 2)),
]


@pytest.mark.parametrize("fn, args, wrt", AS_WRITTEN, ids=[fn.__name__ for fn, *_ in AS_WRITTEN])
def test_stats_methods_as_users_write_them(fn, args, wrt):
    assert_vjp_matches_finite_differences(fn, args, wrt, **TOLERANCES[np.float64])
    assert_jvp_matches_finite_differences(fn, args, wrt, **TOLERANCES[np.float64])


# ---- tape mode: scipy.special's ufuncs -----------------------------------------------------
def special_ufuncs(x, y):
    a = special.gammaln(x) * special.erf(y) + special.digamma(x) * special.expit(y)
    b = special.xlogy(y, x) + special.betaln(x, x + 1.0) + special.i1e(y) * special.log_ndtr(y)
    c = special.gammainc(1.5, x) + special.iv(1.0, y) + special.rgamma(x) * special.erfcx(y)
    return np.sum(a + b * c)


def test_tape_mode_records_scipy_ufuncs_up_to_second_order():
    x, y = _R.uniform(0.5, 2.0, 3), _R.standard_normal(3)
    source = srcad.grad(special_ufuncs, wrt=(0, 1))(x, y)
    tape = srcad.tape.grad(special_ufuncs, wrt=(0, 1))(x, y)
    for got, want in zip(tape, source):
        np.testing.assert_allclose(got, want, rtol=1e-12)

    def slope(x, y):  # nested tapes: the derivative of one gradient entry
        return srcad.tape.grad(special_ufuncs)(x, y)[1]

    hessian_row = srcad.hessian(special_ufuncs)(x, y)[1]
    np.testing.assert_allclose(srcad.tape.grad(slope)(x, y), hessian_row, rtol=1e-10)


def test_tape_mode_refuses_scipy_functions_that_convert_tensors():
    """logsumexp and scipy.stats convert their input with np.asarray: the gradient would be
    lost, so the tape refuses (it never gives a silent zero)."""
    with pytest.raises(srcad.tape.TapeConversionError):
        srcad.tape.grad(lambda x: special.logsumexp(x))(np.ones(3))


# ---- second derivatives: the rules are differentiable again --------------------------------
def special_composite(x):
    return (np.sum(special.gammaln(x) * special.polygamma(1, x) + special.softmax(x) * x)
            + special.logsumexp(x, b=x) + np.sum(special.log_softmax(x) * special.entr(x)))


def stats_composite(p):
    x = np.array([0.3, 1.2, 2.0])
    return np.sum(stats.t.logpdf(x, p[0], p[1], p[2]) + stats.norm.logcdf(x, p[1], p[2])
                  + stats.gamma.logpdf(x + 1.0, p[0], scale=p[2]))


def norm_composite(p):
    """norm.logpdf in x, loc and scale at once: the rules of its derivatives."""
    x = np.array([[0.3, 1.2], [2.0, -0.4], [0.9, 0.1]])
    return (-np.sum(stats.norm.logpdf(x, p[:2], np.exp(p[2:])))
            + np.sum(stats.norm.logpdf(p, 0.5 * p[::-1], 2.0 + p ** 2)))


def mvn_composite(mean):
    x = np.array([[0.3, -1.0], [1.2, 0.4], [2.0, 0.0]])
    return np.sum(stats.multivariate_normal.logpdf(x, mean, np.array([[2.0, 0.3], [0.3, 1.0]])))


def linalg_composite(a):
    b = np.array([1.0, -2.0, 0.5])
    x = linalg.solve_triangular(a, b, lower=True) + linalg.solve(a, b)
    return (np.sum(x ** 2) + linalg.det(a) + np.sum(linalg.expm(0.3 * a))
            + np.trace(linalg.inv(a) @ linalg.sqrtm(a @ a.T)))


SECOND_ORDER = [
    (special_composite, _R.uniform(0.5, 2.0, 3)),
    (stats_composite, np.array([2.5, 0.4, 1.3])),
    (norm_composite, np.array([0.2, -0.3, 0.4, -0.1])),
    (mvn_composite, np.array([0.2, -0.1])),
    (linalg_composite, 0.3 * _R.standard_normal((3, 3)) + 2.0 * np.eye(3)),
]


@pytest.mark.parametrize("fn, x", SECOND_ORDER, ids=[fn.__name__ for fn, _ in SECOND_ORDER])
def test_hessians_match_finite_differences_of_the_gradient(fn, x):
    gradient = srcad.grad(fn)
    step, flat = 1e-5, x.size
    columns = []
    for e in np.eye(flat):
        e = e.reshape(x.shape)
        columns.append(np.ravel(gradient(x + step * e) - gradient(x - step * e)) / (2 * step))
    expected = np.stack(columns, axis=1)
    hessian = np.reshape(srcad.hessian(fn)(x), (flat, flat))
    np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-6)


def test_a_normal_likelihoods_hessian_is_the_closed_form_and_autograds():
    """The benchmark's 20-parameter NLL: one Hessian-vector program per column."""
    from srcad.bench.workloads import normal_nll, normal_nll_hessian_hand, _normal_nll_args
    theta, x = _normal_nll_args()
    hessian = srcad.hessian(normal_nll)(theta, x)
    np.testing.assert_allclose(hessian, normal_nll_hessian_hand(theta, x), rtol=1e-12,
                               atol=1e-12)
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    import autograd.scipy.stats as astats
    twin = types.FunctionType(normal_nll.__code__, dict(normal_nll.__globals__, np=anp,
                                                        stats=astats), "normal_nll")
    np.testing.assert_allclose(hessian, autograd.hessian(twin)(theta, x), rtol=1e-12,
                               atol=1e-12)


# ---- derivatives srcad refuses -------------------------------------------------------------
REFUSED = [  # (fn, args, wrt, message)
    (lambda a, x: special.gammainc(a, x), (1.5, 0.7), 0, "gammainc` with respect to `a"),
    (lambda v, x: special.iv(v, x), (1.5, 0.7), 0, "iv` with respect to `v"),
    (lambda s, q: special.zeta(s, q), (2.5, 0.7), 0, "zeta` with respect to `x"),
    (lambda x, df: stats.t.cdf(x, df), (0.3, 2.5), 1, "t.cdf` with respect to `df"),
    (lambda x, a: stats.gamma.logsf(x, a), (0.3, 2.5), 1, "gamma.logsf` with respect to `a"),
    (lambda x: special.logsumexp(x, return_sign=True)[0], (np.ones(3),), 0, "return_sign"),
    (lambda m: stats.multivariate_normal.logpdf(np.zeros(2), m, np.eye(2), True),
     (np.ones(2),), 0, "allow_singular"),
    (lambda c: stats.multivariate_normal.pdf(np.zeros(2), cov=c), (np.eye(2) + np.tri(2),),
     0, "symmetric"),
    (lambda a: np.sum(linalg.sqrtm(a)), (np.stack([np.eye(2)] * 2) * 2.0,), 0, "one matrix"),
    (lambda a: np.sum(linalg.solve(a, np.ones((2, 2, 1)))), (np.stack([np.eye(2)] * 2),), 0,
     "one matrix"),
]


@pytest.mark.parametrize("fn, args, wrt, message", REFUSED, ids=[r[3] for r in REFUSED])
def test_derivatives_without_a_rule_raise(fn, args, wrt, message):
    with pytest.raises(UnsupportedDerivativeError, match=message):
        srcad.grad(fn, wrt=wrt)(*args)
    tangents = tuple(np.ones_like(a) if i == wrt else None for i, a in enumerate(args))
    with pytest.raises(UnsupportedDerivativeError, match=message):
        srcad.jvp(fn, args, tangents)


def test_a_parameter_without_a_derivative_may_sit_beside_differentiated_values():
    """A list holding x and gamma.cdf's shape `a` is differentiated as a whole; `a`'s
    derivative, which srcad does not have, reaches only the constant it came from, so x's
    derivative stands, to second order. Differentiated in `a`, it raises (as in the tape)."""
    def cdf_of_list(x, a):
        values = [x, a]
        return np.sum(stats.gamma.cdf(*values))
    x, a = np.array([0.4, 1.3]), np.array([2.5, 1.5])
    expected = stats.gamma.pdf(x, a)
    np.testing.assert_allclose(srcad.grad(cdf_of_list)(x, a), expected, rtol=1e-12)
    assert srcad.jvp(cdf_of_list, (x, a), (np.ones(2), None))[1] == pytest.approx(
        np.sum(expected), rel=1e-12)
    np.testing.assert_allclose(np.diag(srcad.hessian(cdf_of_list)(x, a)),
                               expected * ((a - 1) / x - 1), rtol=1e-10)
    with pytest.raises(UnsupportedDerivativeError, match="gamma.cdf` with respect to `a"):
        srcad.grad(cdf_of_list, wrt=1)(x, a)
    with pytest.raises(UnsupportedDerivativeError, match="gamma.cdf` with respect to `a"):
        srcad.jvp(cdf_of_list, (x, a), (None, np.ones(2)))
    variable = srcad.Variable(a)
    with srcad.GradientTape() as tape:
        y = np.sum(special.gammainc(variable, x))
    with pytest.raises(UnsupportedDerivativeError, match="gammainc` with respect to `a"):
        tape.gradient(y, variable)


def test_nondifferentiable_scipy_functions_are_constants():
    fn = lambda x: np.sum(special.round(x) * x + special.gammasgn(x) * x ** 2)  # noqa: E731
    x = np.array([-1.7, 0.4, 2.6])
    np.testing.assert_allclose(srcad.grad(fn)(x), np.round(x) + 2 * special.gammasgn(x) * x)
