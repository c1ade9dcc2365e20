"""The fast path of grad and value_and_grad on Python floats (transform/fuse.py and
transform/math_calls.py): the same gradients as the general NumPy program, and the same
values, warnings and errors at the edges of math's domains, where the optimistic `math`
program hands the call over to it."""
import math
import re
import warnings

import numpy as np
import pytest

import srcad
from srcad.compiler import cache
from srcad.compiler.transform.forward_grad import NotForwardable
from srcad.compiler.transform.math_calls import real_power


def elementary(x, y):
    a = np.sin(x) * np.cos(y) + np.tan(0.3 * x) + np.arctan(y) + np.sinh(0.5 * x)
    b = np.exp(-a * a) + np.log1p(x * x) + np.sqrt(1.0 + y * y) + np.tanh(x * y)
    c = np.arctan2(y, x) + np.hypot(x, y) + np.expm1(0.1 * y) + np.log(2.0 + np.cos(x))
    return a * b + c / (1.0 + b) + np.cbrt(y) + np.arcsinh(x) + np.exp2(0.5 * y)


def newton(a):
    x = a
    while abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return np.sqrt(x)


def looped(k, c):
    x, v = 1.0, 0.0
    for _ in range(50):
        x, v = x + 0.01 * v, v + 0.01 * (-k * np.sin(x) - c * v)
    return x * x + v * v


def both_kinds(fn, *args, wrt=0):
    """The gradient on Python floats (fast path) and on np.float64 (general program)."""
    fast = srcad.grad(fn, wrt=wrt)(*args)
    general = srcad.grad(fn, wrt=wrt)(*map(np.float64, args))
    return fast, general


def grad_program(fn, wrt):
    return cache.compiled_adjoint(fn, wrt, mode="fused", scalars=frozenset(wrt))


@pytest.mark.parametrize("fn, args, wrt", [
    (elementary, (0.7, 1.3), (0, 1)), (newton, (2.0,), 0), (looped, (2.0, 0.3), (0, 1))])
def test_float_numpy_scalar_and_0d_array_agree(fn, args, wrt):
    fast, general = both_kinds(fn, *args, wrt=wrt)
    zero_d = srcad.grad(fn, wrt=wrt)(*map(np.asarray, args))
    np.testing.assert_allclose(fast, general, rtol=1e-14, atol=0)
    np.testing.assert_allclose(fast, zero_d, rtol=1e-14, atol=0)
    for f, g, z in zip(*(t if isinstance(wrt, tuple) else (t,) for t in (fast, general, zero_d))):
        assert type(f) is float and type(g) is np.float64
        assert isinstance(z, np.ndarray) and z.shape == ()
    srcad.check_grads(fn, args, order=1)


def test_value_and_grad_agrees():
    value, gradient = srcad.value_and_grad(elementary, wrt=(0, 1))(0.7, 1.3)
    assert value == pytest.approx(elementary(0.7, 1.3), rel=1e-14)
    assert gradient == pytest.approx(srcad.grad(elementary, wrt=(0, 1))(0.7, 1.3), rel=0)


def test_numpy_calls_on_numbers_become_math_calls():
    program = grad_program(elementary, ("x", "y"))
    assert program.optimistic
    assert "math_sin(x)" in program.source and "np.sin" not in program.source
    assert program.cells["math_sin"] is math.sin
    assert "def elementary_grad(x, y)" in program.source


def test_loops_of_numbers_are_rewritten_and_array_work_is_not():
    assert grad_program(newton, ("a",)).optimistic  # a while loop, abs() in its condition
    assert grad_program(looped, ("k", "c")).optimistic  # a range loop, tuple assignment

    def mixed(x, v):
        return np.sin(x) * np.sum(v)

    assert not grad_program(mixed, ("x",)).optimistic
    assert srcad.grad(mixed)(0.5, np.ones(3)) == pytest.approx(3.0 * math.cos(0.5))


