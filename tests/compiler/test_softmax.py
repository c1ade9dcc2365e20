"""Softmax written out in NumPy (srcad/compiler/transform/softmax.py): where the lines match, the
reverse sweep uses softmax's own VJP and gives a max-shift no derivative; where they do not
(a value read elsewhere, a shift that varies along the summed axis) the chain rule runs as
written. Every program is checked against central finite differences and tape mode."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcad
from srcad.api.testing import numerical_gradient
from tests.checks import load_function


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("softmax_programs")


def _load(source, directory):
    return load_function(source, directory, "softmax_program")


def _program(shift: str, summed: str, extra: str = "") -> str:
    """`f(x, y, w)`: a softmax of `x` shifted by `shift` (or not), normalised by `summed`."""
    exponent = "x" if shift == "none" else "x - m"
    lines = [] if shift == "none" else [f"    m = {shift}"]
    lines += [f"    e = np.exp({exponent})",
              f"    s = np.sum(e{summed})",
              "    a = e / s",
              f"    return np.sum(a * w){extra}"]
    return "def f(x, y, w):\n" + "\n".join(lines) + "\n"


def _tape_gradient(f, args, position):
    values = [srcad.Variable(a) if k == position else a for k, a in enumerate(args)]
    with srcad.GradientTape() as tape:
        out = f(*values)
    gradient = tape.gradient(out, values[position])  # (None where it is not read)
    return np.zeros_like(args[position]) if gradient is None else gradient.numpy()


def _check(f, args, smooth=True):
    """srcad's gradients against tape mode, and against finite differences where `f` is
    `smooth` (a max of tied elements has a kink)."""
    for position in (0, 1):
        gradient = srcad.grad(f, wrt=position)(*args)
        if smooth:
            np.testing.assert_allclose(gradient, numerical_gradient(f, args, position),
                                       rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(gradient, _tape_gradient(f, args, position),
                                   rtol=1e-9, atol=1e-12)


_SHIFTS = ["none", "np.max(x, axis=1, keepdims=True)", "np.min(x, axis=1, keepdims=True)",
           "np.max(x)", "np.amax(x, axis=-1, keepdims=True)", "x.max(axis=1, keepdims=True)",
           "np.max(x, axis=0, keepdims=True)", "np.max(y, axis=-1, keepdims=True)",
           "np.max(y, axis=1, keepdims=True)", "np.max(x, axis=(0, 1), keepdims=True)",
           "np.max(x, axis=1)", "np.mean(x, axis=1, keepdims=True)", "0.5 * y"]
_SUMS = [", axis=1, keepdims=True", ", axis=-1, keepdims=True", "", ", axis=0, keepdims=True",
         ", axis=(0, 1), keepdims=True", ", axis=None, keepdims=True", ", axis=1"]


@given(shift=st.sampled_from(_SHIFTS), summed=st.sampled_from(_SUMS),
       extra=st.sampled_from(["", " + np.sum(e)", " + np.sum(m)"]),
       rows=st.integers(1, 4), seed=st.integers(0, 10**6), ties=st.booleans())
@settings(max_examples=80, deadline=None)
def test_softmax_variants_match_finite_differences_and_tape(program_dir, shift, summed, extra,
                                                            rows, seed, ties):
    if extra.endswith("(m)") and shift == "none":
        extra = ""
    f = _load(_program(shift, summed, extra), program_dir)
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, (rows, 4)).astype(float) if ties else rng.normal(size=(rows, 4))
    # (where x ties for its max, only the tape's chain rule is an oracle)
    args = (x, rng.normal(size=(rows, 4)), rng.normal(size=(rows, 4)))
    try:
        f(*args)
    except ValueError:  # (a reduction along one axis that does not broadcast back)
        return
    _check(f, args, smooth=not ties)


def _source(fn):
    return srcad.grad(fn, wrt=0).source


def test_a_stabilised_softmax_is_differentiated_by_its_own_rule(program_dir):
    f = _load(_program("np.max(x, axis=1, keepdims=True)", ", axis=1, keepdims=True"),
              program_dir)
    source = _source(f)
    assert "softmax_vjp" in source and "extremum_vjp" not in source
    _check(f, (np.random.default_rng(0).normal(size=(3, 4)),) * 3)


def test_a_shift_that_varies_along_the_sum_keeps_its_derivative(program_dir):
    f = _load(_program("np.max(x, axis=0, keepdims=True)", ", axis=1, keepdims=True"),
              program_dir)
    source = _source(f)
    assert "softmax_vjp" in source and "extremum_vjp" in source
    _check(f, (np.random.default_rng(1).normal(size=(3, 4)),) * 3)


def test_positive_axes_of_a_shift_of_another_array_are_not_trusted(program_dir):
    # y's axis 1 need not be the axis x - m sums along (y may have fewer axes than x)
    source = """def f(x, y, w):
    m = np.max(y, axis=1, keepdims=True)
    e = np.exp(x - m)
    a = e / np.sum(e, axis=1, keepdims=True)
    return np.sum(a * w)
