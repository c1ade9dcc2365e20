"""`grad` of parameters in dicts, lists and tuples read at fixed keys: the program takes the
leaves as parameters (compiler/frontend/leaves.py, api/fast_paths.tree_runner). Checked
against central differences, against the container program where the function uses its
container otherwise, and for which program ran."""
import numpy as np
import pytest

import srcad
from srcad.api.testing import numerical_gradient
from srcad.compiler import cache


@pytest.fixture(autouse=True)
def empty_cache():
    srcad.clear_cache()
    yield
    srcad.clear_cache()


def logistic(params, X, y):
    z = X @ params["w"] + params["b"]
    return np.mean(np.log1p(np.exp(-y * z))) + 1e-3 * np.sum(params["w"] ** 2)


def two_layers(params, x):
    hidden = np.tanh(params["hidden"]["W"] @ x + params["hidden"]["b"])
    return np.sum(params["out"][0] * hidden) + params["out"][1] * params["out"][0][0]


def pair(weights, x):
    return np.sum(np.sin(weights[0] * x) * weights[1])


def unused_leaf(params, x):
    return np.sum(params["w"] * x)


def element_of_leaf(params, x):
    return params["w"][0] * np.sum(params["w"][1:] * x) + params["c"]


def through_helper(params, X, y):
    return logistic(params, X, y)


def by_variable_key(params, x):
    total = 0.0
    for key in ("a", "b"):
        total = total + np.sum(params[key] * x)
    return total


def subtree(params, x):
    layer = params["layer"]
    return np.sum(np.tanh(layer["W"] @ x) * params["scale"])


def whole(params, x):
    return np.sum(params["w"] * x) + len(params)


def _leaves_programs_of(fn) -> list:
    """The `leaves=` of the programs the cache holds for `fn`."""
    return [key[8] for key in cache._entries if key[0] is fn.__code__ and key[8]]


def _numerical_leaves(fn, params, args, path_leaves):
    """Central differences in each leaf of `params` (a path of keys to it)."""
    gradients = []
    for path in path_leaves:
        def of_leaf(leaf, path=path):
            def put(tree, keys):
                if not keys:
                    return leaf
                copy = dict(tree) if isinstance(tree, dict) else list(tree)
                copy[keys[0]] = put(tree[keys[0]], keys[1:])
                return copy if not isinstance(tree, tuple) else tuple(copy)
            return fn(put(params, path), *args)
        value = params
        for key in path:
            value = value[key]
        gradients.append(numerical_gradient(of_leaf, (value,), 0))
    return gradients


def _at(tree, path):
    for key in path:
        tree = tree[key]
    return tree


def _check(fn, params, args, paths, leaves_program: bool):
    gradient = srcad.grad(fn)(params, *args)
    assert type(gradient) is type(params)
    for path, expected in zip(paths, _numerical_leaves(fn, params, args, paths)):
        got = _at(gradient, path)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)
        assert type(got) is type(_at(params, path))
        assert np.shape(got) == np.shape(_at(params, path))
    assert bool(_leaves_programs_of(fn)) is leaves_program
    return gradient


def test_dict_of_an_array_and_a_float(rng):
    X = rng.standard_normal((30, 4))
    params = {"w": rng.standard_normal(4) / 3, "b": 0.2}
    _check(logistic, params, (X, np.sign(rng.standard_normal(30))), [("w",), ("b",)], True)
    assert _leaves_programs_of(logistic) == [(("params", ((("w",), 1), (("b",), "float"))),)]


def test_nested_dicts_lists_and_tuples(rng):
    params = {"hidden": {"W": rng.standard_normal((3, 2)), "b": rng.standard_normal(3)},
              "out": (rng.standard_normal(3), 0.7)}
    _check(two_layers, params, (rng.standard_normal(2),),
           [("hidden", "W"), ("hidden", "b"), ("out", 0), ("out", 1)], True)
    _check(pair, [rng.standard_normal(3), rng.standard_normal(3)], (rng.standard_normal(3),),
           [(0,), (1,)], True)


