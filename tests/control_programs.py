"""Programs with control flow: the corpus the control-flow tests differentiate.

Each entry of CORPUS is (function, list of argument tuples, wrt); the argument tuples are
chosen to take different branches and trip counts.
"""
import functools
import operator

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


# ---- ODE integrators ------------------------------------------------------------------------
def euler_oscillator(omega, x0, v0, n):
    """Explicit Euler for x'' = -omega^2 x, n steps (n is not differentiated)."""
    x, v = x0, v0
    dt = 0.05
    for step in range(int(n)):
        x, v = x + dt * v, v - dt * omega ** 2 * x
    return x * x + 0.5 * v * v


def rk4_logistic(r, y0, n):
    """Classical RK4 on the logistic equation y' = r y (1 - y)."""
    y = y0
    h = 0.1
    for step in range(n):
        k1 = r * y * (1.0 - y)
        y2 = y + 0.5 * h * k1
        k2 = r * y2 * (1.0 - y2)
        y3 = y + 0.5 * h * k2
        k3 = r * y3 * (1.0 - y3)
        y4 = y + h * k3
        k4 = r * y4 * (1.0 - y4)
        y = y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return y


def rk4_lotka_volterra(rates, A, y0):
    """RK4 on y' = y * (rates + A @ y) for a 2-species population vector."""
    y = y0
    h = 0.05
    for step in range(8):
        k1 = y * (rates + A @ y)
        z = y + 0.5 * h * k1
        k2 = z * (rates + A @ z)
        z = y + 0.5 * h * k2
        k3 = z * (rates + A @ z)
        z = y + h * k3
        k4 = z * (rates + A @ z)
        y = y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return np.sum(y * y)


def leapfrog_pendulum(q0, p0, n):
    """Velocity Verlet for a pendulum; returns the final energy plus the angle."""
    q, p = q0, p0
    dt = 0.1
    for i in range(n):
        p = p - 0.5 * dt * np.sin(q)
        q = q + dt * p
        p = p - 0.5 * dt * np.sin(q)
    return 0.5 * p ** 2 - np.cos(q) + q


def adaptive_euler(k, y0):
    """Euler with a step size chosen by a branch; the time loop is a while."""
    t = 0.0
    y = y0
    while t < 1.0:
        dt = 0.05 if abs(y) > 1.0 else 0.2
        y = y + dt * (-k * y + np.sin(t))
        t = t + dt
    return y


# ---- recurrences ----------------------------------------------------------------------------
def gru_like(xs, Wz, Wh, h0):
    """A GRU-like recurrence over the rows of xs."""
    h = h0
    for x in xs:
        z = 1.0 / (1.0 + np.exp(-(Wz @ h + x)))
        candidate = np.tanh(Wh @ h + x)
        h = (1.0 - z) * h + z * candidate
    return np.sum(h * h)


def rnn_enumerate(xs, W, U):
    """An RNN over enumerate(xs) whose input weight decays with the time step."""
    h = np.zeros(2)
    for t, x in enumerate(xs):
        h = np.tanh(W @ h + (U @ x) / (t + 1.0))
    return np.sum(h)


def layers_over_tuple(W1, W2, x):
    """Leaky-ReLU layers applied by looping over a tuple of weight matrices."""
    h = x
    for W in (W1, W2, W1):
        h = W @ h
        h = np.where(h > 0, h, 0.1 * h)
    return np.sum(h)


def exponential_moving_average(xs, beta):
    """Adam-style bias-corrected moving average of a sequence."""
    m = 0.0
    correction = 1.0
    for t, x in enumerate(xs):
        m = beta * m + (1.0 - beta) * x
        correction = correction * beta
    return m / (1.0 - correction)


def fibonacci_like(a, b, n):
    """A tuple-swapping nonlinear recurrence."""
    for i in range(n):
        a, b = b, a + 0.5 * b * np.sin(a)
    return a * b


# ---- iterative solvers ----------------------------------------------------------------------
def newton_cube_root(a):
    """Newton's method on x^3 = a with a data-dependent while and an iteration cap."""
    x = 1.0
    it = 0
    while abs(x * x * x - a) > 1e-13 and it < 50:
        x = x - (x * x * x - a) / (3.0 * x * x)
        it = it + 1
    return x


def fixed_point_cos(c):
    """Fixed-point iteration x = c cos(x) until the update is tiny."""
    x = 0.0
    delta = 1.0
    while delta > 1e-15:
        new = c * np.cos(x)
        delta = abs(new - x)
        x = new
    return x


