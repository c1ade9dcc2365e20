"""The constructs ADBench's autograd objectives (GMM, bundle adjustment) use, written afresh:
a helper defined before the values it reads, a column counter kept in a function attribute
by a nested function, list comprehensions of helper calls stacked into arrays, and a
rule-only helper writing into `np.empty` under `jacobian(mode="auto")`. Numbers against
central differences, and tape mode where it runs the code (it cannot see tensors inside
`np.asarray([...])` of a plain list)."""
import numpy as np
import pytest

import srcad
import srcad.tape
from srcad.api.testing import numerical_gradient


def mixture_like(weights, centres, data):
    def term(i, k):  # defined before `scales`, which it reads
        offset = data[i] - centres[k]
        return weights[k] - 0.5 * np.sum((scales[k] * offset) ** 2)

    scales = np.asarray([np.exp(centres[k]) for k in range(centres.shape[0])])
    total = 0.0
    for i in range(data.shape[0]):
        terms = np.asarray([term(i, k) for k in range(weights.size)])
        peak = np.max(terms)
        total = total + np.log(np.sum(np.exp(terms - peak))) + peak
    return total


def triangular(size, entries):
    triangular.position = 0

    def column(i):
        count = size - i - 1
        values = np.concatenate((np.zeros(i + 1),
                                 entries[triangular.position:triangular.position + count]))
        triangular.position += count
        return values
    return np.column_stack([column(i) for i in range(size)])


def triangular_energy(entries):
    lower = triangular(4, entries)
    return np.sum((lower @ lower.T) ** 2)


def cross(a, b):
    out = np.empty(3)
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]
    return out


srcad.defvjp(cross, lambda g, ans, a, b: cross(b, g), lambda g, ans, a, b: cross(g, a))


def rotated(parameters):
    axis, point = parameters[:3], parameters[3:6]
    return point * np.cos(parameters[6]) + cross(axis, point) * np.sin(parameters[6])


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def test_a_helper_reading_values_bound_after_its_definition(rng):
    weights, centres, data = rng.normal(size=3), rng.normal(size=(3, 2)), rng.normal(size=(4, 2))
    for position in range(2):
        gradient = srcad.grad(mixture_like, wrt=position)(weights, centres, data)
        np.testing.assert_allclose(
            gradient, numerical_gradient(mixture_like, (weights, centres, data), position),
            rtol=1e-6, atol=1e-8)
    _, tangent = srcad.jvp(lambda w: mixture_like(w, centres, data), (weights,), (data[0, :1]
                                                                                 .repeat(3),))
    np.testing.assert_allclose(tangent, np.sum(srcad.grad(mixture_like)(weights, centres, data)
                                               * data[0, 0]), rtol=1e-10)


def test_a_counter_in_a_function_attribute_advanced_by_a_nested_function(rng):
    entries = rng.normal(size=6)
    gradient = srcad.grad(triangular_energy)(entries)
    np.testing.assert_allclose(gradient, numerical_gradient(triangular_energy, (entries,), 0),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(srcad.tape.grad(triangular_energy)(entries), gradient,
                               rtol=1e-12)
    hessian = srcad.hessian(triangular_energy)(entries)
    np.testing.assert_allclose(hessian, hessian.T, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(hessian[0], numerical_gradient(
        lambda e: srcad.grad(triangular_energy)(e)[0], (entries,), 0), rtol=1e-5, atol=1e-6)


def test_a_helper_with_a_reverse_rule_only_under_jacobian_auto(rng):
    parameters = rng.normal(size=7)
    jacobian = srcad.jacobian(rotated)(parameters)
    expected = np.stack([numerical_gradient(lambda p: rotated(p)[i], (parameters,), 0)
                         for i in range(3)])
    np.testing.assert_allclose(jacobian, expected, rtol=1e-6, atol=1e-8)