def test_a_leaf_never_read_has_a_zero_gradient_and_a_read_into_a_leaf_stays(rng):
    params = {"w": rng.standard_normal(3), "v": rng.standard_normal(2), "c": 1.5}
    gradient = _check(unused_leaf, params, (rng.standard_normal(3),), [("w",), ("v",), ("c",)],
                      True)
    assert np.array_equal(gradient["v"], np.zeros(2)) and gradient["c"] == 0.0
    _check(element_of_leaf, {"w": rng.standard_normal(4), "c": 0.5}, (rng.standard_normal(3),),
           [("w",), ("c",)], True)


def test_one_leaf_in_all(rng):
    gradient = _check(pair, (rng.standard_normal(3),) * 2, (rng.standard_normal(3),),
                      [(0,), (1,)], True)
    assert type(gradient) is tuple
    gradient = srcad.grad(unused_leaf)({"w": np.ones(3)}, np.arange(3.0))
    assert list(gradient) == ["w"] and np.array_equal(gradient["w"], np.arange(3.0))


@pytest.mark.parametrize("fn, make, paths", [
    (through_helper, lambda r: ({"w": r.standard_normal(4), "b": 0.1}, r.standard_normal((5, 4)),
                                np.ones(5)), [("w",), ("b",)]),
    (by_variable_key, lambda r: ({"a": r.standard_normal(3), "b": r.standard_normal(3)},
                                 r.standard_normal(3)), [("a",), ("b",)]),
    (subtree, lambda r: ({"layer": {"W": r.standard_normal((2, 3))}, "scale": 2.0},
                         r.standard_normal(3)), [("layer", "W"), ("scale",)]),
    (whole, lambda r: ({"w": r.standard_normal(3)}, r.standard_normal(3)), [("w",)]),
])
def test_a_container_used_otherwise_runs_the_container_program(rng, fn, make, paths):
    params, *args = make(rng)
    _check(fn, params, tuple(args), paths, leaves_program=False)


def test_leaves_the_unpacking_does_not_take_go_the_container_way(rng):
    x = rng.standard_normal(3)
    for params in ({"w": rng.standard_normal(3), "n": 2},                  # an int
                   {"w": rng.standard_normal(3), "b": np.float64(0.5)},     # a NumPy number
                   {"w": rng.standard_normal(3).astype(np.float32), 3: 1.0}):  # a key not str
        gradient = srcad.grad(unused_leaf)(params, x)
        np.testing.assert_allclose(gradient["w"], x, rtol=1e-6)
        assert gradient["w"].dtype == params["w"].dtype
    assert not _leaves_programs_of(unused_leaf)


def test_float32_leaves_keep_their_dtype(rng):
    params = {"w": rng.standard_normal(3).astype(np.float32), "c": 0.5}
    gradient = srcad.grad(element_of_leaf)(params, np.ones(2))
    assert gradient["w"].dtype == np.float32 and type(gradient["c"]) is float
    assert _leaves_programs_of(element_of_leaf)


def test_with_other_wrt_arguments_in_order(rng):
    def loss(scale, params, x):
        return scale * np.sum(params["w"] * x) + np.sum(x ** 2) * params["b"]

    params, x = {"w": rng.standard_normal(3), "b": 0.3}, rng.standard_normal(3)
    for wrt in ((0, 1, 2), (1, 2), (2, 1), (1,)):
        got = srcad.grad(loss, wrt=wrt)(1.7, params, x)
        args = (1.7, params, x)
        for position, gradient in zip(wrt, got):
            if position == 1:
                np.testing.assert_allclose(gradient["w"], 1.7 * x)
                np.testing.assert_allclose(gradient["b"], np.sum(x ** 2))
            else:
                np.testing.assert_allclose(gradient, numerical_gradient(loss, args, position),
                                           rtol=1e-5, atol=1e-7)
    assert _leaves_programs_of(loss)


def test_gradients_are_the_callers_own(rng):
    def linear(params, x):
        return np.sum(params["w"] * x)

    x = rng.standard_normal(3)
    gradient = srcad.grad(linear)({"w": np.zeros(3)}, x)
    assert not np.shares_memory(gradient["w"], x)
    gradient["w"][:] = 7.0
    assert not np.any(x == 7.0)


