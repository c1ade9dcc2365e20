"""Programs that call functions: the user's helpers, library code, methods, closures."""
import functools
import math

import numpy as np

import srcad


def helper(a, scale=2.0):
    return np.sin(a) * scale


def power(x, n):
    """Recursion: x ** n by repeated multiplication."""
    if n == 0:
        return 1.0
    return x * power(x, n - 1)


def calls_helpers(x, w):
    return np.sum(helper(x, scale=3.0) + helper(w)) + np.sum(power(x, 3))


def two_levels(x):
    return calls_helpers(x, x * 2.0) * 0.5


def keyword_arguments(x, w):
    return np.sum(helper(scale=w, a=x))


def array_methods(x, w):
    s = x.sum(axis=0) * w.mean() + x.reshape(-1).dot(x.ravel())
    return np.sum(s) + np.sum(x.T @ x) + x.copy().sum() + np.sum(x.transpose())


def chosen_at_run_time(x):
    activation = np.tanh if np.sum(x) > 0 else np.sin
    exponential = getattr(np, "exp")
    return np.sum(activation(x) + exponential(x))


def library_polyval(x, p):
    return np.polyval(p, x)


def library_sinc(x):
    return np.sum(np.sinc(x))


CORPUS = [
    (calls_helpers, (np.array([0.3, 0.5, -0.2]), np.array([0.1, 0.2, 0.4])), (0, 1)),
    (two_levels, (np.array([0.3, 0.5, -0.2]),), 0),
    (keyword_arguments, (np.array([0.3, 0.5]), 1.5), (0, 1)),
    (array_methods, (np.array([[0.3, 0.5], [-0.2, 0.7]]), np.array([0.1, 0.2])), (0, 1)),
    (chosen_at_run_time, (np.array([0.3, 0.5]),), 0),
    (chosen_at_run_time, (np.array([-0.3, -0.5]),), 0),
    (library_polyval, (0.7, np.array([1.0, -2.0, 3.0])), (0, 1)),
    (library_sinc, (np.array([0.3, -1.2, 2.5]),), 0),
]


def _late_entries():
    """Entries whose functions are defined below the table."""
    return [(nested_functions, (np.array([0.3, 0.5]), 1.5), (0, 1)),
            (captures_a_differentiated_value, (np.array([0.3, 0.5]), np.ones(2)), (0, 1)),
            (closure_defined_in_a_loop, (np.array([0.3, -0.5, 0.8]), 0.7), (0, 1)),
            (closure_called_in_a_comprehension, (np.array([0.3, -0.5]), 1.3), (0, 1)),
            (closures_within_closures, (np.array([0.3, -0.5]), 1.3), (0, 1))]


def tree_loss(params, x):
    h = np.tanh(x @ params["W1"] + params["b"][0])
    out = h @ params["layers"][1]["w"]
    return np.mean(out ** 2) + 0.1 * np.sum(params["layers"][0] ** 2) + params["b"][1] * 0.0


def tree_helper(params, x):
    return np.sum(x * params["scale"]) + np.sum(params["shift"])


def tree_through_helper(params, x):
    return tree_helper(params, x) * 2.0


SCALE = 3.0


def nested_functions(x, c):
    k = c * 2.0

    def inner(y, power=2):
        return np.sum(y ** power) * k * SCALE

    square = lambda v: v * v  # noqa: E731
    double, triple = (lambda v: 2 * v), (lambda v: 3 * v)
    return inner(x) + inner(x, power=3) + np.sum(square(x)) + np.sum(double(x) + triple(x))


def captures_a_differentiated_value(x, w):
    def uses_w(y):
        return np.sum(y * w)
    return uses_w(x)


def closure_defined_in_a_loop(x, w):
    total = 0.0
    for i in range(3):
        h = np.tanh(w * x[i])

        def step(v, scale=h):  # a default read from the enclosing function, too
            return v * scale + h ** 2
        total = total + step(x[i])
    return total


def closure_called_in_a_comprehension(x, w):
    shift = np.cos(w)
    weighted = lambda v: np.sin(v) * w + shift  # noqa: E731
    return sum([weighted(v) for v in x])


def closures_within_closures(x, w):
    a = w * 2.0

    def outer(v):
        def inner(u):
            return u * a
        return inner(v) + a
    return np.sum(outer(x) ** 2)