"""
    f = _load(source, program_dir)
    rng = np.random.default_rng(2)
    x, y, w = rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(2, 3, 4))
    assert "extremum_vjp" in srcad.grad(f, wrt=1).source
    np.testing.assert_allclose(srcad.grad(f, wrt=1)(x, y, w),
                               numerical_gradient(f, (x, y, w), 1), rtol=1e-6, atol=1e-8)


def test_an_exponential_read_elsewhere_is_differentiated_as_written(program_dir):
    f = _load(_program("np.max(x, axis=1, keepdims=True)", ", axis=1, keepdims=True",
                       " + np.sum(e)"), program_dir)
    assert "softmax_vjp" not in _source(f)


def test_forward_mode_and_jacobians_of_a_softmax(program_dir):
    f = _load(_program("np.max(x, axis=1, keepdims=True)", ", axis=1, keepdims=True"),
              program_dir)
    rng = np.random.default_rng(3)
    args = tuple(rng.normal(size=(3, 4)) for _ in range(3))
    hessian_vector = srcad.hvp(f, wrt=0)(*args, np.ones((3, 4)))
    step = 1e-5
    ahead = srcad.grad(f)(args[0] + step, *args[1:])
    behind = srcad.grad(f)(args[0] - step, *args[1:])
    np.testing.assert_allclose(hessian_vector, (ahead - behind) / (2 * step), rtol=1e-5,
                               atol=1e-7)


_IN_LOOPS = {
    "rebound between the exponential and the quotient": """def f(x, y, w):
    d = x
    total = 0.0
    for i in range(2):
        e = np.exp(d)
        d = d * 2.0
        s = np.sum(e, axis=1, keepdims=True)
        a = e / s
        total = total + np.sum(a * np.cos(d) * w)
    return total
""",
    "rebound in a nested loop in between": """def f(x, y, w):
    d = x * 1.0
    e = np.exp(d)
    for i in range(2):
        d = d + y
    a = e / np.sum(e, axis=-1, keepdims=True)
    return np.sum(a * w * d)
""",
    "made in a loop, normalised after it": """def f(x, y, w):
    for i in range(2):
        e = np.exp(x * (i + 1.0))
    a = e / np.sum(e, axis=1, keepdims=True)
    return np.sum(a * w)
""",
    "a softmax per trip": """def f(x, y, w):
    total = 0.0
    for i in range(3):
        h = x * (i + 1.0) + y
        m = np.max(h, axis=1, keepdims=True)
        e = np.exp(h - m)
        a = e / np.sum(e, axis=1, keepdims=True)
        total = total + np.sum(a * w)
    return total
""",
}


@pytest.mark.parametrize("name", sorted(_IN_LOOPS))
def test_softmaxes_in_loops(program_dir, name):
    """The softmax's VJP reaches the exponent's cotangent where the quotient is: only where
    the exponent is the value `np.exp` read (not rebound in between) is the rule used."""
    f = _load(_IN_LOOPS[name], program_dir)
    _check(f, tuple(np.random.default_rng(4).normal(size=(3, 4)) for _ in range(3)))
    uses_rule = "softmax_vjp" in _source(f)
    assert uses_rule == (name == "a softmax per trip"), _source(f)


_WRITTEN_BETWEEN = {  # (found by review: the VJP at the quotient saw `d` as written)
    "an element": "    d[0, 0] = 3.0\n",
    "a row through an alias": "    v = d\n    v[1] = w[1]\n",
    "an augmented row": "    d[0] += w[0]\n",
    "a branch": "    if x[0, 0] > -10.0:\n        d[1] = 2.0\n",
}


@pytest.mark.parametrize("name", sorted(_WRITTEN_BETWEEN))
def test_an_exponent_written_between_the_exponential_and_the_quotient(program_dir, name):
    source = ("def f(x, y, w):\n    d = x * 1.0\n    e = np.exp(d)\n" + _WRITTEN_BETWEEN[name]
              + "    a = e / np.sum(e, axis=1, keepdims=True)\n"
              + "    return np.sum(a * w)" + ("" if "alias" in name else " + np.sum(d * y)") + "\n")
    f = _load(source, program_dir)
    _check(f, tuple(np.random.default_rng(5).normal(size=(3, 4)) for _ in range(3)))
    assert "softmax_vjp" not in _source(f)


def test_a_sum_over_no_axes_is_no_softmax(program_dir):
    f = _load(_program("np.max(x, axis=1, keepdims=True)", ", axis=(), keepdims=True"),
              program_dir)
    _check(f, tuple(np.random.default_rng(6).normal(size=(3, 4)) for _ in range(3)))
    g = _load(_program("np.max(y, axis=(), keepdims=True)", ", axis=(), keepdims=True"),
              program_dir)
    _check(g, tuple(np.random.default_rng(6).normal(size=(3, 4)) for _ in range(3)))


def test_a_softmax_of_a_number(program_dir):
    f = _load(_program("np.max(x)", ""), program_dir)
    for x in (1.5, np.float64(1.5), np.array(1.5)):
        assert srcad.grad(f, wrt=(0, 2))(x, 0.0, 2.0) == (0.0, 1.0)