def bisection_sqrt(a):
    """Bisection for sqrt(a) on [0, a + 1], then one Newton polish step."""
    lo = 0.0
    hi = a + 1.0
    while hi - lo > 1e-3:
        mid = 0.5 * (lo + hi)
        if mid * mid > a:
            hi = mid
        else:
            lo = mid
    x = 0.5 * (lo + hi)
    return x - (x * x - a) / (2.0 * x)


def gradient_descent(a, b, n):
    """n steps of gradient descent on (w - a)^2 + b w^4; returns the final loss."""
    w = 0.0
    for i in range(n):
        g = 2.0 * (w - a) + 4.0 * b * w ** 3
        w = w - 0.1 * g
    return (w - a) ** 2 + b * w ** 4


def power_iteration(A):
    """Power iteration for the dominant eigenvalue (Rayleigh quotient)."""
    v = np.ones(3)
    for i in range(6):
        v = A @ v
        v = v / np.sqrt(np.sum(v * v))
    return v @ (A @ v)


def sinkhorn(K, a, b):
    """A few Sinkhorn scaling iterations."""
    v = np.ones(2)
    for i in range(5):
        u = a / (K @ v)
        v = b / (np.transpose(K) @ u)
    return np.sum(u * (K @ v))


def halve_until_small(x):
    """A while loop whose trip count depends on the input's magnitude."""
    count = 0
    while x > 1.0:
        x = x * 0.5
        count = count + 1
    return x * (count + 1.0)


# ---- piecewise functions --------------------------------------------------------------------
def huber_loss(r, delta):
    """The Huber loss summed over the residuals by a loop with a branch."""
    total = 0.0
    for v in r:
        if abs(v) <= delta:
            total = total + 0.5 * v * v
        else:
            total = total + delta * (abs(v) - 0.5 * delta)
    return total


def smooth_l1(x, beta):
    """Smooth L1 on a scalar with an elif chain."""
    if x < -beta:
        y = -x - 0.5 * beta
    elif x > beta:
        y = x - 0.5 * beta
    else:
        y = 0.5 * x * x / beta
    return y


def clip_by_branches(xs, lo, hi):
    """Clipping each element with if/elif/else, then a weighted sum."""
    total = 0.0
    for i, v in enumerate(xs):
        if v < lo:
            c = lo
        elif v > hi:
            c = hi
        else:
            c = v
        total = total + (i + 1.0) * c * c
    return total


def long_elif_chain(x):
    """Six branches; each case lands in a different one."""
    if x < -2.0:
        y = np.exp(x)
    elif x < -1.0:
        y = x ** 2
    elif x < 0.0:
        y = np.sin(3.0 * x)
    elif x < 1.0:
        y = np.tanh(x) * x
    elif x < 2.0:
        y = np.sqrt(x) + x
    else:
        y = np.log(x) * x
    return y


def nested_ifs(x, y):
    """Branches nested three deep."""
    if x > 0:
        if y > 0:
            if x > y:
                z = x * y
            else:
                z = x + y * y
        else:
            z = x - np.exp(y)
    else:
        if y > 1.0:
            z = np.sin(x) * y
        else:
            z = x * x * x + y
    return z


# ---- polynomials and reductions with loops ---------------------------------------------------
def horner(coeffs, x):
    """Horner's rule, highest coefficient first."""
    acc = 0.0
    for c in coeffs:
        acc = acc * x + c
    return acc


def horner_reversed(coeffs, x):
    """Horner's rule over reversed(coeffs): lowest coefficient first in the array."""
    acc = 0.0
    for c in reversed(coeffs):
        acc = acc * x + c
    return acc


def logsumexp_loop(x):
    """Log-sum-exp with a running maximum found by a loop."""
    m = x[0]
    for v in x:
        if v > m:
            m = v
    total = 0.0
    for v in x:
        total = total + np.exp(v - m)
    return m + np.log(total)


def softmax_cross_entropy(logits, k):
    """Cross-entropy of softmax(logits) at class k, the normalizer built by a loop."""
    z = 0.0
    for i in range(len(logits)):
        z = z + np.exp(logits[i])
    return np.log(z) - logits[k]


def cumulative_product(x):
    """Sum of the running products of x."""
    p = 1.0
    total = 0.0
    for v in x:
        p = p * v
        total = total + p
    return total


def running_max_square(xs):
    """The maximum by conditional expressions in a loop, squared."""
    best = xs[0]
    for v in xs[1:]:
        best = v if v > best else best
    return best * best


