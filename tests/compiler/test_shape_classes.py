"""Shape classes (srcad/compiler/analysis/shapes.py): where srcad proves operands share a shape it
drops `unbroadcast`; random programs of slices, elementwise steps and broadcast operands
check that it drops it only there. Each is compared with central finite differences, and
the gradient program with the forward-mode Jacobian."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcad
from srcad.api.testing import numerical_gradient
from tests.checks import load_function

_SLICES = ["x", "x[1:]", "x[:-1]", "x[2:]", "x[:-2]", "x[1:-1]", "x[:]"]
_LENGTHS = {"x": 0, "x[1:]": 1, "x[:-1]": 1, "x[2:]": 2, "x[:-2]": 2, "x[1:-1]": 2, "x[:]": 0}


@st.composite
def programs(draw):
    """`def f(x, w):` over slices of `x` that drop the same number of rows, elementwise
    steps on them, and `w` (a row, broadcast over them) mixed in somewhere or not."""
    dropped = draw(st.sampled_from([0, 1, 2]))
    slices = [s for s in _SLICES if _LENGTHS[s] == dropped]
    lines, names = [], []
    for k in range(draw(st.integers(2, 6))):
        if not names or draw(st.integers(0, 3)) == 0:
            value = draw(st.sampled_from(slices))
        else:
            a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names + ["w"] + slices))
            op = draw(st.sampled_from(["+", "-", "*"]))
            value = draw(st.sampled_from([f"{a} {op} {b}", f"np.sin({a}) {op} 0.5",
                                          f"2.0 * {a} ** 2", f"np.tanh({a} {op} {b})"]))
        names.append(f"v{k}")
        lines.append(f"    v{k} = {value}")
    lines.append(f"    return np.sum({' * '.join(names[-2:])})")
    return "def f(x, w):\n" + "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("shape_programs")


def _load(source, directory):
    return load_function(source, directory, "shape_program")


@given(source=programs(), rows=st.integers(2, 5), columns=st.sampled_from([0, 1, 3]))
@settings(max_examples=60, deadline=None)
def test_gradients_of_slices_and_broadcasts(program_dir, source, rows, columns):
    f = _load(source, program_dir)
    rng = np.random.default_rng(rows * 7 + columns)
    x = rng.uniform(-1, 1, (rows, columns) if columns else (rows,))
    w = rng.uniform(-1, 1, (columns,) if columns else ())
    gx, gw = srcad.grad(f, wrt=(0, 1))(x, w)
    np.testing.assert_allclose(gx, numerical_gradient(f, (x, w), 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gw, numerical_gradient(f, (x, w), 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(srcad.jacobian(f)(x, w), gx, rtol=1e-9, atol=1e-12)


def test_rosenbrock_needs_no_unbroadcast():
    def rosenbrock(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    source = srcad.grad(rosenbrock).source
    assert "unbroadcast" not in source and "shape_of" not in source


def centred_by_row_max(x):
    r = np.max(x, axis=-1, keepdims=True)
    d = x - r
    return np.sum(np.sin(d) * r * d)


def centred_by_column_mean(x):
    d = x - np.mean(x, axis=0, keepdims=True)
    return np.sum(d ** 3 + np.sin(x) * d)


def centred_by_total(x):
    r = np.sum(x)
    return np.sum(np.tanh(x * r - r))


def centred_by_a_row_sum_not_kept(x):  # square x: (n,) broadcasts along the other axis
    r = np.sum(x, axis=1)
    return np.sum(np.sin(x - r) * r)


def centred_by_a_variance_with_options(x):
    d = x - np.var(x, axis=0, ddof=0, keepdims=True)
    return np.sum(np.cos(d) * x)


@pytest.mark.parametrize("f, kept", [(centred_by_row_max, True), (centred_by_column_mean, True),
                                     (centred_by_total, True),
                                     (centred_by_a_row_sum_not_kept, False),
                                     (centred_by_a_variance_with_options, False)])
@pytest.mark.parametrize("shape", [(4, 4), (1, 4), (4, 1)])
def test_operands_reduced_with_their_axes_kept(f, kept, shape):
    """`x - np.max(x, axis=1, keepdims=True)` has the shape of `x`; a reduction that drops
    the axes it reduces (or one srcad cannot read) may be broadcast to a larger shape."""
    x = np.random.default_rng(3).uniform(-1, 1, shape)
    np.testing.assert_allclose(srcad.grad(f)(x), numerical_gradient(f, (x,), 0),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(srcad.grad(f)(x), srcad.tape.grad(f)(x), rtol=1e-10, atol=1e-12)
    sub_adjoint = [line for line in srcad.grad(f).source.splitlines() if "b_x" in line]
    assert kept != any("unbroadcast(" in line for line in sub_adjoint), sub_adjoint


def sample_deviation(x):
    return np.sum(np.std(x, axis=0, ddof=1))


def test_a_deviation_with_no_degrees_of_freedom_left_is_nan_as_in_numpy():
    x = np.array([[0.5, -1.0, 2.0]])
    with np.errstate(invalid="ignore", divide="ignore"), pytest.warns(RuntimeWarning):
        assert np.isnan(sample_deviation(x))
        assert np.isnan(srcad.grad(sample_deviation)(x)).all()
