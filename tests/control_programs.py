"""Programs with control flow: the corpus the control-flow tests differentiate.

Each entry of CORPUS is (function, list of argument tuples, wrt); the argument tuples are
chosen to take different branches and trip counts.
"""
import numpy as np


def rnn(x, W):
    h = x
    for i in range(3):
        h = np.tanh(W @ h)
    return np.sum(h)


def branch_on_data(x, y):
    if np.sum(x) > 0:
        z = x * y
    else:
        z = np.sin(x)
    return np.sum(z * z)


def newton_sqrt(a):
    x = 1.0
    while abs(x * x - a) > 1e-12:
        x = 0.5 * (x + a / x)
    return x


def early_return(x):
    for i in range(5):
        if x > 3.0:
            return x * 2.0
        x = x * 1.5
    return -x


def skip_negative(xs):
    total = 0.0
    for v in xs:
        if v < 0:
            continue
        total = total + v ** 2
    return total


def conditional_expressions(x):
    y = x if x > 0 else -x * 3.0
    z = (x > 1.0) and x ** 2
    return y + z


def elif_chain(x):
    if x < -1.0:
        y = x ** 3
    elif x < 0.0:
        y = np.sin(x)
    elif x < 1.0:
        y = x * x * 2.0
    else:
        y = np.exp(x)
    return y


def nested_loops(a, b):
    total = 0.0
    for i in range(3):
        for j in range(i + 1):
            total = total + a * b ** j
    return total


def break_on_threshold(x):
    y = x
    for i in range(10):
        y = y * 1.3
        if y > 5.0:
            break
    return y


def euler_ode(k, y0):
    y = y0
    dt = 0.1
    for step in range(20):
        y = y + dt * (-k * y)
    return y


CORPUS = [
    (rnn, [(np.array([0.3, -0.2]), np.array([[0.5, 0.1], [-0.3, 0.8]]))], (0, 1)),
    (branch_on_data, [(np.array([1.0, 2.0]), np.array([0.5, -1.0])),
                      (np.array([-1.0, -2.0]), np.array([0.5, -1.0]))], (0, 1)),
    (newton_sqrt, [(2.0,), (9.0,), (0.25,)], 0),
    (early_return, [(1.0,), (0.1,), (4.0,)], 0),
    (skip_negative, [(np.array([1.0, -2.0, 3.0]),), (np.array([-1.0, -2.0]),)], 0),
    (conditional_expressions, [(2.0,), (0.5,), (-0.5,)], 0),
    (elif_chain, [(-2.0,), (-0.5,), (0.5,), (2.0,)], 0),
    (nested_loops, [(1.5, 0.7)], (0, 1)),
    (break_on_threshold, [(0.5,), (3.0,), (0.01,)], 0),
    (euler_ode, [(0.7, 2.0)], (0, 1)),
]


def long_loop(x):
    """1000 steps of a damped nonlinear update, for the memory test."""
    h = x
    for step in range(1000):
        h = h + 0.001 * np.sin(h)
    return np.sum(h)
