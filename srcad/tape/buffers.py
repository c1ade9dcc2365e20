"""buffers: `np.zeros`, `np.empty`, `np.ones` and `np.full` make tensors while a tape records.

Real code fills buffers: `out = np.zeros(n); out[i] = f(x[i])`. NumPy gives a tensor no hook
into a write into a plain array (it converts the value), so under a tape such a write would
either lose the gradient or be refused. PyTorch avoids the problem because `torch.zeros` makes
a tensor; tape mode does the same for NumPy's floating buffer makers: while a GradientTape
records in the calling thread and the caller is the user's code, they return a tensor tracked
by no tape (a constant until a recorded value is written into it, see `inplace`). Integer and
boolean buffers stay arrays (no gradient flows through them), as does everything made in
other threads, with no tape recording, or by code in the standard library, in an installed
package (site-packages) or in srcad: libraries pass their buffers to compiled code that
expects an ndarray (a tensor there can crash the interpreter), and importing SciPy's rules
while a tape records runs such code.

The makers are replaced on the `numpy` module while at least one tape records anywhere in the
process, and restored when the last one stops, so code that never uses a tape keeps NumPy's
own functions. A module that imported `zeros` by name before keeps NumPy's; a recorded write
into its buffers is refused with `TapeConversionError`, as before.
"""
from __future__ import annotations

import functools
import os
import site
import sys
import sysconfig
import threading

import numpy as np

import srcad.tape.dispatch as dispatch
from srcad.tape.state import RECORDING

_MAKERS = ("zeros", "empty", "ones", "full")
_ORIGINALS = {name: getattr(np, name) for name in _MAKERS}
_lock = threading.Lock()
_recording_tapes = 0  # tapes recording in any thread; the makers are replaced while > 0


def _library_directories() -> tuple:
    paths = {sysconfig.get_path(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.update(site.getsitepackages())
    paths.add(site.getusersitepackages())
    paths.add(os.path.dirname(os.path.dirname(dispatch.__file__)))  # srcad itself
    return tuple(os.path.join(os.path.realpath(path), "") for path in paths if path)


_LIBRARIES = _library_directories()
_USER_FILES = {}  # code filename -> whether it is the user's (outside every library)


def _is_users(filename: str) -> bool:
    known = _USER_FILES.get(filename)
    if known is None:
        known = _USER_FILES[filename] = not filename.startswith("<") and \
            not os.path.realpath(filename).startswith(_LIBRARIES)
    return known


def _as_buffer(array, caller):
    """A floating array the user's code made while this thread records becomes a fresh,
    untracked tensor."""
    if RECORDING.tapes and type(array) is np.ndarray and array.dtype.kind in "fc" \
            and _is_users(caller.f_code.co_filename):
        return dispatch.new_tensor(array)
    return array


def _buffer_maker(original):
    @functools.wraps(original)
    def make(*args, **kwargs):
        return _as_buffer(original(*args, **kwargs), sys._getframe(1))
    return make


def _full(shape, fill_value, dtype=None, order="C", **kwargs):
    """`np.full`; a tensor fill value is written into the buffer, so its gradient flows."""
    array = _ORIGINALS["full"](shape, dispatch.value_of(fill_value), dtype, order, **kwargs)
    buffer = _as_buffer(array, sys._getframe(1))
    if isinstance(fill_value, dispatch.Tensor) and buffer is not array:
        buffer[...] = fill_value
    return buffer


_REPLACEMENTS = {name: _buffer_maker(_ORIGINALS[name]) for name in ("zeros", "empty", "ones")}
_REPLACEMENTS["full"] = functools.wraps(_ORIGINALS["full"])(_full)


def tape_started() -> None:
    global _recording_tapes
    with _lock:
        _recording_tapes += 1
        if _recording_tapes == 1:
            for name, replacement in _REPLACEMENTS.items():
                setattr(np, name, replacement)


def tape_stopped() -> None:
    global _recording_tapes
    with _lock:
        _recording_tapes -= 1
        if _recording_tapes == 0:
            for name, replacement in _REPLACEMENTS.items():
                if getattr(np, name) is replacement:  # someone else's patch stays theirs
                    setattr(np, name, _ORIGINALS[name])
