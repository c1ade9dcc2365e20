"""Rule cases for SciPy: `scipy.special`, `scipy.stats` and `scipy.linalg`.

Importing this module imports SciPy, and the first lookup of a SciPy callable loads srcad's
SciPy rules (srcad/ops/registry.py). This module makes that lookup when it is imported,
so that the registry tests of tests/ops/test_rules.py see SciPy's rules whatever runs first, and
the rules are never loaded into the tables test_case_reaches_its_rule swaps in for a while
(they would be lost with them).

A bound method such as `stats.norm.logpdf` is made afresh at each attribute access, and
tests/ops/test_rules.py checks that a row reaches its rule by identity, so the `scipy.stats`
rows call the methods through `_Methods` namespaces made once here: `norm.logpdf(x)` reads
as user code and finds the same object each time. tests/ops/test_scipy_rules.py calls each
method as users spell it, `stats.norm.logpdf(...)`, too.
"""
import inspect
import sys
import types

import numpy as np
import scipy.integrate as integrate
import scipy.linalg as linalg
import scipy.spatial.distance as distance
from scipy import special, stats

from srcad.ops import registry
from tests.ops.rule_table import DOMAINS, Case, binary, on, unary

# Load SciPy's rules now, not during a test that swaps the registry's tables for a while.
registry.vjp_rules(special.gamma)

DOMAINS["probability"] = lambda rng, shape: rng.uniform(0.05, 0.95, shape)
DOMAINS["count"] = lambda rng, shape: rng.integers(0, 6, shape).astype(float)
DOMAINS["small"] = lambda rng, shape: rng.uniform(-0.1, 0.1, shape)
DOMAINS["above_two"] = lambda rng, shape: rng.uniform(2.2, 3.0, shape)
# Components of points of a 3-part simplex, the last one left out: they sum to under 0.9.
DOMAINS["simplex_part"] = lambda rng, shape: rng.uniform(0.05, 0.45, shape)
# Square matrices (last two axes) near 2 I: well conditioned, real square roots, and the
# spectra of any two sum away from 0 (Sylvester equations are solvable).
DOMAINS["near_2i"] = lambda rng, shape: 0.3 * rng.standard_normal(shape) + 2.0 * np.eye(shape[-1])

SHAPES = [None, (), (5,), (2, 3)]
PAIRS = [(None, None), ((), ()), ((4,), (4,)), ((3, 1), (1, 4)), (None, (2, 3))]

