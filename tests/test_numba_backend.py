"""backend="numba": the same gradients as the Python programs (and central differences),
compiled where numba can type the program, the Python program where it cannot."""
import math
import re

import numpy as np
import pytest

import srcad
from srcad.api.testing import numerical_gradient
from srcad.bench.workloads import heat_equation, lotka_volterra, mixture_loops, rk4_pendulum
from srcad.compiler import cache, numba_backend
from srcad.errors import UsageError

numba = pytest.importorskip("numba")


def clipped(a, b):
    x, y = 1.0, 0.5
    for i in range(100):
        x = x + 0.01 * (a * x - b * x * y)
        y = y + 0.01 * (math.sin(x) * y - 0.3 * y)
        if x > 1.2:
            x = 1.2
    return x * y


def newton(a):
    x = 1.0
    k = 0
    while abs(x * x - a) > 1e-12 and k < 50:
        x = 0.5 * (x + a / x)
        k += 1
    return x


def vector_loop(x, a):
    for _ in range(5):
        x = np.tanh(x * a + np.sin(x))
    return np.sum(x)


def recurrent(Wh, Wx, X):
    h = np.zeros(Wh.shape[0])
    for t in range(X.shape[0]):
        h = np.tanh(Wh @ h + Wx @ X[t])
    return np.sum(h * h) + np.sum(Wx.T @ Wh[:, :2])


def layer(W, b, c, X):
    total = 0.0
    for _ in range(2):  # (b of shape (n,), c of shape (1, n): both summed over rows)
        H = np.tanh(X @ W + b + c)
        total = total + np.sum(H * H) + np.max(np.array([1.0, 1.0]) * np.sum(b))
    return total


def grid(x):
    U = np.zeros((2, 3))
    for i in range(2):
        for j in range(3):  # (U[i - 1, j]: an index computed from the loop's, an integer)
            U[i, j] = x[i] * x[j] + U[i - 1, j]
    return np.sum(U * U)


def rows(x, A):
    U = np.zeros((3, 4))
    for i in range(3):
        U[i] = np.tanh(A[i] * x[i])
        U[i, 1:3] = U[i, 1:3] * x[0] + U[i - 1, :2]
        U[:, -1] = U[:, 0] * x[1]
    return np.sum(U ** 2)


def uniform_times_a_row(A, w):
    total = 0.0
    for _ in range(2):  # (sum's cotangent, a number, times w: smaller than A * w)
        total = total + np.sum(A * w)
    return total


RNG = np.random.default_rng(0)
CASES = [
    (lotka_volterra, (np.array([1.1, 0.4, 0.1, 0.4]), np.array([1.0, 0.5])), 0),
    (clipped, (1.1, 0.4), (0, 1)),
    (newton, (2.0,), 0),
    (vector_loop, (np.array([0.3, -0.2, 0.5]), np.array([0.9, 1.1, -0.4])), (0, 1)),
    (recurrent, (RNG.standard_normal((4, 4)) / 3, RNG.standard_normal((4, 3)) / 3,
                 RNG.standard_normal((6, 3))), (0, 1)),
    (rk4_pendulum, (np.array([9.81, 0.3]), np.array([1.0, 0.0])), (0, 1)),
    (mixture_loops, (RNG.standard_normal((3, 2)), RNG.standard_normal((3, 2)) * 0.3,
                     np.array([0.1, 0.1, -0.3]), RNG.standard_normal((5, 2))),  # (a tie in max)
     (0, 1, 2)),
    (heat_equation, (0.2, np.sin(np.linspace(0.0, 3.0, 12))), (0, 1)),
    (layer, (RNG.standard_normal((3, 4)), RNG.standard_normal(4), RNG.standard_normal((1, 4)),
             RNG.standard_normal((5, 3))), (0, 1, 2)),
    (uniform_times_a_row, (np.arange(6.0).reshape(2, 3), np.array([0.2, 0.3, 0.4])), (0, 1)),
    (grid, (np.array([0.3, -0.8, 1.2]),), 0),
    (rows, (RNG.standard_normal(3), RNG.standard_normal((3, 4))), (0, 1)),
]


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradients_are_the_python_programs(fn, args, wrt):
    compiled = srcad.grad(fn, wrt, backend="numba")
    plain = srcad.grad(fn, wrt)
    for _ in range(2):  # (the first call compiles)
        got, expected = compiled(*args), plain(*args)
        for g, e in zip(np.atleast_1d(got) if wrt == 0 else got,
                        np.atleast_1d(expected) if wrt == 0 else expected):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
    for gradient, position in zip((got,) if wrt == 0 else got, (wrt,) if wrt == 0 else wrt):
        np.testing.assert_allclose(gradient, numerical_gradient(fn, args, position),
                                   rtol=1e-5, atol=1e-7)
    assert fn.__name__ + "_grad" in {code.co_name for code in numba_backend.compiled_codes()}


