"""`with`, `try`, attribute writes, sets, calls made for their effect and library code
srcad runs as written: numbers against central differences and tape mode, in reverse,
forward and second-order modes."""
import contextlib
import threading
import warnings

import numpy as np
import pytest

import srcad
import srcad.tape
from srcad.api.testing import numerical_gradient
from srcad.errors import UnsoundAliasingError, UnsupportedDerivativeError, UnsupportedSyntaxError

X = np.array([0.7, 1.3, 2.1])
LOCK = threading.Lock()


def assert_first_order(fn, x=X, tape=True):
    """grad against central differences and tape mode; jvp and the forward Jacobian
    against grad."""
    gradient = srcad.grad(fn)(x)
    np.testing.assert_allclose(gradient, numerical_gradient(fn, (x,), 0), rtol=1e-6, atol=1e-8)
    if tape:
        np.testing.assert_allclose(srcad.tape.grad(fn)(x), gradient, rtol=1e-12, atol=1e-14)
    direction = np.linspace(-1.0, 1.0, x.size).reshape(x.shape)
    _, tangent = srcad.jvp(fn, (x,), (direction,))
    np.testing.assert_allclose(tangent, np.sum(gradient * direction), rtol=1e-10)
    np.testing.assert_allclose(srcad.jacobian(fn, mode="fwd")(x), gradient, rtol=1e-10)
    return gradient


def assert_second_order(fn, x=X):
    hessian = srcad.hessian(fn)(x)
    expected = np.stack([numerical_gradient(lambda y: srcad.grad(fn)(y)[i], (x,), 0)
                         for i in range(x.size)])
    np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-6)