def test_a_rebound_global_makes_the_program_again(rng):
    def scaled(params, x):
        return np.sum(SCALE(params["w"]) * x)

    scaled.__globals__["SCALE"] = np.sin
    params, x = {"w": rng.standard_normal(3)}, rng.standard_normal(3)
    np.testing.assert_allclose(srcad.grad(scaled)(params, x)["w"], np.cos(params["w"]) * x)
    scaled.__globals__["SCALE"] = np.exp
    try:
        np.testing.assert_allclose(srcad.grad(scaled)(params, x)["w"], np.exp(params["w"]) * x)
    finally:
        del scaled.__globals__["SCALE"]


def logistic_with_aux(params, X, y):
    z = X @ params["w"] + params["b"]
    loss = np.mean(np.log1p(np.exp(-y * z))) + 1e-3 * np.sum(params["w"] ** 2)
    return loss, {"norm": np.sum(params["w"] ** 2)}


def writes_into_a_leaf(params, x):
    w = params["w"]
    w *= 2.0
    return np.sum(w * x)


def test_value_and_grad_takes_the_leaves_too(rng):
    X, y = rng.standard_normal((20, 3)), np.sign(rng.standard_normal(20))
    params = {"w": rng.standard_normal(3), "b": -0.4}
    value, gradient = srcad.value_and_grad(logistic)(params, X, y)
    assert value == pytest.approx(logistic(params, X, y), rel=1e-14)
    expected = srcad.grad(through_helper)(params, X, y)  # (the container program)
    np.testing.assert_allclose(gradient["w"], expected["w"], rtol=1e-12)
    assert type(gradient["b"]) is float and gradient["b"] == pytest.approx(expected["b"])
    assert [key[2] for key in cache._entries if key[0] is logistic.__code__ and key[8]] \
        == ["rev"]
    (value, aux), gradient = srcad.value_and_grad(logistic_with_aux, has_aux=True)(params, X, y)
    assert aux["norm"] == pytest.approx(np.sum(params["w"] ** 2))
    np.testing.assert_allclose(gradient["w"], expected["w"], rtol=1e-12)
    assert _leaves_programs_of(logistic_with_aux)


def test_a_function_writing_into_a_leaf_leaves_the_callers_array_as_it_was(rng):
    params, x = {"w": rng.standard_normal(3)}, rng.standard_normal(3)
    before = params["w"].copy()
    value, gradient = srcad.value_and_grad(writes_into_a_leaf)(params, x)
    assert np.array_equal(params["w"], before)
    assert value == pytest.approx(np.sum(2.0 * before * x))
    np.testing.assert_allclose(gradient["w"], 2.0 * x)
    np.testing.assert_allclose(srcad.grad(writes_into_a_leaf)(params, x)["w"], 2.0 * x)
    assert np.array_equal(params["w"], before)


def test_calls_of_another_structure_after_the_quick_one(rng):
    """After a first call, a call of the same structure runs generated code that reads the
    leaves at their keys (fast_paths.structure_call); every call of another structure (keys
    in another order, a tuple for a list, a leaf or another argument of another kind or
    rank, a subclass of ndarray) must take its own way, with its own numbers."""
    def loss(params, x, c):
        hidden = np.tanh(params["layer"][0] @ x + params["layer"][1])
        return np.sum(hidden * params["out"]) * c + params["b"] * np.sum(x)

    gradient = srcad.grad(loss)
    W, x = rng.standard_normal((3, 2)), rng.standard_normal(2)
    base = {"layer": [W, rng.standard_normal(3)], "out": rng.standard_normal(3), "b": 0.4}
    paths = [("layer", 0), ("layer", 1), ("out",), ("b",)]
    calls = [
        (base, x, 1.5),
        (base, x, 1.5),  # (the quick call)
        ({"b": 0.4, "out": base["out"], "layer": base["layer"]}, x, 1.5),
        ({**base, "layer": tuple(base["layer"])}, x, 1.5),
        ({**base, "b": np.array(0.4)}, x, 1.5),
        ({**base, "out": base["out"].astype(np.float32)}, x, 1.5),
        (base, x, np.array([1.5])),
        (base, x[None, :].T[:, 0], 2),
        (base, x, 1.5),
    ]
    for params, x_, c in calls:
        got = gradient(params, x_, c)
        assert list(got) == list(params)
        assert type(got["layer"]) is type(params["layer"])
        for path, expected in zip(paths, _numerical_leaves(loss, params, (x_, c), paths)):
            leaf = _at(got, path)
            np.testing.assert_allclose(leaf, expected, rtol=1e-5, atol=1e-7)
            assert type(leaf) is type(_at(params, path))
            assert np.result_type(leaf) == np.result_type(_at(params, path))
    with pytest.raises(srcad.errors.NonDifferentiableInputError):
        gradient(base, np.ma.masked_array(x), 1.5)


