"""Cotangents computed in the memory of the adjoint they come from (transform/reuse.py, the
runtime's `multiply_into` and friends) and rules marked `returns_new_array`: gradients stay
right where the output's adjoint is handed on as well as consumed, and the generated code
writes in place only into arrays nobody else holds."""

import re

import gast
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcad
from srcad.bench.workloads import heat_equation
from srcad.compiler import cache
from srcad.compiler.emit import python_source
from srcad.compiler.pipeline import source_after
from srcad.compiler.transform import reuse
from srcad.kernels import adjoints as runtime
from tests.checks import assert_gradient_matches_finite_differences, peak_memory

R = np.random.default_rng(23)


# ---- programs where a consumed adjoint could be seen by another name ---------------------------
def handed_on_then_negated(a, b):
    d = a - b                   # b_a is b_d itself, b_b is -b_d: computed first, not in b_d
    return np.sum(np.sin(d) * 2.0) + np.sum(a * np.cos(b))


def same_argument_twice(x):
    y = x * x                   # g is read by both cotangents: neither may consume it
    z = np.sin(y) * 3.0
    return np.sum(z * y) + np.sum(x + x)


def copied_then_added(x):
    y = x                       # b_x takes b_y's array and owns it; later terms add into it
    z = y * 2.0 * np.exp(x)
    return np.sum(z * z) + np.sum(np.tanh(x) * y)


def broadcast_operands(x, w):
    y = x * w                   # x (3, 1) and w (1, 4): cotangents sum over broadcast axes
    z = y / (1.0 + w * w)
    return np.sum(z ** 2) + np.sum(x * 2.0)


def through_matmul(W, U):
    X = np.tanh(U)
    H = X @ W                   # matmul_vjp_a's array is new: tanh's rule may write into it
    return np.sum(H * H)


def softmax_and_max(S):
    S2 = S - np.max(S, axis=1, keepdims=True)
    E = np.exp(S2)
    A = E / np.sum(E, axis=1, keepdims=True)
    return np.sum(A ** 2 * S)


def loop_carried(h, w):
    for _ in range(3):
        h = np.tanh(h * w) * 0.5 - h
    return np.sum(h * h)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


CASES = [
    (handed_on_then_negated, (R.standard_normal(5), R.standard_normal(5)), (0, 1)),
    (same_argument_twice, (R.standard_normal(4),), 0),
    (copied_then_added, (R.standard_normal(4),), 0),
    (broadcast_operands, (R.standard_normal((3, 1)), R.standard_normal((1, 4))), (0, 1)),
    (through_matmul, (R.standard_normal((3, 2)), R.standard_normal((4, 3))), (0, 1)),
    (softmax_and_max, (R.standard_normal((3, 4)),), 0),
    (loop_carried, (R.standard_normal(3), R.standard_normal(3)), (0, 1)),
    (rosenbrock, (R.standard_normal(6),), 0),
]


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradients_with_consumed_adjoints_match_finite_differences(fn, args, wrt):
    assert_gradient_matches_finite_differences(fn, args, wrt)


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradients_with_consumed_adjoints_match_tape_mode(fn, args, wrt):
    wrt_tuple = wrt if isinstance(wrt, tuple) else (wrt,)
    variables = [srcad.Variable(args[i]) for i in wrt_tuple]
    with srcad.GradientTape() as tape:
        call = list(args)
        for i, v in zip(wrt_tuple, variables):
            call[i] = v
        value = fn(*call)
    expected = tape.gradient(value, variables)
    got = srcad.grad(fn, wrt=wrt)(*args)
    got = got if isinstance(wrt, tuple) else (got,)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, np.asarray(e), rtol=1e-10, atol=1e-12)


def test_the_seed_the_arguments_and_the_values_are_never_written_into():
    x, w = R.standard_normal((3, 1)), R.standard_normal((1, 4))
    x_before, w_before = x.copy(), w.copy()
    value, pullback = srcad.vjp(lambda a, b: np.sin(a * b) * 3.0 - a, x, w, wrt=(0, 1))
    value_before = value.copy()
    seed = R.standard_normal((3, 4))
    seed_before = seed.copy()
    first = pullback(seed)
    second = pullback(seed)  # nothing the pullback reads was consumed by the first call
    for array, before in ((x, x_before), (w, w_before), (value, value_before), (seed, seed_before)):
        np.testing.assert_array_equal(array, before)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_float32_gradients_stay_float32():
    x = R.standard_normal(8).astype(np.float32)
    assert srcad.grad(rosenbrock)(x).dtype == np.float32
    assert srcad.grad(copied_then_added)(x).dtype == np.float32