@pytest.mark.parametrize("fn, args, wrt", CASES[1:3], ids=["clipped", "newton"])
def test_value_and_grad_on_floats(fn, args, wrt):
    value, gradients = srcad.value_and_grad(fn, wrt, backend="numba")(*args)
    assert value == pytest.approx(fn(*args), rel=1e-14)
    np.testing.assert_allclose(gradients, srcad.grad(fn, wrt)(*args), rtol=1e-13)


def test_value_and_grad_on_arrays():
    fn, args, wrt = CASES[4]
    value, gradients = srcad.value_and_grad(fn, wrt, backend="numba")(*args)
    expected_value, expected = srcad.value_and_grad(fn, wrt)(*args)
    assert value == pytest.approx(expected_value, rel=1e-14)
    for got, want in zip(gradients, expected):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    fused = {code.co_name for code in numba_backend.compiled_codes()}
    assert "recurrent_grad" in fused


def accumulates_in_place(x):
    out = np.zeros(1)
    for i in range(3):
        out[0] = out[0] + np.sum(x * x) * i
    return out


def test_value_and_grad_of_an_output_written_in_place():
    # (the fused program's backward sweep restores `out`: the general program runs)
    x = np.array([1.0, 2.0])
    value, gradient = srcad.value_and_grad(accumulates_in_place, backend="numba")(x)
    np.testing.assert_array_equal(value, accumulates_in_place(x))
    np.testing.assert_allclose(gradient, 6.0 * x)


def straight_line(x, w):
    return np.sum(np.tanh(x * w) ** 2)


def test_a_program_without_a_loop_runs_as_python():
    """NumPy's calls on whole arrays are compiled loops already: numba's are not faster."""
    x, w = np.array([0.3, -0.2]), np.array([0.9, 1.1])
    got = srcad.grad(straight_line, (0, 1), backend="numba")(x, w)
    for g, e in zip(got, srcad.grad(straight_line, (0, 1))(x, w)):
        np.testing.assert_allclose(g, e, rtol=1e-15)
    assert "straight_line_grad" not in {code.co_name for code in numba_backend.compiled_codes()}


def solves(A, b):
    return np.sum(np.linalg.solve(A @ A.T + np.eye(2), b) ** 2)


def repeated_indices(x):
    total = 0.0
    for _ in range(2):  # (x[index] with an index repeated: numba would drop a repeat)
        total = total + np.sum(x[np.array([0, 1, 1])] ** 2)
    return total


def max_with_initial(x):
    total = 0.0
    for _ in range(2):
        total = total + np.max(x * x, initial=0.5)
    return total


def integer_buffer(x):
    b = np.zeros(3, dtype=np.int64)
    for i in range(3):  # (b truncates what is written into it: no derivative reaches x[i])
        b[i] = x[i] * 2.7
    return np.sum(b * x)


def random_weights(x):
    total = 0.0
    for _ in range(2):  # (numba's np.random draws from a generator of its own)
        total = total + np.sum(x * np.random.rand(3))
    return total


@pytest.mark.parametrize("fn, args", [
    (solves, (np.array([[1.0, 0.2], [0.1, 0.9]]), np.array([0.5, -1.0]))),
    (repeated_indices, (np.array([0.5, -1.0, 2.0]),)),
    (max_with_initial, (np.array([0.5, -1.0, 0.3]),)),
    (integer_buffer, (np.array([0.9, 2.4, 1.3]),)),
    (random_weights, (np.ones(3),))], ids=lambda v: getattr(v, "__name__", ""))
def test_a_call_without_a_twin_runs_the_python_program(fn, args):
    np.random.seed(0)
    got = srcad.grad(fn, backend="numba")(*args)
    np.random.seed(0)
    np.testing.assert_allclose(got, srcad.grad(fn)(*args), rtol=1e-13)
    if fn is random_weights:
        return
    np.testing.assert_allclose(got, numerical_gradient(fn, args, 0), rtol=1e-6, atol=1e-8)
    assert fn.__name__ + "_grad" not in {code.co_name for code in numba_backend.compiled_codes()}


def out_of_range(x):
    total = 0.0
    for i in range(4):
        total = total + x[i] * x[0]
    return total