def test_programs_with_effects_are_not_rewritten():
    calls = []

    def logged(x):
        calls.append("called")
        return np.sin(x) / x

    program = grad_program(logged, ("x",))
    assert not program.optimistic and "np.sin" in program.source
    with np.errstate(divide="ignore", invalid="ignore"):
        assert math.isnan(srcad.grad(logged)(0.0))
    assert calls == ["called"]  # the call that met a domain edge did not run twice


@pytest.mark.parametrize("fn, x", [
    (lambda x: np.log(x), 0.0), (lambda x: np.log(x), -1.0), (lambda x: np.sqrt(x), -1.0),
    (lambda x: np.exp(x), 1000.0), (lambda x: np.sin(x), np.inf),
    (lambda x: np.arctanh(x), 1.0), (lambda x: 1.0 / np.sin(x), 0.0),
    (lambda x: np.sin(x) ** 0.5, -1.0), (lambda x: np.cos(x) ** 1.5, 3.0),
    (lambda x: np.exp(x) * 1e300, 10.0), (lambda x: np.log(x), np.nan)])
def test_domain_edges_give_numpys_values_and_warnings(fn, x):
    with warnings.catch_warnings(record=True) as fast_warnings:
        warnings.simplefilter("always")
        fast = srcad.value_and_grad(fn)(x)
    with warnings.catch_warnings(record=True) as general_warnings:
        warnings.simplefilter("always")
        general = srcad.value_and_grad(fn)(np.float64(x))
    np.testing.assert_array_equal(np.array(fast, dtype=float), np.array(general, dtype=float))
    assert all(type(v) is not complex for v in fast)
    assert {str(w.message) for w in fast_warnings} == {str(w.message) for w in general_warnings}


def test_numpy_error_state_is_honoured():
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        srcad.grad(lambda x: np.log(x))(0.0)


def test_python_errors_stay_python_errors():
    with pytest.raises(ZeroDivisionError):  # no NumPy in it: plain float division raises
        srcad.grad(lambda x: 1.0 / x)(0.0)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("fn, x", [
    (lambda x: (x ** 2.0) ** 0.5, 0.0), (lambda x: math.atan2(x, x), 0.0),
    (lambda x: math.sqrt(x) + math.hypot(x, 2.0 * x, 0.0), 0.0), (lambda x: math.asin(x), 1.0),
    (lambda x: math.dist((x, 1.0), (0.0, 1.0)), 0.0)])
def test_a_derivative_that_divides_by_zero_gives_numpys_value(fn, x):
    """Where the function is defined but its derivative divides by zero, a Python float
    gets what a NumPy float gets (inf or nan), not Python's ZeroDivisionError."""
    fast, general = srcad.value_and_grad(fn)(x), srcad.value_and_grad(fn)(np.float64(x))
    assert type(fast[0]) is float and type(fast[1]) is float
    np.testing.assert_array_equal(np.array(fast, dtype=float), np.array(general, dtype=float))
    assert srcad.grad(fn)(x) == fast[1] or math.isnan(fast[1])


def test_real_power_refuses_complex_results():
    assert real_power(2.0, 0.5) == 2.0 ** 0.5 and real_power(3, 2) == 9
    with pytest.raises(ValueError):
        real_power(-8.0, 1.0 / 3.0)


def test_fast_path_keeps_the_api_conventions():
    def unused(x, y):
        return np.sin(x)

    assert srcad.grad(unused, wrt=1)(0.5, 2.0) == 0.0
    assert type(srcad.grad(unused, wrt=1)(0.5, 2.0)) is float
    (value, aux), gradient = srcad.value_and_grad(
        lambda x: (np.sin(x), "aux"), has_aux=True)(0.5)
    assert aux == "aux" and gradient == pytest.approx(math.cos(0.5))
    assert srcad.grad(unused)(x=0.5, y=1.0) == pytest.approx(math.cos(0.5))  # by keyword
    with pytest.raises(TypeError):
        srcad.grad(lambda x: np.array([x, x]))(1.0)


