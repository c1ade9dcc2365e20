"""workloads: the programs the benchmark differentiates, each with the gradient a person
would write by hand in NumPy (the baseline every contender is compared with).

The objectives are plain NumPy, written the way users write them (loops, Python floats,
`np.` calls); contenders that need another array module (JAX) run the same code with `np`
rebound in a copy of the function's globals. Sizes are chosen so each workload stresses one
axis: per-call overhead (scalar expression, while loop), per-operation overhead in loops
(ODE, small vector, RNN), raw compute (MLP, attention, Rosenbrock), and the derivative
kinds built on the adjoint (Jacobian, Hessian-vector product).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    fn: Callable                 # the plain NumPy objective
    make_args: Callable          # () -> the arguments (the last one is `v` for "hvp")
    wrt: object                  # srcad's `wrt`: an index or a tuple of indices
    hand: Callable               # the hand-written derivative, same arguments and result
    kind: str = "grad"           # "grad", "jacobian" or "hvp"
    notes: dict = field(default_factory=dict)  # contender → why it is not run here


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

WORKLOADS = [
    Workload("scalar", "10-operation expression on Python floats", scalar_expression,
             lambda: (0.7, 1.3), (0, 1), scalar_expression_hand),
    Workload("ode", "damped oscillator, 200 Euler steps on Python floats", oscillator,
             lambda: (4.0, 0.3), (0, 1), oscillator_hand, notes={"jax.jit": _UNROLLED}),
    Workload("small_loop", "20 steps of tanh on a (4,) vector", small_vector_loop,
             lambda: (np.array([0.5, -0.3, 0.8, 1.1]), np.array([0.2, 0.4, -0.6, 0.1])),
             (0, 1), small_vector_loop_hand),
    Workload("mlp", "2-layer MLP loss, (256, 512) @ (512, 512)", mlp_loss, _mlp_args, (0, 1),
             mlp_loss_hand),
    Workload("rnn", "tanh RNN, hidden 32, 50 steps", rnn_loss, _rnn_args, (0, 1),
             rnn_loss_hand),
    Workload("attention", "self-attention, 64 tokens x 32 dims", attention_loss,
             _attention_args, (0, 1), attention_loss_hand),
    Workload("rosenbrock", "vectorised Rosenbrock on 10^4 elements", rosenbrock,
             lambda: (np.linspace(-1.5, 1.5, 10_000),), 0, rosenbrock_hand),
    Workload("while", "Newton's square root, data-dependent while loop", newton_sqrt,
             lambda: (7.3,), 0, newton_sqrt_hand, notes={"jax.jit": _DATA_DEPENDENT}),
    Workload("jacobian", "(64, 64) Jacobian of tanh(W @ x + b)", dense_layer, _dense_args, 0,
             dense_layer_jacobian_hand, kind="jacobian"),
    Workload("hvp", "Hessian-vector product, logistic loss, (500, 50) data", logistic_loss,
             _logistic_args, 0, logistic_hvp_hand, kind="hvp"),
]