# ---- scipy.special -------------------------------------------------------------------------
SPECIAL_UNARY = [
    (special.gamma, lambda x: special.gamma(x), "positive"),
    (special.gammaln, lambda x: special.gammaln(x), "positive"),
    (special.digamma, lambda x: special.digamma(x), "positive"),
    (special.digamma, lambda x: special.psi(x - 2.6), "positive"),  # negative arguments
    (special.rgamma, lambda x: special.rgamma(x), "real"),
    (special.multigammaln, lambda x: special.multigammaln(x + 1.0, 3), "positive"),
    (special.polygamma, lambda x: special.polygamma(1, x), "positive"),
    (special.polygamma, lambda x: special.polygamma(3, x), "positive"),
    (special.zeta, lambda q: special.zeta(2.5, q), "positive"),
    # the ufunc zeta calls, which tape mode sees; its rules are zeta's
    (special._ufuncs._zeta, lambda q: special._ufuncs._zeta(2.5, q), "positive"),
    (special.erf, lambda x: special.erf(x), "real"),
    (special.erfc, lambda x: special.erfc(x), "real"),
    (special.erfinv, lambda x: special.erfinv(x), "unit"),
    (special.erfcinv, lambda x: special.erfcinv(x), "probability"),
    (special.erfcinv, lambda x: special.erfcinv(x + 1.0), "probability"),
    (special.erfcx, lambda x: special.erfcx(x), "real"),
    (special.ndtr, lambda x: special.ndtr(x), "real"),
    (special.log_ndtr, lambda x: special.log_ndtr(x), "real"),
    (special.log_ndtr, lambda x: special.log_ndtr(x - 30.0), "real"),  # far in the tail
    (special.ndtri, lambda x: special.ndtri(x), "probability"),
    (special.i0, lambda x: special.i0(x), "real"),
    (special.i1, lambda x: special.i1(x), "real"),
    (special.i0e, lambda x: special.i0e(x), "nonzero"),
    (special.i1e, lambda x: special.i1e(x), "nonzero"),
    (special.j0, lambda x: special.j0(x), "real"),
    (special.j1, lambda x: special.j1(x), "real"),
    (special.y0, lambda x: special.y0(x), "positive"),
    (special.y1, lambda x: special.y1(x), "positive"),
    (special.iv, lambda x: special.iv(1.5, x), "positive"),
    (special.iv, lambda x: special.iv(2, x), "real"),
    (special.ive, lambda x: special.ive(0.5, x), "positive"),
    (special.ive, lambda x: special.ive(3, x), "nonzero"),
    (special.jv, lambda x: special.jv(2.5, x), "positive"),
    (special.yv, lambda x: special.yv(1.5, x), "positive"),
    (special.yn, lambda x: special.yn(2, x), "positive"),
    (special.yn, lambda x: special.yn(0, x) * special.yn(1, x), "positive"),
    (special.betainc, lambda x: special.betainc(2.5, 0.7, x), "probability"),
    (special.expit, lambda x: special.expit(x), "real"),
    (special.logit, lambda x: special.logit(x), "probability"),
    (special.log_expit, lambda x: special.log_expit(x), "real"),
    (special.entr, lambda x: special.entr(x), "positive"),
    (special.gammainc, lambda x: special.gammainc(1.7, x), "positive"),
    (special.gammainc, lambda x: special.gammainc(60.0, x * 40.0), "positive"),  # large a
    (special.gammaincc, lambda x: special.gammaincc(0.6, x), "positive"),
]
SPECIAL_BINARY = [
    (special.beta, lambda a, b: special.beta(a, b), "positive", "positive"),
    (special.betaln, lambda a, b: special.betaln(a, b), "positive", "positive"),
    (special.xlogy, lambda x, y: special.xlogy(x, y), "real", "positive"),
    (special.xlogy, lambda x, y: special.xlogy(x, y), "with_zero", "positive"),
    (special.xlog1py, lambda x, y: special.xlog1py(x, y), "real", "positive"),
    (special.xlog1py, lambda x, y: special.xlog1py(x, y), "with_zero", "probability"),
    (special.rel_entr, lambda x, y: special.rel_entr(x, y), "positive", "positive"),
    (special.kl_div, lambda x, y: special.kl_div(x, y), "positive", "positive"),
    (special.huber, lambda d, r: special.huber(d, r), "positive", "real"),
    (special.pseudo_huber, lambda d, r: special.pseudo_huber(d, r), "positive", "real"),
    (special.boxcox, lambda x, lm: special.boxcox(x, lm), "positive", "exponent"),
    (special.boxcox, lambda x, lm: special.boxcox(x, 0.0 * lm), "positive", "exponent"),
    (special.boxcox1p, lambda x, lm: special.boxcox1p(x, lm), "positive", "exponent"),
    (special.inv_boxcox, lambda y, lm: special.inv_boxcox(y, lm), "small", "unit"),
    (special.inv_boxcox, lambda y, lm: special.inv_boxcox(y, 0.0 * lm), "small", "unit"),
    (special.inv_boxcox1p, lambda y, lm: special.inv_boxcox1p(y, lm), "small", "unit"),
]
IN_THE_SECOND = [  # the first argument (an order, a shape) has no derivative srcad takes
    (special.polygamma, lambda n, x: special.polygamma(n, x), "count", "positive"),
    (special.zeta, lambda s, q: special.zeta(s, q), "above_one", "positive"),
    (special.gammainc, lambda a, x: special.gammainc(a, x), "positive", "positive"),
    (special.gammaincc, lambda a, x: special.gammaincc(a, x), "positive", "positive"),
    (special.yn, lambda n, x: special.yn(n, x), "count", "positive"),
    (special.iv, lambda v, x: special.iv(v, x), "positive", "positive"),
    (special.ive, lambda v, x: special.ive(v, x), "positive", "positive"),
    (special.jv, lambda v, x: special.jv(v, x), "positive", "positive"),
    (special.yv, lambda v, x: special.yv(v, x), "positive", "positive"),
]
ON_CUBE = [  # x of shape (2, 3, 4)
    (special.logsumexp, lambda x: special.logsumexp(x)),
    (special.logsumexp, lambda x: special.logsumexp(x, axis=1)),
    (special.logsumexp, lambda x: special.logsumexp(x, -1, keepdims=True)),
    (special.logsumexp, lambda x: special.logsumexp(x, axis=(0, 2))),
    (special.logsumexp, lambda x: special.logsumexp(x, axis=(0, 2), keepdims=True)),
    (special.logsumexp, lambda x: special.logsumexp(x, keepdims=True)),
    (special.softmax, lambda x: special.softmax(x)),
    (special.softmax, lambda x: special.softmax(x, axis=1)),
    (special.softmax, lambda x: special.softmax(x, axis=(0, 2)) * x),
    (special.log_softmax, lambda x: special.log_softmax(x)),
    (special.log_softmax, lambda x: special.log_softmax(x, axis=-1)),
    (special.log_softmax, lambda x: special.log_softmax(x, (1, 2)) * x),
]
WEIGHTED = [  # logsumexp with weights b: (fn, shape pairs)
    (lambda a, b: special.logsumexp(a, b=b), [((4,), (4,)), ((2, 3), (3,))]),
    (lambda a, b: special.logsumexp(a, axis=0, b=b), [((3, 4), (3, 1)), ((4,), (2, 4))]),
    (lambda a, b: special.logsumexp(a, 1, b, True), [((2, 3), (2, 3))]),
]