def test_a_rebound_global_is_seen(monkeypatch):
    monkeypatch.setitem(globals(), "activation", np.sin)
    gradient = srcad.grad(lambda x: activation(x))  # noqa: F821
    assert gradient(0.5) == pytest.approx(math.cos(0.5))
    monkeypatch.setitem(globals(), "activation", np.cos)
    assert gradient(0.5) == pytest.approx(-math.sin(0.5))


def test_methods_use_the_fast_path():
    class Model:
        scale = 3.0

        def energy(self, x):
            return self.scale * np.sin(x)

    assert srcad.grad(Model().energy)(0.5) == pytest.approx(3.0 * math.cos(0.5))


# ---- copies read through (transform/copies.py) ---------------------------------------------------
def copy_reassigned_in_a_loop(x, y):
    a = x
    b = a
    for _ in range(3):
        a = a * y
        b = b + a
    return a * b


def copy_of_a_rebound_original(x, y):
    t = x
    if y > 0.0:
        t = t * y
    u = t
    x = x * 2.0
    total = u * x + t
    u = total
    return u * t + x


def copy_updated_in_place(x, y):
    s = x + 0.0
    s += y * s
    r = s
    r *= x
    return r * np.sin(r) + y


def copies_into_a_while_loop(x, y):
    a = x
    b = a
    while b < 10.0:
        b = b * 1.5 + a * y
        a = b
    return a * b


def copy_in_a_list(x, y):
    a = x
    parts = [a, y]
    a = a * y
    return parts[0] * a + sum(parts)


@pytest.mark.parametrize("fn", [copy_reassigned_in_a_loop, copy_of_a_rebound_original,
                                copy_updated_in_place, copies_into_a_while_loop,
                                copy_in_a_list])
def test_reads_through_copies_give_the_general_programs_gradients(fn):
    fast, general = both_kinds(fn, 0.7, 1.3, wrt=(0, 1))
    np.testing.assert_allclose(fast, general, rtol=1e-13, atol=0)
    srcad.check_grads(fn, (0.7, 1.3), order=1)


def test_the_fused_program_reads_no_copies():
    source = grad_program(elementary, ("x", "y")).source
    copies = [line for line in source.splitlines()
              if re.fullmatch(r"\s*\w+ = [A-Za-z_]\w*", line)]
    assert copies == []
    assert "value = " not in source and "return (add_" in source


# ---- numbers a loop recomputes unchanged are not recorded (analysis/tbr.py) ----------------------
def invariant_in_a_for_loop(k, c):
    x = 1.0
    for _ in range(20):
        x = x + 0.1 * (-k * x) + c * c   # -k and c * c: the same number every step
    return x


def invariant_in_the_inner_loop_only(k, c):
    total = 0.0
    for i in range(3):
        scaled = k * i                   # changes with the outer loop...
        for j in range(4):
            m = scaled * c               # ...so m, unchanged by the inner one, is recorded
            total = total + m * total + 0.1 * j + np.sin(-c)
    return total


def invariant_read_after_the_loop(k, c):
    s = 0.5 * c
    while s < 3.0:
        half = k * 0.5                   # read after the loop, and before it in the body
        s = s + half + s * c
    return s * half


def invariant_in_a_branch_of_the_loop(k, c):
    x = c
    for t in range(6):
        if t % 2:
            x = x * x * 0.5 + np.cos(k)  # np.cos(k): one value, taken every other step
        else:
            x = x - 0.25 * x * k
    return x


def parameter_rebound_unchanged_in_a_loop(k, c):
    s = k * c * c                    # reads the parameter c before the loop...
    for _ in range(3):
        s = s * c + 0.5              # ...and in the first iteration, before it is rebound
        c = k * 2.0                  # the same number every iteration, but not c's first
    return s + c * k


@pytest.mark.parametrize("fn", [invariant_in_a_for_loop, invariant_in_the_inner_loop_only,
                                invariant_read_after_the_loop, invariant_in_a_branch_of_the_loop,
                                parameter_rebound_unchanged_in_a_loop])