def welford_variance(xs):
    """Welford's online variance over the elements of xs."""
    mean = 0.0
    m2 = 0.0
    n = 0.0
    for v in xs:
        n = n + 1.0
        d = v - mean
        mean = mean + d / n
        m2 = m2 + d * (v - mean)
    return m2 / n


# ---- simulators -----------------------------------------------------------------------------
def bouncing_ball(h0, v0, e, n):
    """A ball under gravity that bounces (loses speed by e) when it hits the floor."""
    h, v = h0, v0
    dt = 0.1
    for i in range(n):
        v = v - 9.81 * dt
        h = h + v * dt
        if h < 0.0:
            h = -h * e
            v = -v * e
    return h + 0.1 * v


def sliding_block(v0, mu):
    """A block slowing by friction, simulated while it still moves (bounded)."""
    x = 0.0
    v = v0
    steps = 0
    while v > 0.05 and steps < 200:
        v = v - mu * 9.81 * 0.01 - 0.01 * v * v
        x = x + v * 0.01
        steps = steps + 1
    return x


def random_walk_with_walls(x0, steps):
    """A deterministic walk over a fixed step array, reflecting at the walls -1 and 1."""
    x = x0
    for s in steps:
        x = x + s * (1.0 + 0.3 * np.sin(x))
        if x > 1.0:
            x = 2.0 - x
        elif x < -1.0:
            x = -2.0 - x
    return x * x


# ---- loops: trip counts, ranges, iteration forms --------------------------------------------
def input_trip_count(x, n):
    """range(int(n)) with n an input that is not differentiated; n = 0 is a zero-trip loop."""
    for i in range(int(n)):
        x = np.sin(x) + 0.5 * x
    return x * x


def strided_range(x, start, stop, step):
    """range(start, stop, step) with bounds computed at run time."""
    total = 0.0
    for i in range(start, stop, step):
        total = total + x ** 2 * i + np.sin(x * i)
    return total


def countdown_range(x, n):
    """A reversed range(n - 1, -1, -1)."""
    for i in range(n - 1, -1, -1):
        x = x * (i + 1.0) * 0.3 + np.sin(x)
    return x


def rows_with_branch(X, w):
    """Loop over the rows of a matrix with a branch on each row's score."""
    total = 0.0
    for row in X:
        s = np.dot(row, w)
        if s > 0:
            total = total + s * s
        else:
            total = total + 0.1 * s
    return total


def zip_pairs(xs, ys):
    """zip over two arrays with a branch comparing the pair."""
    acc = 0.0
    for a, b in zip(xs, ys):
        if a > b:
            acc = acc + a * b
        else:
            acc = acc + (a - b) ** 2
    return acc


def reversed_enumerate_weights(xs, w):
    """reversed() over an array combined with enumerate over a list."""
    acc = 0.0
    for v in reversed(xs):
        acc = acc * w + np.tanh(v)
    for i, c in enumerate([w, 2.0 * w, 3.0]):
        acc = acc + i * c
    return acc


def normalize_rows_if_long(X, w):
    """Rows longer than 1 are normalized before scoring."""
    total = 0.0
    for row in X:
        norm = np.sqrt(np.sum(row * row))
        if norm > 1.0:
            row = row / norm
        total = total + np.sum(row * w)
    return total


# ---- break / continue / return ----------------------------------------------------------------
def nested_break_continue(A, s):
    """Nested loops: skip negatives, stop a row at the first large value."""
    total = 0.0
    for row in A:
        for v in row:
            if v < 0.0:
                continue
            if v > 2.0:
                break
            total = total + s * v * v
    return total


def continue_in_while(x):
    """A counting while loop that skips even counters."""
    i = 0
    while i < 6:
        i = i + 1
        if i % 2 == 0:
            continue
        x = x * 0.9 + np.sin(x)
    return x


def return_inside_while(x):
    """Grow x until it exceeds 4, returning from inside the loop; capped at 20 steps."""
    steps = 0
    while steps < 20:
        if x > 4.0:
            return np.log(x) + steps
        x = x * 1.5 + 0.1
        steps = steps + 1
    return -x


def several_exits(x, y):
    """Four return statements in branches and a loop."""
    if x < -1.0:
        return x * y
    for i in range(4):
        if x * y > 3.0:
            return np.sqrt(x * y) + i
        if y < -2.0:
            return y * y
        x = x + 0.5
    return x - y


def search_with_break(knots, values, t):
    """Locate t among sorted knots by a loop with break, then interpolate linearly."""
    i = 0
    for j in range(len(knots) - 1):
        i = j
        if t < knots[j + 1]:
            break
    w = (t - knots[i]) / (knots[i + 1] - knots[i])
    return (1.0 - w) * values[i] + w * values[i + 1]


