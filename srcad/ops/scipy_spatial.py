"""Rules for `scipy.spatial.distance`'s pairwise distances: cdist (in XA and XB) and pdist,
for the metrics euclidean, sqeuclidean, cityblock, minkowski (any `p`) and cosine.

Loaded lazily with the other SciPy rules (see `registry`). SciPy computes them in compiled
code; these rules stand in for it. Distance d_ij is a function of the difference
D_ij = XA_i - XB_j (cosine: of the two rows apart), so each rule builds the partial
dd_ij / dD_ij (m_A x m_B x n) and contracts it with the cotangent or the tangent. Where two
points coincide a norm has no derivative; as `np.linalg.norm`'s rules do, it is taken as
0 (cityblock: sign 0). pdist is cdist of X with itself read on the pairs i < j: its rules
spread the condensed vector onto the symmetric matrix (a gather, so it differentiates
again) and use cdist's. Other metrics, weights `w`, callables and `out=` are refused.
"""
import numpy as np
import scipy.spatial.distance as distance

from srcad.errors import UnsupportedDerivativeError
from srcad.ops.registry import defjvp, defvjp, nondifferentiable
from srcad.ops.scipy_special import refuse_complex

METRICS = ("euclidean", "sqeuclidean", "cityblock", "minkowski", "cosine")


def check_metric(function: str, metric, out, kwargs, *values):
    """Refuse what the rules do not compute: another metric, a callable one, a weight
    vector, `out=`."""
    refuse_complex(f"scipy.spatial.distance.{function}", *values)
    if not isinstance(metric, str) or metric not in METRICS:
        raise UnsupportedDerivativeError(
            f"srcad differentiates `scipy.spatial.distance.{function}` with the metrics "
            f"{', '.join(METRICS)}; not with metric={metric!r}.",
            fix="use one of those metrics, or write the distance with NumPy (e.g. "
            "`np.max(np.abs(a[:, None] - b[None]), axis=-1)` for chebyshev), which srcad "
            "differentiates.")
    extra = sorted(set(kwargs) - {"p"})
    if extra or out is not None:
        raise UnsupportedDerivativeError(
            f"srcad does not differentiate `scipy.spatial.distance.{function}` with "
            f"{', '.join(extra + (['out'] if out is not None else []))}=.",
            fix="drop the option: scale the columns yourself for weights "
            "(`X * w ** (1 / p)`), and use the returned array instead of out=.")


def _norm_of_rows(x):
    return np.sqrt(np.sum(x * x, axis=-1, keepdims=True))


def _safe(x):
    return np.where(x == 0, 1.0, x)


def _difference_partial(ans, xa, xb, metric, p):
    """dd_ij / dD_ij with D_ij = XA_i - XB_j (shape m_A x m_B x n), 0 where d_ij = 0."""
    difference = xa[:, None, :] - xb[None, :, :]
    if metric == "sqeuclidean":
        return 2.0 * difference
    if metric == "cityblock" or metric == "minkowski" and p == 1:
        return np.sign(difference)
    d = _safe(ans)[:, :, None]
    if metric == "euclidean" or p == 2:
        return difference / d
    # (a zero difference, such as a point's with itself in pdist, has partial 0, and its
    # power is not taken: for p < 2 its derivative would be infinite)
    zero = difference == 0
    ratio = np.abs(np.where(zero, 1.0, difference)) / d
    return np.where(zero, 0.0, np.sign(difference) * ratio ** (p - 1.0))


def _cosine_parts(ans, xa, xb):
    """Unit rows of XA and XB, their norms, and the cosine similarities 1 - d."""
    norm_a, norm_b = _norm_of_rows(xa), _norm_of_rows(xb)
    return xa / _safe(norm_a), xb / _safe(norm_b), norm_a, norm_b, 1.0 - ans


