"""Fit a Poisson regression with scipy.optimize, derivatives from srcad.

The negative log-likelihood is written against the Array API (`xp = beta.__array_namespace__()`),
so the same code runs on any array library; on NumPy arrays srcad differentiates it with
NumPy's rules. SciPy's three second-order interfaces each get what they ask for:
`jac=srcad.grad(f)`, `hessp=srcad.hvp(f)` (Hessian-vector products, the Hessian never
formed) and `hess=srcad.hessian(f)`. The data are bound into `f` with `functools.partial`, so that
SciPy calls each with the parameters alone (SciPy's `hessp(x, p, *args)` puts the vector
before the extra arguments, srcad's `hvp(f)(*args, v)` last). Needs SciPy.
Run: python examples/poisson_glm_scipy.py
"""
import functools

import numpy as np
import scipy.optimize

import srcad


def negative_log_likelihood(beta, x, counts):
    """Poisson regression with a log link, per observation, up to the constant log(y!)."""
    xp = beta.__array_namespace__()
    eta = x @ beta
    return xp.mean(xp.exp(eta) - counts * eta)


def main():
    rng = np.random.default_rng(3)
    n, true_beta = 2000, np.array([0.5, -0.8, 0.3, 1.1])
    x = np.column_stack([np.ones(n), rng.standard_normal((n, 3)) * 0.5])
    counts = rng.poisson(np.exp(x @ true_beta)).astype(float)

    f = functools.partial(negative_log_likelihood, x=x, counts=counts)
    gradient, product, hessian = srcad.grad(f), srcad.hvp(f), srcad.hessian(f)
    start = np.zeros(4)
    error = scipy.optimize.check_grad(f, gradient, start)
    print(f"gradient vs finite differences at the start: {error:.1e}")
    assert error < 1e-5

    fits = {
        "BFGS       (jac)": dict(method="BFGS", jac=gradient),
        "Newton-CG  (jac, hessp)": dict(method="Newton-CG", jac=gradient, hessp=product),
        "trust-ncg  (jac, hessp)": dict(method="trust-ncg", jac=gradient, hessp=product),
        "trust-exact (jac, hess)": dict(method="trust-exact", jac=gradient, hess=hessian),
    }
    results = {}
    for name, options in fits.items():
        result = scipy.optimize.minimize(f, start, **options)
        results[name] = result
        print(f"{name:24s} {result.nit:3d} iterations, {result.nfev:3d} evaluations, "
              f"loss {result.fun:.6f}, |grad| {np.linalg.norm(result.jac):.1e}")
        assert result.success, result.message

    best = results["trust-exact (jac, hess)"].x
    print(f"fitted beta = {np.round(best, 3)}  (data made with {true_beta})")
    for result in results.values():  # every method reaches the same optimum
        np.testing.assert_allclose(result.x, best, atol=1e-4)
    # the Hessian at the optimum is X' diag(mu) X / n for Poisson with a log link
    mu = np.exp(x @ best)
    np.testing.assert_allclose(hessian(best), x.T @ (mu[:, None] * x) / n,
                               rtol=1e-10)
    assert np.max(np.abs(best - true_beta)) < 0.1


if __name__ == "__main__":
    main()
