"""Every program source mode differentiates, differentiated in tape mode too: both agree.

The corpora are imported, not copied, so a program added to any of them is checked here as
well. Every program must match `srcad.grad` to 1e-10 relative (or, where source mode
refuses a program, central finite differences).
"""
import pathlib

import numpy as np
import pytest

import srcad
from srcad.errors import NonDifferentiableInputError, NonScalarOutputError
from srcad.errors import SrcadError
from srcad.tape import constant
from srcad.tape.errors import TapeConversionError
from srcad.tape import grad as tape_grad
from srcad.api.testing import numerical_gradient
from tests import call_programs, control_programs, in_place_programs
from tests.test_straight_line import CASES as STRAIGHT_LINE_CASES

# Programs that hand NumPy a list of values (`np.dot([a, b], w)`): NumPy makes its array
# before tape mode sees the call, so tape mode refuses them (test_lists_of_tensors_are_refused)
LISTS_OF_VALUES = (call_programs.lists_as_arrays, call_programs.comprehension_reduced,
                   call_programs.named_lists_reduced)
ALL_CASES = ([(fn, args, wrt) for fn, arg_sets, wrt in control_programs.CORPUS
              for args in arg_sets] + list(in_place_programs.CORPUS)
             + list(STRAIGHT_LINE_CASES) + list(call_programs.CORPUS))
CASES = [case for case in ALL_CASES if case[0] not in LISTS_OF_VALUES]
IDS = [f"{fn.__module__.split('.')[-1]}.{fn.__name__}-{i}" for i, (fn, _, _) in enumerate(CASES)]

def _copies(args):
    return tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in args)


def _as_tuple(wrt, gradients):
    return gradients if isinstance(wrt, tuple) else (gradients,)


def _leaves(tree):
    if isinstance(tree, dict):
        return [leaf for key in tree for leaf in _leaves(tree[key])]
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in _leaves(item)]
    return [tree]


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=IDS)
def test_tape_mode_agrees_with_source_mode(fn, args, wrt):
    got = _as_tuple(wrt, tape_grad(fn, wrt=wrt)(*_copies(args)))
    try:
        expected = _as_tuple(wrt, srcad.grad(fn, wrt=wrt)(*_copies(args)))
    except SrcadError:  # source mode refuses it: finite differences decide
        positions = wrt if isinstance(wrt, tuple) else (wrt,)
        expected = [numerical_gradient(lambda *a: fn(*_copies(a)), args, p) for p in positions]
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
        return
    for g, e in zip(got, expected):
        assert type(g) is type(e)
        for g_leaf, e_leaf in zip(_leaves(g), _leaves(e)):
            assert type(g_leaf) is type(e_leaf) and np.shape(g_leaf) == np.shape(e_leaf)
            assert np.result_type(g_leaf) == np.result_type(e_leaf)
            np.testing.assert_allclose(g_leaf, e_leaf, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn, args, wrt", [c for c in ALL_CASES if c[0] in LISTS_OF_VALUES])
def test_lists_of_tensors_are_refused(fn, args, wrt):
    with pytest.raises(TapeConversionError, match="np.stack"):
        tape_grad(fn, wrt=wrt)(*_copies(args))


def test_every_corpus_is_covered():
    """A corpus module added later (tests/*_programs.py with a CORPUS) must be added above."""
    names = {fn.__module__ for fn, _, _ in CASES}
    corpora = {f"tests.{path.stem}" for path in pathlib.Path(__file__).parent.parent.glob(
        "*_programs.py") if "\nCORPUS = " in path.read_text()}
    assert corpora | {"tests.programs"} <= names


# ---- srcad.tape.grad: source mode's conventions -----------------------------------------------
def test_float_arguments_give_floats_and_ints_are_promoted():
    assert tape_grad(lambda x: x ** 3)(2) == 12.0
    g = tape_grad(lambda x, y: x * y, wrt=(0, 1))(1.5, 2.0)
    assert g == (2.0, 1.5) and all(type(v) is float for v in g)


def test_dtype_shape_and_zeros_for_unconnected_arguments():
    x = np.array([0.5, 1.5], np.float32)
    g = tape_grad(lambda x, w: np.sum(np.tanh(x) * 2.0), wrt=(0, 1))(x, np.ones((2, 2)))
    assert g[0].dtype == np.float32 and g[0].shape == (2,)
    assert g[1].shape == (2, 2) and not g[1].any()
    assert tape_grad(lambda x: 3.0)(1.0) == 0.0


def test_wrt_by_name_keyword_only_and_arguments_kept_unchanged():
    def f(x, *, scale=2.0):
        x[0] = x[0] * scale  # written in place: the caller's array must not change
        return np.sum(x * scale)
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(tape_grad(f, wrt="x")(x), [4.0, 2.0])
    np.testing.assert_array_equal(x, [1.0, 2.0])

    def g(x, *, scale=2.0):
        return np.sum(x * scale ** 2)
    assert tape_grad(g, wrt="scale")(x, scale=3.0) == 2 * 3.0 * (1.0 + 2.0)


def test_refusals_match_source_mode():
    with pytest.raises(NonDifferentiableInputError):
        tape_grad(lambda x: np.sum(x))(np.array([1, 2]))
    with pytest.raises(NonScalarOutputError, match="vjp"):
        tape_grad(lambda x: x * 2.0)(np.ones(3))
    with pytest.raises(srcad.errors.WrtError):
        tape_grad(lambda x: x, wrt="y")


def test_ufuncs_bound_methods_and_pytrees():
    np.testing.assert_allclose(tape_grad(np.tanh)(0.3), 1 - np.tanh(0.3) ** 2)

    class Model:
        def __init__(self):
            self.w = np.array([1.0, -2.0])

        def loss(self, x):
            return np.sum(self.w * x ** 2)
    np.testing.assert_allclose(tape_grad(Model().loss)(np.array([0.5, 1.0])), [1.0, -4.0])
    params = {"w": np.array([0.5, -1.0]), "b": [0.3, np.array(2.0)]}

    def tree(p):
        return np.sum(p["w"] ** 2) * p["b"][0] + p["b"][1]
    g = tape_grad(tree)(params)
    assert type(g["b"]) is list and type(g["b"][0]) is float
    np.testing.assert_allclose(g["w"], 2 * params["w"] * 0.3)
    assert g["b"][0] == pytest.approx(1.25) and float(g["b"][1]) == 1.0


def test_an_argument_that_is_already_a_tensor_stays_one():
    x = constant(np.array([1.0, 2.0]))
    g = tape_grad(lambda v: np.sum(v ** 2))(x)
    np.testing.assert_allclose(np.asarray(g), [2.0, 4.0])