# ---- the generated code -----------------------------------------------------------------------
def test_the_last_reader_of_an_owned_adjoint_writes_into_it():
    source = srcad.grad(lambda x: np.sum(np.sin(x * 3.0) * 2.0 * x)).source
    assert "multiply_into(" in source


def test_an_adjoint_handed_on_as_itself_is_read_last_and_not_written_into_before():
    source = srcad.grad(handed_on_then_negated, wrt=(0, 1)).source
    negated = source.index("-unbroadcast(b_d, b)")  # a new array, while b_d is intact
    handed = source.index("unbroadcast(b_d, a)")  # read last: b_a takes b_d's array over
    assert negated < handed and "negative_into(b_d)" not in source


def test_a_rule_marked_as_returning_a_new_array_makes_an_owned_adjoint():
    source = srcad.grad(through_matmul, wrt=(0, 1)).source
    assert "multiply_into(b_X, " in source


def test_rosenbrock_holds_about_as_many_arrays_as_the_hand_written_gradient():
    x = np.linspace(-1.5, 1.5, 100_000)
    assert peak_memory(srcad.grad(rosenbrock), x) < 6 * x.nbytes  # was 7 before reuse


# ---- the runtime's in-place operations --------------------------------------------------------
@pytest.mark.parametrize("helper, plain", [
    (runtime.add_into, np.add), (runtime.subtract_into, np.subtract),
    (runtime.multiply_into, np.multiply), (runtime.divide_into, np.true_divide)])
def test_in_place_operations_write_into_the_total_when_that_gives_the_same_array(helper, plain):
    for other in (2.0, np.float64(3.0), R.standard_normal((64, 3)), R.standard_normal((1, 3)),
                  R.standard_normal(3)):
        total = R.standard_normal((64, 3))  # (above a kilobyte: see the next test)
        expected = plain(total, other)
        assert helper(total, other) is total
        np.testing.assert_array_equal(total, expected)


@pytest.mark.parametrize("helper, plain", [
    (runtime.add_into, np.add), (runtime.subtract_into, np.subtract),
    (runtime.multiply_into, np.multiply), (runtime.divide_into, np.true_divide),
    (runtime.negative_into, np.negative)])
def test_arrays_below_a_kilobyte_get_a_new_array_cheaper_than_the_checks(helper, plain):
    total = R.standard_normal(4)
    before = np.copy(total)
    arguments = (total,) if helper is runtime.negative_into else (total, before)
    result = helper(*arguments)
    assert result is not total
    np.testing.assert_array_equal(total, before)
    np.testing.assert_array_equal(result, plain(*((before,) if len(arguments) == 1
                                                  else (before, before))))


@pytest.mark.parametrize("helper, plain", [
    (runtime.add_into, np.add), (runtime.subtract_into, np.subtract),
    (runtime.multiply_into, np.multiply), (runtime.divide_into, np.true_divide)])
def test_in_place_operations_fall_back_where_the_result_would_differ(helper, plain):
    n = 300  # above a kilobyte, where writing in place is tried at all
    cases = [
        (np.ones(n, np.float32), np.full(n, 2.0)),   # float32 with float64 is float64
        (np.ones(n, np.float32), np.float64(2.0)),   # a NumPy scalar's dtype counts too
        (np.ones(n), np.ones((2, n))),                # broadcasting grows the total
        (np.arange(n), 2),                            # integers: `/` changes the dtype
        (np.ones(n), [1.0] * n),                      # not a NumPy value
        (np.float64(2.0), np.ones(2)),                # not an array
    ]
    for total, other in cases:
        before = np.copy(total)
        result = helper(total, other)
        np.testing.assert_array_equal(result, plain(before, other))
        assert result is not total
        np.testing.assert_array_equal(total, before)


def test_a_numpy_number_of_the_totals_dtype_is_written_in_place():
    total = np.ones(300, np.float32)
    assert runtime.divide_into(total, np.float32(4.0)) is total
    np.testing.assert_array_equal(total, np.full(300, 0.25, np.float32))


def test_negation_in_place_only_for_float_arrays():
    total = np.array([1.0, -2.0] * 64)
    assert runtime.negative_into(total) is total
    np.testing.assert_array_equal(total, [-1.0, 2.0] * 64)
    integers = np.array([1, 2] * 64)
    assert runtime.negative_into(integers) is not integers