# ---- conditional expressions, and / or ----------------------------------------------------
def conditional_in_loop(x):
    """A loop whose update is a conditional expression."""
    for i in range(4):
        x = x * 1.1 if x < 2.0 else np.sqrt(x)
    return x


def and_or_values(x, y):
    """and/or used as values (their results flow into arithmetic)."""
    a = (x > 0.5 and x * y) or y * 2.0
    b = (y < 0.0 or x) and np.sin(x)
    return a + b


def and_or_conditions(x, y):
    """Compound conditions with and/or/not."""
    if x > 0 and not y > 1.0:
        z = x * y
    elif x < -1.0 or y > 2.0:
        z = x + y * y
    else:
        z = np.exp(x) * y
    return z


# ---- shape changes across iterations --------------------------------------------------------
def shrinking_slices(x):
    """x loses an element each iteration."""
    for i in range(3):
        x = x[1:] * 2.0 + x[:-1]
    return np.sum(x * x)


def growing_concatenate(x):
    """x gains an element each iteration via np.concatenate."""
    for i in range(3):
        x = np.concatenate((x, x[:1] * 2.0 + x[-1:]))
    return np.sum(np.sin(x))


def scalar_then_vector(x, v):
    """A value that is a scalar in the first iteration and a vector afterwards."""
    acc = x
    for i in range(3):
        acc = acc * v + np.sin(acc)
    return np.sum(acc)


def dict_state_update(x, v):
    """State kept in a dict rebuilt every step."""
    state = {"pos": x, "vel": v}
    for i in range(5):
        pos = state["pos"] + 0.1 * state["vel"]
        vel = state["vel"] - 0.1 * np.sin(pos)
        state = {"pos": pos, "vel": vel}
    return state["pos"] * state["vel"]


# ---- tuple assignments whose targets are overwritten (restored in the backward sweep) ------
def tuple_swap_in_loop(a, b):
    """`a, b = b, a * b` in a loop: both old values are pushed and must pop in reverse."""
    for i in range(3):
        a, b = b, a * b
    return a * b


def tuple_swap_in_branch(a, b):
    """The same swap under an if."""
    if a > 0:
        a, b = b, a * b
    return a * b


def while_in_each_step(x, k):
    total = 0.0
    for i in range(3):
        y = x * (i + 1.0)
        while y > 0.1:              # a trip count per step, from the stack's growth
            y = y * k - 0.05
            total = total + y * x
    return total


# ---- loops' `else:`, element tuple targets, zip over dicts (rewritten by the frontend) -------
def for_else_without_break(x):
    s = 0.0
    for i in range(3):
        s = s + x[i] ** 2
    else:
        s = s * np.sin(x[0])
    return s


def for_else_with_break(x, t):
    """The `else:` runs only when no element passes the threshold."""
    s = 0.0
    for v in x:
        if v > t:
            s = s + v * t
            break
        s = s + v ** 2
    else:
        s = s * t
    return s


def while_else(x):
    s = x
    while s < 10.0:
        s = s * 1.5 + 0.5
    else:
        s = s * x
    return s


def return_in_loop_else(x):
    for i in range(3):
        if x[i] > 2.0:
            return x[i] * x[0]
    else:
        return np.sum(x ** 3)
    return 0.0


def else_continues_outer_loop(x):
    """An inner loop's `else:` that continues the outer loop; its `break` skips it."""
    total = 0.0
    for j in range(2):
        for i in range(3):
            if x[i] * j > 1.5:
                break
        else:
            total = total + x[j]
            continue
        total = total + x[i] ** 3
    return total


def element_pair_assignment(x):
    y = x * 1.0
    y[0], y[2] = y[2] * 2.0, np.sin(y[0])
    i, y[i] = 1, y[1] * y[0]
    return np.sum(y * y)


def pair_of(a, b):
    return a * b, a / b


def elements_from_a_call(x):
    y = np.zeros(2)
    y[0], y[1] = pair_of(x[0], x[1])
    return y[0] * y[1] + y[1]


def zip_over_dict(w, d):
    """Zip over a dict pairs its keys (indexing it would read its values)."""
    total = 0.0
    for k, wi in zip(d, w):
        total = total + k * wi * wi
    return total


def enumerate_dict_items(w, d):
    total = 0.0
    for i, (k, v) in enumerate(d.items()):
        total = total + w[i] * v * k
    for k, wi in zip(d.keys(), w):
        total = total + d[k] * np.sin(wi)
    return total