# ---- scipy.stats ---------------------------------------------------------------------------
_Methods = types.SimpleNamespace  # a distribution's methods, each made once (see above)
_DENSITIES = ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf")
norm, t, gamma, chi2, beta = (
    _Methods(**{name: getattr(dist, name) for name in _DENSITIES})
    for dist in (stats.norm, stats.t, stats.gamma, stats.chi2, stats.beta))
poisson = _Methods(**{name: getattr(stats.poisson, name)
                      for name in ("pmf", "logpmf", "cdf", "logcdf", "sf", "logsf")})
dirichlet = _Methods(pdf=stats.dirichlet.pdf, logpdf=stats.dirichlet.logpdf)
multivariate_normal = _Methods(pdf=stats.multivariate_normal.pdf,
                               logpdf=stats.multivariate_normal.logpdf,
                               entropy=stats.multivariate_normal.entropy)


def _rows(primal, fn, domains, shapes, wrts):
    return [Case(primal, fn, tuple(zip(domains, shape)), wrt) for shape in shapes for wrt in wrts]


X_LOC_SCALE = [((4,), None, None), ((3, 1), (4,), ()), (None, None, None)]
ALL = (0, 1, 2, (0, 1, 2))


def t_logpdf(x, df, m, s):
    return t.logpdf(x, df, m, s)


def t_pdf(x, df, m, s):
    return t.pdf(x, df=df, loc=m, scale=s)


def t_cdf(x, df, m, s):
    return t.cdf(x, df, m, s) + t.sf(x, df, m, s) * 2.0


def t_logcdf(x, df, m, s):
    return t.logcdf(x, df, m, s) + t.logsf(x, df, m, s) * 2.0


def gamma_logpdf(x, a, m, s):
    return gamma.logpdf(x, a, m, s)


def gamma_pdf(x, a, m, s):
    return gamma.pdf(x, a=a, loc=m, scale=s)