# ---- work moved out of an unbroadcast sum (optimize.reduce_first) --------------------------------
def normalised_energy(S, V):
    E = np.cosh(S - np.max(S, axis=1, keepdims=True))
    A = E / np.sum(E, axis=1, keepdims=True)   # the divisor's cotangent is summed, then divided
    return np.sum((A @ V) ** 2)


def broadcast_arithmetic(x, y, w):
    d = x - y                                   # y (1, 4) is broadcast: -sum, not sum of -g
    q = d / w                                   # w (3, 1): divided after the sum
    p = q * w - d / (1.0 + w * w)
    return np.sum(np.sin(p) * d) + np.sum(-d * q / w)


def test_the_divisor_of_a_normalisation_gets_its_cotangent_on_its_own_shape():
    S, V = R.standard_normal((5, 4)), R.standard_normal((4, 3))
    source = cache.compiled_adjoint(
        normalised_energy, ("S",), mode="gradient").source
    assert "divide_into(negative_into(unbroadcast(multiply_into(" in source
    assert_gradient_matches_finite_differences(normalised_energy, (S, V), (0, 1))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([((3, 1), (1, 4), (3, 1)), ((3, 4), (4,), (3, 1)), ((2, 3, 4), (3, 1), (4,)),
                        ((4,), (3, 4), (1,)), ((3, 4), (3, 4), (3, 4))]), st.integers(0, 2 ** 16))
def test_broadcast_operands_of_sums_products_and_quotients(shapes, seed):
    r = np.random.default_rng(seed)
    x, y = r.standard_normal(shapes[0]), r.standard_normal(shapes[1])
    w = r.uniform(0.5, 2.0, shapes[2])
    assert_gradient_matches_finite_differences(broadcast_arithmetic, (x, y, w), (0, 1, 2))
    value, gradients = srcad.value_and_grad(broadcast_arithmetic, wrt=(0, 1, 2))(x, y, w)
    taped = srcad.tape.grad(broadcast_arithmetic, wrt=(0, 1, 2))(x, y, w)
    for source_mode, tape_mode in zip(gradients, taped):
        np.testing.assert_allclose(source_mode, tape_mode, rtol=1e-10, atol=1e-12)


# ---- a negated cotangent made by its own product (transform/signs.py) ---------------------------
def residuals(w, x, y):
    r = y - x * w                  # b_(x * w) is -b_r: folded into b_r's product with 2
    return np.sum(r ** 2) + np.sum((1.0 - w) ** 2 * 3.0)


def residuals_in_a_loop(w, x):
    total = 0.0
    for t in range(3):
        r = x[t] - w * t           # inside the loop body, per iteration
        total = total + np.sum(r ** 2)
    return total


def negation_read_twice(w, x):
    d = (w * 2.0) ** 2             # b_(w*2) is read by a negation and by nothing else, but
    e = 1.0 - d                    # d's cotangent is also read by `d * x`: no fold
    return np.sum(e * x) + np.sum(d * x)


def squares_subtracted(x, y):
    d = y - x ** 2                 # b_(x ** 2) = -b_d, then times 2 * x: -2 moves into it
    return np.sum(d ** 2) + np.sum(y - 0.5 * x)   # (a uniform cotangent: a number)


@pytest.mark.parametrize("fn", [residuals, residuals_in_a_loop, negation_read_twice,
                                squares_subtracted])
def test_negations_folded_into_products_keep_the_gradients(fn):
    w, x, y = R.standard_normal(4), R.standard_normal((3, 4)), R.standard_normal((3, 4))
    args = (w, x, y) if fn is residuals else (w, x)
    wrt = (0, 1, 2) if fn is residuals else (0, 1)
    assert_gradient_matches_finite_differences(fn, args, wrt)
    for source_mode, tape_mode in zip(srcad.grad(fn, wrt=wrt)(*args),
                                      srcad.tape.grad(fn, wrt=wrt)(*args)):
        np.testing.assert_allclose(source_mode, tape_mode, rtol=1e-12, atol=1e-12)


def test_a_residuals_negation_is_its_products_sign():
    source = cache.compiled_adjoint(residuals, ("w", "x", "y"), mode="gradient").source
    assert "negative_into" not in source and "* -2 *" in source


