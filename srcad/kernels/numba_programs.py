"""numba_programs: what numba's copy of a gradient program calls beyond the Python program's
helpers (compiler/numba_program.py writes it; runtime/numba_twins.py gives numba each helper,
checking the types): tapes of numbers as arrays, and whether the result is finite.

numba's lists of numbers cost about as much per append and pop as the program's arithmetic
(lotka: 4.8 us a call with lists, 2.7 us with arrays). A tape here is an array of float64 or
int64 and the count of values on it (`top`), kept by the program: before a `for` loop the
array gets room for the loop's trips at once (`reserved`) and the loop's pushes store
(`store`); elsewhere (a `while` loop) a push grows the array when it is full (`pushed`).
"""
from __future__ import annotations

import math

import numpy as np

_SMALLEST = 16  # (the room a tape that grows gets at least: a while loop's first pushes)


def tape_of(prototype, room=0):
    """An empty tape for numbers of `prototype`'s type (0.0 for floats, 0 for integers),
    with `room` for as many."""
    return np.empty(room, np.float64 if type(prototype) is float else np.int64)


def reserved(tape, size):
    """`tape`, or a copy of it with room for at least `size` values (twice its room or
    more, so that pushes one by one copy each value a few times at most)."""
    if size <= len(tape):
        return tape
    grown = np.empty(max(size, 2 * len(tape), _SMALLEST), tape.dtype)
    grown[:len(tape)] = tape
    return grown


def pushed(tape, top, value):
    """`tape` (or its grown copy) holding `value` at `top`; the caller counts it."""
    if top == len(tape):
        tape = reserved(tape, top + 1)
    tape[top] = value
    return tape


def store(tape, top, value) -> None:
    """`value` stored at `top`, where a loop reserved room for it: the array stays the same
    one (a push that may copy it makes numba reload it on every trip)."""
    if top >= len(tape):
        raise IndexError("a tape's room was not reserved")  # (never: as a bound's check)
    tape[top] = value


def popped(tape, top, current):
    """The value at `top`, for the name that holds `current` now: numba's twin checks that
    the name holds a float (a name numba types as an integer keeps its list)."""
    return tape[top]


def loop_trips(iterable) -> int:
    """How many trips a `for` loop over `iterable` makes (numba's twin takes a range, an
    array or a tuple, whose length cannot change as the loop runs)."""
    return len(iterable)


def all_finite(result) -> bool:
    """Whether the numbers of `result` (a number, an array, None, tuples of them) are
    finite: where one is not, the Python program decides what the call gives
    (`math.sqrt(-1.0)` raises there, numba's gives nan; NumPy's inf may come with a warning
    the user asked to be raised). numba's program returns it with its result, computed in
    its own code (NumPy's test of an array's elements cost a tenth of a call of lotka's)."""
    for part in result if type(result) is tuple else (result,):  # (per call: no generator)
        kind = type(part)
        if kind is tuple:
            if not all_finite(part):
                return False
        elif kind is float:
            if not math.isfinite(part):
                return False
        elif kind is np.ndarray and part.dtype.kind in "fc" and not np.isfinite(part).all():
            return False
    return True