def gamma_cdf(x, a, m, s):
    return gamma.cdf(x, a, m, s) + gamma.sf(x, a, m, s) * 2.0


def gamma_logcdf(x, a, m, s):
    return gamma.logcdf(x, a, m, s) + gamma.logsf(x, a, m, s) * 2.0


def chi2_logpdf(x, df, m, s):
    return chi2.logpdf(x, df, m, s)


def chi2_pdf(x, df, m, s):
    return chi2.pdf(x, scale=s, loc=m, df=df)


def chi2_cdf(x, df, m, s):
    return chi2.cdf(x, df, m, s) + chi2.sf(x, df, m, s) * 2.0


def chi2_logcdf(x, df, m, s):
    return chi2.logcdf(x, df, m, s) + chi2.logsf(x, df, m, s) * 2.0


def beta_logpdf(x, a, b, m, s):
    return beta.logpdf(x, a, b, m, s)


def beta_pdf(x, a, b, m, s):
    return beta.pdf(x, a, b=b, loc=m, scale=s)


def beta_cdf(x, a, b, m, s):
    return beta.cdf(x, a, b, m, s) + beta.sf(x, a, b, m, s) * 2.0


def beta_logcdf(x, a, b, m, s):
    return beta.logcdf(x, a, b, m, s) + beta.logsf(x, a, b, m, s) * 2.0


# loc is small next to x (positive, 0.5 to 2) and scale is above 2, so (x - loc) / scale
# stays inside (0, 1) for beta and above 0 for gamma and chi2.
DENSITY_WRTS = (0, 1, 2, 3, (0, 1, 2, 3))
CDF_WRTS = (0, 2, 3, (0, 2, 3))  # no derivative in the shape parameter
SHAPED = [  # (primal, fn, domains, wrts)
    (t.logpdf, t_logpdf, ("real", "positive", "real", "positive"), DENSITY_WRTS),
    (t.pdf, t_pdf, ("real", "positive", "real", "positive"), DENSITY_WRTS),
    (t.cdf, t_cdf, ("real", "positive", "real", "positive"), CDF_WRTS),
    (t.sf, t_cdf, ("real", "positive", "real", "positive"), (0,)),
    (t.logcdf, t_logcdf, ("real", "positive", "real", "positive"), CDF_WRTS),
    (t.logsf, t_logcdf, ("real", "positive", "real", "positive"), (0,)),
    (gamma.logpdf, gamma_logpdf, ("positive", "positive", "small", "above_two"), DENSITY_WRTS),
    (gamma.pdf, gamma_pdf, ("positive", "positive", "small", "above_two"), DENSITY_WRTS),
    (gamma.cdf, gamma_cdf, ("positive", "positive", "small", "above_two"), CDF_WRTS),
    (gamma.sf, gamma_cdf, ("positive", "positive", "small", "above_two"), (0,)),
    (gamma.logcdf, gamma_logcdf, ("positive", "positive", "small", "above_two"), CDF_WRTS),
    (gamma.logsf, gamma_logcdf, ("positive", "positive", "small", "above_two"), (0,)),
    (chi2.logpdf, chi2_logpdf, ("positive", "above_one", "small", "above_two"), DENSITY_WRTS),
    (chi2.pdf, chi2_pdf, ("positive", "above_one", "small", "above_two"), DENSITY_WRTS),
    (chi2.cdf, chi2_cdf, ("positive", "above_one", "small", "above_two"), CDF_WRTS),
    (chi2.sf, chi2_cdf, ("positive", "above_one", "small", "above_two"), (0,)),
    (chi2.logcdf, chi2_logcdf, ("positive", "above_one", "small", "above_two"), CDF_WRTS),
    (chi2.logsf, chi2_logcdf, ("positive", "above_one", "small", "above_two"), (0,)),
]
BETA = [  # x in (0.5, 2), loc in (-0.1, 0.1), scale in (2.2, 3): z in (0.13, 0.95)
    (beta.logpdf, beta_logpdf, (0, 1, 2, 3, 4, (0, 1, 2, 3, 4))),
    (beta.pdf, beta_pdf, (0, 1, 2, 3, 4, (0, 1, 2, 3, 4))),
    (beta.cdf, beta_cdf, (0, 3, 4, (0, 3, 4))),
    (beta.sf, beta_cdf, (0,)),
    (beta.logcdf, beta_logcdf, (0, 3, 4, (0, 3, 4))),
    (beta.logsf, beta_logcdf, (0,)),
]
registry.vjp_rules(stats.norm.logpdf)  # loads srcad's SciPy rules as a first lookup does (an
_norm_logpdf_partial = sys.modules["srcad.ops.scipy_stats"]._norm_logpdf_partial  # import
#                                                  here would register them as the user's)


