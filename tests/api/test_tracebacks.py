"""Errors leave srcad's entry points with the user's frames and the generated programs',
without srcad's own (srcad/tracebacks.py); SRCAD_TRACEBACK=full keeps them all."""
import os
import traceback

import numpy as np
import pytest

import srcad
from srcad.errors import SrcadError, UnsupportedSyntaxError
from srcad.tracebacks import NOTE, api_boundary

PACKAGE = os.path.dirname(srcad.__file__) + os.sep


def generator(x):
    yield x


def checked(x):
    if np.any(x < 0.0):
        raise ValueError("a negative entry")
    return x


def root_sum(x):
    return np.sum(np.sqrt(checked(x)))


def shown(error: BaseException) -> str:
    return "".join(traceback.format_exception(error))


def raised(call) -> BaseException:
    with pytest.raises(Exception) as caught:
        call()
    return caught.value


def test_a_refusal_of_the_users_function_shows_the_users_call_not_srcads_frames():
    error = raised(lambda: srcad.grad(generator)(1.0))
    assert isinstance(error, UnsupportedSyntaxError)
    text = shown(error)
    assert PACKAGE not in text and NOTE in text
    assert "srcad.grad(generator)(1.0)" in text  # the call, in this file
    assert "yield x" in text  # the line at fault, from the error's own text


def test_an_error_in_the_users_code_keeps_its_frames_and_the_generated_programs():
    error = raised(lambda: srcad.grad(root_sum)(np.array([1.0, -1.0])))
    assert isinstance(error, ValueError)
    frames = traceback.extract_tb(error.__traceback__)
    assert not any(frame.filename.startswith(PACKAGE) for frame in frames)
    assert any(frame.filename.startswith("<srcad-") and "root_sum" in frame.filename
               for frame in frames)
    assert frames[0].filename == __file__


def test_srcad_traceback_full_keeps_every_frame(monkeypatch):
    monkeypatch.setenv("SRCAD_TRACEBACK", "full")
    for call in (lambda: srcad.grad(generator)(1.0),
                 lambda: srcad.grad(root_sum)(np.array([1.0, -1.0]))):
        text = shown(raised(call))
        assert PACKAGE in text and NOTE not in text


@pytest.mark.parametrize("call", [
    lambda: srcad.grad(root_sum, wrt=3),
    lambda: srcad.grad(root_sum, 0, argnums=0),
    lambda: srcad.value_and_grad(generator)(1.0),
    lambda: srcad.vjp(generator, 1.0),
    lambda: srcad.jvp(generator, (1.0,), (1.0,)),
    lambda: srcad.jacobian(generator)(np.ones(2)),
    lambda: srcad.hessian(generator)(np.ones(2)),
    lambda: srcad.hvp(generator)(np.ones(2), np.ones(2)),
    lambda: srcad.show(generator),
    lambda: srcad.grad(generator).source,
    lambda: srcad.checkpoint(3.0),
    lambda: srcad.register_pytree_node(3, None, None),
], ids=["grad wrt", "wrt and argnums", "value_and_grad", "vjp", "jvp", "jacobian", "hessian",
        "hvp", "show", "source", "checkpoint", "register_pytree_node"])
def test_every_entry_point_hides_srcads_frames(call):
    error = raised(call)
    assert isinstance(error, SrcadError) and PACKAGE not in shown(error)


def test_the_tape_hides_its_frames_too():
    x = srcad.Variable(np.ones(2))
    with srcad.GradientTape() as tape:
        y = np.sum(x * x)
    tape.gradient(y, x)
    assert PACKAGE not in shown(raised(lambda: tape.gradient(y, x)))  # a second use


def test_an_error_of_srcads_own_code_keeps_its_frames_for_the_report():
    error = raised(lambda: api_boundary(srcad.tracebacks.own_frame)(None))  # (a bug's stand-in)
    assert isinstance(error, AttributeError)
    assert PACKAGE + "tracebacks.py" in shown(error) and NOTE not in shown(error)
