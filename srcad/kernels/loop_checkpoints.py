"""loop_checkpoints: what a checkpointed loop's derivative keeps, segment by segment.

The forward sweep of a loop marked `srcad.checkpointed` (transform/loop_checkpoints.py) runs
it over `LoopCheckpoints.segments` and, before each segment, `keep`s the values the loop
reads from before it; the backward sweep takes the segments last first (`in_reverse`), with
those values put back, and runs each again. Arrays, lists and dicts that the function writes
into are kept as copies of what they hold and written back into the same object, so names
that share them still do; every other value is kept by reference. The state each segment
ends in (the next one's kept state, or the loop's last) is hashed once, to check that
running the segment again ends where its first run did.
"""
from __future__ import annotations

import math

import numpy as np

from srcad.errors import UnsupportedDerivativeError
from srcad.kernels.snapshots import ATOMS, digest


class LoopCheckpoints:
    """The segments of one run of a checkpointed loop and the state kept before each.

    `marked`: the loop's iterable, a `Checkpointed` (runtime/control.py) or, where the mark
    was read off by value, any iterable; `every`: trips per segment (None: about sqrt of
    the trips, so the kept states and one segment's tape weigh alike)."""

    def __init__(self, marked, where: str):
        every = getattr(marked, "every", None)
        items = getattr(marked, "iterable", marked)
        if isinstance(items, np.ndarray):  # (its rows, of a copy: a write into the array
            items = list(items.copy())  # after the loop leaves what the loop saw)
        elif not isinstance(items, (range, list, tuple)):
            items = list(items)
        size = every or max(1, math.isqrt(max(len(items) - 1, 0)) + 1)
        self.segments = [items[start:start + size] for start in range(0, len(items), size)]
        self.where = where
        self._kept: list = []
        self._ends: list = []  # the hash of the state each segment ended in, first first

    def keep(self, values: tuple, written: tuple) -> None:
        """Before a segment: the loop's state `values`; `written` the positions among them of
        the arrays, lists and dicts the function writes into (kept as copies). Hashed once,
        as the state the segment before ended in (the first segment's has none)."""
        if self._kept:
            self._ends.append(digest(_leaves(values)))
        contents = tuple(_contents(values[k], self.where) for k in written)
        self._kept.append((values, written, contents))

    def finish(self, values: tuple) -> None:
        """After the loop: the state the last segment ended in."""
        self._ends.append(digest(_leaves(values)))

    def in_reverse(self):
        """Each segment with the state kept before it, last first, what the function writes
        into written back; after each, the caller hands `check` the state it ended in."""
        for segment in reversed(self.segments):
            values, written, contents = self._kept.pop()
            for k, held in zip(written, contents):
                _put_back(values[k], held)
            yield segment, values

    def check(self, values: tuple) -> None:
        """The state a segment's second run ended in: the state its first run ended in."""
        expected = self._ends.pop()
        if digest(_leaves(values)) != expected:
            raise UnsupportedDerivativeError(
                f"the loop marked `srcad.checkpointed` at {self.where} computed other values "
                "when run again for its derivative: its body must give the same results "
                "from the same state (a random draw, a global it changes or an object it "
                "writes into outside what srcad keeps makes it differ).",
                fix="draw random numbers before the loop and index them by trip, keep the "
                "state in local names and arrays, or remove the mark.")


def _contents(value, where: str):
    """A copy of what `value` holds; None for a value no write can change (`x += 1` of a
    number binds a new one)."""
    if isinstance(value, ATOMS + (tuple,)):
        return None
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    raise UnsupportedDerivativeError(
        f"the loop marked `srcad.checkpointed` at {where} reads a {type(value).__name__} "
        "that the function writes into; srcad can keep and put back arrays, lists and dicts "
        "only.", fix="keep the state in arrays, lists or dicts, or remove the mark.")


def _put_back(value, contents) -> None:
    if contents is None:
        return
    if isinstance(value, np.ndarray):
        np.copyto(value, contents)
    elif isinstance(value, list):
        value[:] = contents
    else:
        value.clear()
        value.update(contents)


def _leaves(values) -> list:
    """The arrays and numbers among `values` and in the lists, tuples and dicts they hold."""
    leaves, todo = [], list(values)
    while todo:
        value = todo.pop()
        if isinstance(value, (list, tuple)):
            todo.extend(value)
        elif isinstance(value, dict):
            todo.extend(value.values())
        else:
            leaves.append(value)
    return leaves
