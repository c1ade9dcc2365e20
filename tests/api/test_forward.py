"""Forward mode (`srcad.jvp`): tangents checked against reverse mode and finite differences.

Every program of the control-flow, in-place and call corpora is run in forward mode with a
random tangent on its `wrt` arguments; the output tangent must equal the gradient (reverse
mode) dotted with the tangent, and central finite differences along the tangent.
"""
import copy

import numpy as np
import pytest

import srcad
from srcad.errors import MissingRuleError, TangentError, UsageError
from tests.checks import corpus_cases, positions


def _random_like(value, rng):
    if isinstance(value, dict):
        return {k: _random_like(v, rng) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_random_like(v, rng) for v in value)
    return rng.standard_normal(np.shape(value)) if np.ndim(value) else float(rng.standard_normal())


def _dot(a, b):
    if isinstance(a, dict):
        return sum(_dot(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return sum(_dot(x, y) for x, y in zip(a, b))
    return float(np.sum(np.asarray(a) * np.asarray(b)))


def _shifted(args, tangents, h):
    def move(x, t):
        if t is None:
            return x
        if isinstance(x, dict):
            return {k: move(x[k], t[k]) for k in x}
        if isinstance(x, (list, tuple)):
            return type(x)(move(a, b) for a, b in zip(x, t))
        return x + h * t
    return [move(x, t) for x, t in zip(args, tangents)]


@pytest.mark.parametrize("fn, args, wrt", list(corpus_cases()))
def test_tangent_agrees_with_gradient_and_finite_differences(fn, args, wrt):
    rng = np.random.default_rng(0)
    wrt_positions = positions(wrt)
    tangents = [_random_like(a, rng) if i in wrt_positions else None for i, a in enumerate(args)]
    value, tangent = srcad.jvp(fn, copy.deepcopy(tuple(args)), tuple(tangents))
    assert np.allclose(value, fn(*copy.deepcopy(args)))
    gradients = srcad.grad(fn, wrt=wrt_positions)(*copy.deepcopy(args))
    expected = sum(_dot(g, tangents[p]) for g, p in zip(gradients, wrt_positions))
    np.testing.assert_allclose(tangent, expected, rtol=1e-10, atol=1e-10)
    h = 1e-6
    numeric = (fn(*_shifted(copy.deepcopy(args), tangents, h))
               - fn(*_shifted(copy.deepcopy(args), tangents, -h))) / (2 * h)
    np.testing.assert_allclose(tangent, numeric, rtol=1e-5, atol=1e-6)


def sin_times(x, w):
    return np.sin(x) * w


def test_vector_output_tangent_has_output_shape_and_dtype():
    x = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    value, tangent = srcad.jvp(sin_times, (x, 2.0), (np.ones(3, np.float32), None))
    assert tangent.shape == (3,) and tangent.dtype == np.float32
    np.testing.assert_allclose(tangent, 2.0 * np.cos(x), rtol=1e-6)


def constant_output(x):
    return np.ones(2)


def test_unconnected_output_has_zero_tangent():
    _, tangent = srcad.jvp(constant_output, (np.ones(3),), (np.ones(3),))
    np.testing.assert_array_equal(tangent, np.zeros(2))


def test_callable_with_a_rule_directly():
    value, tangent = srcad.jvp(np.sin, (0.5,), (2.0,))
    assert value == np.sin(0.5) and tangent == pytest.approx(2.0 * np.cos(0.5))


def overwrites_parameter(x):
    x[0] = 0.0
    return np.sum(x * x)


def test_caller_tangent_is_never_written_into():
    v = np.ones(3)
    _, tangent = srcad.jvp(overwrites_parameter, (np.array([1.0, 2.0, 3.0]),), (v,))
    np.testing.assert_array_equal(v, np.ones(3))
    assert tangent == pytest.approx(2 * 2.0 + 2 * 3.0)


def uses_nextafter(x):
    return np.sum(np.nextafter(x, 2.0))


def test_missing_rule_names_defjvp():
    with pytest.raises(MissingRuleError, match="defjvp"):
        srcad.jvp(uses_nextafter, (np.ones(2),), (np.ones(2),))


def test_bad_tangents_are_refused():
    with pytest.raises(TangentError, match="shape"):
        srcad.jvp(sin_times, (np.ones(3), 1.0), (np.ones(2), None))
    with pytest.raises(TangentError, match="one tangent per primal"):
        srcad.jvp(sin_times, (np.ones(3), 1.0), (np.ones(3),))
    with pytest.raises(UsageError):
        srcad.jvp(sin_times, np.ones(3), np.ones(3))


def scaled(x):
    return 3.0 * x


def test_defjvp_overrides_source_transformation():
    srcad.defjvp(scaled, lambda g, ans, x: 100.0 * g)
    try:
        assert srcad.jvp(scaled, (1.0,), (1.0,))[1] == 100.0
    finally:
        from srcad.ops import registry
        registry.op_of(scaled).jvp = None


def test_show_prints_the_tangent_program(capsys):
    srcad.show(sin_times, wrt=(0, 1), mode="fwd")
    source = capsys.readouterr().out
    assert "def sin_times_jvp(tangents, x, w):" in source
    assert "t_sin_0 = t_x * np.cos(x)" in source


def plus(a, x):
    return a + x


def test_python_float_tangent_spread_over_float32_stays_float32():
    _, tangent = srcad.jvp(plus, (0.5, np.ones(3, np.float32)), (1.0, None))
    assert tangent.dtype == np.float32
    np.testing.assert_array_equal(tangent, np.ones(3))


def negated_reciprocals(x):
    return -x + 1 / x


def weighted_reciprocals(params):
    return params["w"] / params["x"]


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.int64])
def test_integer_tangents_are_taken_as_the_primal_floats(dtype):
    """An integer tangent gives what the same float tangent gives: computed with as it
    is, -uint8(1) wraps to 255 (the tangent of `-x` was 255)."""
    x = np.array([2.0, 4.0])
    floats = np.array([1.0, 2.0])
    want = srcad.jvp(negated_reciprocals, (x,), (floats,))[1]
    np.testing.assert_allclose(want, -floats - floats / x ** 2)
    got = srcad.jvp(negated_reciprocals, (x,), (floats.astype(dtype),))[1]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(srcad.jvp(negated_reciprocals, (2.0,), (dtype(1),))[1], -1.25)
    params = {"w": x, "x": x + 1.0}
    got = srcad.jvp(weighted_reciprocals, (params,), ({"w": floats.astype(dtype),
                                                       "x": np.zeros(2, dtype)},))[1]
    np.testing.assert_allclose(got, floats / (x + 1.0))
    hessian_times = srcad.hvp(lambda v: np.sum(negated_reciprocals(v)))
    np.testing.assert_allclose(hessian_times(x, floats.astype(dtype)),
                               hessian_times(x, floats))
