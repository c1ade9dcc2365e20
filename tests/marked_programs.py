"""Programs that mark what is differentiated: stop_gradient, stop_recording, custom gradients."""
import numpy as np

import srcad
from srcad import stop_gradient
from srcad import stop_gradient as sg


@srcad.custom_gradient
def stable_softplus(x):
    y = np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0)

    def grad_fn(dy):
        return dy / (1.0 + np.exp(-x))
    return y, grad_fn


def naive_softplus_sum(x):
    return np.sum(np.log1p(np.exp(x)))


def custom_softplus_sum(x):
    return np.sum(stable_softplus(x))


@srcad.custom_gradient
def scaled_product(a, b, scale, label="unused"):
    def grad_fn(dy):
        return dy * b * scale, dy * a * scale, None
    return a * b * scale, grad_fn


@srcad.custom_gradient
def cubed(x):
    return x ** 3, lambda g: g * 3.0 * x ** 2


def cubed_with_a_lambda(x):
    return cubed(x)


def softplus_times_x(x):
    return stable_softplus(x) * x


@srcad.custom_gradient
def returns_a_prepared_pair(x):
    pair = (np.sum(x ** 2), lambda g: g * 2.0 * x)
    return pair


def uses_a_returned_pair(x):
    return returns_a_prepared_pair(x) * 2.0


def uses_scaled_product(x, y):
    return np.sum(scaled_product(x, y, 3.0, label="product"))


@srcad.custom_gradient
def wrong_count(a):
    return a * 2.0, lambda dy: (dy, dy)


def uses_wrong_count(x):
    return np.sum(wrong_count(x))


def stopped_three_ways(x):
    alias = srcad.stop_gradient
    return np.sum(x * stop_gradient(x)) + np.sum(sg(x ** 2)) + np.sum(alias(x) * x)


def monitored_loop(x):
    log = 0.0
    h = x
    for step in range(1000):
        h = h + 0.001 * np.sin(h)
        with srcad.stop_recording():
            norm = np.sqrt(np.sum(h * h))
            log = log + norm
    return np.sum(h) + log


def unmonitored_loop(x):
    log = 0.0
    h = x
    for step in range(1000):
        h = h + 0.001 * np.sin(h)
    return np.sum(h) + log


def straight_through(x):
    return np.round(x)


def quantized_loss(w, x):
    return np.sum((straight_through(w) * x - 1.0) ** 2)
