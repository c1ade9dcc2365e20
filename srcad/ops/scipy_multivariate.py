"""Rules for the multivariate densities of `scipy.stats`: dirichlet (pdf, logpdf in x and
alpha, batches) and multivariate_normal (pdf, logpdf in x, mean and cov; entropy in cov).

Loaded lazily with the other SciPy rules (see `registry`). The covariance is read as a
symmetric matrix, so its derivative is the symmetric one, as in autograd and JAX; a singular
or non-symmetric covariance is refused.
"""
import numpy as np
import scipy.linalg as linalg
import scipy.stats as stats
from scipy import special

from srcad.errors import UnsupportedDerivativeError
from srcad.ops.registry import defjvp, defvjp, nondifferentiable
from srcad.ops.scipy_special import refuse_complex


# ---- dirichlet -----------------------------------------------------------------------------
def _dirichlet_scores(x, alpha):
    """d logpdf / dx and d logpdf / dalpha, each point's components along axis 0 (SciPy's
    layout). With one component fewer than alpha, the last is 1 - sum(x): it moves with
    every other one."""
    k = np.shape(alpha)[0]
    a = np.reshape(alpha, (k,) + (1,) * (np.ndim(x) - 1))
    if np.shape(x)[0] == k:
        full = x
        dx = (a - 1.0) / x
    else:
        last = 1.0 - np.sum(x, axis=0, keepdims=True)
        full = np.concatenate([x, last], axis=0)
        dx = (a[:-1] - 1.0) / x - (a[-1:] - 1.0) / last
    dalpha = np.log(full) - special.digamma(a) + special.digamma(np.sum(alpha))
    return dx, dalpha


def _per_point(g, x):
    """The output's cotangent with one entry per point (SciPy squeezes the output)."""
    return np.reshape(g, np.shape(x)[1:])


def dirichlet_logpdf_vjp_x(g, ans, x, alpha):
    return _per_point(g, x) * _dirichlet_scores(x, alpha)[0]


def dirichlet_logpdf_vjp_alpha(g, ans, x, alpha):
    dalpha = _dirichlet_scores(x, alpha)[1]
    return np.sum(_per_point(g, x) * dalpha, axis=tuple(range(1, np.ndim(dalpha))))


def dirichlet_logpdf_jvp_x(g, ans, x, alpha):
    return np.reshape(np.sum(g * _dirichlet_scores(x, alpha)[0], axis=0), np.shape(ans))


def dirichlet_logpdf_jvp_alpha(g, ans, x, alpha):
    dalpha = _dirichlet_scores(x, alpha)[1]
    g = np.reshape(g, np.shape(alpha) + (1,) * (np.ndim(dalpha) - 1))
    return np.reshape(np.sum(g * dalpha, axis=0), np.shape(ans))


defvjp(stats.dirichlet.logpdf, dirichlet_logpdf_vjp_x, dirichlet_logpdf_vjp_alpha)
defjvp(stats.dirichlet.logpdf, dirichlet_logpdf_jvp_x, dirichlet_logpdf_jvp_alpha)
# The density's derivatives are the log-density's times the density.
defvjp(stats.dirichlet.pdf,
       lambda g, ans, x, alpha: dirichlet_logpdf_vjp_x(g * ans, ans, x, alpha),
       lambda g, ans, x, alpha: dirichlet_logpdf_vjp_alpha(g * ans, ans, x, alpha))
defjvp(stats.dirichlet.pdf,
       lambda g, ans, x, alpha: ans * dirichlet_logpdf_jvp_x(g, ans, x, alpha),
       lambda g, ans, x, alpha: ans * dirichlet_logpdf_jvp_alpha(g, ans, x, alpha))


# ---- multivariate_normal -------------------------------------------------------------------
def _check_mvn(cov, allow_singular):
    """Refuse what the rules below would get wrong (non-differentiable, so srcad calls it
    rather than following it when it differentiates a rule again)."""
    if isinstance(cov, stats.Covariance):
        raise UnsupportedDerivativeError(
            "srcad differentiates scipy.stats.multivariate_normal with `cov` an array, not a "
            "Covariance object.", fix="pass the covariance matrix itself.")
    if np.ndim(cov) == 2 and not np.allclose(cov, np.transpose(cov), rtol=1e-6, atol=0.0):
        raise UnsupportedDerivativeError(
            "srcad differentiates scipy.stats.multivariate_normal with a symmetric `cov` only "
            "(SciPy reads one triangle of it).", fix="pass a symmetric matrix, e.g. "
            "`(c + c.T) / 2` or `l @ l.T`.")
    if allow_singular:
        raise UnsupportedDerivativeError(
            "srcad does not differentiate scipy.stats.multivariate_normal with "
            "allow_singular=True: near a singular covariance SciPy drops directions, which "
            "the derivative would not see.", fix="pass a nonsingular cov and drop "
            "allow_singular.")


def _covariance(mean, cov, allow_singular):
    """The covariance matrix, with SciPy's conventions: the dimension from mean, else cov;
    cov a number (times the identity), a diagonal or a matrix."""
    _check_mvn(cov, allow_singular)
    if mean is not None:
        d = np.size(mean)
    elif np.ndim(cov) == 2:
        d = np.shape(cov)[0]
    else:
        d = 1
    if np.ndim(cov) == 0:
        return cov * np.eye(d)
    if np.ndim(cov) == 1:
        return np.diag(cov)
    return np.reshape(cov, (d, d))


