"""Loops marked `srcad.checkpointed`: the numbers of the unmarked loop (against central
finite differences and the unmarked twin, in every derivative), the memory saved, and the
refusals of loops it cannot run again soundly."""
import inspect

import numpy as np
import pytest

import srcad
from srcad.errors import SrcadError, UnsupportedDerivativeError, UsageError
from srcad.kernels import loop_checkpoints
from srcad.kernels.loop_checkpoints import LoopCheckpoints
from tests.checks import assert_gradient_matches_finite_differences, peak_memory

marked = srcad.checkpointed


def rnn(W, h, xs):
    total = 0.0
    for t in marked(range(xs.shape[0])):
        h = np.tanh(W @ h + xs[t])
        total = total + np.sum(h * h)
    return total


def rnn_unmarked(W, h, xs):
    total = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        total = total + np.sum(h * h)
    return total


def heat(u0, k):
    u = np.copy(u0)
    for _ in marked(range(23)):  # written in place: kept as a copy, put back in place
        un = u.copy()
        u[1:-1] = un[1:-1] + k * (un[2:] - 2 * un[1:-1] + un[:-2])
    return np.sum(u ** 2)


def lotka(a, b):
    u, v = 1.0, 0.5
    for _ in marked(range(30), every=4):
        du = a * u - b * u * v
        dv = -0.7 * v + 0.3 * u * v
        u = u + 0.01 * du
        v = v + 0.01 * dv
    return u + v


def inside_a_loop(W, h):
    for i in range(3):  # `i` is read by the segments run again
        for t in marked(range(5)):
            h = np.tanh(W @ h) * (i + 1)
    return np.sum(h)


def collects(W, h):
    hs = []
    for t in marked(range(9), every=2):
        h = np.sin(W @ h)
        hs.append(h)
    return np.sum(np.stack(hs) ** 2)


def fills_a_buffer(p):
    out = np.zeros(10)
    y = 1.0
    for t in marked(range(10)):
        y = y * p[0] + np.sin(p[1] * t)
        out[t] = y
    return np.sum(out ** 2)


def branches(W, h, xs):
    steps = marked(list(xs))  # (a name bound once to the mark marks the loop over it)
    previous = None
    for x in steps:
        if previous is not None and np.sum(x) > 0:
            h = h + 0.5 * previous
        h = np.cos(W @ h + x)
        previous = h * 0.3
    return np.sum(h)


def empty(W, h):
    for t in marked(range(0)):
        h = W @ h
    return np.sum(h * h)


def tries_and_nests(x, y):
    # a `try` body and a lambda are functions of their own: what they bind is theirs, not the
    # loop's (the names a `try` body bound were declared in the backward sweep's frame: a
    # SyntaxError, found by the fuzzer)
    b1 = 0.0
    for i in marked(range(3)):
        try:
            v = np.sin(y) * x
            if i > 0:
                raise ValueError("odd")
            b1 = b1 + v[0]
        except ValueError:
            b1 = x ** 2 + b1
        finally:  # (names the generated code binds, `BaseException` here, are not the loop's
            pass  # state: the second order program read one before binding it)
        inner = lambda a: np.cos(a * x)  # noqa: E731
        b1 = b1 + inner(b1)
    return b1


def breaks_inside(W, h):
    for t in marked(range(6), every=2):  # (a `break` of the loop inside leaves this one be)
        g = h
        for k in range(20):
            g = 0.5 * (g + np.tanh(W @ g) + h)
            if np.sum(np.abs(g - h)) < 1e-3:
                break
        h = g
    return np.sum(h)


def over_rows_written_after(W, h, X):
    X = X * 1.0
    for x in marked(X):  # (the rows of a copy: the write after the loop leaves them be)
        h = np.tanh(W @ h + x)
    X[0] = 0.0
    return np.sum(h) + np.sum(X)


def checks_and_contexts(W, h):
    for t in marked(range(7), every=3):  # (`with`, `assert` and `raise` run again as written)
        with np.errstate(over="raise"):
            h = np.tanh(W @ h)
        assert h.shape == (3,), "a state of three"
        if np.any(np.isnan(h)):
            raise FloatingPointError("a NaN state")
    return np.sum(h * h)


def shifted_by_a_value_made_before(W, h):
    shift = np.sin(W[0])  # (its adjoint reads only its shape: a segment run again, all of it)
    for t in marked(range(6), every=2):
        h = np.tanh(W @ h) + shift
    return np.sum(h * h)