def test_numbers_recomputed_unchanged_in_loops_keep_the_gradients(fn):
    fast, general = both_kinds(fn, 0.7, 1.3, wrt=(0, 1))
    np.testing.assert_allclose(fast, general, rtol=1e-13, atol=0)
    srcad.check_grads(fn, (0.7, 1.3), order=1)


def test_numbers_recomputed_unchanged_in_loops_are_not_recorded():
    pushed = re.findall(r"stack\.append\((\w+)\)",
                        grad_program(invariant_in_a_for_loop, ("k", "c")).source)
    assert pushed == ["x"]  # not neg_*, not mul_* of c * c (and the range's own length)
    inner = grad_program(invariant_in_the_inner_loop_only, ("k", "c")).source
    assert re.search(r"stack\.append\(m\)", inner)


def damped(k, c, steps):
    x, v = 1.0, 0.0
    for _ in range(steps):
        x, v = x + 0.01 * v, v + 0.01 * (-k * np.sin(x) - c * v)
    return x * x + v * v


def test_other_float_arguments_specialise_the_program_too():
    """`c` is not differentiated, but a float: the program treats it as a number (math
    calls, no broadcasting), and a 0-d array `c` later gets a program of its own."""
    gradient = srcad.grad(damped)
    by_float = gradient(2.0, 0.3, 40)
    general = srcad.grad(damped)(np.float64(2.0), np.float64(0.3), 40)
    assert type(by_float) is float and by_float == pytest.approx(general, rel=1e-12)
    def program(numbers):
        return cache.compiled_adjoint(damped, ("k",), mode="forward-grad", scalars=numbers)

    with pytest.raises(NotForwardable):  # (`c * v` may be an array)
        program(frozenset({"k"}))
    specialised = program(frozenset({"k", "c"}))
    assert specialised.optimistic and "broadcast_like" not in specialised.source
    assert gradient(2.0, np.asarray(0.3), 40) == pytest.approx(general, rel=1e-12)
    assert gradient(2.0, 0.3, 40) == by_float  # back to the float program
    assert srcad.grad(damped, wrt=1)(2.0, 0.3, 40) == pytest.approx(
        srcad.grad(damped, wrt=1)(np.float64(2.0), np.float64(0.3), 40), rel=1e-12)


def test_hypot_of_any_number_of_coordinates_agrees_with_finite_differences():
    def norm3(x, y, z):
        return math.hypot(x, 2.0 * y, z) + math.hypot(x)

    point = (1.0, -2.0, 0.5)
    srcad.check_grads(norm3, point, wrt=(0, 1, 2))
    srcad.check_grads(norm3, tuple(map(np.float64, point)), wrt=(0, 1, 2))


def reciprocal_plus_sine(x):
    return np.sin(x) + 1.0 / x


def test_the_functions_own_division_by_zero_still_raises():
    """Only a derivative's division by zero reruns on NumPy floats; the function's own
    raises as the function does (it came out inf, -inf)."""
    with pytest.raises(ZeroDivisionError):
        reciprocal_plus_sine(0.0)
    for make in (srcad.grad, srcad.value_and_grad):
        derivative = make(reciprocal_plus_sine)
        with pytest.raises(ZeroDivisionError):
            derivative(0.0)


def logged_magnitude(x, log):
    log.append(x)
    return (x * x) ** 0.5


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_derivative_that_divides_by_zero_in_a_function_with_effects_says_what_to_do():
    """The function appends to a list, so srcad cannot run it again to tell whether it or
    its derivative divided by zero (issue 29, case 9): Python's error stands, the effect
    happened once, and a note gives the fix, which gives NumPy's nan."""
    log = []
    with pytest.raises(ZeroDivisionError) as raised:
        srcad.grad(logged_magnitude)(0.0, log)
    assert log == [0.0]
    assert any("np.float64(x)" in note for note in raised.value.__notes__)
    assert math.isnan(srcad.grad(logged_magnitude)(np.float64(0.0), log))
    assert srcad.grad(logged_magnitude)(-2.0, log) == -1.0