def loop_variable_shadows_parameter(x):
    total = 0.0
    for x in x:
        total = total + x * x
    return total


def copy_of_row_then_accumulate(A):
    w = A[0].copy()
    for k in range(1, 3):
        w += A[k] * w
    return np.sum(w ** 2)


def astype_of_a_sum(x):
    return np.sum(x * x).astype(np.float64) * x[0].astype(np.float64)


# ---- `+` and `*` of lists and tuples ----------------------------------------------------------
def list_concatenation(x):
    pair = [x[0]] + [x[1] ** 2]
    triple = (x[0],) + (x[1], x[2] * 3.0)
    return pair[1] * 3.0 + triple[2] * pair[0] + triple[0]


def states_grown_by_concatenation(x):
    states = [x]
    for _ in range(2):
        states = states + [np.tanh(states[-1])]
    return np.sum(states[-1] * states[1])


def features_concatenated(x):
    features = np.concatenate([x] + [np.sin(x), np.cos(x)])
    return np.sum(features * np.arange(9.0))


def list_repetition(x):
    copies = [x] * 3
    pair = [x[0], x[1]]
    pair = pair * 2
    twice = 2 * [x[2]]
    pair += twice
    return np.sum(np.stack(copies) * np.arange(3.0)[:, None]) + sum(pair) * pair[1]


# ---- statements that check inputs: assert, raise, del --------------------------------------
def validated_inputs(x, w):
    assert x.ndim == 1, f"expected a vector, got {x.shape}"
    if w < 0.0:
        raise ValueError("w must not be negative")
    scaled = x * w
    squares = scaled ** 2
    del squares
    for v in x:
        assert v > -10.0
    return np.sum(scaled ** 2) + w


# ---- dict comprehensions, list.extend, map -----------------------------------------------
def reads_with_get(x, w):
    params = {"w": w, "b": x[0] * 2.0}
    scale = params.get("w")
    shift = params.get("b", 0.5)
    missing = params.get("c", x * x)
    return np.sum(np.tanh(scale * x + shift) * missing)


def dict_comprehension(x):
    scaled = {k: x[k] * 2.0 for k in range(3) if k != 1}
    named = {name: np.sin(v) for name, v in zip(["a", "b"], [x[0], x[1] ** 2])}
    return scaled[0] * scaled[2] + named["b"] * named["a"]


def extended_lists(x):
    items = [x[0]]
    items.extend([x[1] * 2.0, np.sin(x[2])])
    pairs = []
    for k in range(2):
        pairs.extend(items[k:k + 2])
    return items[0] * items[2] + sum(pairs) * pairs[1]


def _square(v):
    return v * v


def mapped(x, w):
    total = sum(map(np.sin, x))
    total = total + sum(map(lambda a, b: a * b * w, x, [1.0, 2.0, 3.0]))
    for y in map(_square, x):
        total = total + y * w
    return total + np.sum(np.stack(list(map(np.tanh, [x, x * w]))))



def nested_iterations(ws, xs):
    """enumerate, zip and reversed inside one another, in loops and a comprehension."""
    total = sum((i + 1) * w * x for i, (w, x) in enumerate(zip(ws, xs)))
    for k, w in enumerate(reversed(ws), start=2):
        total = total + k * w * xs[0]
    for (i, w), x in zip(enumerate(ws), reversed(xs)):
        total = total + i * w * x
    for j, pair in enumerate(zip(ws, xs)):
        total = total + pair[0] * pair[1] * j
    return total



def folds_with_reduce(x, A):
    """functools.reduce over arrays, numbers and a generator, with a lambda reading `x`."""
    M = functools.reduce(np.dot, [A, A.T * x[0], A])
    s = functools.reduce(lambda acc, v: acc * v + x[1], x, 1.0)
    t = functools.reduce(operator.add, (v ** 2 for v in x))
    r = functools.reduce(lambda a, b: a - b * x[2], reversed([x[0], x[1], 3.0]))
    return np.sum(M) + s + t + r



def unpacks_with_a_star(x, W):
    """`first, *rest = ...` of an array, of a matrix's rows and of a list."""
    first, *rest = x
    a, *middle, b = W
    head, *tail = [x[0] * 2, x[1], x[2] ** 2]
    return first * sum(rest) + np.sum(a * b) + np.sum(middle[0]) * x[1] + head * tail[1] \
        + len(tail)