RNG = np.random.default_rng(7)
SMALL = (RNG.standard_normal((3, 3)) * 0.4, RNG.standard_normal(3))
CASES = [
    (rnn, (*SMALL, RNG.standard_normal((11, 3))), (0, 1, 2)),
    (heat, (RNG.standard_normal(8), 0.1), (0, 1)),
    (lotka, (1.1, 0.4), (0, 1)),
    (inside_a_loop, SMALL, (0, 1)),
    (collects, SMALL, (0, 1)),
    (fills_a_buffer, (np.array([0.9, 0.3]),), 0),
    (branches, (*SMALL, RNG.standard_normal((7, 3))), (0, 1)),
    (empty, SMALL, (0, 1)),
    (tries_and_nests, (0.7, np.array([0.3, 0.5])), (0, 1)),
    (breaks_inside, SMALL, (0, 1)),
    (over_rows_written_after, (*SMALL, RNG.standard_normal((5, 3))), (0, 1)),
    (checks_and_contexts, SMALL, (0, 1)),
    (shifted_by_a_value_made_before, SMALL, (0, 1)),
]


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradient_matches_finite_differences(fn, args, wrt):
    assert_gradient_matches_finite_differences(fn, args, wrt)


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_every_reverse_derivative_agrees_with_the_plain_run(fn, args, wrt):
    value, gradients = srcad.value_and_grad(fn, wrt=wrt)(*args)
    assert value == fn(*args)  # (the mark is the iterable itself when run plainly)
    again = srcad.grad(fn, wrt=wrt)(*args)
    for a, b in zip(np.atleast_1d(gradients) if wrt == 0 else gradients,
                    np.atleast_1d(again) if wrt == 0 else again):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    output, backward = srcad.vjp(fn, *args, wrt=wrt)
    np.testing.assert_allclose(output, value)
    pulled = backward(1.0)
    for a, b in zip(np.atleast_1d(pulled) if wrt == 0 else pulled,
                    np.atleast_1d(again) if wrt == 0 else again):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_the_marked_loop_gives_the_unmarked_loops_numbers():
    args = (*SMALL, RNG.standard_normal((40, 3)))
    for a, b in zip(srcad.grad(rnn, wrt=(0, 1, 2))(*args),
                    srcad.grad(rnn_unmarked, wrt=(0, 1, 2))(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(srcad.hessian(rnn, wrt=1)(*args),
                               srcad.hessian(rnn_unmarked, wrt=1)(*args), rtol=1e-10)


def written_then_tried(x, y):
    buf = np.zeros(4)
    buf[1:] = y[:-1] * (x * x)
    buf[0] = x
    for i in marked(range(1)):
        for j in range(3):
            try:
                if y[-4] > 1.0:
                    raise ValueError("fuzz")
                buf = np.log(1.0 + y * buf)
            except ValueError:
                buf = np.exp(np.sin(buf))
            finally:
                pass
    return np.sum(buf * buf) + x * x


def test_the_kept_state_is_the_functions_own_names():
    """Aliasing may say a name the generated code binds (`BaseException`, which `finally`
    passes to srcad's helpers) shares memory with `buf`; keeping it made the Hessian's
    program read it before binding it (found by the fuzzer)."""
    y = np.array([0.4, -0.2, 0.9, 0.3])
    step = 1e-5
    numeric = (srcad.grad(written_then_tried)(-0.8 + step, y)
               - srcad.grad(written_then_tried)(-0.8 - step, y)) / (2 * step)
    assert srcad.hvp(written_then_tried)(-0.8, y, 1.0) == pytest.approx(numeric, rel=1e-6)


def test_second_order_through_a_marked_loop_with_try_and_lambda():
    y = np.array([0.3, 0.5])
    step = 1e-5
    numeric = (srcad.grad(tries_and_nests)(0.7 + step, y)
               - srcad.grad(tries_and_nests)(0.7 - step, y)) / (2 * step)
    assert srcad.hessian(tries_and_nests)(0.7, y) == pytest.approx(numeric, rel=1e-6)
    assert srcad.hvp(tries_and_nests)(0.7, y, 1.0) == pytest.approx(numeric, rel=1e-6)


def test_tape_mode_runs_the_marked_loop_as_written():
    args = (*SMALL, RNG.standard_normal((6, 3)))
    W = srcad.Variable(args[0])
    with srcad.GradientTape() as tape:
        y = rnn(W, *args[1:])
    np.testing.assert_allclose(tape.gradient(y, W), srcad.grad(rnn)(*args), rtol=1e-12)


def test_memory_grows_as_the_square_root_of_the_steps():
    W, h = RNG.standard_normal((16, 16)) * 0.2, RNG.standard_normal(16)
    xs = RNG.standard_normal((2000, 16))
    kept = peak_memory(srcad.grad(rnn), W, h, xs)
    unrolled = peak_memory(srcad.grad(rnn_unmarked), W, h, xs)
    assert kept < unrolled / 4


def noisy(W, h):
    for t in marked(range(10)):
        h = np.tanh(W @ h + np.random.normal(size=h.shape))
    return np.sum(h)


def leaves_early(W, h):
    for t in marked(range(10)):
        h = np.tanh(W @ h)
        if np.sum(h) > 100.0:
            break
    return np.sum(h)


def over_differentiated_rows(W, h):
    for row in marked(W):
        h = np.tanh(row * h)
    return np.sum(h)


class State:
    pass


def writes_attributes(W, h):
    s = State()
    s.h = h
    for t in marked(range(4)):
        s.h = np.tanh(W @ s.h)
    return np.sum(s.h)


def holds_written_arrays(W, h):
    buffers = [np.zeros(3), np.zeros(3)]
    for t in marked(range(4)):
        h = np.tanh(W @ h)
        b = buffers[t % 2]
        b[0] = h[0]
    return np.sum(h) + buffers[0][0] * buffers[1][0]


LOG = []


def appends_to_a_global(W, h):
    for t in marked(range(4)):
        h = np.tanh(W @ h)
        LOG.append(t)
    return np.sum(h)


def appends_to_an_argument(W, h, log):
    for t in marked(range(4)):
        h = np.tanh(W @ h)
        log.append(t)
    return np.sum(h)


def advances_an_iterator(W, h, xs):
    rows = iter(xs)
    for t in marked(range(3)):
        h = np.tanh(W @ h + next(rows))
    return np.sum(h)


def test_a_loop_advancing_an_iterator_is_refused():
    """Run again, a segment would take the next rows, not its own (found by review: a bare
    StopIteration)."""
    with pytest.raises(UnsupportedDerivativeError, match="advances an iterator"):
        srcad.grad(advances_an_iterator)(*SMALL, RNG.standard_normal((3, 3)))


def test_a_loop_writing_into_the_callers_objects_is_refused():
    """Run again, its segments would write into them again (or leave them as the first
    segment left them): what the caller sees would change."""
    with pytest.raises(UnsupportedDerivativeError, match="LOG.append.t.` runs for its effect"):
        srcad.grad(appends_to_a_global)(*SMALL)
    with pytest.raises(UnsupportedDerivativeError, match="`log`, which may be the caller's"):
        srcad.grad(appends_to_an_argument)(*SMALL, [])
    assert LOG == []


def notes_on_an_argument(W, h, note):
    for t in marked(range(4)):
        h = np.tanh(W @ h)
        note.last = t
    return np.sum(h)


def test_a_loop_setting_the_callers_attributes_is_refused():
    """Run again last segment first, the loop would leave `note.last` as the first segment
    left it (2, where the plain run leaves 3): srcad's `obj.name = v` is a call made for its
    effect, not a statement of control the registry lets the loop run again."""
    note = State()
    with pytest.raises(UnsupportedDerivativeError, match=r"`note\.last = t` runs for its effect"):
        srcad.grad(notes_on_an_argument)(*SMALL, note)
    assert not hasattr(note, "last")


def test_only_the_state_a_segment_reads_is_kept():
    program = srcad.grad(rnn, (0, 1)).source
    kept = next(line for line in program.splitlines() if ".keep(" in line)
    assert kept.strip().startswith("checkpoints.keep((h, total),")  # (not the temporaries)


@pytest.mark.parametrize("fn, words", [
    (leaves_early, "leaves it early"),
    (over_differentiated_rows, "carry a derivative"),
    (writes_attributes, "attributes"),
])
def test_a_loop_it_cannot_run_again_soundly_is_refused_where_it_is_marked(fn, words):
    with pytest.raises(UnsupportedDerivativeError, match=words) as caught:
        srcad.grad(fn)(*SMALL)
    lines = inspect.getsourcelines(fn)[0]
    marked_at = next(k for k, line in enumerate(lines) if "marked(" in line)
    assert caught.value.location.lineno == fn.__code__.co_firstlineno + marked_at
    assert "srcad.checkpointed" in caught.value.fix


def fills_then_rebinds_in_a_try(x, y):
    buffer = np.zeros(3)
    for j in marked(range(3)):  # (it writes into the zeros it made: its own)
        buffer[j] = np.exp(np.sin(y[j])) * j
    for i in range(3):
        try:  # (rebound later to what a helper returns, which may be `x`)
            if i > 0:
                raise ValueError("skip")
            buffer = np.exp(x + buffer)
        except ValueError:
            pass
    return np.sum(buffer * buffer)


def fills_an_argument_through_a_name(W, h):
    held = h
    for t in marked(range(3)):
        held[t] = np.tanh(W[t] @ held)
    return np.sum(held)


def test_a_loop_writing_into_its_own_array_is_checkpointed_where_the_name_is_rebound_later():
    """Whether a marked loop writes into the caller's memory is asked of the name where the
    loop writes (found by the fuzzer: a rebinding in a `try` after the loop, through an
    outlined helper that may return `x`, refused the loop); a name holding an argument
    there is still refused."""
    x, y = np.array([0.03, 1.35, -1.07]), np.array([1.35, -0.56, -0.23])
    assert_gradient_matches_finite_differences(fills_then_rebinds_in_a_try, (x, y), (0, 1))
    with pytest.raises(UnsupportedDerivativeError, match="`held`, which may be the caller's"):
        srcad.grad(fills_an_argument_through_a_name)(*SMALL)


def test_a_list_holding_arrays_written_in_place_is_refused():
    with pytest.raises(SrcadError, match="share memory|holds arrays"):
        srcad.grad(holds_written_arrays)(*SMALL)


def test_a_body_that_computes_otherwise_when_run_again_raises():
    with pytest.raises(UnsupportedDerivativeError, match="other values when run again"):
        srcad.grad(noisy)(*SMALL)


def test_every_may_be_a_numpy_integer():
    assert marked(range(5), every=np.int64(2)).every == 2


@pytest.mark.parametrize("every", [0, -2, 1.5, True])
def test_every_must_be_a_positive_whole_number(every):
    with pytest.raises(UsageError, match="every"):
        marked(range(3), every=every)


def test_the_mark_iterates_what_it_marks():
    assert list(marked(range(4), every=2)) == [0, 1, 2, 3]
    assert repr(marked(range(2), every=1)) == "srcad.checkpointed(range(0, 2), every=1)"


@pytest.mark.parametrize("changed_in", [0, 1, 2])
def test_a_segment_run_again_must_end_where_it_ended(changed_in):
    """Each segment's run again is checked against the state it ended in: the next
    segment's kept state, or the loop's last (the first segment's and the last's too)."""
    checkpoints = LoopCheckpoints(range(9), "here")
    assert len(checkpoints.segments) == 3
    total = 0
    for segment in checkpoints.segments:
        checkpoints.keep((total,), ())
        total = total + sum(segment)
    checkpoints.finish((total,))
    numbers = reversed(range(len(checkpoints.segments)))
    with pytest.raises(UnsupportedDerivativeError, match="other values when run again"):
        for number, (segment, (total,)) in zip(numbers, checkpoints.in_reverse()):
            total = total + sum(segment) + (number == changed_in)
            checkpoints.check((total,))
    assert number == changed_in  # (the later segments passed the check)


def test_each_segments_end_is_hashed_once_each_way(monkeypatch):
    """Forward, the state a segment ends in is hashed once (as the next one's kept state, or
    the loop's last); backward, once more for the check of its run again."""
    hashed = []
    monkeypatch.setattr(loop_checkpoints, "digest", lambda leaves: hashed.append(leaves)
                        or repr(leaves).encode())
    checkpoints = LoopCheckpoints(range(10), "here")
    h = np.zeros(2)
    for segment in checkpoints.segments:
        checkpoints.keep((h,), ())
        for t in segment:
            h = np.tanh(h + t)
    checkpoints.finish((h,))
    assert len(hashed) == len(checkpoints.segments) == 3
    for segment, (h,) in checkpoints.in_reverse():
        for t in segment:
            h = np.tanh(h + t)
        checkpoints.check((h,))
    assert len(hashed) == 2 * len(checkpoints.segments)
