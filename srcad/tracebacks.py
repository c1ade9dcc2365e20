"""tracebacks: an error leaving srcad shows the user's frames, not srcad's.

An error from a derivative call would otherwise list a dozen frames of srcad's own modules
(the API, the compiler's passes, the runtime) between the user's call and the line at
fault, and the error's text already names that line. `@api_boundary` on a public entry
point (and `hide_own_frames` in a hot `__call__`, where a wrapper's frame would cost time)
rebuilds the traceback of such an error without the frames of files in the srcad package,
as JAX does at its API boundary. What stays: the user's frames, the frames of libraries
below them (NumPy's Python code), and the frames of the programs srcad generated (their
files are `<srcad-...>`, registered with linecache: they are the derivative of the user's
code, and `srcad.show` prints them). A note at the end says how to see everything.

Which errors: every `SrcadError`, and any other exception raised while code that is not
srcad's ran below the entry point (the user's function, a library it calls, a generated
program: a `raise` in the user's code runs as a call of a srcad helper there). Any other
exception, raised where only srcad's own code ran, is a bug in srcad, and keeps every
frame for its report.

`SRCAD_TRACEBACK=full` in the environment (read at each error, so `os.environ` may change
it while a program runs) keeps every frame.
"""
from __future__ import annotations

import functools
import os
import types
from typing import Callable, TypeVar

from srcad.errors import SrcadError

F = TypeVar("F", bound=Callable)

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
NOTE = "(srcad hid its own frames from this traceback; SRCAD_TRACEBACK=full shows them)"


def own_frame(frame: types.FrameType) -> bool:
    """Whether `frame` runs code of a file in the srcad package."""
    return frame.f_code.co_filename.startswith(_PACKAGE)


def hide_own_frames(error: BaseException) -> None:
    """Drop srcad's frames from `error`'s traceback, where that is what the user should see
    (see the module docstring). The caller re-raises with a bare `raise`, which adds no
    frame of its own."""
    traceback = error.__traceback__
    if traceback is None or os.environ.get("SRCAD_TRACEBACK", "").lower() == "full":
        return
    entries = []
    while traceback is not None:
        entries.append(traceback)
        traceback = traceback.tb_next
    kept = [entry for entry in entries if not own_frame(entry.tb_frame)]
    if len(kept) == len(entries) or not (kept or isinstance(error, SrcadError)):
        return  # (nothing to hide, or srcad's bug: its frames are the report)
    rebuilt = None
    for entry in reversed(kept):
        rebuilt = types.TracebackType(rebuilt, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    error.__traceback__ = rebuilt
    if NOTE not in getattr(error, "__notes__", ()):
        error.add_note(NOTE)


def api_boundary(function: F) -> F:
    """`function`, whose errors leave without srcad's frames (`hide_own_frames`)."""
    @functools.wraps(function)
    def boundary(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except Exception as error:
            hide_own_frames(error)
            raise
    return boundary  # type: ignore[return-value]