def apply(fn, value):
    return fn(value)


def passes_a_closure_on(x, w):
    def uses_w(y):
        return np.sum(y * w)
    return apply(uses_w, x)


def partial_of_a_differentiated_value(x, w):
    return functools.partial(scaled_sine, w=w)(x)


def partial_passed_on(x, w):
    bound = functools.partial(scaled_sine, w=w)
    return applies_to(bound, x) * 1.5


def applies_to(fn, x):
    return fn(x)


def scaled_sine(x, w=1.0):
    return np.sum(np.sin(x) * w)


def returns_a_closure(x):
    def make(v):
        def derivative(dy):
            return dy * np.cos(v)
        return np.sin(v), derivative
    _, derivative = make(x)
    return derivative(3.0)


def captures_a_reassigned_value(x):
    y = x * 2.0
    y = y + 1.0
    scaled = lambda v: v * y  # noqa: E731
    return np.sum(scaled(x))


def binds_after_the_definition(x):
    scaled = lambda v: v * y  # noqa: E731
    y = x * 2.0
    y = y + 1.0
    return np.sum(scaled(x))


def make_scaled_loss(scale):
    def scaled_loss(x):
        return np.sum(x ** 2) * scale
    return scaled_loss


CORPUS += _late_entries()


class Layer:
    def __init__(self, weights, bias):
        self.W = weights
        self.b = bias

    def activation(self, z):
        return np.tanh(z)

    def forward(self, x):
        return self.activation(x @ self.W + self.b)

    def loss(self, x, target):
        return np.mean((self.forward(x) - target) ** 2)


def get_namespace(x):
    return np


def namespace_at_run_time(x):
    xp = get_namespace(x)
    return xp.sum(x ** 2) + getattr(np, "mean")(x)


def more_array_methods(x):
    return x.max() + x.min(axis=0).sum() + x.reshape(3, 2).sum(0)[1] + x.T.dot(x).sum()


class _Layer:
    """A callable object: its `__call__` is transformed like a bound method."""

    def __init__(self, weights):
        self.weights = weights

    def __call__(self, x):
        return np.tanh(self.weights @ x)


_LAYER = _Layer(np.array([[1.0, 0.5], [0.2, -0.3]]))


def calls_a_layer_object(x):
    return np.sum(_LAYER(x) * _LAYER(x * 2.0))


def statistics_methods(x):
    """The methods that stand for NumPy's functions (`x.var()` for `np.var(x)`)."""
    return (x.var() + x.std(axis=0).sum() + x.prod() + x.cumsum(axis=1).sum()
            + x.cumprod().sum() + x.clip(0.2, 0.8).sum() + x[:, :2].trace()
            + x.diagonal().sum() + x[None].squeeze().sum() + x.swapaxes(0, 1)[0, 1]
            + x.repeat(2, axis=0).sum() + x.take([0, 2], axis=1).sum()
            + x.round().sum() * x.argmax())


CORPUS += [(namespace_at_run_time, (np.array([[0.3, 0.9, -0.2], [0.4, 0.1, 0.7]]),), 0),
           (more_array_methods, (np.array([[0.3, 0.9, -0.2], [0.4, 0.1, 0.7]]),), 0),
           (statistics_methods, (np.array([[0.3, 0.9, -0.3], [0.45, 0.1, 0.7]]),), 0),
           (calls_a_layer_object, (np.array([0.3, -0.4]),), 0)]


def variadic(*values, scale=1.0, **extra):
    total = 0.0
    for v in values:
        total = total + np.sum(v ** 2)
    return total * scale + np.sum(extra["shift"] * 3.0)


def calls_variadic(x, y):
    return variadic(x, y * 2.0, scale=0.5, shift=x)


CORPUS += [(calls_variadic, (np.array([0.3, -0.4]), np.array([1.5, 0.2])), (0, 1))]


def sine_and_square(a):
    return np.sin(a), a ** 2


def unpacks_a_returned_tuple(x):
    s, q = sine_and_square(x)
    return np.sum(s * q)


def uses_one_returned_element(x, w):
    pair = sine_and_square(x * w)
    _, q = pair
    return np.sum(q)


