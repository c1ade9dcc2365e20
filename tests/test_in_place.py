"""In-place updates and lists: gradients against finite differences, and clear refusals
where aliasing would make them unsound."""
import numpy as np
import pytest

import srcad
from srcad.errors import UnsoundAliasingError, UnsupportedSyntaxError
from tests import in_place_programs as p
from tests.checks import assert_gradient_matches_finite_differences, peak_memory

IDS = [fn.__name__ for fn, _, _ in p.CORPUS]


@pytest.mark.parametrize("fn, args, wrt", p.CORPUS, ids=IDS)
def test_gradient_matches_finite_differences(fn, args, wrt):
    def on_copies(*values):  # the programs write into their arguments
        return fn(*[np.copy(v) if isinstance(v, np.ndarray) else v for v in values])
    copies = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    assert_gradient_matches_finite_differences(fn, copies, wrt, numeric_fn=on_copies)


def test_arguments_written_in_place_are_restored_after_the_gradient():
    x = np.array([0.5, -0.3, 0.8])
    srcad.grad(p.augmented_on_parameter)(x)
    np.testing.assert_array_equal(x, [0.5, -0.3, 0.8])


@pytest.mark.parametrize("fn, shared", [(p.view_then_write, "row"), (p.alias_then_augment, "z")])
def test_writes_into_shared_memory_are_refused(fn, shared):
    with pytest.raises(UnsoundAliasingError, match=f"`{shared}`") as info:
        srcad.grad(fn)(np.array([0.5, -0.3, 0.8]))
    assert "copy()" in str(info.value) and isinstance(info.value, NotImplementedError)


def test_calls_that_may_write_their_arguments_are_refused():
    with pytest.raises(UnsoundAliasingError, match="np.copyto"):
        srcad.grad(p.copy_into)(np.ones(2), np.zeros(2))


def test_mutating_methods_are_refused():
    with pytest.raises(UnsupportedSyntaxError, match="y.sort"):
        srcad.grad(p.sorts_in_place)(np.ones(2))


def test_memory_of_a_long_loop_stays_bounded():
    """Only what the backward sweep reads is recorded: a 1000-step loop of `h = h + ...`
    keeps the shapes of the temporaries, not 1000 copies of them."""
    from tests.control_programs import long_loop
    x = np.linspace(0.0, 1.0, 256)
    assert peak_memory(srcad.grad(long_loop), x) < 1000 * x.nbytes * 1.5  # about one saved array per step


def test_a_loop_of_element_writes_leaves_the_callers_cotangent_alone():
    x = np.array([0.4, -0.7, 1.3])
    cotangent = np.arange(6.0).reshape(3, 2)
    output, backward = srcad.vjp(p.buffer_returned_whole, x)
    first = backward(cotangent)
    np.testing.assert_array_equal(cotangent, np.arange(6.0).reshape(3, 2))
    np.testing.assert_allclose(backward(cotangent), first, rtol=0, atol=0)
    expected = sum(cotangent[i, j] * srcad.grad(lambda v: p.buffer_returned_whole(v)[i, j])(x)
                   for i in range(3) for j in range(2))
    np.testing.assert_allclose(first, expected, rtol=1e-12)


@pytest.mark.parametrize("fn", [p.overlapping_windows, p.laplacian_energy, p.fill_buffer,
                                p.chained_element_writes])
def test_element_writes_in_loops_agree_with_tape_mode(fn):
    x = np.linspace(0.3, 1.1, 6) if fn not in (p.fill_buffer, p.chained_element_writes) \
        else np.array([0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(srcad.grad(fn)(x), srcad.tape.grad(fn)(x), rtol=1e-12)


def test_element_writes_in_a_loop_clear_the_owned_adjoint_in_place():
    source = srcad.grad(p.laplacian_energy).source
    assert "cleared_region(b_lap" in source and "without_region" not in source