def square_roots(x):
    total = 0.0
    for i in range(2):
        total = total + math.sqrt(x[i]) + x[i] * x[i]
    return total


@pytest.mark.parametrize("fn, error", [(out_of_range, IndexError), (square_roots, ValueError)])
def test_errors_are_pythons(fn, error):
    """numba reads past an array's end and gives nan for math.sqrt(-1.0): its call runs again
    as Python (an index out of range raises in numba's code; a result not finite is
    Python's to give), which raises as the function does."""
    x = np.array([-1.0, 2.0, 3.0])
    with pytest.raises(error):
        fn(x)
    with pytest.raises(error):
        srcad.grad(fn, backend="numba")(x)


def test_arrays_of_another_precision_run_the_python_program():
    x, a = np.array([0.3, -0.2], np.float32), np.array([0.9, 1.1], np.float32)
    got = srcad.grad(vector_loop, (0, 1), backend="numba")(x, a)
    expected = srcad.grad(vector_loop, (0, 1))(x, a)
    assert got[0].dtype == expected[0].dtype == np.float32
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-6)


GLOBAL_RATE = np.array([0.5])


def reads_a_global_array(x):
    y = x
    for _ in range(3):
        y = y * GLOBAL_RATE[0] + x
    return y


def test_a_global_array_is_read_when_called_not_frozen():
    gradient = srcad.grad(reads_a_global_array, backend="numba")
    assert gradient(1.0) == pytest.approx(1 + 0.5 + 0.25 + 0.125)
    GLOBAL_RATE[0] = 1.0
    assert gradient(1.0) == pytest.approx(4.0)
    GLOBAL_RATE[0] = 0.5


def test_an_unknown_backend_is_refused():
    with pytest.raises(UsageError, match="backend"):
        srcad.grad(newton, backend="jax")


# ---- tapes of numbers as arrays (compiler/numba_program.py) ----------------------------------
def while_steps(a):
    x, k = 1.0, 0
    while x < 50.0:  # (a count no loop knows before: the tape grows)
        x = x * a + math.sin(x)
        k += 1
    return x * k


def nested_loops(a, b):
    s = 0.5
    for i in range(4):
        for j in range(i + 1):  # (room reserved per trip of the outer loop)
            s = s * a + math.cos(s * b) + j
    return s


def breaks_early(a):
    x = 1.0
    for i in range(100):  # (room for 100 trips, fewer made)
        x = x * a + 0.1 * i
        if x > 10.0:
            break
    return x


def an_int_then_floats(a):
    y = 0  # (an integer, then floats: numba types the name a float, as the list did)
    for i in range(5):
        y = y * a + i
    return y


def integer_indices(x, picks):
    total, k = 0.0, picks[0]
    for i in range(3):
        total = total * x[k] + x[k]
        k = picks[i]
    return total


def over_a_tuple(a, rates):
    x = 1.0
    for r in rates:  # (r, taken for an integer, is a float: numba compiles the lists' program)
        x = x * a + r * x
    return x


def loop_after_loop(a):
    x = 1.0
    x = x * a + 0.5
    for _ in range(3):
        x = math.sin(x) * a
    for i in range(2):  # (its room reserved on the tape the first loop filled)
        x = x * a + i
    return x


TAPED = [
    (while_steps, (1.3,), 0),
    (loop_after_loop, (1.2,), 0),
    (nested_loops, (0.7, 0.4), (0, 1)),
    (breaks_early, (1.5,), 0),
    (an_int_then_floats, (0.9,), 0),
    (integer_indices, (np.array([0.5, -1.2, 2.0]), np.array([2, 0, 2])), 0),
    (over_a_tuple, (1.5, (0.1, 0.2, 0.3)), 0),
    (vector_loop, (np.array([0.3, -0.2, 0.5]), np.array([0.9, 1.1, -0.4])), (0, 1)),
]


@pytest.mark.parametrize("fn, args, wrt", TAPED, ids=[c[0].__name__ for c in TAPED])
def test_tapes_as_arrays_give_the_python_programs_gradients(fn, args, wrt):
    compiled, plain = srcad.grad(fn, wrt, backend="numba"), srcad.grad(fn, wrt)
    for _ in range(2):
        got, expected = compiled(*args), plain(*args)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    for gradient, position in zip((got,) if wrt == 0 else got, (wrt,) if wrt == 0 else wrt):
        np.testing.assert_allclose(gradient, numerical_gradient(fn, args, position),
                                   rtol=1e-5, atol=1e-7)
    assert fn.__name__ + "_grad" in {code.co_name for code in numba_backend.compiled_codes()}