def test_a_negation_takes_the_number_its_reader_scales_it_by():
    source = cache.compiled_adjoint(squares_subtracted, ("x", "y"), mode="gradient").source
    assert "-unbroadcast" not in source and "unbroadcast(b_d, pow_0) * -2" in source


@pytest.mark.parametrize("negation, reader, scaled, read", [
    ("b = -e", "t = multiply_into(multiply_into(b, 2), s)", "b = e * -2",
     "t = multiply_into(b, s)"),
    ("b = negative_into(e)", "t = multiply_into(multiply_into(b, 2), s)",
     "b = multiply_into(e, -2)", "t = multiply_into(b, s)"),   # e was written: still is
    ("b = negative_into(e)", "t = 0.5 * b * s", "b = e * -0.5", "t = b * s"),
    ("b = -e", "t = b * s", None, None),                        # no number to take
    ("b = -e", "t = b * 0", None, None),                        # -e * 0 is not e * -0
    ("b = -e", "t = b * 2 + b", None, None),                    # read twice
])
def test_a_negation_takes_its_readers_number_only_where_it_has_one(negation, reader, scaled,
                                                                    read):
    import gast

    from srcad.compiler.emit import python_source
    from srcad.compiler.transform.signs import fold_negations
    names = {"multiply_into": runtime.multiply_into, "negative_into": runtime.negative_into}
    helper_of = lambda call: isinstance(call, gast.Call) and names.get(  # noqa: E731
        getattr(call.func, "id", None))
    statements = gast.parse(f"{negation}\nu = e\n{reader}\n").body
    result = [python_source(s) for s in fold_negations(statements, helper_of, set())]
    assert result == ([scaled, "u = e", read] if scaled else [negation, "u = e", reader])


@pytest.mark.parametrize("product, folded", [
    ("a = b_y * 2.0 * s", "t = b_y * -2.0 * s"),
    ("a = -b_y * 2.0", "t = b_y * 2.0"),                      # a new array either way
    ("a = multiply_into(-b_y, 2.0)", "t = multiply_into(-b_y, -2.0)"),  # -b_y is written
    ("a = -b_y", None),                                        # t would be b_y's array
    ("a = b_y * 0", None),                                     # -(x * 0) is -0.0
])
def test_a_negation_folds_where_the_product_stays_an_array_of_its_own(product, folded):
    import gast

    from srcad.compiler.emit import python_source
    from srcad.compiler.transform.signs import fold_negations
    names = {"multiply_into": runtime.multiply_into, "negative_into": runtime.negative_into}
    helper_of = lambda call: isinstance(call, gast.Call) and names.get(  # noqa: E731
        getattr(call.func, "id", None))
    statements = gast.parse(f"{product}\nt = negative_into(a)\n").body
    result = fold_negations(statements, helper_of, set())
    source = [python_source(s) for s in result]
    assert source == ([folded] if folded else [product, "t = negative_into(a)"])


# ---- a copy's adjoint gathered in the original's (reuse.accumulate_in_source) -----------------
def stencil_step(k, u):
    un = u.copy()               # un's adjoint: scattered slices, then added into u's
    step = np.sum((un[1:-1] + k * (un[2:] - 2.0 * un[1:-1] + un[:-2])) ** 2)
    return step + np.sum(u ** 2)  # (u's adjoint is made before the slices' are)


def original_read_meanwhile(k, u):
    un = u.copy()               # u is read between: its adjoint is touched in the window
    return np.sum(un[1:] * u[:-1] * k + un[:-1] ** 2)


def copy_read_whole_too(k, u):
    un = u.copy()               # un's adjoint is more than the scattered slices
    return np.sum(un[1:] * un[:-1]) + k * np.sum(un * un)


@pytest.mark.parametrize("fn, gathered", [(stencil_step, True), (heat_equation, True),
                                          (original_read_meanwhile, False),
                                          (copy_read_whole_too, False)])
def test_a_copys_adjoint_is_gathered_in_the_originals(fn, gathered):
    args = (0.3, np.sin(np.linspace(0.0, 2.0, 8)))
    assert_gradient_matches_finite_differences(fn, args, (0, 1))
    for source_mode, tape_mode in zip(srcad.grad(fn, (0, 1))(*args),
                                      srcad.tape.grad(fn, (0, 1))(*args)):
        np.testing.assert_allclose(source_mode, tape_mode, rtol=1e-12)
    gathering = re.compile(r"b_un = add_at\(b_u(_\d+)?,")
    assert bool(gathering.search(srcad.grad(fn, (0, 1)).source)) is gathered
    if gathered:
        with srcad.passes.off("reuse"):
            source = srcad.grad(fn, (0, 1)).source
        assert "b_un = index_adjoint(" in source and not gathering.search(source)