def steep_power(x):
    return x ** -1.5


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_derivative_that_overflows_gives_numpys_inf():
    """x ** -1.5 at 1e-150 is 1e225; its derivative overflows a Python float (OverflowError)
    where NumPy's gives -inf."""
    assert srcad.grad(steep_power)(1e-150) == -math.inf
    assert srcad.grad(steep_power)(np.float64(1e-150)) == -math.inf


def scaled_by_rest(x, *rest):
    return np.sum(x * rest[0])


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_a_matrix_is_refused_on_the_quick_paths_too():
    """A matrix among `*args`, after calls with a plain array there, and beside a Python
    float `wrt` argument, is refused as on a first call."""
    from srcad.errors import NonDifferentiableInputError
    x, matrix = np.array([[1.0, 2.0], [3.0, 4.0]]), np.matrix([[1.0, 5.0], [2.0, 7.0]])
    gradient = srcad.grad(scaled_by_rest)
    for _ in range(2):
        gradient(x, np.asarray(matrix))
    with pytest.raises(NonDifferentiableInputError):
        gradient(x, matrix)
    with pytest.raises(NonDifferentiableInputError):
        srcad.grad(scaled_by_rest)(0.5, matrix)


def unused_second(x, y):
    return np.sin(x) * 2.0


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("fn, args, wrt", [
    (elementary, (0.7, 1.3), (0, 1)), (looped, (0.9, 0.2), 1), (newton, (2.0,), 0),
    (unused_second, (0.5, 2.0), (0, 1)), (unused_second, (0.5, 2.0), 1),
    (lambda x: np.log(x), (0.0,), 0), (lambda x: np.sqrt(x), (-1.0,), 0),
    (lambda x: np.exp(x) * 1e300, (10.0,), 0), (lambda x: (x ** 2.0) ** 0.5, (0.0,), 0),
    (steep_power, (1e-150,), 0)], ids=lambda value: getattr(value, "__name__", None))
def test_repeated_calls_of_floats_give_the_first_calls_numbers(fn, args, wrt):
    """From the second call on, `grad` of Python floats runs generated code first
    (fast_paths.numbers_call), which hands every call it cannot finish (an error, a value
    not finite, a gradient that is no float) to the fused call: each call gives what the
    general program gives on NumPy floats, of the same types as the first call's."""
    gradient = srcad.grad(fn, wrt=wrt)
    general = srcad.grad(fn, wrt=wrt)(*map(np.float64, args))
    first = gradient(*args)
    np.testing.assert_allclose(np.array(first, dtype=float), np.array(general, dtype=float),
                               rtol=1e-13)
    for _ in range(3):
        again = gradient(*args)
        assert type(again) is type(first)
        for got in again if isinstance(again, tuple) else (again,):
            assert type(got) is float
        np.testing.assert_array_equal(np.array(again, dtype=float),
                                      np.array(first, dtype=float))
    if np.all(np.isfinite(first)) and fn.__name__ != "newton":  # (newton: forward mode)
        assert gradient.derivative.latest_quick[0] is not None


def test_the_quick_call_of_floats_follows_the_kinds_of_each_call(monkeypatch):
    """Calls of floats, of arrays and of an integer in turn each get their own numbers, and
    a global rebound between two quick calls is seen."""
    monkeypatch.setitem(globals(), "activation", np.sin)
    gradient = srcad.grad(lambda x, y: np.sum(activation(x) * y), wrt=(0, 1))  # noqa: F821
    x = np.array([0.5, 1.5])
    for args in ((0.5, 2.0), (0.5, 2.0), (x, 2.0), (0.5, 2.0), (0.5, 2), (0.5, 2.0)):
        got = gradient(*args)
        np.testing.assert_allclose(got[0], np.cos(args[0]) * args[1])
        np.testing.assert_allclose(got[1], np.sum(np.sin(args[0])))
        assert type(got[0]) is type(args[0])
    monkeypatch.setitem(globals(), "activation", np.cos)
    assert gradient(0.5, 2.0) == pytest.approx((-math.sin(0.5) * 2.0, math.cos(0.5)))