CORPUS = [
    (unpacks_with_a_star, [(np.array([0.5, -1.0, 2.0]), np.arange(12.0).reshape(4, 3) / 5)],
     (0, 1)),
    (folds_with_reduce, [(np.array([0.3, -0.7, 1.2]), np.array([[1.0, 0.5], [-0.3, 0.8]]))],
     (0, 1)),
    (nested_iterations, [(np.array([1.0, -2.0, 0.5]), np.array([0.1, 0.2, -0.3, 0.4]))],
     (0, 1)),
    (while_in_each_step, [(0.8, 0.6), (0.3, 0.9)], (0, 1)),
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
    # ODE integrators
    (euler_oscillator, [(1.3, 1.0, 0.0, 10), (0.7, -0.5, 2.0, 3), (2.0, 0.3, 0.4, 0)], (0, 1, 2)),
    (rk4_logistic, [(1.5, 0.1, 10), (-0.8, 0.6, 4), (2.5, 1.3, 1)], (0, 1)),
    (rk4_lotka_volterra, [(np.array([1.0, -0.5]), np.array([[-0.1, -0.4], [0.3, -0.1]]),
                           np.array([1.2, 0.8])),
                          (np.array([0.3, 0.2]), np.array([[-0.5, 0.1], [0.2, -0.6]]),
                           np.array([0.5, 1.5]))], (0, 1, 2)),
    (leapfrog_pendulum, [(0.5, 0.0, 12), (2.0, -1.0, 5), (-1.0, 0.7, 1)], (0, 1)),
    (adaptive_euler, [(0.9, 2.0), (0.5, 0.4), (-0.3, -1.5), (2.0, 1.3)], (0, 1)),
    # recurrences
    (gru_like, [(np.array([[0.5, -0.2], [0.1, 0.3], [-0.4, 0.8]]),
                 np.array([[0.2, -0.3], [0.4, 0.1]]), np.array([[0.6, 0.2], [-0.5, 0.3]]),
                 np.array([0.1, -0.1])),
                (np.array([[1.0, 0.5]]), np.array([[-0.2, 0.3], [0.1, 0.5]]),
                 np.array([[0.3, -0.7], [0.2, 0.4]]), np.array([0.5, 0.2]))], (0, 1, 2, 3)),
    (rnn_enumerate, [(np.array([[0.5, -0.2, 0.1], [0.3, 0.3, -0.6], [0.9, -0.1, 0.2],
                                [0.0, 0.4, 0.4]]),
                      np.array([[0.5, -0.4], [0.3, 0.2]]),
                      np.array([[0.2, 0.1, -0.3], [0.5, -0.2, 0.4]]))], (0, 1, 2)),
    (layers_over_tuple, [(np.array([[0.8, -0.3], [0.4, 0.9]]), np.array([[0.5, 0.7], [-0.6, 0.2]]),
                          np.array([0.7, -0.4])),
                         (np.array([[-0.8, 0.3], [0.4, -0.9]]), np.array([[0.5, -0.7], [0.6, 0.2]]),
                          np.array([0.3, 1.1]))], (0, 1, 2)),
    (exponential_moving_average, [(np.array([0.5, -1.0, 2.0, 0.3]), 0.9),
                                  (np.array([3.0]), 0.5)], (0, 1)),
    (fibonacci_like, [(0.3, 0.7, 6), (1.2, -0.4, 2), (0.5, 0.5, 0)], (0, 1)),
    # iterative solvers
    (newton_cube_root, [(2.0,), (27.5,), (0.3,)], 0),
    (fixed_point_cos, [(0.5,), (0.9,), (-0.6,)], 0),
    (bisection_sqrt, [(2.0,), (7.3,), (0.31,)], 0),
    (gradient_descent, [(1.0, 0.1, 10), (-2.0, 0.05, 3), (0.5, 0.3, 0)], (0, 1)),
    (power_iteration, [(np.array([[2.0, 0.5, 0.1], [0.3, 1.0, 0.2], [0.1, 0.4, 0.5]]),)], 0),
    (sinkhorn, [(np.array([[1.0, 0.5], [0.3, 0.8]]), np.array([0.4, 0.6]), np.array([0.7, 0.3]))],
     (0, 1, 2)),
    (halve_until_small, [(0.7,), (3.0,), (37.0,)], 0),
    # piecewise functions
    (huber_loss, [(np.array([0.3, -2.0, 1.5, -0.1]), 1.0), (np.array([0.2, -0.4]), 0.5),
                  (np.array([3.0, -4.0]), 0.7)], (0, 1)),
    (smooth_l1, [(-2.0, 1.0), (0.3, 1.0), (1.7, 0.5)], (0, 1)),
    (clip_by_branches, [(np.array([-2.0, 0.3, 1.5, 0.7]), -1.0, 1.0),
                        (np.array([0.1, 0.2]), -0.5, 0.5)], (0, 1, 2)),
    (long_elif_chain, [(-3.0,), (-1.5,), (-0.5,), (0.5,), (1.5,), (3.0,)], 0),
    (nested_ifs, [(2.0, 1.0), (1.0, 2.0), (1.0, -0.5), (-1.0, 2.0), (-1.0, 0.5)], (0, 1)),
    # polynomials and reductions with loops
    (horner, [(np.array([2.0, -3.0, 0.5, 1.0]), 1.3), (np.array([4.0]), -0.7)], (0, 1)),
    (horner_reversed, [(np.array([1.0, 0.5, -2.0]), 0.8)], (0, 1)),
    (logsumexp_loop, [(np.array([0.5, 2.0, -1.0]),), (np.array([3.0, 1.0, 0.0]),),
                      (np.array([-0.5]),)], 0),
    (softmax_cross_entropy, [(np.array([0.2, 1.5, -0.3]), 1), (np.array([2.0, -1.0]), 0)], 0),
    (cumulative_product, [(np.array([1.2, 0.8, -1.5, 2.0]),), (np.array([0.5]),)], 0),
    (running_max_square, [(np.array([0.5, 2.0, 1.0, 3.0]),), (np.array([4.0, 1.0, -2.0]),)], 0),
    (welford_variance, [(np.array([1.0, 2.5, -0.5, 0.7]),), (np.array([0.3, 0.9]),)], 0),
    # simulators
    (bouncing_ball, [(1.0, 0.0, 0.8, 10), (2.0, 1.0, 0.6, 3), (0.5, -2.0, 0.9, 8)], (0, 1, 2)),
    (sliding_block, [(1.0, 0.2), (2.5, 0.5)], (0, 1)),
    (random_walk_with_walls, [(0.2, np.array([0.5, 0.5, -0.3, 0.4])),
                              (-0.3, np.array([-0.6, -0.5, 0.2])),
                              (0.0, np.array([0.1, -0.2]))], (0, 1)),
    # trip counts, ranges, iteration forms
    (input_trip_count, [(0.7, 0), (0.7, 1), (-1.2, 5)], 0),
    (strided_range, [(0.6, 1, 8, 2), (1.1, 5, 0, -2), (0.4, 3, 3, 1)], 0),
    (countdown_range, [(0.5, 4), (-0.8, 1)], 0),
    (rows_with_branch, [(np.array([[1.0, 2.0], [-1.0, 0.5], [0.3, -2.0]]), np.array([0.5, -0.3]))],
     (0, 1)),
    (zip_pairs, [(np.array([1.0, -0.5, 2.0]), np.array([0.5, 0.5, 3.0]))], (0, 1)),
    (reversed_enumerate_weights, [(np.array([0.3, -0.7, 1.1]), 0.6)], (0, 1)),
    (normalize_rows_if_long, [(np.array([[2.0, 1.0], [0.3, 0.4], [-1.0, 1.5]]), np.array([0.7, -0.2]))],
     (0, 1)),
    # break / continue / return
    (nested_break_continue, [(np.array([[1.0, -0.5, 3.0, 0.7], [0.4, 1.5, -2.0, 0.9]]), 1.5),
                             (np.array([[2.5, 1.0], [-1.0, -0.5]]), 0.5)], (0, 1)),
    (continue_in_while, [(0.7,), (-1.5,)], 0),
    (return_inside_while, [(1.0,), (5.0,), (0.01,)], 0),
    (several_exits, [(-2.0, 1.0), (2.5, 1.5), (0.5, -3.0), (0.2, 0.3), (1.0, 1.4)], (0, 1)),
    (search_with_break, [(np.array([0.0, 1.0, 2.5, 4.0]), np.array([1.0, -1.0, 0.5, 2.0]), 1.7),
                         (np.array([0.0, 1.0, 2.5, 4.0]), np.array([1.0, -1.0, 0.5, 2.0]), 0.4),
                         (np.array([0.0, 1.0, 2.5, 4.0]), np.array([1.0, -1.0, 0.5, 2.0]), 3.1)],
     (0, 1, 2)),
    # conditional expressions, and / or
    (conditional_in_loop, [(0.5,), (1.9,), (5.0,)], 0),
    (and_or_values, [(1.0, 2.0), (0.2, 3.0), (1.0, -1.0), (-0.5, 0.7)], (0, 1)),
    (and_or_conditions, [(1.0, 0.5), (1.0, 1.5), (-2.0, 0.5), (-0.5, 3.0), (-0.5, 0.5)], (0, 1)),
    # shape changes across iterations
    (shrinking_slices, [(np.array([0.5, -1.0, 2.0, 0.3, 1.1]),)], 0),
    (growing_concatenate, [(np.array([0.5, -1.0]),), (np.array([0.2]),)], 0),
    (scalar_then_vector, [(0.5, np.array([1.0, -0.5, 0.3]))], (0, 1)),
    (dict_state_update, [(0.3, 1.0), (-1.0, 0.2)], (0, 1)),
    # tuple targets restored in reverse order
    (tuple_swap_in_loop, [(0.3, 0.7), (1.5, -0.8)], (0, 1)),
    (tuple_swap_in_branch, [(0.3, 0.7), (-0.5, 1.2)], (0, 1)),
    # loops' `else:`, element tuple targets, zip over dicts
    (for_else_without_break, [(np.array([0.5, 1.2, -0.7]),)], 0),
    (for_else_with_break, [(np.array([0.5, 1.2, -0.7]), 1.0), (np.array([0.5, 0.2, -0.7]), 1.0)],
     (0, 1)),
    (while_else, [(1.5,), (12.0,)], 0),
    (return_in_loop_else, [(np.array([1.0, 2.5, 3.0]),), (np.array([1.0, 1.2, 1.3]),)], 0),
    (else_continues_outer_loop, [(np.array([1.0, 2.0, 3.0]),), (np.array([1.0, 1.2, 1.3]),)], 0),
    (element_pair_assignment, [(np.array([0.5, 1.5, -0.8]),)], 0),
    (elements_from_a_call, [(np.array([0.7, 1.6]),)], 0),
    (zip_over_dict, [(np.array([0.5, -1.5]), {1: 5.0, 0: 7.0, 2: 3.0})], 0),
    (enumerate_dict_items, [(np.array([0.5, -1.5]), {2: 5.0, 1: 7.0})], 0),
    (loop_variable_shadows_parameter, [(np.array([0.5, -1.5, 2.0]),)], 0),
    (copy_of_row_then_accumulate, [(np.array([[0.5, -1.0], [0.3, 0.8], [1.2, -0.4]]),)], 0),
    (astype_of_a_sum, [(np.array([0.5, -1.0, 2.0]),)], 0),
    # `+` and `*` of lists and tuples
    (list_concatenation, [(np.array([0.5, -1.0, 2.0]),)], 0),
    (states_grown_by_concatenation, [(np.array([0.5, -1.0, 2.0]),)], 0),
    (features_concatenated, [(np.array([0.5, -1.0, 2.0]),)], 0),
    (list_repetition, [(np.array([0.5, -1.0, 2.0]),)], 0),
    (validated_inputs, [(np.array([0.5, -1.0, 2.0]), 1.5)], (0, 1)),
    (dict_comprehension, [(np.array([0.3, 0.5, 0.7]),)], 0),
    (reads_with_get, [(np.array([0.3, 0.5, 0.7]), np.array([0.5, -1.0, 1.5]))], (0, 1)),
    (extended_lists, [(np.array([0.3, 0.5, 0.7]),)], 0),
    (mapped, [(np.array([0.3, 0.5, 0.7]), 1.3)], (0, 1)),
]