# ---- a product summed into a number: summed_product ------------------------------------------
@pytest.mark.parametrize("a, b, x", [
    (R.standard_normal(7), R.standard_normal(7), 0.5),
    (R.standard_normal((3, 4)), R.standard_normal((3, 4)), np.float64(2.0)),
    (R.standard_normal((4, 3)).T, R.standard_normal((3, 4)), 1.0),        # (not contiguous)
    (R.standard_normal(5).astype(np.float32), R.standard_normal(5).astype(np.float32), 1.0),
    (R.standard_normal(5) + 1j * R.standard_normal(5), R.standard_normal(5), 1.0),
    (R.standard_normal((3, 1)), R.standard_normal((1, 4)), 1.0),           # (broadcast)
    (R.standard_normal(4), R.standard_normal(4), np.ones(1)),              # (x of shape (1,))
    (2.0, R.standard_normal(4), 1.0),
])
def test_a_summed_product_is_the_sum_of_the_product(a, b, x):
    expected = runtime.unbroadcast(a * b, x)
    got = runtime.summed_product(a, b, x)
    assert np.shape(got) == np.shape(expected) and np.result_type(got) == np.result_type(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-13)


def damped_steps(k, x):
    y = x
    for _ in range(3):
        y = y + k * np.sin(y)
    return np.sum(y * y)


def test_a_numbers_cotangent_from_an_array_product_is_a_summed_product():
    args = (0.7, np.linspace(-1.0, 1.0, 6))
    numbers = frozenset({"k"})  # (as `grad` called with a Python float `k` makes it)
    assert "summed_product(b_" in source_after(damped_steps, ("k", "x"), "rev", "emit",
                                               scalars=numbers)
    assert "summed_product(" not in source_after(damped_steps, ("k", "x"), "rev", "emit")
    assert_gradient_matches_finite_differences(damped_steps, args, (0, 1))


# ---- the rewrite ------------------------------------------------------------------------------
def _load(name):
    return gast.Name(name, gast.Load(), None, None)


_HELPERS = {"unbroadcast": runtime.unbroadcast, "multiply_into": runtime.multiply_into,
            "negative_into": runtime.negative_into}


def _consumed(expressions, g="b_y"):
    def helper_of(call):
        func = getattr(call, "func", None)
        return _HELPERS.get(getattr(func, "id", None))
    return reuse.consume(expressions, g, helper_of, lambda name, obj: name)


def test_the_last_reader_is_rewritten_into_g_and_the_expressions_given_stay_as_they_were():
    product = gast.BinOp(gast.BinOp(_load("b_y"), gast.Mult(), gast.Constant(2, None)),
                         gast.Mult(), _load("x"))
    before = python_source(product)
    order, (rewritten,) = _consumed([product])
    assert python_source(rewritten) == "multiply_into(multiply_into(b_y, 2), x)"
    assert python_source(product) == before  # (rewritten in a copy)
    assert [n.id for n in gast.walk(rewritten) if getattr(n, "consumed", False)] == ["b_y"]


def test_nodes_shared_with_other_expressions_are_not_marked_by_the_rewrite():
    g, x = _load("b_y"), _load("x")  # a called rule is handed the very nodes of the call
    negated = gast.UnaryOp(gast.USub(), gast.Call(_load("unbroadcast"), [
        gast.BinOp(_load("b_y"), gast.Mult(), x), _load("x")], []))
    called = gast.Call(_load("rule"), [g, _load("y"), x], [])
    order, rewritten = _consumed([called, negated])
    assert list(order) == [1, 0]  # (the reader that may hand g on goes last)
    assert rewritten[1] is negated and rewritten[0] is not called
    assert rewritten[0].args[0] is not g and rewritten[0].args[0].consumed
    assert not hasattr(g, "consumed") and called.args[0] is g
    assert rewritten[0].args[2] is x and not hasattr(x, "consumed")


def test_g_read_twice_by_its_last_reader_is_not_rewritten():
    square = gast.BinOp(_load("b_y"), gast.Mult(), _load("b_y"))
    assert _consumed([square])[1] == [square]
