"""Buffers from np.zeros/np.empty/np.ones/np.full under a recording tape (srcad/tape/buffers.py):
tensors in the recording thread, NumPy's arrays everywhere else, NumPy restored afterwards."""
import os
import sysconfig
import threading
from numpy import zeros as zeros_bound_before_any_tape

import numpy as np
import pytest

import srcad
from srcad.tape import GradientTape, Tensor, TapeConversionError, Variable, constant
from srcad.api.testing import numerical_gradient

ORIGINAL_MAKERS = (np.zeros, np.empty, np.ones, np.full)


def makers_are_numpys():
    return (np.zeros, np.empty, np.ones, np.full) == ORIGINAL_MAKERS


def test_floating_buffers_are_tensors_while_recording_and_record_their_writes():
    x = constant(np.array([0.3, -0.7, 1.1]))
    with GradientTape() as tape:
        tape.watch(x)
        out, rows = np.zeros(3), np.empty((2, 3), dtype=np.float32)
        ones, counts = np.ones(3), np.zeros(3, dtype=int)
        assert all(type(b) is Tensor for b in (out, rows, ones))
        assert type(counts) is np.ndarray  # integers carry no gradient: stays an array
        assert rows.dtype == np.float32 and rows.shape == (2, 3)
        np.testing.assert_array_equal(ones._value, 1.0)
        for i in range(3):
            out[i] = np.sin(x[i]) * ones[i]
        loss = np.sum(out ** 2)
    np.testing.assert_allclose(tape.gradient(loss, x)._value,
                               2 * np.sin(x._value) * np.cos(x._value))


def test_np_full_with_a_differentiated_fill_value():
    v = Variable(2.0)
    with GradientTape() as tape:
        filled = np.full((2, 3), v)
        constant_fill = np.full(2, 7.0)
        loss = np.sum(filled * filled) + np.sum(constant_fill)
    assert filled.shape == (2, 3) and constant_fill._value.tolist() == [7.0, 7.0]
    assert float(tape.gradient(loss, v)) == pytest.approx(6 * 2 * 2.0)


def test_numpy_is_restored_when_the_last_tape_stops_even_after_an_error():
    assert makers_are_numpys()
    with GradientTape():
        with GradientTape():
            assert not makers_are_numpys()
        assert not makers_are_numpys()  # the outer tape still records
    assert makers_are_numpys() and type(np.zeros(2)) is np.ndarray
    with pytest.raises(ZeroDivisionError):
        with GradientTape():
            1 / 0
    assert makers_are_numpys()


def test_nothing_changes_outside_the_recording_thread_or_a_stop_recording_block():
    made_elsewhere = []
    with GradientTape() as tape:
        worker = threading.Thread(target=lambda: made_elsewhere.append(np.zeros(2)))
        worker.start()
        worker.join()
        with tape.stop_recording():
            unrecorded = np.zeros(2)
        with srcad.stop_recording():
            also_unrecorded = np.ones(2)
    assert type(made_elsewhere[0]) is np.ndarray
    assert type(unrecorded) is np.ndarray and type(also_unrecorded) is np.ndarray


def test_buffers_made_by_installed_libraries_stay_arrays():
    """Libraries hand their buffers to compiled code that expects an ndarray."""
    library_file = os.path.join(sysconfig.get_path("purelib"), "some_library.py")
    namespace = {"np": np}
    exec(compile("def make():\n    return np.zeros(2)\n", library_file, "exec"), namespace)
    with GradientTape():
        assert type(namespace["make"]()) is np.ndarray
        assert type(np.zeros(2)) is Tensor  # this file is the user's


def test_a_maker_bound_before_the_tape_still_makes_arrays_and_a_recorded_write_is_refused():
    x = constant(np.array([0.5, 1.5]))
    with GradientTape() as tape:
        tape.watch(x)
        buffer = zeros_bound_before_any_tape(2)
        with pytest.raises(TapeConversionError):
            buffer[:] = x * 2.0


def test_a_variable_read_first_by_a_write_into_a_plain_array_is_refused():
    v = Variable(np.ones(2))
    with GradientTape():
        with pytest.raises(TapeConversionError):
            np.copyto(np.array([0.0, 0.0]), v)  # the gradient would otherwise be lost


def weighted_rows(x, W):
    rows = np.empty((3, 2))
    rows[0] = x
    rows[1] = W @ x
    rows[2] = np.tanh(W @ rows[1])
    weights = np.ones(3)
    weights[1:] = 0.5
    return weights @ np.sum(rows ** 2, axis=1)


def test_a_buffered_program_matches_source_mode_and_finite_differences():
    x, W = np.array([0.4, -0.9]), np.array([[0.8, -0.3], [0.5, 1.1]])
    got = srcad.tape.grad(weighted_rows, wrt=(0, 1))(x, W)
    expected = srcad.grad(weighted_rows, wrt=(0, 1))(x, W)
    for position, (g, e) in enumerate(zip(got, expected)):
        np.testing.assert_allclose(g, e, rtol=1e-12)
        np.testing.assert_allclose(g, numerical_gradient(weighted_rows, (x, W), position),
                                   rtol=1e-6)