def cdist_vjp_xa(g, ans, XA, XB, metric="euclidean", *, out=None, **kwargs):
    """sum_j g_ij dd_ij / dXA_i; for cosine, -(g @ unit(XB) - sum_j(g_ij cos_ij) unit(XA_i))
    / |XA_i|."""
    check_metric("cdist", metric, out, kwargs, XA, XB)
    if metric == "cosine":
        unit_a, unit_b, norm_a, norm_b, cos = _cosine_parts(ans, XA, XB)
        return -(g @ unit_b - np.sum(g * cos, axis=1, keepdims=True) * unit_a) / _safe(norm_a)
    partial = _difference_partial(ans, XA, XB, metric, kwargs.get("p", 2.0))
    return np.sum(g[:, :, None] * partial, axis=1)


def cdist_vjp_xb(g, ans, XA, XB, metric="euclidean", *, out=None, **kwargs):
    """The VJP in XA of the distances transposed (each metric is symmetric)."""
    return cdist_vjp_xa(np.transpose(g), np.transpose(ans), XB, XA, metric, out=out, **kwargs)


def cdist_jvp_xa(g, ans, XA, XB, metric="euclidean", *, out=None, **kwargs):
    """sum_n dd_ij / dD_ijn t_in; for cosine, -(t_i . unit(XB_j) - cos_ij unit(XA_i) . t_i)
    / |XA_i|."""
    check_metric("cdist", metric, out, kwargs, XA, XB)
    if metric == "cosine":
        unit_a, unit_b, norm_a, norm_b, cos = _cosine_parts(ans, XA, XB)
        scaled = g / _safe(norm_a)
        return -(scaled @ np.transpose(unit_b) - cos * np.sum(scaled * unit_a, axis=1,
                                                                keepdims=True))
    partial = _difference_partial(ans, XA, XB, metric, kwargs.get("p", 2.0))
    return np.sum(partial * g[:, None, :], axis=-1)


def cdist_jvp_xb(g, ans, XA, XB, metric="euclidean", *, out=None, **kwargs):
    return np.transpose(cdist_jvp_xa(g, np.transpose(ans), XB, XA, metric, out=out, **kwargs))


defvjp(distance.cdist, cdist_vjp_xa, cdist_vjp_xb, None)
defjvp(distance.cdist, cdist_jvp_xa, cdist_jvp_xb, None)


def _pair_index(m: int):
    """An m x m matrix of positions in the condensed vector (pair i < j at position
    m i - i (i + 1) / 2 + j - i - 1, either way round); the diagonal points one past the
    end, where a zero is appended."""
    i, j = np.triu_indices(m, 1)
    index = np.full((m, m), len(i))
    index[i, j] = index[j, i] = np.arange(len(i))
    return index


def _squared_up(condensed, m):
    """The symmetric matrix of a condensed vector, zero on the diagonal."""
    padded = np.concatenate([condensed, np.zeros(1, dtype=np.result_type(condensed))])
    return padded[_pair_index(m)]


def pdist_vjp(g, ans, X, metric="euclidean", *, out=None, **kwargs):
    """Pair (i, j) moves X_i and X_j; on the symmetric matrix both are row i of cdist's VJP
    in XA, with every row's pairs."""
    check_metric("pdist", metric, out, kwargs, X)
    m = np.shape(X)[0]
    return cdist_vjp_xa(_squared_up(g, m), _squared_up(ans, m), X, X, metric, **kwargs)


def pdist_jvp(g, ans, X, metric="euclidean", *, out=None, **kwargs):
    """cdist's JVP in XA and in XB, both with X's tangent, read on the pairs i < j."""
    check_metric("pdist", metric, out, kwargs, X)
    m = np.shape(X)[0]
    full = _squared_up(ans, m)
    both = (cdist_jvp_xa(g, full, X, X, metric, **kwargs)
            + cdist_jvp_xb(g, full, X, X, metric, **kwargs))
    return both[np.triu_indices(m, 1)]


defvjp(distance.pdist, pdist_vjp, None)
defjvp(distance.pdist, pdist_jvp, None)
nondifferentiable(check_metric, _pair_index)