def norm_logpdf_slope_in_x(x, m, s):
    """The derivatives of norm.logpdf have rules of their own (second derivatives)."""
    return _norm_logpdf_partial(0, None, x, (), m, s)


def norm_logpdf_slope_in_loc(x, m, s):
    return _norm_logpdf_partial(1, None, x, (), m, s)


def norm_logpdf_slope_in_scale(x, m, s):
    return _norm_logpdf_partial(2, None, x, (), m, s)


SHAPED_SHAPES = [((4,), None, None, None), ((3, 1), (4,), (1, 4), ()), (None, None, None, None)]
BETA_SHAPES = [((4,), None, None, None, None), ((3, 1), (4,), (1, 4), (), (4,))]
STATS = (
    _rows(norm.logpdf, lambda x, m, s: norm.logpdf(x, m, s), ("real", "real", "positive"),
          X_LOC_SCALE, ALL)
    + _rows(norm.pdf, lambda x, m, s: norm.pdf(x, loc=m, scale=s), ("real", "real", "positive"),
            X_LOC_SCALE, ALL)
    + _rows(norm.cdf, lambda x, m, s: norm.cdf(x, m, scale=s), ("real", "real", "positive"),
            X_LOC_SCALE, ALL)
    + _rows(norm.logcdf, lambda x, m, s: norm.logcdf(x, m, s), ("real", "real", "positive"),
            X_LOC_SCALE, ALL)
    + _rows(norm.sf, lambda x, m, s: norm.sf(x, m, s), ("real", "real", "positive"),
            X_LOC_SCALE, ALL)
    + _rows(norm.logsf, lambda x, m, s: norm.logsf(x, m, s), ("real", "real", "positive"),
            X_LOC_SCALE, ALL)
    + [case for fn in (norm_logpdf_slope_in_x, norm_logpdf_slope_in_loc,
                       norm_logpdf_slope_in_scale)
       for case in _rows(_norm_logpdf_partial, fn, ("real", "real", "positive"), X_LOC_SCALE,
                         ALL)]
    + on((5,), [(norm.logpdf, lambda x: norm.logpdf(x)), (norm.pdf, lambda x: norm.pdf(x)),
                (norm.logcdf, lambda x: norm.logcdf(12.0 * x - 20.0)),  # far in the tail
                (norm.logsf, lambda x: norm.logsf(12.0 * x + 20.0))])
    + [case for primal, fn, domains, wrts in SHAPED
       for case in _rows(primal, fn, domains, SHAPED_SHAPES, wrts)]
    + [case for primal, fn, wrts in BETA
       for case in _rows(primal, fn, ("positive", "positive", "positive", "small", "above_two"),
                         BETA_SHAPES, wrts)]
)


def poisson_pmf(k, mu):
    return poisson.pmf(k, mu) + poisson.logpmf(k, mu, loc=-1)


def poisson_cdf(k, mu):
    return poisson.cdf(k, mu) + poisson.sf(k + 0.5, mu) * 2.0


def poisson_logcdf(k, mu):
    return poisson.logcdf(k, mu) + poisson.logsf(k, mu, 1) * 2.0


