"""Rules for `scipy.stats`: densities, log-densities and distribution functions of norm, t,
beta, gamma, chi2 and poisson (dirichlet and multivariate_normal: scipy_multivariate.py).

Loaded lazily with the other SciPy rules (see `registry`). The rules are registered for the
distributions' bound methods (`scipy.stats.norm.logpdf`), which is what a call such as
`norm.logpdf(x, loc, scale)` resolves to; each rule names the method's parameters, so they
may be passed by position or keyword.

The univariate distributions are location-scale families: with z = (x - loc) / scale,
logpdf(x) = log f(z) - log(scale), so every derivative of the log-density follows from the
score d log f / dz and the derivatives in the shape parameters (`*_scores` below). The
density's derivatives are the log-density's times the density; the distribution
function's, in x, loc and scale, are the density times 1, -1 and -z. SciPy has no closed
form for a distribution function's derivative in a shape parameter (t's df, gamma's a):
those rules raise `UnsupportedDerivativeError` instead of giving a zero.
"""
import numpy as np
import scipy.stats as stats
from scipy import special

from srcad.kernels.adjoints import unbroadcast
from srcad.kernels.tangents import broadcast_like
from srcad.ops.registry import defjvp, defvjp
from srcad.ops.scipy_special import no_derivative, refuse_complex

LOG2 = float(np.log(2.0))


# ---- the scores: derivatives of each log-density in (x, shape parameters..., loc, scale) ---
# Shape parameters come as a tuple, `shape`, so that one set of helpers serves every family.
def _location_scale(dz, z, scale):
    """d logpdf / d(x, loc, scale) from the score `dz` = d log f / dz of the standard form."""
    return dz / scale, -dz / scale, -(dz * z + 1.0) / scale


def _norm_scores(x, shape, loc, scale):
    z = (x - loc) / scale
    return _location_scale(-z, z, scale)


def _t_scores(x, shape, loc, scale):
    df = shape[0]
    z = (x - loc) / scale
    dx, dloc, dscale = _location_scale(-z * (df + 1.0) / (df + z ** 2), z, scale)
    ddf = 0.5 * (special.digamma(0.5 * (df + 1.0)) - special.digamma(0.5 * df) - 1.0 / df
                 - np.log1p(z ** 2 / df) + (df + 1.0) * z ** 2 / (df * (df + z ** 2)))
    return dx, ddf, dloc, dscale


def _gamma_scores(x, shape, loc, scale):
    a = shape[0]
    z = (x - loc) / scale
    dx, dloc, dscale = _location_scale((a - 1.0) / z - 1.0, z, scale)
    return dx, np.log(z) - special.digamma(a), dloc, dscale


def _chi2_scores(x, shape, loc, scale):
    df = shape[0]
    z = (x - loc) / scale
    dx, dloc, dscale = _location_scale((0.5 * df - 1.0) / z - 0.5, z, scale)
    return dx, 0.5 * (np.log(z) - LOG2 - special.digamma(0.5 * df)), dloc, dscale


def _beta_scores(x, shape, loc, scale):
    a, b = shape
    z = (x - loc) / scale
    dx, dloc, dscale = _location_scale((a - 1.0) / z - (b - 1.0) / (1.0 - z), z, scale)
    both = special.digamma(a + b)
    da = np.log(z) - special.digamma(a) + both
    db = np.log1p(-z) - special.digamma(b) + both
    return dx, da, db, dloc, dscale


# The log-densities, called with the shape tuple (srcad differentiates no `*shape`).
def _norm_logpdf(x, shape, loc, scale):
    return stats.norm.logpdf(x, loc, scale)


def _t_logpdf(x, shape, loc, scale):
    return stats.t.logpdf(x, shape[0], loc, scale)


def _gamma_logpdf(x, shape, loc, scale):
    return stats.gamma.logpdf(x, shape[0], loc, scale)


def _chi2_logpdf(x, shape, loc, scale):
    return stats.chi2.logpdf(x, shape[0], loc, scale)


def _beta_logpdf(x, shape, loc, scale):
    return stats.beta.logpdf(x, shape[0], shape[1], loc, scale)


