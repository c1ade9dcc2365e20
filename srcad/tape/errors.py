"""errors: the typed errors tape mode raises, and the user's location for them.

Each class derives from `srcad.errors.SrcadError` and from the builtin TensorFlow raises for
the same mistake (`RuntimeError` for a tape used in the wrong state, `TypeError` for a value
of the wrong kind, `ValueError` for a bad value; a bad option is `srcad.errors.UsageError`),
so `except RuntimeError` written for `tf.GradientTape` keeps working. `caller_location()`
finds the first frame outside srcad and NumPy, so an error points at the user's line, not at
the dispatch machinery.
"""
from __future__ import annotations

import linecache
import os
import sys

import numpy as np

from srcad.errors import Location, SrcadError

_SRCAD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__))


class TapeStateError(SrcadError, RuntimeError):
    """A tape is used in a state that does not allow the call (TF raises RuntimeError)."""


class TapeConversionError(SrcadError, TypeError):
    """A tensor that a recording tape differentiates was converted to a plain NumPy value,
    which would drop its gradient without a trace."""


class TapeTypeError(SrcadError, TypeError):
    """A value of the wrong kind for a tape operation: a None target, a nest where
    `jacobian` differentiates one tensor, item assignment or `op=` on a Variable."""


class BatchDependenceError(SrcadError, ValueError):
    """`batch_jacobian` found a row of the target that depends on another row of the source."""


def caller_location() -> Location | None:
    """The innermost frame outside srcad (except tests) and NumPy, as a `Location`."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not (filename.startswith(_SRCAD_DIR + os.sep) or filename.startswith(_NUMPY_DIR)):
            break
        frame = frame.f_back
    if frame is None:
        return None
    code, lineno = frame.f_code, frame.f_lineno
    col, end_col = _columns_at(frame) or (0, None)
    return Location(code.co_filename, lineno, col, end_col, code.co_name,
                    linecache.getline(code.co_filename, lineno) or "")


def _columns_at(frame):
    """Start and end column of the instruction the frame is executing, if known."""
    try:
        line, end_line, start, end = list(frame.f_code.co_positions())[frame.f_lasti // 2]
    except (IndexError, ValueError):
        return None
    if line != frame.f_lineno or start is None:
        return None
    return start, (end if end_line == line else None)
