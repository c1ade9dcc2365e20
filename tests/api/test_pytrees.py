"""Parameters kept in dicts, lists and tuples: the gradient has the same nesting."""
import numpy as np
import pytest

import srcad
from tests import call_programs as p


def _tree(rng):
    return {"W1": rng.standard_normal((3, 4)), "b": (rng.standard_normal(4), 2),
            "layers": [rng.standard_normal(2), {"w": rng.standard_normal(4)}]}


def _leaves(tree, path=()):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _leaves(value, path + (key,))
    elif isinstance(tree, (list, tuple)):
        for key, value in enumerate(tree):
            yield from _leaves(value, path + (key,))
    else:
        yield path, tree


def _at(tree, path):
    for key in path:
        tree = tree[key]
    return tree


def _numerical(fn, tree, args, path, eps=1e-6):
    leaf = _at(tree, path)
    if not isinstance(leaf, np.ndarray):
        return 0.0
    gradient = np.zeros_like(leaf)
    for index in np.ndindex(leaf.shape):
        old = leaf[index]
        leaf[index] = old + eps
        up = fn(tree, *args)
        leaf[index] = old - eps
        down = fn(tree, *args)
        leaf[index] = old
        gradient[index] = (up - down) / (2 * eps)
    return gradient


def test_nested_gradient_has_the_structure_and_values(rng):
    params, x = _tree(rng), rng.standard_normal((5, 3))
    gradient = srcad.grad(p.tree_loss)(params, x)
    assert type(gradient) is dict and type(gradient["b"]) is tuple
    assert type(gradient["layers"]) is list and type(gradient["layers"][1]) is dict
    assert gradient["b"][1] == 0.0
    for path, leaf in _leaves(params):
        np.testing.assert_allclose(_at(gradient, path), _numerical(p.tree_loss, params, (x,), path),
                                   rtol=1e-5, atol=1e-7)
        assert np.shape(_at(gradient, path)) == np.shape(leaf)


def test_trees_pass_through_helpers(rng):
    params = {"scale": rng.standard_normal(3), "shift": rng.standard_normal(2)}
    x = rng.standard_normal(3)
    gradient = srcad.grad(p.tree_through_helper)(params, x)
    np.testing.assert_allclose(gradient["scale"], 2.0 * x)
    np.testing.assert_allclose(gradient["shift"], [2.0, 2.0])


def test_example_training_with_dict_parameters_converges():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).parent.parent.parent / "examples" / "train_dict_params.py"
    spec = importlib.util.spec_from_file_location("train_dict_params", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(steps=150) < 0.05


def l2_over_items(params, scale):
    reg = 0.0
    for name, w in params.items():          # the regularisation loop of training code
        reg = reg + scale * np.sum(w ** 2)
    return reg


def weighted_values(params, scale):
    return sum(np.sum(np.sin(v)) * scale for v in params.values())


def items_of_a_local_dict(params, scale):
    scaled = {"b": params["b"] * scale, "w": params["w"] * scale}
    total = 0.0
    for key, value in list(scaled.items()):
        total = total + np.sum(value * params[key])
    return total


def test_loops_over_a_dicts_items_and_values_reach_its_values(rng):
    """`for name, w in params.items()` gave a zero gradient: the loop element was unpacked,
    and an unpacked element did not make the loop's iterable need a derivative."""
    params = {"w": rng.standard_normal((2, 3)), "b": rng.standard_normal(4)}
    for fn in (l2_over_items, weighted_values, items_of_a_local_dict):
        gradient = srcad.grad(fn, wrt=(0, 1))(params, 0.7)
        taped = srcad.tape.grad(fn, wrt=(0, 1))(params, 0.7)
        for path, leaf in _leaves(params):
            expected = _numerical(lambda tree, s: fn(tree, s), params, (0.7,), path)
            np.testing.assert_allclose(_at(gradient[0], path), expected, rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(_at(taped[0], path), expected, rtol=1e-5, atol=1e-7)
        step = 1e-6
        slope = (fn(params, 0.7 + step) - fn(params, 0.7 - step)) / (2 * step)
        assert gradient[1] == pytest.approx(slope, rel=1e-5)