def long_loop(x):
    """1000 steps of a damped nonlinear update, for the memory test."""
    h = x
    for step in range(1000):
        h = h + 0.001 * np.sin(h)
    return np.sum(h)


# ---- zero-trip loops: the output may not depend on the differentiated argument at all ------
def accumulate_n(x, w, n):
    """total = sum over i < n of x * w * i; for n = 0 the gradients are zeros."""
    total = 0.0
    for i in range(n):
        total = total + np.sum(x * w) * i
    return total


def sum_over_rows(X, w):
    """A loop over the rows of X; an X with no rows gives zero gradients."""
    total = 0.0
    for row in X:
        total = total + np.sum(np.tanh(row * w))
    return total


def while_not_entered(x, w):
    """A while loop that does not run when x <= 10: the output is then x + 0 * ... ."""
    acc = x
    while acc > 10.0:
        acc = acc * 0.5 + np.sum(w)
    return acc


def empty_range_then_use(x, start, stop):
    """range(start, stop) is empty when start >= stop; x still reaches the output after."""
    y = x
    for i in range(start, stop):
        y = np.sin(y) * i
    return np.sum(y * y)


def break_on_first_iteration(x, w):
    """A loop that breaks before its body touches w."""
    y = x
    for i in range(4):
        if y > 0.0:
            break
        y = y + w * w
    return y * 3.0