POISSON = [case for primal, fn in ((poisson.pmf, poisson_pmf), (poisson.logpmf, poisson_pmf),
                                   (poisson.cdf, poisson_cdf), (poisson.sf, poisson_cdf),
                                   (poisson.logcdf, poisson_logcdf),
                                   (poisson.logsf, poisson_logcdf))
           for case in binary([(primal, fn, "count", "above_two")],
                              [((4,), None), ((3, 1), (4,)), (None, None)], wrts=(1,))]


def dirichlet_logpdf(x, alpha):
    return dirichlet.logpdf(x, alpha)


def dirichlet_pdf(x, alpha):
    return dirichlet.pdf(x, alpha)


def dirichlet_normalized(x, alpha):  # all components: x / sum(x) stays on the simplex
    return dirichlet.logpdf(x / np.sum(x, axis=0), alpha) + dirichlet.pdf(x / np.sum(x, 0), alpha)


DIRICHLET = [
    case for primal, fn, domain, pairs in (
        (dirichlet.logpdf, dirichlet_logpdf, "simplex_part", [((2,), (3,)), ((2, 4), (3,))]),
        (dirichlet.pdf, dirichlet_pdf, "simplex_part", [((2,), (3,)), ((2, 4), (3,))]),
        (dirichlet.logpdf, dirichlet_normalized, "positive", [((3,), (3,)), ((3, 4), (3,))]),
        (dirichlet.pdf, dirichlet_normalized, "positive", [((3,), (3,))]))
    for case in binary([(primal, fn, domain, "positive")], pairs)]


def mvn_logpdf(x, mean, a):  # a symmetric positive definite covariance from any a
    return multivariate_normal.logpdf(x, mean, a @ a.T + np.eye(3))


def mvn_pdf(x, mean, a):
    return multivariate_normal.pdf(x, mean=mean, cov=0.5 * (a @ a.T) + np.eye(3))


def mvn_diagonal(x, mean, c):
    return multivariate_normal.logpdf(x, mean, c) + multivariate_normal.pdf(x, mean, c * 2.0)


def mvn_isotropic(x, c):
    return multivariate_normal.logpdf(x, cov=c) + multivariate_normal.pdf(x, None, c)


def mvn_entropy(mean, a):
    return multivariate_normal.entropy(mean, a @ a.T + np.eye(3)) * mean


def mvn_entropy_diagonal(c):
    return multivariate_normal.entropy(np.zeros(3), c) + multivariate_normal.entropy(cov=c[0])


MVN = (
    [case for primal, fn in ((multivariate_normal.logpdf, mvn_logpdf),
                             (multivariate_normal.pdf, mvn_pdf))
     for shapes in (((3,), (3,), (3, 3)), ((4, 3), (3,), (3, 3)), ((2, 1, 3), (3,), (3, 3)))
     for case in _rows(primal, fn, ("real", "real", "real"), [shapes], ALL)]
    + _rows(multivariate_normal.logpdf, mvn_diagonal, ("real", "real", "positive"),
            [((4, 3), (3,), (3,))], ALL)
    + _rows(multivariate_normal.pdf, mvn_isotropic, ("real", "positive"),
            [((5,), None), ((), ())], (0, 1, (0, 1)))
    + _rows(multivariate_normal.entropy, mvn_entropy, ("real", "real"), [((3,), (3, 3))],
            (0, 1, (0, 1)))
    + _rows(multivariate_normal.entropy, mvn_entropy_diagonal, ("positive",), [((3,),)], (0,))
)