# ---- with ------------------------------------------------------------------------------------
def under_managers(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(x) * x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = np.sum(y ** 2)
    with LOCK:
        z = z + np.sum(np.sin(x))
    return z


class Scale:
    """A user's context manager that only sets state, and gives a number."""

    def __init__(self):
        self.depth = 0

    def __enter__(self):
        self.depth += 1
        return 3.0

    def __exit__(self, *exception):
        self.depth -= 1


SCALE = Scale()


def entered_value(x):
    with SCALE as k, np.errstate(over="ignore"):
        y = k * x
    return np.sum(y * y)


def returns_inside_with(x):
    for _ in range(2):
        with np.errstate(all="raise"):
            if x[0] > 10:
                return x[0] ** 2
            y = np.sin(x)
            if y[1] > 0.5:
                break
    return np.sum(y * x)


def raises_inside_with(x):
    with np.errstate(all="raise"):
        y = np.log(x - 5.0)
    return np.sum(y * y)


def suppresses(x):
    with contextlib.suppress(ValueError):
        raise ValueError("lost")
    return np.sum(x)


@pytest.mark.parametrize("fn", [under_managers, entered_value, returns_inside_with])
def test_with_blocks_run_their_managers_and_differentiate_their_bodies(fn):
    assert_first_order(fn)
    assert_second_order(fn)
    assert SCALE.depth == 0


def test_an_early_return_inside_with_takes_its_path():
    np.testing.assert_allclose(srcad.grad(returns_inside_with)(X + 20.0), [2 * (X[0] + 20),
                                                                         0.0, 0.0])


@pytest.mark.parametrize("derivative", [
    lambda f: srcad.grad(f), lambda f: lambda x: srcad.vjp(f, x),
    lambda f: lambda x: srcad.jvp(f, (x,), (x,)), lambda f: srcad.hessian(f)])
def test_an_exception_in_a_with_block_exits_its_manager(derivative):
    before = np.geterr()
    with pytest.raises(FloatingPointError):
        derivative(raises_inside_with)(X)
    assert np.geterr() == before


def test_a_manager_that_suppresses_an_exception_is_refused():
    with pytest.raises(UnsupportedDerivativeError, match="suppressed an exception"):
        srcad.grad(suppresses)(X)


# ---- try ------------------------------------------------------------------------------------
def recovers(x):
    try:
        y = np.log(x)
        if y[0] > 100:
            raise ValueError("too large")
    except ValueError:
        y = x * 2.0
    return np.sum(y * y)


def keeps_the_old_value(x):
    y = np.sin(x)
    try:
        y = np.log(x - 1.0) if x[0] > 1.0 else _fail()
    except RuntimeError:
        pass
    return np.sum(y * x)


def _fail():
    raise RuntimeError("no")


def every_clause(x):
    log = []
    try:
        y = np.exp(x)
    except (KeyError, IndexError) as error:
        y = np.zeros(3) + len(str(error))
    else:
        y = y * np.cos(x)
    finally:
        log.append("done")
    return np.sum(y) + len(log)


def returns_from_try(x):
    try:
        return np.sum(np.tanh(x) * x)
    except TypeError:
        return np.sum(x)


def catches_and_raises_again(x):
    try:
        y = np.sqrt(x)
    except FloatingPointError:
        raise
    return np.sum(y)


def nested_tries(x):
    try:
        try:
            y = x[5]
        except IndexError:
            y = np.sum(x ** 3)
    except Exception:
        y = 0.0
    return y


def lookup_or_compute(x, table={}):
    try:
        scale = table["scale"]
    except KeyError:
        scale = 2.0
    return np.sum(np.sin(x) * scale)


@pytest.mark.parametrize("fn", [recovers, keeps_the_old_value, every_clause, returns_from_try,
                                catches_and_raises_again, nested_tries, lookup_or_compute])
def test_try_statements_take_the_path_that_ran(fn):
    assert_first_order(fn)


def test_the_handlers_path_is_differentiated_when_the_body_raises():
    np.testing.assert_allclose(srcad.grad(recovers)(X * 1e50), 8 * X * 1e50)
    np.testing.assert_allclose(srcad.grad(keeps_the_old_value)(X * 0.5),
                               np.sin(X * 0.5) + 0.5 * X * np.cos(X * 0.5))
    np.testing.assert_allclose(srcad.jvp(keeps_the_old_value, (X * 0.5,), (np.ones(3),))[1],
                               np.sum(np.sin(X * 0.5) + 0.5 * X * np.cos(X * 0.5)))


def test_an_exception_no_handler_takes_goes_on_after_finally():
    def unhandled(x):
        try:
            y = np.sum(x)
            raise KeyError("k")
        finally:
            x = x * 2
        return y
    with pytest.raises(KeyError):
        srcad.grad(unhandled)(X)


def test_srcads_own_refusals_are_not_caught_by_the_users_except():
    def hides(x):
        try:
            y = np.sum(np.nextafter(x, 2.0))  # (no derivative rule)
        except Exception:
            y = 0.0
        return y
    with pytest.raises(srcad.errors.MissingRuleError):
        srcad.grad(hides)(X)


@pytest.mark.parametrize("fn", [recovers, keeps_the_old_value, every_clause, returns_from_try,
                                nested_tries])
@pytest.mark.parametrize("x", [X, X * 0.5], ids=["body", "handler"])
def test_second_derivatives_through_try_statements(fn, x):
    assert_second_order(fn, x)
    direction = np.array([0.3, -1.0, 0.5])
    np.testing.assert_allclose(srcad.hvp(fn)(x, direction), srcad.hessian(fn)(x) @ direction,
                               rtol=1e-10, atol=1e-12)
    reverse_over_reverse = srcad.grad(lambda y: srcad.grad(fn)(y) @ direction)(x)
    np.testing.assert_allclose(reverse_over_reverse, srcad.hvp(fn)(x, direction), rtol=1e-10,
                               atol=1e-12)


# ---- attributes, sets, effects ------------------------------------------------------------------
class Counter:
    calls = 0


def counts_in_an_attribute(x):
    Counter.calls = 0
    total = 0.0
    for k in range(3):
        Counter.calls += 1
        total = total + np.sum(x[Counter.calls - 1:] ** 2)
    return total


def uses_sets(x):
    shapes = {x.shape, np.shape(x)}
    kinds = {v.dtype.kind for v in (x, x * 2)}
    return np.sum(x ** len(shapes) + len(kinds))


def validate(values):
    if not np.all(np.isfinite(values)):
        raise ValueError("not finite")


def validated(x):
    y = np.sin(x)
    validate(y)
    return np.sum(y)


def scrub(values):
    values[0] = 0.0


def scrubbed(x):
    y = np.sin(x)
    scrub(y)
    return np.sum(y)


@pytest.mark.parametrize("fn", [counts_in_an_attribute, uses_sets, validated])
def test_attribute_writes_sets_and_effects_of_constants(fn):
    assert_first_order(fn)
    assert_second_order(fn)


def shuffled(x):
    y = np.sin(x)
    np.random.default_rng(0).shuffle(y)
    return np.sum(y * x)


def test_a_helper_writing_into_a_differentiated_array_is_followed():
    np.testing.assert_allclose(srcad.grad(scrubbed)(X), [0.0, *np.cos(X[1:])])


def test_a_call_made_for_its_effect_that_writes_a_differentiated_value_is_refused():
    with pytest.raises(UnsoundAliasingError, match="shuffle"):
        srcad.grad(shuffled)(X)


# ---- library code run as written --------------------------------------------------------------
def namespace_of(x):
    """Dispatch as library code writes it: a `try` in a function returning a module."""
    try:
        import numpy
        return numpy
    except ImportError:
        return None


def dispatched(x):
    xp = namespace_of(x)
    return xp.sum(xp.sin(x) ** 2)


def writes_through(x, out):
    import math  # (srcad cannot transform this function: it runs it as written)
    out[:] = x
    return int(math.pi)


def wrote_into(x):
    y = np.zeros(3)
    pi = writes_through(np.cos(x), y)
    return np.sum(y) * pi


def test_a_call_returning_no_floats_is_a_constant_however_it_is_computed():
    assert_first_order(dispatched)
    assert_second_order(dispatched)


def test_a_call_run_as_written_that_writes_a_float_keeps_the_refusal():
    with pytest.raises(UnsupportedSyntaxError, match="wrote into an argument"):
        srcad.grad(wrote_into)(X)


def test_scipy_rosen_is_differentiated_as_scipy_wrote_it():
    optimize = pytest.importorskip("scipy.optimize")
    x = np.array([1.2, 0.8, 1.5, -0.3, 0.1])
    np.testing.assert_allclose(srcad.grad(optimize.rosen)(x), optimize.rosen_der(x),
                               rtol=1e-12)
    np.testing.assert_allclose(srcad.hessian(optimize.rosen)(x), optimize.rosen_hess(x),
                               rtol=1e-12)
    np.testing.assert_allclose(srcad.jacobian(optimize.rosen, mode="fwd")(x),
                               optimize.rosen_der(x), rtol=1e-12)


# ---- found by the differential fuzzer ---------------------------------------------------------
def handler_keeps_a_constant(x, y):
    scale = np.arctan(0.5)
    kept = np.arctan(y)
    try:
        if scale > 0.0:
            raise ValueError("always")
        kept = np.exp(np.sin(y))
    except ValueError:
        pass
    return np.sum(kept * kept) + x * x


def lambda_in_a_try_body(x):
    first = np.arctan(x[0])
    angles = np.arctan(x)
    with warnings.catch_warnings():
        try:
            shifted = lambda a: np.sin(first + np.sum(angles) + a)  # noqa: E731
            value = np.tanh(shifted(np.mean(x)))
            if first > 10.0:
                raise ValueError("never")
            squared = value ** 2
        except ValueError:
            squared = np.tanh(np.sum(x) * first)
    return np.sum((squared * x) ** 2)


def test_a_try_whose_captured_values_have_no_tangent_in_a_second_derivative():
    y = np.array([0.3, -0.5, 0.9])
    assert srcad.hvp(handler_keeps_a_constant, wrt=0)(0.7, y, 1.0) == pytest.approx(2.0)
    np.testing.assert_allclose(srcad.grad(handler_keeps_a_constant, wrt=1)(0.7, y),
                               2 * np.arctan(y) / (1 + y ** 2), rtol=1e-12)


def test_a_lambda_in_a_try_body_reads_the_enclosing_variables():
    assert_first_order(lambda_in_a_try_body)
    assert_second_order(lambda_in_a_try_body)


def nested_function_in_a_loop_in_a_try_body(x, y):
    try:
        total = 0.0
        for _ in range(2):
            def reads_y(a):
                return np.arctan(y) * a
            total = total + np.sum(reads_y(x))
        if total > 100.0:
            raise ValueError("never")
    except ValueError:
        total = 0.0
    return total


def test_a_function_defined_in_a_loop_in_a_try_body_reads_the_enclosing_variables():
    x, y = np.array([0.3, -0.5]), np.array([0.9, 1.4])
    for position, expected in ((0, 2 * np.arctan(y)), (1, 2 * x / (1 + y ** 2))):
        np.testing.assert_allclose(srcad.grad(nested_function_in_a_loop_in_a_try_body,
                                              wrt=position)(x, y), expected, rtol=1e-12)


# ---- found by review: each was a wrong number before it was refused or mended ---------------
HISTORY = []
CACHE = {}


def writes_into_a_list_made_before(x):
    out = []
    try:
        out.append(x ** 2)
    except ValueError:
        pass
    return np.sum(out[0])


def writes_into_an_array_made_before(x):
    buf = np.zeros(3)
    try:
        buf[0] = x[0] * 2.0
    except KeyError:
        pass
    return np.sum(buf * x)


def carried_through_a_loop(x):
    acc = x
    total = 0.0
    for _ in range(3):
        try:
            acc = acc * x
            total = total + np.sum(acc)
        except FloatingPointError:
            pass
    return total


def first_bound_in_a_loop(x):
    total = 0.0
    for i in range(3):
        try:
            if i == 0:
                acc = x
            else:
                acc = acc * x
            total = total + np.sum(acc)
        except Exception:
            total = total + 100.0
    return total


def manager_of_a_derivative(x):
    with contextlib.nullcontext(np.sin(x)) as s:
        return np.sum(s * x)


def recording_stopped_beside_another(x):
    with srcad.stop_recording(), np.errstate(all="ignore"):
        c = np.sum(x * x)
    return c * np.sum(x)


def comprehension_shadows(x):
    s = x * 2.0

    def h(a):
        return a * s
    return np.sum([h(x) for s in (1.0, 2.0)])


def finally_reads_a_half_done_body(x):
    y = x
    try:
        y = 2.0 * x
        raise KeyError("k")
    finally:
        return np.sum(y)


def handler_raises_under_finally(x):
    try:
        y = np.sin(x)
    except KeyError:
        raise ValueError("v")
    finally:
        HISTORY.clear()
    return np.sum(y)


def record(value):
    HISTORY.append(value)


def recorded(x):
    record(np.sin(x))
    return np.sum(HISTORY[-1] * x)


def stash(value):
    CACHE["v"] = value * 2.0


def stashed(x):
    stash(np.sin(x))
    return np.sum(CACHE["v"] * x)


def hands_over_a_callback(value, put):
    import math  # (srcad cannot transform this function: it runs it as written)
    put(value)
    return int(math.pi)


def through_a_callback(x):
    store = []
    k = hands_over_a_callback(np.sin(x), store.append)
    return np.sum(store[0] * x) * k


@pytest.mark.parametrize("fn, error, words", [
    (writes_into_a_list_made_before, UnsoundAliasingError, "writes into `out`"),
    (writes_into_an_array_made_before, UnsoundAliasingError, "writes into `buf`"),
    (manager_of_a_derivative, UnsupportedSyntaxError, "context manager holds"),
    (recording_stopped_beside_another, UnsupportedSyntaxError, "beside other context"),
    (comprehension_shadows, UnsupportedSyntaxError, "reads `s`"),
    (finally_reads_a_half_done_body, UnsupportedSyntaxError, "`finally:` may read `y`"),
    (handler_raises_under_finally, UnsupportedSyntaxError, "with `finally:`"),
    (recorded, UnsoundAliasingError, "HISTORY.append"),
    (stashed, UnsupportedSyntaxError, "element of `CACHE`, a global"),
    (through_a_callback, UnsupportedSyntaxError, "a value it captured or a global"),
])
def test_what_would_be_a_silent_wrong_number_is_refused(fn, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace("`", ".")):
        srcad.grad(fn)(X)


@pytest.mark.parametrize("fn", [carried_through_a_loop, first_bound_in_a_loop])
def test_a_try_in_a_loop_carries_what_its_body_binds_to_the_next_trip(fn):
    assert_first_order(fn)
    assert srcad.value_and_grad(fn)(X)[0] == pytest.approx(fn(X))


def nested_try_in_a_loop_in_a_try(x):
    scale = np.arctan(x)
    try:
        for element in x:
            inner = np.arctan(scale / (2.0 + np.cos(element)))
            try:
                if element > 100.0:
                    raise ValueError("never")
                inner = np.sqrt(1.0 + scale * scale)
            except ValueError:
                pass
            finally:
                pass
        if x[0] > -100.0:
            raise ValueError("always")
        result = np.arctan(x)
    except ValueError:
        result = np.log(1.0 + np.tanh(scale) ** 2)
    finally:
        pass
    return np.sum(result * result)


def test_a_try_in_a_loop_in_a_try_found_by_the_fuzzer():
    assert_first_order(nested_try_in_a_loop_in_a_try)
    assert_second_order(nested_try_in_a_loop_in_a_try)


def lambda_in_a_with_in_a_try_in_a_loop(x, y):
    result = 0.0
    for element in x:
        try:
            with np.errstate(over="ignore"):
                wave = lambda a: np.cos(y) * a  # noqa: E731
                damped = 1.0 / (1.5 + np.cos(wave(x)))
            if element > 0.0:
                raise ValueError("positive")
            result = np.sum(damped) + np.exp(np.sin(x[-1]))
        except ValueError:
            result = np.log(1.0 + (y[-1] + element) ** 2)
    return result


def test_a_lambda_in_a_with_block_in_a_try_body_found_by_the_fuzzer():
    x, y = np.array([-0.3, 0.2]), np.array([0.5, 0.7])
    for position in (0, 1):
        np.testing.assert_allclose(
            srcad.grad(lambda_in_a_with_in_a_try_in_a_loop, wrt=position)(x, y),
            numerical_gradient(lambda_in_a_with_in_a_try_in_a_loop, (x, y), position),
            rtol=1e-6, atol=1e-8)


def first_found(x):
    k = next((i for i, v in enumerate(x) if v > 1.0), None)
    square = next(v * v for v in x if v > 2.0)
    spare = next((v for v in x if v > 100.0), 0.5)
    return x[k] * 2.0 + square + spare * x[0]


def test_next_of_a_generator_runs_to_its_first_element():
    """`next(e for x in xs if c[, default])` (a list of every element is no iterator) gives
    the first element's derivative; the elements after it are never computed, and none
    found raises StopIteration or gives the default, as in Python."""
    assert_first_order(first_found)
    computed = []

    def logged(v):
        computed.append("computed")
        return v

    def stops_early(x):
        return next(logged(v) * 3.0 for v in x if v > 1.0)

    np.testing.assert_allclose(srcad.grad(stops_early)(X), [0.0, 3.0, 0.0])
    assert len(computed) == 1
    with pytest.raises(StopIteration):
        srcad.grad(lambda x: next(v for v in x if v > 100.0))(X)
