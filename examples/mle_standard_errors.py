"""Standard errors of maximum-likelihood estimates from srcad's Hessian.

At the maximum-likelihood estimate, the inverse of the observed information (the Hessian of
the negative log-likelihood) estimates the covariance of the estimates; the square roots of
its diagonal are the standard errors a statistics package prints. Two models, each checked
against the standard errors computed by hand:

- a normal sample, N(mu, sigma): the information at the estimate is diag(n/sigma², 2n/sigma²),
  so the standard errors are sigma/sqrt(n) and sigma/sqrt(2n);
- a logistic regression: the information is X' diag(p (1 - p)) X, as statsmodels computes
  it; `srcad.hessian(..., has_aux=True)` hands back the fitted probabilities p with it.

Needs SciPy (for the fit). Run: python examples/mle_standard_errors.py
"""
import numpy as np
import scipy.optimize

import srcad


def normal_nll(theta, y):
    mu, sigma = theta[0], theta[1]
    return np.sum(np.log(sigma) + 0.5 * ((y - mu) / sigma) ** 2)


def logistic_nll(beta, x, y):
    """The negative log-likelihood, and the fitted probabilities as the aux."""
    eta = x @ beta
    p = 1.0 / (1.0 + np.exp(-eta))
    return np.sum(np.logaddexp(0.0, eta) - y * eta), p


def standard_errors(hessian):
    return np.sqrt(np.diag(np.linalg.inv(hessian)))


def fit_normal(rng):
    y = rng.normal(3.0, 2.0, size=400)
    fitted = scipy.optimize.minimize(normal_nll, np.array([0.0, 1.0]), args=(y,),
                                     jac=srcad.grad(normal_nll), method="L-BFGS-B",
                                     bounds=[(None, None), (1e-3, None)])
    mu, sigma = fitted.x
    np.testing.assert_allclose([mu, sigma], [np.mean(y), np.std(y)], rtol=1e-5)
    errors = standard_errors(srcad.hessian(normal_nll)(fitted.x, y))
    closed_form = np.array([sigma / np.sqrt(y.size), sigma / np.sqrt(2 * y.size)])
    print("normal sample, n = 400")
    for name, value, error, expected in zip(["mu", "sigma"], fitted.x, errors, closed_form):
        print(f"  {name:6s} {value:8.4f}  s.e. {error:.5f}  (closed form {expected:.5f})")
    np.testing.assert_allclose(errors, closed_form, rtol=1e-4)


def fit_logistic(rng):
    n, true_beta = 1000, np.array([-0.5, 1.2, -0.7])
    x = np.column_stack([np.ones(n), rng.standard_normal((n, 2))])
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-(x @ true_beta)))).astype(float)
    value_and_gradient = srcad.value_and_grad(logistic_nll, has_aux=True)

    def objective(beta):  # (SciPy's jac=True: the value and the gradient from one call)
        (value, _), gradient = value_and_gradient(beta, x, y)
        return value, gradient
    fitted = scipy.optimize.minimize(objective, np.zeros(3), jac=True, method="BFGS")
    assert fitted.success, fitted.message

    hessian, p = srcad.hessian(logistic_nll, has_aux=True)(fitted.x, x, y)
    errors = standard_errors(hessian)
    by_hand = standard_errors(x.T @ ((p * (1 - p))[:, None] * x))
    print(f"logistic regression, n = {n}")
    print("          coef      s.e.   (by hand)      z")
    for k, (value, error, expected) in enumerate(zip(fitted.x, errors, by_hand)):
        print(f"  x{k}  {value:8.4f}  {error:.5f}  ({expected:.5f})  {value / error:6.2f}")
    np.testing.assert_allclose(errors, by_hand, rtol=1e-9)
    assert np.all(np.abs(fitted.x - true_beta) < 3 * errors)  # (the truth within 3 s.e.)


def main():
    rng = np.random.default_rng(7)
    fit_normal(rng)
    fit_logistic(rng)


if __name__ == "__main__":
    main()