# ---- scipy.stats: sample statistics (more options in tests/ops/test_scipy_statistics.py) ---
SAMPLE_STATISTICS = [  # (primal, fn, domain) of a (4, 3) sample
    (stats.moment, lambda a: stats.moment(a, 3), "real"),
    (stats.moment, lambda a: stats.moment(a, 2, axis=1, keepdims=True), "real"),
    (stats.skew, lambda a: stats.skew(a), "real"),
    (stats.skew, lambda a: stats.skew(a, axis=None, bias=False), "real"),
    (stats.kurtosis, lambda a: stats.kurtosis(a, 1), "real"),
    (stats.kurtosis, lambda a: stats.kurtosis(a, fisher=False, bias=False), "real"),
    (stats.sem, lambda a: stats.sem(a), "real"),
    (stats.variation, lambda a: stats.variation(a, axis=1, ddof=1), "positive"),
    (stats.zscore, lambda a: stats.zscore(a), "real"),
    (stats.zscore, lambda a: stats.zscore(a, axis=None, ddof=1), "real"),
    (stats.gmean, lambda a: stats.gmean(a, axis=1), "positive"),
    (stats.hmean, lambda a: stats.hmean(a), "positive"),
    (stats.pmean, lambda a: stats.pmean(a, 2.5), "positive"),
    (stats.entropy, lambda a: stats.entropy(a), "positive"),
    (stats.entropy, lambda a: stats.entropy(a, base=2.0, axis=1), "positive"),
]
IN_SAMPLE_AND_OTHER = [  # (primal, fn, domains, shapes): derivatives in both arguments
    (stats.gmean, lambda a, w: stats.gmean(a, 0, None, w), ("positive", "positive"),
     ((4, 3), (4, 3))),
    (stats.entropy, lambda p, q: stats.entropy(p, q), ("positive", "positive"),
     ((4, 3), (4, 3))),
    (stats.entropy, lambda p, b: stats.entropy(p, None, b), ("positive", "above_one"),
     ((4, 3), None)),
]

# ---- scipy.integrate and scipy.spatial.distance ----------------------------------------------
GRID = np.array([0.0, 0.4, 0.7, 1.5, 1.6, 2.4])


def trapezoid_on_grid(y):
    return integrate.trapezoid(y, GRID)


def simpson_on_grid(y):
    return integrate.simpson(y, x=GRID[:5], axis=0)


QUADRATURES = [  # (primal, fn, domains, shapes, wrts)
    (integrate.trapezoid, lambda y: integrate.trapezoid(y), ("real",), ((3, 6),), (0,)),
    (integrate.trapezoid, trapezoid_on_grid, ("real",), ((3, 6),), (0,)),
    (integrate.trapezoid, lambda y, x: integrate.trapezoid(y, x, axis=0), ("real", "real"),
     ((5, 2), (5,)), (0, 1, (0, 1))),
    (integrate.trapezoid, lambda y, dx: integrate.trapezoid(y, dx=dx), ("real", "positive"),
     ((6,), None), (0, 1, (0, 1))),
    (integrate.simpson, lambda y: integrate.simpson(y), ("real",), ((3, 6),), (0,)),
    (integrate.simpson, lambda y: integrate.simpson(y, dx=0.5), ("real",), ((7,),), (0,)),
    (integrate.simpson, simpson_on_grid, ("real",), ((5, 2),), (0,)),
]
DISTANCES = [  # (primal, fn, domains, shapes, wrts)
    (distance.cdist, lambda a, b: distance.cdist(a, b), ("real", "real"), ((3, 4), (2, 4)),
     (0, 1, (0, 1))),
    (distance.cdist, lambda a, b: distance.cdist(a, b, "cosine"), ("real", "real"),
     ((3, 4), (2, 4)), (0, 1, (0, 1))),
    (distance.cdist, lambda a, b: distance.cdist(a, b, "minkowski", p=3.0), ("real", "real"),
     ((3, 4), (2, 4)), (0, 1, (0, 1))),
    (distance.pdist, lambda x: distance.pdist(x, "sqeuclidean"), ("real",), ((4, 3),), (0,)),
    (distance.pdist, lambda x: distance.pdist(x, "cityblock"), ("real",), ((4, 3),), (0,)),
]