CORPUS += [(unpacks_a_returned_tuple, (np.array([0.3, -0.4]),), 0),
           (uses_one_returned_element, (np.array([0.3, -0.4]), 1.5), (0, 1))]


def sine_and_square_list(a):
    return [np.sin(a), a ** 2]


def indexes_a_returned_list_twice(x):
    parts = sine_and_square_list(x)
    return np.sum(parts[0] * parts[1]) + np.sum(parts[1])


CORPUS += [(indexes_a_returned_list_twice, (np.array([0.4, 0.9]),), 0)]


def list_and_square(a):
    return [np.sin(a), a], a ** 2


def indexes_an_unpacked_list(x):
    parts, square = list_and_square(x)
    return np.sum(parts[0] * parts[1] * square) + np.sum(parts[0])


CORPUS += [(indexes_an_unpacked_list, (np.array([0.4, 0.9]),), 0)]


MIXING = np.array([[1.0, -0.5, 2.0], [0.3, 1.5, -1.0]])


def lists_as_arrays(a, b, x):
    """Lists and tuples of values handed to NumPy, which makes arrays of them."""
    plane = np.dot([a, b], [b, a]) + np.sum([a, b] @ MIXING) + np.linalg.norm((a, x[0]))
    scaled = x * [a, b, 1.0] - [b, x[1], a] / (1.0 + x[0] ** 2)
    chosen = np.where(x > 0, scaled, [b, a * b, x[2]])
    return plane + np.sum(chosen ** 2) + np.max([a, b * x[1]]) + np.mean((x[0], 2 * b))


def comprehension_reduced(x):
    squares = np.sum([v ** 2 for v in x])
    return squares + np.prod([np.sin(v) + 2.0 for v in x]) + np.sum(np.exp([x[0], -x[1]]))


CORPUS += [(lists_as_arrays, (0.7, -1.2, np.array([0.4, -0.9, 1.3])), (0, 1, 2)),
           (comprehension_reduced, (np.array([0.4, -0.9, 1.3]),), 0)]


def named_lists_reduced(x, a):
    """Lists kept in names (built by appends, or a display) that NumPy reduces."""
    terms = []
    for v in x:
        terms.append(np.sin(v) * a)
    pair = (x[0], x[1] * a)
    return np.sum(terms) + np.linalg.norm(terms) + np.max(terms) + np.dot(pair, pair) \
        + np.sum(pair @ MIXING)


CORPUS += [(named_lists_reduced, (np.array([0.4, -0.9, 1.3]), 1.7), (0, 1))]


def _pair_product(s):
    x, y = s
    return x * y


def _row_mix(P):
    top, bottom = P
    return np.sum(top * np.sin(bottom))


def unpacks_an_array_in_a_helper(a, b, M):
    """A helper unpacking its array argument (`x, y = s`) hands its caller an array
    cotangent (it was a tuple: `tuple * 2` repeated it, `-tuple` raised)."""
    return _pair_product(2 * np.stack([a, b])) + _pair_product(-np.stack([b, a * a])) \
        + _row_mix(M * a) + _row_mix(-M)


CORPUS += [(unpacks_an_array_in_a_helper,
            (0.7, -1.3, np.array([[0.5, -0.2, 1.1], [0.3, 0.9, -0.4]])), (0, 1, 2))]


def copies_containers(x):
    """`.copy()` of a list or dict is a new container holding the same items."""
    xs = [x[0], x[1]]
    ys = xs.copy()
    ys.append(x[2])
    d = {"a": x[0] * 2, "b": x[1]}
    e = d.copy()
    e["a"] = e["a"] * x[2]
    return ys[0] * ys[2] + xs[1] * e["a"] + d["a"] + e["b"] + len(xs)


CORPUS += [(copies_containers, (np.array([0.5, -1.0, 2.0]),), 0)]


def merges_dicts(x):
    """Dict displays with `**` entries: later keys win."""
    p = {"a": x[0] * 2, "b": x[1]}
    q = {**p, "c": x[2], "a": x[1] ** 2}
    r = {"z": x[0], **q, **{"b": x[2] * 3}}
    return q["a"] * r["z"] + r["b"] * p["b"] + r["c"] + p["a"]


CORPUS += [(merges_dicts, (np.array([0.5, -1.0, 2.0]),), 0)]