def test_quick_calls_of_other_keys_and_of_arrays_take_their_own_way(rng):
    """The quick call of the latest structure runs first, for array calls too
    (fast_paths.array_runner): a dict of other keys, of more or fewer, and an array in the
    container's place each get their own numbers, in their own keys' order."""
    def loss(params, x):
        return np.sum(np.sin(params[0]) * x) + np.sum(params[1] ** 2 * x)


    x, a, b = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal(3)
    gradient = srcad.grad(loss)
    expected_a, expected_b = np.cos(a) * x, 2 * b * x
    for params in ([a, b], [a, b], np.stack([a, b]), [a, b], (a, b), np.stack([a, b])):
        got = gradient(params, x)
        assert type(got) is type(params)
        np.testing.assert_allclose(np.stack(got), np.stack([expected_a, expected_b]),
                                   rtol=1e-12)
    keyed = srcad.grad(lambda params, x: np.sum(np.sin(params["u"]) * x)
                       + 2 * np.sum(np.sin(params["v"]) * x))
    for params in ({"u": a, "v": b}, {"u": a, "v": b}, {"v": b, "u": a}, {"u": a, "w": b},
                   {"u": a}, {"u": a, "v": b, "w": b}, {"u": a, "v": b}):
        if "v" not in params:
            with pytest.raises(KeyError):
                keyed(params, x)
            continue
        got = keyed(params, x)
        assert list(got) == list(params)
        np.testing.assert_allclose(got["u"], np.cos(a) * x, rtol=1e-12)
        np.testing.assert_allclose(got["v"], 2 * np.cos(b) * x, rtol=1e-12)
        assert "w" not in params or np.array_equal(got["w"], np.zeros(3))


def test_quick_calls_follow_reassigned_code_and_defaults(rng):
    """The quick call of a structure passing every parameter compares the function's code
    but not its defaults (it reads none): a call that reads one takes the general way."""
    def scaled(params, x, scale=2.0):
        return scale * np.sum(params["w"] * x)

    def other(params, x, scale=2.0):
        return scale * np.sum(np.sin(params["w"]) * x)

    params, x = {"w": rng.standard_normal(3)}, rng.standard_normal(3)
    gradient = srcad.grad(scaled)
    original = scaled.__code__
    try:
        for _ in range(2):
            np.testing.assert_allclose(gradient(params, x, 3.0)["w"], 3.0 * x, rtol=1e-12)
            np.testing.assert_allclose(gradient(params, x)["w"], 2.0 * x, rtol=1e-12)
        scaled.__defaults__ = (5.0,)
        for _ in range(2):
            np.testing.assert_allclose(gradient(params, x, 3.0)["w"], 3.0 * x, rtol=1e-12)
            np.testing.assert_allclose(gradient(params, x)["w"], 5.0 * x, rtol=1e-12)
        scaled.__code__ = other.__code__
        for _ in range(2):
            np.testing.assert_allclose(gradient(params, x, 3.0)["w"],
                                       3.0 * np.cos(params["w"]) * x, rtol=1e-12)
    finally:
        scaled.__code__ = original


def test_quick_gradients_are_the_callers_own(rng):
    def linear(params, x):
        return np.sum(params["w"] * x) + params["b"]

    x = rng.standard_normal(3)
    gradient = srcad.grad(linear)
    for _ in range(3):  # (the second and third: the quick call)
        got = gradient({"w": np.zeros(3), "b": 0.5}, x)
        assert not np.shares_memory(got["w"], x) and got["w"].flags.writeable
        np.testing.assert_array_equal(got["w"], x)
        assert type(got["b"]) is float and got["b"] == 1.0