# ---- scipy.linalg --------------------------------------------------------------------------
SOLVE_TRIANGULAR = [
    lambda a, b: linalg.solve_triangular(a, b),
    lambda a, b: linalg.solve_triangular(a, b, lower=True),
    lambda a, b: linalg.solve_triangular(a, b, trans=1),
    lambda a, b: linalg.solve_triangular(a, b, "T", True),
    lambda a, b: linalg.solve_triangular(a, b, trans="N", unit_diagonal=True),
    lambda a, b: linalg.solve_triangular(a, b, 2, lower=True, unit_diagonal=True),
]
SOLVE = [
    lambda a, b: linalg.solve(a, b),
    lambda a, b: linalg.solve(a, b, transposed=True),
    lambda a, b: linalg.solve(a, b, assume_a="gen"),
    lambda a, b: linalg.solve(a + a.T, b, assume_a="sym"),
    lambda a, b: linalg.solve(a @ a.T, b, assume_a="pos", lower=True),
    lambda a, b: linalg.solve(a, b, assume_a="diagonal"),
    lambda a, b: linalg.solve(a, b, assume_a="tridiagonal"),
    lambda a, b: linalg.solve(a, b, assume_a="upper triangular"),
    lambda a, b: linalg.solve(a, b, assume_a="lower triangular", transposed=True),
    lambda a, b: linalg.solve(np.triu(a, -1), b, assume_a="banded"),
]
MATRIX_PAIRS = [((3, 3), (3,)), ((3, 3), (3, 2))]
ON_MATRICES = [  # (primal, fn, shapes)
    (linalg.inv, lambda a: linalg.inv(a), [(3, 3), (2, 3, 3)]),
    *([(linalg.inv, lambda a: linalg.inv(a @ a.T, assume_a="pos"), [(3, 3)])]
      if "assume_a" in inspect.signature(linalg.inv).parameters else []),  # SciPy 1.17
    (linalg.det, lambda a: linalg.det(a), [(3, 3), (2, 3, 3)]),
    (linalg.expm, lambda a: linalg.expm(a - 2.0 * np.eye(3)), [(3, 3), (2, 3, 3)]),
    (linalg.sqrtm, lambda a: linalg.sqrtm(a), [(3, 3)]),
    (linalg.sqrtm, lambda a: linalg.sqrtm(a @ a.T), [(3, 3)]),
]
BETAINC = [(special.betainc, lambda a, b, x: special.betainc(a, b, x),
            ("positive", "positive", "probability"), [((4,), (3, 1), ()), (None, None, None)],
            (2,))]
SYLVESTER = [(linalg.solve_sylvester, lambda a, b, q: linalg.solve_sylvester(a, b, q),
              ("near_2i", "near_2i", "real"), [((3, 3), (2, 2), (3, 2))],
              (0, 1, 2, (0, 1, 2)))]

CASES = (
    unary(SPECIAL_UNARY, SHAPES)
    + binary(SPECIAL_BINARY, PAIRS)
    + binary(IN_THE_SECOND, PAIRS, wrts=(1,))
    + on((2, 3, 4), ON_CUBE)
    + [case for fn, pairs in WEIGHTED
       for case in binary([(special.logsumexp, fn, "real", "positive")], pairs)]
    + STATS + POISSON + DIRICHLET + MVN
    + [case for fn in SOLVE_TRIANGULAR
       for case in binary([(linalg.solve_triangular, fn, "near_2i", "real")], MATRIX_PAIRS)]
    + [case for fn in SOLVE
       for case in binary([(linalg.solve, fn, "near_2i", "real")], MATRIX_PAIRS)]
    + [Case(primal, fn, (("near_2i", shape),)) for primal, fn, shapes in ON_MATRICES
       for shape in shapes]
    + [case for primal, fn, domains, shapes, wrts in SYLVESTER + BETAINC
       for case in _rows(primal, fn, domains, shapes, wrts)]
    + [case for primal, fn, domains, shapes, wrts in QUADRATURES + DISTANCES
       for case in _rows(primal, fn, domains, [shapes], wrts)]
    + unary(SAMPLE_STATISTICS, [(4, 3)])
    + [case for primal, fn, domains, shapes in IN_SAMPLE_AND_OTHER
       for case in _rows(primal, fn, domains, [shapes], (0, 1, (0, 1)))]
)