# ---- each method's derivative in its parameter i -------------------------------------------
def _method_partials(scores, logpdf):
    """`{method name: partial(i, ans, x, shape, loc, scale)}` for one family: the method's
    derivative in its i-th parameter (x, the shape parameters, loc, scale), elementwise."""
    def logpdf_partial(i, ans, x, shape, loc, scale):
        return scores(x, shape, loc, scale)[i]

    def pdf_partial(i, ans, x, shape, loc, scale):
        return ans * scores(x, shape, loc, scale)[i]

    def distribution_partial(sign, log):
        """F(x) = F0((x - loc) / scale): in x, loc and scale the density times 1, -1 and
        -z; over F itself for log F (in logs, exact in the far tail). sf = 1 - cdf."""
        def partial(i, ans, x, shape, loc, scale):
            weight = sign * np.exp(logpdf(x, shape, loc, scale) - ans) if log \
                else sign * np.exp(logpdf(x, shape, loc, scale))
            if i == 0:
                return weight
            if i == len(shape) + 1:
                return -weight
            return -weight * (x - loc) / scale
        return partial

    return {"logpdf": logpdf_partial, "pdf": pdf_partial,
            "cdf": distribution_partial(1.0, False), "sf": distribution_partial(-1.0, False),
            "logcdf": distribution_partial(1.0, True), "logsf": distribution_partial(-1.0, True)}


# ---- the normal's log-density: its derivatives' own rules, for Hessians ---------------------
def _norm_logpdf_partial(i, ans, x, shape, loc, scale):
    """d logpdf / d(x, loc, scale)[i] of the normal: -z/σ, z/σ, (z² - 1)/σ. Its rules give
    the second derivatives in closed form: a Hessian's columns then run one rule each, not
    the transformed scores (as they do for the other families)."""
    refuse_complex("scipy.stats.norm.logpdf", x, loc, scale)
    z = (x - loc) / scale
    if i == 2:
        return (z * z - 1.0) / scale
    return (z if i == 1 else -z) / scale


def _norm_logpdf_curvature(i, j, x, loc, scale):
    """d² logpdf / d(x, loc, scale)[i] d(x, loc, scale)[j] of the normal:
    [[-1, 1, 2z], [1, -1, -2z], [2z, -2z, 1 - 3z²]] / σ²."""
    if i < 2 and j < 2:
        return (-1.0 if i == j else 1.0) / (scale * scale)
    z = (x - loc) / scale
    if i == j:
        return (1.0 - 3.0 * z * z) / (scale * scale)
    return (2.0 if min(i, j) == 0 else -2.0) * z / (scale * scale)


def _norm_logpdf_partial_rules(j):
    """The VJP and JVP of `_norm_logpdf_partial` in its parameter (x, loc, scale)[j]."""
    return (lambda g, value, i, ans, x, shape, loc, scale:
            unbroadcast(g * _norm_logpdf_curvature(i, j, x, loc, scale), (x, loc, scale)[j]),
            lambda g, value, i, ans, x, shape, loc, scale:
            broadcast_like(g * _norm_logpdf_curvature(i, j, x, loc, scale), value))


_CURVATURE = [_norm_logpdf_partial_rules(j) for j in range(3)]
defvjp(_norm_logpdf_partial, None, None, _CURVATURE[0][0], None, _CURVATURE[1][0],
       _CURVATURE[2][0])
defjvp(_norm_logpdf_partial, None, None, _CURVATURE[0][1], None, _CURVATURE[1][1],
       _CURVATURE[2][1])


# ---- one rule per parameter, with the method's own signature -------------------------------
# SciPy's parameter names, so that a call may pass any of them by keyword. The VJP sums the
# elementwise derivative back over broadcasting; the JVP spreads it to the output's shape.
def _rules_x_loc_scale(partial):  # norm
    def position(i):
        return (lambda g, ans, x, loc=0.0, scale=1.0:
                unbroadcast(g * partial(i, ans, x, (), loc, scale), (x, loc, scale)[i]),
                lambda g, ans, x, loc=0.0, scale=1.0:
                broadcast_like(g * partial(i, ans, x, (), loc, scale), ans))
    return [position(i) for i in range(3)]


def _rules_x_df_loc_scale(partial):  # t, chi2
    def position(i):
        return (lambda g, ans, x, df, loc=0.0, scale=1.0:
                unbroadcast(g * partial(i, ans, x, (df,), loc, scale), (x, df, loc, scale)[i]),
                lambda g, ans, x, df, loc=0.0, scale=1.0:
                broadcast_like(g * partial(i, ans, x, (df,), loc, scale), ans))
    return [position(i) for i in range(4)]


def _rules_x_a_loc_scale(partial):  # gamma
    def position(i):
        return (lambda g, ans, x, a, loc=0.0, scale=1.0:
                unbroadcast(g * partial(i, ans, x, (a,), loc, scale), (x, a, loc, scale)[i]),
                lambda g, ans, x, a, loc=0.0, scale=1.0:
                broadcast_like(g * partial(i, ans, x, (a,), loc, scale), ans))
    return [position(i) for i in range(4)]