def numba_source(fn, *names):
    return cache.compiled_adjoint(fn, names, mode="fused", scalars=frozenset(names),
                                  backend="numba").source


def test_numbers_are_taped_in_arrays_where_a_loop_reserves_room():
    source = numba_source(nested_loops, "a", "b")
    assert "stack_s = []" in source  # (the Python program, the fallback, keeps its lists)
    assert "tape_reserved(stack_s, top_stack_s + loop_trips(range_" in source
    assert "tape_store(stack_s, top_stack_s, s)" in source
    assert "s = tape_popped(stack_s, top_stack_s, s)" in source
    assert "tape_pushed(stack_x, top_stack_x, x)" in numba_source(while_steps, "a")


def test_a_tape_a_loop_meets_empty_is_made_with_its_room_and_one_trip_count_is_a_name():
    numba_copy = numba_source(lotka_volterra_floats, "a", "b")
    numba_copy = numba_copy[numba_copy.index("_numba("):]
    assert "stack_u = tape_of(0.0, top_stack_u + loop_trips(range_" in numba_copy
    assert "tape_reserved" not in numba_copy and "stack_trips = len(range_" in numba_copy
    assert "trips = stack_trips\n" in numba_copy
    source = numba_source(loop_after_loop, "a")
    numba_copy = source[source.index("_numba("):]
    assert re.search(r"tape_reserved\(stack_x\w*, top_stack_x\w* \+ loop_trips\(range_",
                     numba_copy)


def lotka_volterra_floats(a, b):
    u, v = 1.0, 0.5
    for _ in range(20):
        u, v = u + 0.01 * (a * u - b * u * v), v + 0.01 * (b * u * v - 0.4 * v)
    return u * v


def test_arrays_on_a_tape_stay_in_a_list():
    source = cache.compiled_adjoint(vector_loop, ("x", "a"), mode="gradient",
                                    arrays=frozenset({("x", 1), ("a", 1)}),
                                    backend="numba").source
    numba_copy = source[source.index("_numba("):]
    assert "stack_x = []" in numba_copy and "stack_x.append(x)" in numba_copy


def test_a_tape_of_floats_refuses_a_name_numba_types_as_an_integer():
    """(Where it does, numba compiles the program with lists, which keeps the integer.)"""
    from srcad.kernels import numba_programs
    from srcad.runtime import numba_twins  # noqa: F401 (numba's twins of the helpers)
    popped = numba_programs.popped

    @numba.njit
    def pop_into(tape, current):
        return popped(tape, 0, current)

    assert pop_into(np.array([2.5]), 1.0) == 2.5
    with pytest.raises(numba.core.errors.TypingError):
        pop_into(np.array([2.5]), 1)


def cubes(x):
    total = 0.0
    for i in range(2):
        total = total + x[i] ** 3
    return total


def test_a_result_not_finite_runs_the_python_program():
    """numba's copy tells the result is not finite (inf): NumPy's program runs the call
    again, and raises the overflow the user asked to be raised."""
    x = np.array([1e200, 1.0])
    gradient = srcad.grad(cubes, backend="numba")
    np.testing.assert_allclose(gradient(np.array([2.0, 1.0])), [12.0, 3.0])
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        srcad.grad(cubes)(x)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        gradient(x)
    with np.errstate(over="ignore"):
        assert gradient(x)[0] == np.inf


def scaled_loop(x, c):
    total = 0.0
    for _ in range(3):
        total = total + np.sum(x * x) * c
        x = x * 0.5
    return total


def test_quick_calls_give_numba_only_what_it_computes_as_python_does():
    """From the second call on, float64 arrays and Python floats reach numba's program
    without its own test of the arguments (numba_backend.unchecked), through a quick call
    that tests them itself: an integer past 64 bits, a float32 array, a uint8 array, each
    met in turn, still runs as Python, with Python's numbers."""
    x = np.array([0.3, -0.2, 0.5])
    gradient = srcad.grad(scaled_loop, backend="numba")
    reference = srcad.grad(scaled_loop)
    for args in ((x, 1.5), (x, 1.5), (x, 2 ** 70), (x, 3), (x.astype(np.float32), 1.5),
                 (x, np.array(3, np.uint8)), (x, 1.5), (x, 1.5)):
        got, expected = gradient(*args), reference(*args)
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert any(numba_backend.unchecked(program) is not program
               for _, program, _ in gradient.derivative.latest.values())