def _mvn_parts(x, mean, cov, allow_singular):
    """(Sigma^-1 (x - mean) for each point, as rows; Sigma^-1). x's last axis holds the
    components (with one dimension, each element is a point)."""
    refuse_complex("scipy.stats.multivariate_normal", x, mean, cov)  # (SciPy casts them)
    sigma = _covariance(mean, cov, allow_singular)
    d = np.shape(sigma)[0]
    points = np.reshape(x, (-1, d))
    centred = points if mean is None else points - np.reshape(mean, (d,))
    solved = np.transpose(linalg.solve(sigma, np.transpose(centred)))
    return solved, linalg.inv(sigma)


def _as_cov(m, cov):
    """A d x d matrix derivative as the derivative of `cov`, which may be a number (the
    trace counts), a diagonal (the diagonal counts) or a matrix."""
    if np.ndim(cov) == 0:
        return np.trace(m)
    if np.ndim(cov) == 1:
        return np.diagonal(m)
    return np.reshape(m, np.shape(cov))


def _from_cov(tangent, cov, d):
    """A tangent of `cov` as a d x d matrix."""
    if np.ndim(cov) == 0:
        return tangent * np.eye(d)
    if np.ndim(cov) == 1:
        return np.diag(tangent)
    return np.reshape(tangent, (d, d))


# logpdf = -(d log 2 pi + log det Sigma + r^T Sigma^-1 r) / 2 with r = x - mean: with
# u = Sigma^-1 r, d/dx = -u, d/dmean = u, d/dSigma = (u u^T - Sigma^-1) / 2 (symmetric:
# the derivative for symmetric perturbations, as SciPy reads one triangle of cov).
def mvn_logpdf_vjp_x(g, ans, x, mean=None, cov=1, allow_singular=False):
    solved, _ = _mvn_parts(x, mean, cov, allow_singular)
    return np.reshape(-np.reshape(g, (-1, 1)) * solved, np.shape(x))


def mvn_logpdf_vjp_mean(g, ans, x, mean=None, cov=1, allow_singular=False):
    solved, _ = _mvn_parts(x, mean, cov, allow_singular)
    return np.reshape(np.reshape(g, (1, -1)) @ solved, np.shape(mean))


def mvn_logpdf_vjp_cov(g, ans, x, mean=None, cov=1, allow_singular=False):
    solved, inverse = _mvn_parts(x, mean, cov, allow_singular)
    weights = np.reshape(g, (-1, 1))
    return _as_cov(0.5 * (np.transpose(solved * weights) @ solved - np.sum(g) * inverse), cov)


def mvn_logpdf_jvp_x(g, ans, x, mean=None, cov=1, allow_singular=False):
    solved, _ = _mvn_parts(x, mean, cov, allow_singular)
    tangent = np.reshape(g, np.shape(solved))
    return np.reshape(-np.sum(solved * tangent, axis=1), np.shape(ans))


def mvn_logpdf_jvp_mean(g, ans, x, mean=None, cov=1, allow_singular=False):
    solved, _ = _mvn_parts(x, mean, cov, allow_singular)
    return np.reshape(solved @ np.reshape(g, (-1,)), np.shape(ans))


def mvn_logpdf_jvp_cov(g, ans, x, mean=None, cov=1, allow_singular=False):
    solved, inverse = _mvn_parts(x, mean, cov, allow_singular)
    tangent = _from_cov(g, cov, np.shape(inverse)[0])
    quadratic = np.sum((solved @ tangent) * solved, axis=1)
    return np.reshape(0.5 * (quadratic - np.sum(inverse * tangent)), np.shape(ans))


defvjp(stats.multivariate_normal.logpdf, mvn_logpdf_vjp_x, mvn_logpdf_vjp_mean,
       mvn_logpdf_vjp_cov)
defjvp(stats.multivariate_normal.logpdf, mvn_logpdf_jvp_x, mvn_logpdf_jvp_mean,
       mvn_logpdf_jvp_cov)
defvjp(stats.multivariate_normal.pdf,
       lambda g, ans, x, mean=None, cov=1, allow_singular=False:
       mvn_logpdf_vjp_x(g * ans, ans, x, mean, cov, allow_singular),
       lambda g, ans, x, mean=None, cov=1, allow_singular=False:
       mvn_logpdf_vjp_mean(g * ans, ans, x, mean, cov, allow_singular),
       lambda g, ans, x, mean=None, cov=1, allow_singular=False:
       mvn_logpdf_vjp_cov(g * ans, ans, x, mean, cov, allow_singular))
defjvp(stats.multivariate_normal.pdf,
       lambda g, ans, x, mean=None, cov=1, allow_singular=False:
       ans * mvn_logpdf_jvp_x(g, ans, x, mean, cov, allow_singular),
       lambda g, ans, x, mean=None, cov=1, allow_singular=False:
       ans * mvn_logpdf_jvp_mean(g, ans, x, mean, cov, allow_singular),
       lambda g, ans, x, mean=None, cov=1, allow_singular=False:
       ans * mvn_logpdf_jvp_cov(g, ans, x, mean, cov, allow_singular))


# entropy = (d (1 + log 2 pi) + log det Sigma) / 2, whatever the mean.
defvjp(stats.multivariate_normal.entropy, None, lambda g, ans, mean=None, cov=1:
       _as_cov(0.5 * g * linalg.inv(_covariance(mean, cov, False)), cov))
defjvp(stats.multivariate_normal.entropy, None, lambda g, ans, mean=None, cov=1:
       0.5 * np.sum(linalg.inv(_covariance(mean, cov, False))
                    * _from_cov(g, cov, np.shape(_covariance(mean, cov, False))[0])))

nondifferentiable(_check_mvn)