def _rules_x_a_b_loc_scale(partial):  # beta
    def position(i):
        return (lambda g, ans, x, a, b, loc=0.0, scale=1.0:
                unbroadcast(g * partial(i, ans, x, (a, b), loc, scale),
                            (x, a, b, loc, scale)[i]),
                lambda g, ans, x, a, b, loc=0.0, scale=1.0:
                broadcast_like(g * partial(i, ans, x, (a, b), loc, scale), ans))
    return [position(i) for i in range(5)]


def _register(method, rules, unsupported=()):
    """Register `rules` (pairs of VJP and JVP rules) for `method`; parameters in
    `unsupported` get a rule that raises instead."""
    vjps, jvps = [list(column) for column in zip(*rules)]
    for i, name in unsupported:
        vjps[i] = jvps[i] = no_derivative(
            f"scipy.stats.{method.__self__.name}.{method.__name__}", name,
            f"differentiate the density instead, or hold {name} constant.")
    defvjp(method, *vjps)
    defjvp(method, *jvps)


def _real_only(function: str, partial):
    """`partial`, refusing complex arguments, which SciPy casts to float."""
    def checked(i, ans, x, shape, loc, scale):
        refuse_complex(function, x, *shape, loc, scale)
        return partial(i, ans, x, shape, loc, scale)
    return checked


def _continuous(dist, rules_for, scores, logpdf, shapes, own_partials=None):
    """The rules of `dist`'s pdf, logpdf, cdf, logcdf, sf and logsf; `shapes` names its
    shape parameters, in which the distribution functions have no derivative here.
    `own_partials` replaces the derivatives of some methods (refusing complex values
    themselves)."""
    no_shapes = [(1 + i, name) for i, name in enumerate(shapes)]
    own_partials = own_partials or {}
    for name, partial in _method_partials(scores, logpdf).items():
        partial = own_partials.get(name) or _real_only(f"scipy.stats.{dist.name}.{name}",
                                                       partial)
        _register(getattr(dist, name), rules_for(partial),
                  () if name in ("pdf", "logpdf") else no_shapes)


_continuous(stats.norm, _rules_x_loc_scale, _norm_scores, _norm_logpdf, (),
            {"logpdf": _norm_logpdf_partial})
_continuous(stats.t, _rules_x_df_loc_scale, _t_scores, _t_logpdf, ("df",))
_continuous(stats.gamma, _rules_x_a_loc_scale, _gamma_scores, _gamma_logpdf, ("a",))
_continuous(stats.chi2, _rules_x_df_loc_scale, _chi2_scores, _chi2_logpdf, ("df",))
_continuous(stats.beta, _rules_x_a_b_loc_scale, _beta_scores, _beta_logpdf, ("a", "b"))


# ---- poisson: derivatives in the rate mu (k and loc are integers) --------------------------
def _poisson_tail(ans, k, mu, loc, log):
    """pmf(floor(k - loc)), the derivative of sf in mu (of cdf, negated): the last term
    of the sum the cdf adds up; over the value itself for logcdf and logsf."""
    last = stats.poisson.logpmf(np.floor(k - loc), mu)
    return np.exp(last - ans) if log else np.exp(last)


def _poisson(method, partial):
    defvjp(method, None, lambda g, ans, k, mu, loc=0:
           unbroadcast(g * partial(ans, k, mu, loc), mu), None)
    defjvp(method, None, lambda g, ans, k, mu, loc=0:
           broadcast_like(g * partial(ans, k, mu, loc), ans), None)


def _poisson_logpmf_mu(ans, k, mu, loc):
    return (k - loc) / mu - 1.0


def _poisson_pmf_mu(ans, k, mu, loc):
    return ans * ((k - loc) / mu - 1.0)


def _poisson_cdf_mu(ans, k, mu, loc):
    return -_poisson_tail(ans, k, mu, loc, False)


def _poisson_sf_mu(ans, k, mu, loc):
    return _poisson_tail(ans, k, mu, loc, False)


def _poisson_logcdf_mu(ans, k, mu, loc):
    return -_poisson_tail(ans, k, mu, loc, True)


def _poisson_logsf_mu(ans, k, mu, loc):
    return _poisson_tail(ans, k, mu, loc, True)


_poisson(stats.poisson.logpmf, _poisson_logpmf_mu)
_poisson(stats.poisson.pmf, _poisson_pmf_mu)
_poisson(stats.poisson.cdf, _poisson_cdf_mu)
_poisson(stats.poisson.sf, _poisson_sf_mu)
_poisson(stats.poisson.logcdf, _poisson_logcdf_mu)
_poisson(stats.poisson.logsf, _poisson_logsf_mu)
