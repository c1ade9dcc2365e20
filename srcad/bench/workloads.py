"""workloads: the programs the benchmark differentiates, each with the gradient a person
would write by hand in NumPy (the baseline every contender is compared with).

The objectives are plain NumPy, written the way users write them (loops, Python floats,
`np.` calls); contenders that need another array module (JAX) run the same code with `np`
rebound in a copy of the function's globals. Those on numbers and small arrays also have
their hand-written derivative in numba's subset (`hand_compiled`: arrays instead of lists,
no generators), the compiled-code reference of contender "hand.numba" (plain Python here:
numba is imported only when that contender runs).

Sizes are chosen so each workload stresses one axis: per-call overhead (scalar expression,
while loop), per-operation overhead in loops (ODE, small vector, RNN), raw compute (MLP,
attention, Rosenbrock), and the derivative kinds built on the adjoint (Jacobian,
Hessian-vector product).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

try:  # (the benchmark is not imported by srcad: only `normal_nll` needs SciPy)
    from scipy import stats
except ImportError:
    stats = None


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    fn: Callable                 # the plain NumPy objective
    make_args: Callable          # () -> the arguments (the last one is `v` for "hvp")
    wrt: object                  # srcad's `wrt`: an index or a tuple of indices
    hand: Callable               # the hand-written derivative, same arguments and result
    hand_compiled: Callable | None = None  # the same in numba's subset ("hand.numba")
    kind: str = "grad"           # "grad", "jacobian", "hessian" or "hvp"
    notes: dict = field(default_factory=dict)  # contender → why it is not run here
    needs: tuple = ()            # packages the objective itself imports (none runs it without)


# ---- a scalar expression on Python floats: per-call overhead ---------------------------------
def scalar_expression(x, y):
    a = x * y + np.sin(x)
    b = a / (1.0 + y * y)
    c = np.exp(-b) * np.cos(y)
    return c * x + np.log(1.0 + a * a) - np.tanh(b)


def scalar_expression_hand(x, y):
    a = x * y + math.sin(x)
    q = 1.0 + y * y
    b = a / q
    e, cy = math.exp(-b), math.cos(y)
    c = e * cy
    db = -c * x - (1.0 - math.tanh(b) ** 2)   # from c = e^-b cos y and -tanh(b)
    da = 2.0 * a / (1.0 + a * a) + db / q
    dx = c + da * (y + math.cos(x))
    dy = x * (e * -math.sin(y)) + da * x - db * a * 2.0 * y / (q * q)
    return dx, dy


# ---- a scalar ODE integrated with 200 explicit Euler steps -----------------------------------
def oscillator(k, c):
    """Energy of a damped oscillator after 200 steps, as a function of stiffness and damping."""
    x, v, dt = 1.0, 0.0, 0.01
    for _ in range(200):
        a = -k * x - c * v
        x = x + dt * v
        v = v + dt * a
    return x * x + v * v


def oscillator_hand(k, c):
    xs, vs = [1.0], [0.0]
    dt = 0.01
    for _ in range(200):
        x, v = xs[-1], vs[-1]
        xs.append(x + dt * v)
        vs.append(v + dt * (-k * x - c * v))
    bx, bv, bk, bc = 2.0 * xs[-1], 2.0 * vs[-1], 0.0, 0.0
    for n in range(199, -1, -1):
        x, v = xs[n], vs[n]
        bk -= bv * dt * x
        bc -= bv * dt * v
        bx, bv = bx - bv * dt * k, bx * dt + bv * (1.0 - dt * c)
    return bk, bc


def oscillator_hand_compiled(k, c):
    steps, dt = 200, 0.01
    xs, vs = np.empty(steps + 1), np.empty(steps + 1)
    xs[0], vs[0] = 1.0, 0.0
    for n in range(steps):
        xs[n + 1] = xs[n] + dt * vs[n]
        vs[n + 1] = vs[n] + dt * (-k * xs[n] - c * vs[n])
    bx, bv, bk, bc = 2.0 * xs[steps], 2.0 * vs[steps], 0.0, 0.0
    for n in range(steps - 1, -1, -1):
        bk -= bv * dt * xs[n]
        bc -= bv * dt * vs[n]
        bx, bv = bx - bv * dt * k, bx * dt + bv * (1.0 - dt * c)
    return bk, bc


# ---- a loop over a small vector ---------------------------------------------------------------
def small_vector_loop(w, x):
    h = x
    for _ in range(20):
        h = np.tanh(w * h + 0.1)
    return np.sum(h * h)


def small_vector_loop_hand(w, x):
    hs = [x]
    for _ in range(20):
        hs.append(np.tanh(w * hs[-1] + 0.1))
    bh, bw = 2.0 * hs[-1], np.zeros_like(w)
    for t in range(20, 0, -1):
        bz = bh * (1.0 - hs[t] ** 2)
        bw += bz * hs[t - 1]
        bh = bz * w
    return bw, bh


def small_vector_loop_hand_compiled(w, x):
    """Element by element (numba compiles an array expression for seconds)."""
    steps, size = 20, x.shape[0]
    hs = np.empty((steps + 1, size))
    bh, bw = np.empty(size), np.zeros(size)
    for i in range(size):
        hs[0, i] = x[i]
    for t in range(steps):
        for i in range(size):
            hs[t + 1, i] = math.tanh(w[i] * hs[t, i] + 0.1)
    for i in range(size):
        bh[i] = 2.0 * hs[steps, i]
    for t in range(steps, 0, -1):
        for i in range(size):
            bz = bh[i] * (1.0 - hs[t, i] ** 2)
            bw[i] += bz * hs[t - 1, i]
            bh[i] = bz * w[i]
    return bw, bh


# ---- a two-layer network on large matrices: compute-bound ------------------------------------
def mlp_loss(W1, W2, X, Y):
    H = np.tanh(X @ W1)
    P = H @ W2
    return np.mean((P - Y) ** 2)


def mlp_loss_hand(W1, W2, X, Y):
    H = np.tanh(X @ W1)
    P = H @ W2
    dP = 2.0 * (P - Y) / P.size
    dZ = (dP @ W2.T) * (1.0 - H * H)
    return X.T @ dZ, H.T @ dP


# ---- a recurrent network over 50 steps --------------------------------------------------------
def rnn_loss(Wh, Wx, X):
    h = np.zeros(Wh.shape[0])
    for t in range(X.shape[0]):
        h = np.tanh(Wh @ h + Wx @ X[t])
    return np.sum(h * h)


def rnn_loss_hand(Wh, Wx, X):
    hs = [np.zeros(Wh.shape[0])]
    for t in range(X.shape[0]):
        hs.append(np.tanh(Wh @ hs[-1] + Wx @ X[t]))
    bh = 2.0 * hs[-1]
    bWh, bWx = np.zeros_like(Wh), np.zeros_like(Wx)
    for t in range(X.shape[0] - 1, -1, -1):
        bz = bh * (1.0 - hs[t + 1] ** 2)
        bWh += np.outer(bz, hs[t])
        bWx += np.outer(bz, X[t])
        bh = Wh.T @ bz
    return bWh, bWx


# ---- a self-attention block -------------------------------------------------------------------
def attention_loss(Wq, Wv, X):
    Q = X @ Wq
    S = Q @ X.T / np.sqrt(X.shape[1])
    S = S - np.max(S, axis=1, keepdims=True)
    E = np.exp(S)
    A = E / np.sum(E, axis=1, keepdims=True)
    out = A @ (X @ Wv)
    return np.sum(out ** 2)


def attention_loss_hand(Wq, Wv, X):
    scale = 1.0 / np.sqrt(X.shape[1])
    S = (X @ Wq) @ X.T * scale
    E = np.exp(S - np.max(S, axis=1, keepdims=True))
    A = E / np.sum(E, axis=1, keepdims=True)
    V = X @ Wv
    out = A @ V
    dout = 2.0 * out
    dA = dout @ V.T
    dS = A * (dA - np.sum(dA * A, axis=1, keepdims=True))
    return X.T @ (dS @ X) * scale, X.T @ (A.T @ dout)


# ---- the Rosenbrock function on 10^4 elements, vectorised -----------------------------------
def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hand(x):
    d = x[1:] - x[:-1] ** 2
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * d - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * d
    return g


# ---- a data-dependent while loop: Newton's square root ---------------------------------------
def newton_sqrt(a):
    x = a
    while abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


def newton_sqrt_hand(a):
    x = a
    while abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return 0.5 / x


# ---- a (64, 64) Jacobian of a dense layer ----------------------------------------------------
def dense_layer(x, W, b):
    return np.tanh(W @ x + b)


def dense_layer_jacobian_hand(x, W, b):
    t = np.tanh(W @ x + b)
    return (1.0 - t * t)[:, None] * W


# ---- a Hessian-vector product of a regularised logistic loss ----------------------------------
def logistic_loss(w, X, y):
    margins = y * (X @ w)
    return np.mean(np.log1p(np.exp(-margins))) + 0.5e-2 * np.sum(w * w)


def logistic_hvp_hand(w, X, y, v):
    s = 1.0 / (1.0 + np.exp(-y * (X @ w)))
    return X.T @ (s * (1.0 - s) * (X @ v)) / X.shape[0] + 1e-2 * v


# ---- an ODE on Python scalars whose parameters are elements of an array -----------------------
def lotka_volterra(p, start):
    """Predator-prey populations after 200 Euler steps; the four rates are `p[0]`..`p[3]`."""
    u, v = start[0], start[1]
    dt = 0.01
    for _ in range(200):
        du = p[0] * u - p[1] * u * v
        dv = p[2] * u * v - p[3] * v
        u = u + dt * du
        v = v + dt * dv
    return u * u + v


def lotka_volterra_hand(p, start):
    a, b, c, d = (float(r) for r in p)
    us, vs = [float(start[0])], [float(start[1])]
    dt = 0.01
    for _ in range(200):
        u, v = us[-1], vs[-1]
        us.append(u + dt * (a * u - b * u * v))
        vs.append(v + dt * (c * u * v - d * v))
    bu, bv = 2.0 * us[-1], 1.0
    ba = bb = bc = bd = 0.0
    for n in range(199, -1, -1):
        u, v = us[n], vs[n]
        ba += bu * dt * u
        bb -= bu * dt * u * v
        bc += bv * dt * u * v
        bd -= bv * dt * v
        bu, bv = (bu * (1.0 + dt * (a - b * v)) + bv * dt * c * v,
                  bu * -dt * b * u + bv * (1.0 + dt * (c * u - d)))
    return np.array([ba, bb, bc, bd])


def lotka_volterra_hand_compiled(p, start):
    a, b, c, d = p[0], p[1], p[2], p[3]
    steps, dt = 200, 0.01
    us, vs = np.empty(steps + 1), np.empty(steps + 1)
    us[0], vs[0] = start[0], start[1]
    for n in range(steps):
        u, v = us[n], vs[n]
        us[n + 1] = u + dt * (a * u - b * u * v)
        vs[n + 1] = v + dt * (c * u * v - d * v)
    bu, bv = 2.0 * us[steps], 1.0
    ba = bb = bc = bd = 0.0
    for n in range(steps - 1, -1, -1):
        u, v = us[n], vs[n]
        ba += bu * dt * u
        bb -= bu * dt * u * v
        bc += bv * dt * u * v
        bd -= bv * dt * v
        bu, bv = (bu * (1.0 + dt * (a - b * v)) + bv * dt * c * v,
                  bu * -dt * b * u + bv * (1.0 + dt * (c * u - d)))
    return np.array([ba, bb, bc, bd])


# ---- RK4 on a pendulum, its right-hand side a helper writing into np.zeros -------------------
def _pendulum(y, p):
    dy = np.zeros(2)
    dy[0] = y[1]
    dy[1] = -p[0] * np.sin(y[0]) - p[1] * y[1]
    return dy


def rk4_pendulum(p, start):
    """Energy-like measure of a damped pendulum after 1,000 classical Runge-Kutta steps."""
    y, h = start, 0.01
    for _ in range(1000):
        k1 = _pendulum(y, p)
        k2 = _pendulum(y + 0.5 * h * k1, p)
        k3 = _pendulum(y + 0.5 * h * k2, p)
        k4 = _pendulum(y + h * k3, p)
        y = y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return y[0] ** 2 + y[1] ** 2


def rk4_pendulum_hand(p, start):
    g, c = float(p[0]), float(p[1])
    h = 0.01

    def rhs(y0, y1):
        return y1, -g * math.sin(y0) - c * y1

    states = [(float(start[0]), float(start[1]))]
    for _ in range(1000):
        y0, y1 = states[-1]
        k1 = rhs(y0, y1)
        k2 = rhs(y0 + 0.5 * h * k1[0], y1 + 0.5 * h * k1[1])
        k3 = rhs(y0 + 0.5 * h * k2[0], y1 + 0.5 * h * k2[1])
        k4 = rhs(y0 + h * k3[0], y1 + h * k3[1])
        states.append((y0 + h / 6.0 * (k1[0] + 2.0 * k2[0] + 2.0 * k3[0] + k4[0]),
                       y1 + h / 6.0 * (k1[1] + 2.0 * k2[1] + 2.0 * k3[1] + k4[1])))
    b0, b1 = 2.0 * states[-1][0], 2.0 * states[-1][1]
    bg = bc = 0.0
    for n in range(999, -1, -1):
        y0, y1 = states[n]
        k1 = rhs(y0, y1)
        s2 = (y0 + 0.5 * h * k1[0], y1 + 0.5 * h * k1[1])
        k2 = rhs(*s2)
        s3 = (y0 + 0.5 * h * k2[0], y1 + 0.5 * h * k2[1])
        k3 = rhs(*s3)
        s4 = (y0 + h * k3[0], y1 + h * k3[1])
        stage = [h / 6.0, h / 3.0, h / 3.0, h / 6.0]   # each k's weight in the step
        bk = [(w * b0, w * b1) for w in stage]
        by0, by1 = b0, b1
        for i, (s, reach) in enumerate(((s4, h), (s3, 0.5 * h), (s2, 0.5 * h))):
            k = 3 - i            # the stage whose input is s; s = y + reach * k_{k-1}
            bs0, bs1 = -g * math.cos(s[0]) * bk[k][1], bk[k][0] - c * bk[k][1]
            bg -= math.sin(s[0]) * bk[k][1]
            bc -= s[1] * bk[k][1]
            by0, by1 = by0 + bs0, by1 + bs1
            bk[k - 1] = (bk[k - 1][0] + reach * bs0, bk[k - 1][1] + reach * bs1)
        by0, by1 = by0 - g * math.cos(y0) * bk[0][1], by1 + bk[0][0] - c * bk[0][1]
        bg -= math.sin(y0) * bk[0][1]
        bc -= y1 * bk[0][1]
        b0, b1 = by0, by1
    return np.array([bg, bc])


def rk4_pendulum_hand_compiled(p, start):
    g, c = p[0], p[1]
    steps, h = 1000, 0.01

    def rhs(y0, y1):
        return y1, -g * math.sin(y0) - c * y1

    def rhs_adjoint(y0, y1, b0, b1):
        """The cotangents of y0, y1, g and c, given (b0, b1), those of rhs(y0, y1)."""
        return -g * math.cos(y0) * b1, b0 - c * b1, -math.sin(y0) * b1, -y1 * b1

    ys = np.empty((steps + 1, 2))
    ys[0, 0], ys[0, 1] = start[0], start[1]
    for n in range(steps):
        y0, y1 = ys[n, 0], ys[n, 1]
        k10, k11 = rhs(y0, y1)
        k20, k21 = rhs(y0 + 0.5 * h * k10, y1 + 0.5 * h * k11)
        k30, k31 = rhs(y0 + 0.5 * h * k20, y1 + 0.5 * h * k21)
        k40, k41 = rhs(y0 + h * k30, y1 + h * k31)
        ys[n + 1, 0] = y0 + h / 6.0 * (k10 + 2.0 * k20 + 2.0 * k30 + k40)
        ys[n + 1, 1] = y1 + h / 6.0 * (k11 + 2.0 * k21 + 2.0 * k31 + k41)
    b0, b1 = 2.0 * ys[steps, 0], 2.0 * ys[steps, 1]
    bg = bc = 0.0
    for n in range(steps - 1, -1, -1):
        y0, y1 = ys[n, 0], ys[n, 1]           # the stages' inputs s2, s3, s4, again
        k10, k11 = rhs(y0, y1)
        s20, s21 = y0 + 0.5 * h * k10, y1 + 0.5 * h * k11
        k20, k21 = rhs(s20, s21)
        s30, s31 = y0 + 0.5 * h * k20, y1 + 0.5 * h * k21
        k30, k31 = rhs(s30, s31)
        s40, s41 = y0 + h * k30, y1 + h * k31
        bk10, bk11 = h / 6.0 * b0, h / 6.0 * b1   # each k's weight in the step
        bk20, bk21 = h / 3.0 * b0, h / 3.0 * b1
        bk30, bk31 = h / 3.0 * b0, h / 3.0 * b1
        bk40, bk41 = h / 6.0 * b0, h / 6.0 * b1
        bs0, bs1, dg, dc = rhs_adjoint(s40, s41, bk40, bk41)   # s4 = y + h k3
        b0, b1, bg, bc = b0 + bs0, b1 + bs1, bg + dg, bc + dc
        bk30, bk31 = bk30 + h * bs0, bk31 + h * bs1
        bs0, bs1, dg, dc = rhs_adjoint(s30, s31, bk30, bk31)   # s3 = y + h/2 k2
        b0, b1, bg, bc = b0 + bs0, b1 + bs1, bg + dg, bc + dc
        bk20, bk21 = bk20 + 0.5 * h * bs0, bk21 + 0.5 * h * bs1
        bs0, bs1, dg, dc = rhs_adjoint(s20, s21, bk20, bk21)   # s2 = y + h/2 k1
        b0, b1, bg, bc = b0 + bs0, b1 + bs1, bg + dg, bc + dc
        bk10, bk11 = bk10 + 0.5 * h * bs0, bk11 + 0.5 * h * bs1
        bs0, bs1, dg, dc = rhs_adjoint(y0, y1, bk10, bk11)     # k1 = rhs(y)
        b0, b1, bg, bc = b0 + bs0, b1 + bs1, bg + dg, bc + dc
    return np.array([bg, bc])


# ---- an explicit heat-equation stencil written in place --------------------------------------
def heat_equation(k, start):
    """sum(u^2) after 300 explicit steps of u_t = k u_xx, the ends held fixed."""
    u = start.copy()
    for _ in range(300):
        un = u.copy()
        u[1:-1] = un[1:-1] + k * (un[2:] - 2.0 * un[1:-1] + un[:-2])
    return np.sum(u ** 2)


def heat_equation_hand(k, start):
    states = [start.copy()]
    for _ in range(300):
        un = states[-1]
        u = un.copy()
        u[1:-1] = un[1:-1] + k * (un[2:] - 2.0 * un[1:-1] + un[:-2])
        states.append(u)
    bu, bk = 2.0 * states[-1], 0.0
    for n in range(299, -1, -1):
        un, inner = states[n], bu[1:-1].copy()
        bk += inner @ (un[2:] - 2.0 * un[1:-1] + un[:-2])
        bu[1:-1] = (1.0 - 2.0 * k) * inner
        bu[2:] += k * inner
        bu[:-2] += k * inner
    return bk, bu


# ---- logistic regression with its parameters in a dict ---------------------------------------
def logistic_dict(params, X, y):
    z = X @ params["w"] + params["b"]
    return np.mean(np.log1p(np.exp(-y * z))) + 1e-3 * np.sum(params["w"] ** 2)


def logistic_dict_hand(params, X, y):
    z = X @ params["w"] + params["b"]
    dz = -y / (1.0 + np.exp(y * z)) / X.shape[0]
    return {"w": X.T @ dz + 2e-3 * params["w"], "b": np.sum(dz)}


# ---- a Gaussian-process negative log marginal likelihood -------------------------------------
def gp_nll(theta, X, y):
    """RBF kernel with log length-scale, log signal and log noise variance in `theta`."""
    scale, signal, noise = np.exp(theta[0]), np.exp(theta[1]), np.exp(theta[2])
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    K = signal * np.exp(-0.5 * d2 / scale ** 2) + noise * np.eye(X.shape[0])
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * len(y) * np.log(2 * np.pi)


def gp_nll_hand(theta, X, y):
    scale, signal, noise = np.exp(theta)
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    R = signal * np.exp(-0.5 * d2 / scale ** 2)
    L = np.linalg.cholesky(R + noise * np.eye(X.shape[0]))
    inverse_L = np.linalg.solve(L, np.eye(X.shape[0]))
    inverse_K = inverse_L.T @ inverse_L
    alpha = inverse_K @ y
    W = inverse_K - np.outer(alpha, alpha)   # dNLL/dt = tr(W dK/dt) / 2
    return 0.5 * np.array([np.sum(W * (R * d2 / scale ** 2)), np.sum(W * R),
                           noise * np.trace(W)])


# ---- a Gaussian-mixture log-likelihood written with loops and in-place writes ----------------
def mixture_loops(means, log_scales, logits, X):
    """Negative log-likelihood of a diagonal Gaussian mixture, one point and one component
    at a time, with a Gaussian prior on the means."""
    weights = np.exp(logits - np.max(logits))
    weights = weights / np.sum(weights)
    total = np.zeros(X.shape[0])
    for i in range(X.shape[0]):
        scores = np.empty(means.shape[0])
        for j in range(means.shape[0]):
            z = (X[i] - means[j]) / np.exp(log_scales[j])
            scores[j] = np.log(weights[j]) - np.sum(log_scales[j]) - 0.5 * (z @ z)
        top = np.max(scores)
        total[i] = top + np.log(np.sum(np.exp(scores - top)))
    return -np.sum(total) + 0.5 * np.sum(means ** 2)


def mixture_loops_hand(means, log_scales, logits, X):
    weights = np.exp(logits - np.max(logits))
    weights /= np.sum(weights)
    scales = np.exp(log_scales)
    z = (X[:, None, :] - means[None]) / scales[None]                  # (n, k, d)
    scores = np.log(weights) - np.sum(log_scales, axis=1) - 0.5 * np.sum(z * z, axis=2)
    r = np.exp(scores - np.max(scores, axis=1, keepdims=True))
    r /= np.sum(r, axis=1, keepdims=True)                               # responsibilities
    d_means = -np.einsum("nk,nkd->kd", r, z) / scales + means
    d_log_scales = -np.einsum("nk,nkd->kd", r, z * z - 1.0)
    d_logits = -(np.sum(r, axis=0) - X.shape[0] * weights)
    return d_means, d_log_scales, d_logits


# ---- the Hessian of a likelihood written with scipy.stats ------------------------------------
def normal_nll(theta, x):
    """Negative log-likelihood of 10 independent normals: means theta[:10], log scales
    theta[10:]."""
    return -np.sum(stats.norm.logpdf(x, theta[:10], np.exp(theta[10:])))


def normal_nll_hessian_hand(theta, x):
    mu, scale = theta[:10], np.exp(theta[10:])
    residual = x - mu
    H = np.zeros((20, 20))
    i = np.arange(10)
    H[i, i] = x.shape[0] / scale ** 2
    H[i, i + 10] = H[i + 10, i] = 2.0 * np.sum(residual, axis=0) / scale ** 2
    H[i + 10, i + 10] = 2.0 * np.sum(residual ** 2, axis=0) / scale ** 2
    return H


# ---- one elementwise gradient on 10^7 elements: time and memory at scale ---------------------
def elementwise(x):
    return np.sum(np.sin(x) * x)


def elementwise_hand(x):
    return np.cos(x) * x + np.sin(x)


def _rng():
    return np.random.default_rng(0)


def _mlp_args():
    r = _rng()
    return (r.standard_normal((512, 512)) / 20, r.standard_normal((512, 10)) / 20,
            r.standard_normal((256, 512)), r.standard_normal((256, 10)))


def _rnn_args():
    r = _rng()
    return r.standard_normal((32, 32)) / 6, r.standard_normal((32, 16)) / 4, \
        r.standard_normal((50, 16))


def _attention_args():
    r = _rng()
    return r.standard_normal((32, 32)) / 6, r.standard_normal((32, 32)) / 6, \
        r.standard_normal((64, 32))


def _dense_args():
    r = _rng()
    return r.standard_normal(64), r.standard_normal((64, 64)) / 8, r.standard_normal(64)


def _logistic_args():
    r = _rng()
    X = r.standard_normal((500, 50))
    return r.standard_normal(50) / 5, X, np.sign(r.standard_normal(500)), r.standard_normal(50)


_UNROLLED = "a Python loop of many steps: jit unrolls it into a very long compile"
_DATA_DEPENDENT = "a while loop on traced values: jit cannot compile it"
_SCIPY = "scipy.stats on NumPy arrays: the peer needs its own scipy.stats"


def _lotka_args():
    return np.array([1.1, 0.4, 0.1, 0.4]), np.array([10.0, 5.0])


def _heat_args():
    grid = np.linspace(0.0, 1.0, 200)
    return 0.2, np.sin(np.pi * grid) + 0.1 * _rng().standard_normal(200)


def _logistic_dict_args():
    r = _rng()
    X = r.standard_normal((200, 20))
    return ({"w": r.standard_normal(20) / 5, "b": 0.1}, X,
            np.sign(X @ r.standard_normal(20) + 0.5 * r.standard_normal(200)))


def _gp_args():
    r = _rng()
    X = r.uniform(-2.0, 2.0, (100, 3))
    return np.log(np.array([1.0, 1.5, 0.1])), X, np.sin(X @ np.array([1.0, -0.5, 0.3]))


def _mixture_args():
    r = _rng()
    X = np.concatenate([r.standard_normal((20, 3)) + 2.0 * r.standard_normal(3)
                        for _ in range(5)])
    return r.standard_normal((5, 3)), 0.1 * r.standard_normal((5, 3)), \
        0.1 * r.standard_normal(5), X


def _normal_nll_args():
    r = _rng()
    return r.standard_normal(20) / 3, r.standard_normal((50, 10)) * 1.5 + 0.5


WORKLOADS = [
    Workload("scalar", "10-operation expression on Python floats", scalar_expression,
             lambda: (0.7, 1.3), (0, 1), scalar_expression_hand,
             hand_compiled=scalar_expression_hand),  # (in numba's subset as it is)
    Workload("ode", "damped oscillator, 200 Euler steps on Python floats", oscillator,
             lambda: (4.0, 0.3), (0, 1), oscillator_hand,
             hand_compiled=oscillator_hand_compiled, notes={"jax.jit": _UNROLLED}),
    Workload("small_loop", "20 steps of tanh on a (4,) vector", small_vector_loop,
             lambda: (np.array([0.5, -0.3, 0.8, 1.1]), np.array([0.2, 0.4, -0.6, 0.1])),
             (0, 1), small_vector_loop_hand, hand_compiled=small_vector_loop_hand_compiled),
    Workload("mlp", "2-layer MLP loss, (256, 512) @ (512, 512)", mlp_loss, _mlp_args, (0, 1),
             mlp_loss_hand),
    Workload("rnn", "tanh RNN, hidden 32, 50 steps", rnn_loss, _rnn_args, (0, 1),
             rnn_loss_hand),
    Workload("attention", "self-attention, 64 tokens x 32 dims", attention_loss,
             _attention_args, (0, 1), attention_loss_hand),
    Workload("rosenbrock", "vectorised Rosenbrock on 10^4 elements", rosenbrock,
             lambda: (np.linspace(-1.5, 1.5, 10_000),), 0, rosenbrock_hand),
    Workload("while", "Newton's square root, data-dependent while loop", newton_sqrt,
             lambda: (7.3,), 0, newton_sqrt_hand,
             hand_compiled=newton_sqrt_hand,  # (in numba's subset as it is)
             notes={"jax.jit": _DATA_DEPENDENT}),
    Workload("jacobian", "(64, 64) Jacobian of tanh(W @ x + b)", dense_layer, _dense_args, 0,
             dense_layer_jacobian_hand, kind="jacobian"),
    Workload("hvp", "Hessian-vector product, logistic loss, (500, 50) data", logistic_loss,
             _logistic_args, 0, logistic_hvp_hand, kind="hvp"),
    Workload("lotka", "Lotka-Volterra, 200 Euler steps, rates are elements p[0]..p[3]",
             lotka_volterra, _lotka_args, 0, lotka_volterra_hand,
             hand_compiled=lotka_volterra_hand_compiled, notes={"jax.jit": _UNROLLED}),
    Workload("rk4", "RK4 pendulum, 1,000 steps, helper writes dy = np.zeros(2); dy[0] = ..",
             rk4_pendulum, lambda: (np.array([9.81, 0.3]), np.array([1.0, 0.0])), 0,
             rk4_pendulum_hand, hand_compiled=rk4_pendulum_hand_compiled,
             notes={"jax.jit": _UNROLLED}),
    Workload("heat", "explicit heat stencil u[1:-1] = ... in place, 200 points, 300 steps",
             heat_equation, _heat_args, (0, 1), heat_equation_hand,
             notes={"jax.jit": _UNROLLED}),
    Workload("logistic_dict", "logistic regression, params['w'], params['b'], (200, 20)",
             logistic_dict, _logistic_dict_args, 0, logistic_dict_hand),
    Workload("gp", "Gaussian-process NLL, RBF kernel, cholesky and solve, 100 points",
             gp_nll, _gp_args, 0, gp_nll_hand),
    Workload("mixture", "Gaussian mixture NLL in loops over 100 points x 5 components",
             mixture_loops, _mixture_args, (0, 1, 2), mixture_loops_hand,
             notes={"jax.jit": _UNROLLED}),
    Workload("scipy_hessian", "(20, 20) Hessian of an NLL written with scipy.stats.norm",
             normal_nll, _normal_nll_args, 0, normal_nll_hessian_hand, kind="hessian",
             notes={"jax": _SCIPY, "jax.jit": _SCIPY, "torch": _SCIPY}, needs=("scipy",)),
    Workload("elementwise", "sum(sin(x) * x) on 10^7 elements: time and memory at scale",
             elementwise, lambda: (np.linspace(-3.0, 3.0, 10_000_000),), 0,
             elementwise_hand),
]
