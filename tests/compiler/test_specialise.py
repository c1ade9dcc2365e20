"""The gradient program specialised on float64 arrays (transform/specialise.py): the helper
calls whose checks the arguments' kinds pass become plain NumPy code, and the gradients
stay those of the general program, of tape mode and of finite differences."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import srcad
from srcad.compiler import cache
from srcad.bench import workloads
from srcad.api.testing import check_grads

ROOT = pathlib.Path(__file__).resolve().parents[2]
HELPERS = ("seed_for", "cotangent_number", "joint_outline", "index_adjoint", "add_at",
           "multiply_into", "matmul_vjp_a", "matmul_vjp_b", "unbroadcast")


def specialised(fn, wrt, **ranks):
    return cache.compiled_adjoint(fn, wrt, mode="gradient", arrays=frozenset(ranks.items()))


def tape_gradients(fn, args, wrt):
    with srcad.GradientTape() as tape:
        watched = [srcad.Variable(a) if i in wrt else a for i, a in enumerate(args)]
        output = fn(*watched)
    return tape.gradient(output, [watched[i] for i in wrt])


@pytest.mark.parametrize("fn, wrt, ranks", [
    (workloads.rosenbrock, ("x",), {"x": 1}),
    (workloads.attention_loss, ("Wq", "Wv"), {"Wq": 2, "Wv": 2, "X": 2})])
def test_the_benchmarks_large_array_gradients_call_no_checking_helper(fn, wrt, ranks):
    source = specialised(fn, wrt, **ranks).source
    assert not [helper for helper in HELPERS if helper + "(" in source], source


@pytest.mark.parametrize("name", ["rosenbrock", "attention"])
def test_specialised_gradients_agree_with_tape_mode(name):
    workload = next(w for w in workloads.WORKLOADS if w.name == name)
    args = workload.make_args()
    wrt = workload.wrt if isinstance(workload.wrt, tuple) else (workload.wrt,)
    got = srcad.grad(workload.fn, wrt=wrt)(*args)
    for g, expected in zip(got, tape_gradients(workload.fn, args, wrt)):
        np.testing.assert_allclose(g, expected, rtol=1e-10, atol=1e-12)


def squared_differences(x, y):
    return np.sum(x * 2.0 + y ** 2)


def test_outlined_operands_of_unknown_shapes_are_still_checked():
    """`x * 2.0 + y ** 2` is not computed (only its sum's seed is needed), but x and y of
    shapes that do not broadcast must raise as the function does."""
    x, y = np.ones(3), np.ones(4)
    with pytest.raises(ValueError):
        squared_differences(x, y)
    with pytest.raises(ValueError):
        srcad.grad(squared_differences, wrt=(0, 1))(x, y)


def neighbours(x):
    return np.sum(x[1:] * x[:-1] + 3.0 * x[0] ** 2)


@pytest.mark.parametrize("x", [np.linspace(0.5, 2.0, 5), np.arange(12.0).reshape(4, 3) / 7,
                               np.array([1.5, 2.5])])
def test_programs_for_arrays_of_each_rank(x):
    """A program per rank of argument, each with the gradient finite differences give."""
    gradient = srcad.grad(neighbours)
    for _ in range(2):  # (the second call takes the quick path)
        got = gradient(x)
        assert got.shape == x.shape and got.dtype == np.float64
    check_grads(neighbours, (x,))


def scaled_total(x, c):
    return np.sum(x * c) * c


def test_a_zero_dimensional_array_keeps_its_kind():
    x = np.array(2.0)
    got = srcad.grad(scaled_total)(x, 3.0)
    assert type(got) is np.ndarray and got.shape == () and got == 9.0
    assert srcad.grad(scaled_total)(np.float32(2.0), 3.0).dtype == np.float32


def mixed_precisions(x, w):
    return np.sum((x @ w) ** 2)


def test_float32_and_float64_arguments_mixed():
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    w = np.linspace(0.5, 1.5, 12).reshape(3, 4).astype(np.float32)
    got = srcad.grad(mixed_precisions, wrt=(0, 1))(x, w)
    expected = tape_gradients(mixed_precisions, (x, w), (0, 1))
    for g, e, argument in zip(got, expected, (x, w)):
        assert g.dtype == argument.dtype
        np.testing.assert_allclose(g, e, rtol=1e-5)


def layered(x, weights):
    h = x
    for w in weights:
        h = np.tanh(h @ w)
    return np.sum(h ** 2) + np.sum(x[:, 1:] - x[:, :-1])


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 4), columns=st.integers(2, 5), depth=st.integers(0, 2),
       seed=st.integers(0, 2 ** 16))
def test_specialised_gradients_agree_with_tape_mode_on_any_shapes(rows, columns, depth, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, columns))
    weights = [rng.normal(size=(columns, columns)) for _ in range(depth)]
    np.testing.assert_allclose(srcad.grad(layered)(x, weights),
                               tape_gradients(layered, (x, weights), (0,))[0],
                               rtol=1e-9, atol=1e-12)


def test_show_prints_the_program_grad_runs_on_the_arguments(capsys):
    x = np.linspace(-1.0, 1.0, 7)
    srcad.show(workloads.rosenbrock, mode="grad")
    general = capsys.readouterr().out
    srcad.show(workloads.rosenbrock, mode="grad", args=(x,))
    shown = capsys.readouterr().out
    assert "add_at(" in general and "add_at(" not in shown and "b_x[1:] +=" in shown
    gradient = srcad.grad(workloads.rosenbrock)
    gradient(x)
    assert [entry[0].source for entry in gradient.derivative.latest.values()] == [shown]


def complex_scale(x):
    c = (1 - x.shape[0]) ** 0.5  # a Python complex number for two elements or more
    return np.sum(np.sin(x * c) * 2.0)


def test_a_python_power_that_may_be_complex_is_not_taken_for_a_float():
    """`(1 - n) ** 0.5` is complex: the output is, and `grad` refuses it as the general
    program does (a float64 seed would have given a gradient)."""
    from srcad.errors import NonScalarOutputError
    for x in (np.arange(1.0, 4.0), np.arange(1.0, 4.0, dtype=np.float32)):
        with pytest.raises(NonScalarOutputError):
            srcad.grad(complex_scale)(x)


def reductions(x):
    total = np.sum(x)  # (over all axes: a ufunc's reduce alone would sum axis 0)
    rows = np.max(x, axis=1, keepdims=True)
    columns = np.min(x, axis=0)
    scale = np.prod(x[0])
    return np.sum(x * total) + np.sum((x - rows) ** 2) + np.sum(columns) * scale


def test_reductions_of_arrays_run_as_ufunc_reductions_with_numpys_results():
    x = np.linspace(-1.0, 2.0, 12).reshape(3, 4)
    source = specialised(reductions, ("x",), x=2).source
    assert "np.add.reduce(x, axis=None)" in source and "np.maximum.reduce(x, axis=1" in source
    np.testing.assert_allclose(srcad.grad(reductions)(x), tape_gradients(reductions, (x,), (0,))[0],
                               rtol=1e-12)
    check_grads(reductions, (x,))


def matrix_times_vector(A, x):
    return np.sum(np.tanh(A @ x))


def vector_times_matrix(x, A):
    return np.sum(np.tanh(x @ A))


def logistic(w, X, y):
    return np.mean(np.log1p(np.exp(-y * (X @ w))))


PRODUCTS = [(matrix_times_vector, {"A": 2, "x": 1}, ((4, 3), (3,))),
            (vector_times_matrix, {"x": 1, "A": 2}, ((3,), (3, 5))),
            (logistic, {"w": 1, "X": 2, "y": 1}, ((3,), (6, 3), (6,)))]


@pytest.mark.parametrize("fn, ranks, shapes", PRODUCTS, ids=lambda v: getattr(v, "__name__", ""))
def test_products_of_vectors_and_matrices_become_numpy_products(fn, ranks, shapes):
    """`matmul_vjp_a`/`_b` of a matrix and a vector: an outer product or `A.T @ g`,
    reached through the outlines, uniform cotangents and in-place helpers before them."""
    source = specialised(fn, tuple(ranks)[:2], **ranks).source
    assert "matmul_vjp" not in source, source
    args = [np.random.default_rng(3).standard_normal(shape) for shape in shapes]
    got = srcad.grad(fn, wrt=(0, 1))(*args)
    for g, expected in zip(got, tape_gradients(fn, args, (0, 1))):
        np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-14)
    check_grads(fn, tuple(args), wrt=(0, 1))


def sine_times_x(x):
    return np.sum(np.sin(x) * x)


def sine_read_twice(x):
    s = np.sin(x)
    return np.sum(s * x) + np.sum(s * s)


def product(x, y):
    return np.sum(x * y)


def test_the_seed_times_an_array_is_not_made():
    """The gradient of sum(sin(x) * x) holds two arrays at its peak, as `cos(x) * x +
    sin(x)` written by hand does: the seed 1.0 times x and times sin(x) are not made."""
    import tracemalloc
    x = np.linspace(-3.0, 3.0, 1_000_000)
    gradient = srcad.grad(sine_times_x)
    gradient(x[:10])
    tracemalloc.start()
    got = gradient(x)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2.1 * x.nbytes
    np.testing.assert_allclose(got, np.cos(x) * x + np.sin(x), rtol=1e-15, atol=0)


@pytest.mark.parametrize("fn, arity", [(sine_times_x, 1), (sine_read_twice, 1), (product, 2)],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_products_with_the_seed_agree_and_return_arrays_of_their_own(fn, arity):
    args = [np.random.default_rng(5).standard_normal(300) for _ in range(arity)]
    kept = [a.copy() for a in args]
    wrt = tuple(range(arity))
    got = srcad.grad(fn, wrt=wrt)(*args)
    for g, expected in zip(got, tape_gradients(fn, args, wrt)):
        np.testing.assert_allclose(g, expected, rtol=1e-13, atol=1e-15)
    for g in got:
        g += 1.0  # (a gradient is the caller's: writing into it changes no argument)
    for a, k in zip(args, kept):
        np.testing.assert_array_equal(a, k)


def penalised_logistic(w, b, X, y):
    z = X @ w + b
    return np.mean(np.log1p(np.exp(-y * z))) + 1e-3 * np.sum(w ** 2)


def test_a_penalty_a_bias_and_outlined_numbers_keep_the_program_specialised(rng):
    """The seed of a sum of outlined numbers is the float64 one, a number's cotangent goes
    to a number as it is, a Python float's (the bias) is a sum, and a product's cotangent
    added into a gradient is the product (analysis/float64s.py knows outlines of outlines
    and the Python floats among the parameters)."""
    source = cache.compiled_adjoint(penalised_logistic, ("w", "b"), mode="gradient",
                                    scalars=frozenset({"b"}),
                                    arrays=frozenset({("w", 1), ("X", 2), ("y", 1)})).source
    for helper in ("seed_for", "cotangent_number", "joint_outline", "matmul_vjp_b",
                   "add_into", "reduction_outline"):
        assert helper + "(" not in source, source
    assert "X.T @" in source and "np.add.reduce(" in source
    X, y = rng.standard_normal((15, 4)), np.sign(rng.standard_normal(15))
    args = (rng.standard_normal(4), 0.3, X, y)
    check_grads(penalised_logistic, args, wrt=(0, 1))
    w_gradient, b_gradient = srcad.grad(penalised_logistic, wrt=(0, 1))(*args)
    with srcad.passes.off("specialise"):
        expected = srcad.grad(penalised_logistic, wrt=(0, 1))(*args)
    np.testing.assert_allclose(w_gradient, expected[0], rtol=1e-12)
    assert type(b_gradient) is float and b_gradient == pytest.approx(expected[1], rel=1e-12)


def test_the_mean_of_a_value_not_computed_reads_the_size_of_an_array_of_its_shape():
    """`np.mean(np.log1p(e))` needs only how many elements `log1p(e)` has: the size of `e`
    (bound, of the outline's shape class), not `reduced_size` of an outline that is then
    not made; the shape kept of `X @ w`, read by nothing, is a `del`."""
    source = cache.compiled_adjoint(penalised_logistic, ("w", "b"), mode="gradient",
                                    scalars=frozenset({"b"}),
                                    arrays=frozenset({("w", 1), ("X", 2), ("y", 1)})).source
    for helper in ("reduced_size", "outline"):
        assert helper + "(" not in source, source
    assert ".size" in source and source.count("shape_of(") == 1, source


def mean_of_an_outer_product(x, y):
    return np.mean(np.log1p(np.exp(x[:, None] * y[None, :]))) + np.mean(np.tanh(x) ** 2)


@pytest.mark.parametrize("shapes", [(3, 5), (1, 4), (4, 1)])
def test_means_of_broadcast_values_divide_by_their_own_size(rng, shapes):
    """An outline of a shape no bound array has (an outer product's) keeps `reduced_size`;
    the gradients agree with the general program and with finite differences."""
    args = tuple(rng.standard_normal(n) for n in shapes)
    check_grads(mean_of_an_outer_product, args, wrt=(0, 1))
    got = srcad.grad(mean_of_an_outer_product, wrt=(0, 1))(*args)
    with srcad.passes.off("specialise"):
        expected = srcad.grad(mean_of_an_outer_product, wrt=(0, 1))(*args)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12)


# ---- loops and branches: what holds at each trip's start, and what the tape's pops hold ----
def test_the_rk4_loop_gradient_is_written_for_float64_arrays():
    """The pendulum's buffers `dy = np.zeros(2); dy[0] = ...` (one length, every trip) and
    its state, popped back in the backward sweep, are known: the adjoints inside the loop
    are NumPy code."""
    source = specialised(workloads.rk4_pendulum, ("p",), p=1, start=1).source
    lines = source[source.index("for remaining"):].splitlines()[1:]
    backward = "\n".join(line for line in lines if line.startswith(" " * 12))  # (its body)
    assert "index_adjoint(" not in backward and "add_at(" not in backward, source
    assert "accumulate(" not in backward, source
    assert backward.count("unbroadcast(") <= 8, source  # (those with the state, of any shape)


def euler_steps(p, start):
    y = start
    for _ in range(5):
        dy = np.zeros(2)
        dy[0] = p[0] * np.sin(y[0])
        dy[1] = -p[1] * y[-1]
        y = y + 0.1 * dy
    return np.sum(y ** 2)


@pytest.mark.parametrize("start", [np.array([1.0, 0.5]), np.array([0.4])])
def test_a_state_that_broadcasts_on_the_first_trip_alone(start):
    """`start` of one element becomes two on the first step: its cotangent is summed on
    that trip, not on the others (a shape class of one trip is not another's)."""
    p = np.array([9.81, 0.3])
    check_grads(euler_steps, (p, start), wrt=(0, 1))
    got = srcad.grad(euler_steps, wrt=(0, 1))(p, start)
    for g, expected in zip(got, tape_gradients(euler_steps, (p, start), (0, 1))):
        np.testing.assert_allclose(g, expected, rtol=1e-10, atol=1e-12)


def growing(x):
    y = x
    total = 0.0
    for i in range(3):
        z = y * 2.0 + x[0]
        y = np.concatenate([y, z[:1]])
        total = total + np.sum(z * y[:-1])
    return total


def previous_trip(x):
    prev = None
    total = 0.0
    for i in range(4):
        current = x * (i + 1.0)
        if prev is not None:
            total = total + np.sum(prev * current)
        prev = current
    return total


def shrinking_while(x):
    y = x
    while y.shape[0] > 1:
        y = y[1:] * y[:-1] + 0.5
    return y[0]


def breaks_early(x):
    y = x
    for i in range(5):
        if i == 3:
            break
        y = np.sin(y) * x
    return np.sum(y * y)


def skips(x):
    total = 0.0
    y = x
    for i in range(5):
        if i % 2:
            continue
        y = y * x + 1.0
        total = total + np.sum(y)
    return total


def nested(x, w):
    h = x
    for i in range(3):
        for j in range(2):
            h = np.tanh(w @ h + h)
        h = h * 0.5
    return np.sum(h ** 2)


def number_or_array(x):
    total = 0.0
    for i in range(4):
        if i % 2:
            v = x[0] * 2.0
        else:
            v = x * 3.0
        total = total + np.sum(v * x)
    return total


def loop_in_a_branch(x, w):
    y = x * 1.0
    if x[0] > 0:
        for i in range(3):
            y = np.tanh(w @ y) + y[0]
    else:
        y = (w @ y)[:1] * 2.0
    return np.sum(y * y)


def branches_in_branches(x):
    y = x * 2.0
    if x[0] > 0:
        if x[1] > 0:
            z = y[0] * 3.0
        else:
            z = y * y
        y = y + z
    else:
        z = np.concatenate([y, y])
        y = z[:2] * y
    return np.sum(y) + np.sum(z * 0.5)


MATRIX = np.array([[0.5, -0.2], [0.1, 0.3]])


@pytest.mark.parametrize("fn, args", [
    (loop_in_a_branch, (np.array([0.3, -1.2]), MATRIX)),
    (loop_in_a_branch, (np.array([-0.3, -1.2]), MATRIX)),
    (branches_in_branches, (np.array([0.3, 1.2]),)),
    (branches_in_branches, (np.array([0.3, -1.2]),)),
    (branches_in_branches, (np.array([-0.3, 1.2]),)),
    (growing, (np.array([0.3, -1.2]),)),
    (previous_trip, (np.array([0.3, -1.2, 2.0]),)),
    (shrinking_while, (np.array([0.3, -1.2, 0.7, 1.1]),)),
    (breaks_early, (np.array([0.3, -1.2]),)),
    (skips, (np.array([0.3, -1.2]),)),
    (nested, (np.array([0.3, -1.2]), MATRIX)),
    (number_or_array, (np.array([0.3, -1.2]),)),
])
def test_loops_whose_values_change_shape_or_kind_from_trip_to_trip(fn, args):
    """Hostile loops and branches for what the specialised program assumes of their
    names: shapes that grow and shrink, a value of the trip before, `break`, `continue`, a
    loop in a loop or in a branch, branches in branches, a name a number on some trips or
    arms and an array on others. The gradients agree with
    finite differences and tape mode, called twice (the second call takes the program
    kept for these arguments)."""
    wrt = tuple(range(len(args)))
    gradient = srcad.grad(fn, wrt=wrt)
    for _ in range(2):
        got = gradient(*args)
        for g, expected in zip(got, tape_gradients(fn, args, wrt)):
            np.testing.assert_allclose(g, expected, rtol=1e-10, atol=1e-12)
    check_grads(fn, args, wrt=wrt)


def zero_trip_filled(p, n):
    t = np.sum(p * 0.0)
    for i in range(int(n[0])):
        dy = np.zeros(2)
        dy[0] = p[0] * t
        dy[1] = p[1] + t
        t = t + np.sum(np.sin(dy))
    w = np.zeros(2)
    w[0] = p[0] * t
    w[1] = p[1]
    return t + np.mean(w * 3.0)


def means_in_a_loop(x):
    t = np.sum(x * 0.0)
    for i in range(3):
        t = t + np.mean(x * 3.0)
        a = np.sin(x * t)
        t = t + np.sum(a)
    return t


def zero_trip_mean(x, n):
    t = np.sum(x * 0.0)
    for i in range(int(n[0])):
        a = np.sin(x * t)
        t = t + np.sum(a)
    return t + np.mean(x * 3.0)


@pytest.mark.parametrize("fn, args", [
    (zero_trip_filled, (np.array([0.3, 0.7]), np.array([0.0]))),
    (zero_trip_filled, (np.array([0.3, 0.7]), np.array([2.0]))),
    (means_in_a_loop, (np.array([0.3, 0.7, -0.4]),)),
    (zero_trip_mean, (np.array([0.3, 0.7, -0.4]), np.array([0.0]))),
])
def test_a_size_is_read_off_a_name_bound_here(fn, args):
    """A mean's size (`reduced_size` of an outline) is read as `.size` of an array of its
    shape class; never of a recorded name that may still hold the None it starts with
    (a loop run no times, the last backward trip), whatever the hash seed orders."""
    gradient = srcad.grad(fn, wrt=(0,))
    for _ in range(2):
        got, = gradient(*args)
        np.testing.assert_allclose(got, tape_gradients(fn, args, (0,))[0], rtol=1e-10,
                                   atol=1e-12)
    check_grads(fn, args, wrt=(0,))


def test_the_specialised_program_is_the_same_in_every_process():
    """Which name a rewrite reads may not depend on the order of a set (PYTHONHASHSEED)."""
    script = ("import numpy as np; from tests.compiler.test_specialise import means_in_a_loop,"
              " specialised; print(specialised(means_in_a_loop, ('x',), x=1).source)")
    sources = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              check=True, env={**os.environ, "PYTHONHASHSEED": seed},
                              cwd=ROOT).stdout for seed in ("0", "2", "4")}
    assert len(sources) == 1


def margin_loss(w, X, y):
    return np.mean(np.log1p(np.exp(-y * (X @ w)))) + 0.5e-2 * np.sum(w * w)


@pytest.mark.parametrize("labels", [30, 1])  # (y of X's rows, or one broadcast over them)
def test_shapes_not_known_to_be_one_are_compared_when_it_runs(labels):
    """Where ranks are known but shapes are not (`y * margins`: y may broadcast), the
    specialised program compares the shapes and calls `unbroadcast` only where they differ;
    one program, for float64 arrays of rank 1, serves y of 30 elements and of one. The
    Hessian-vector program over the tangent program is specialised so too: its backward
    sweep calls none of the checking helpers of its matmul, negation and seed."""
    rng = np.random.default_rng(8)
    X, w, v = rng.standard_normal((30, 4)), rng.standard_normal(4), rng.standard_normal(4)
    y = np.sign(rng.standard_normal(labels))
    gradient = srcad.grad(margin_loss, wrt=(0, 2))(w, X, y)
    for got, expected in zip(gradient, tape_gradients(margin_loss, (w, X, y), (0, 2))):
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    source = specialised(margin_loss, ("w", "y"), w=1, X=2, y=1).source
    assert "else unbroadcast(" in source and "else multiply_into(" in source, source
    product = srcad.hvp(margin_loss)(w, X, y, v)
    s = 1.0 / (1.0 + np.exp(-y * (X @ w)))
    hessian = X.T @ ((s * (1.0 - s))[:, None] * X) / 30 + 1e-2 * np.eye(4)
    np.testing.assert_allclose(product, hessian @ v, rtol=1e-12)
    hvp_source = cache.compiled_adjoint(
        srcad.hvp(margin_loss)._derivative(frozenset()).function, ("w",), mode="gradient",
        arrays=frozenset({("t_w", 1), ("w", 1), ("X", 2), ("y", 1)})).source
    assert not [helper for helper in ("seed_for", "matmul_vjp_b", "negative_into", "array_of",
                                      "add_into") if helper + "(" in hvp_source], hvp_source


class _Named:
    """The bindings `_unread_values_dropped` reads: `shape_of` named, callees by name."""

    def __init__(self, **objects):
        self.objects = objects

    def named_already(self, obj) -> bool:
        return any(value is obj for value in self.objects.values())

    def callee(self, node):
        return self.objects.get(getattr(node, "id", None))


@pytest.mark.parametrize("body, outlined, expected", [
    ("t = outline(sin, a)\nu = outline(add, t, a)\nb = a * 2\ndel t, u\nreturn b",
     {0, 1}, "b = a * 2\nreturn b"),                    # u unread, then t: their dels too
    ("t = outline(sin, a)\nb = t * 2\ndel t\nreturn b", {0},
     "t = outline(sin, a)\nb = t * 2\ndel t\nreturn b"),  # read: kept
    ("g = shape_of(g)\nb = a * 2\nreturn b", set(), "del g\nb = a * 2\nreturn b"),
    ("g = shape_of(g)\nb = unbroadcast(a, g)\nreturn b", set(),
     "g = shape_of(g)\nb = unbroadcast(a, g)\nreturn b"),
    ("g = shape_of(g)\nb = a * 2\ndel g\nreturn b", set(),  # the later del reads the Shape
     "g = shape_of(g)\nb = a * 2\ndel g\nreturn b"),
    ("g = shape_of(g)\ng = outline(sin, a)\ndel g\nreturn a", {1},  # a del of an outline
     "del g\nreturn a"),                                # dropped: the Shape read by none
    ("g = outline(sin, a)\ng = shape_of(g)\nreturn a", {0},  # the Shape reads the outline
     "g = outline(sin, a)\ndel g\nreturn a"),
    ("t = outline(sin, a)\ng = shape_of(g)\ndel t[0]\nreturn a", {0},  # `del t[0]` reads t
     "t = outline(sin, a)\ndel g\ndel t[0]\nreturn a"),
])
def test_unread_outlines_are_dropped_and_unread_shapes_deleted(body, outlined, expected):
    """One sweep from the end drops the outlines nothing reads (and their names from the
    `del`s that follow) and makes each Shape nothing mentions afterwards a `del`; a `del`
    of an outline dropped mentions nothing."""
    import gast

    from srcad.compiler.emit import python_source
    from srcad.compiler.transform.specialise import _UsesOf, _unread_values_dropped
    from srcad.kernels import adjoints as helpers
    statements, bindings = gast.parse(body).body, _Named(shape_of=helpers.shape_of)
    kept = _unread_values_dropped(statements, {id(statements[i]) for i in outlined},
                                  _UsesOf(bindings), bindings)
    assert "\n".join(python_source(s) for s in kept) == expected
