"""passes: the optimisations srcad may leave out, by name, for testing.

Each is a rewrite or a choice of program whose result must equal what srcad computes
without it. `with srcad.passes.off("math", "replay"):` differentiates without them: the
differential fuzzer (tests/fuzzing.py) compares each such run with the full one, so a wrong
number that only one optimisation makes shows up as a disagreement. The set switched off is
part of the cache's key; it is process-wide (a testing switch, not a per-thread option),
and a derivative object keeps the programs it found before the switch.
"""
from __future__ import annotations

import contextlib
import threading

OPTIONAL = {
    "inline": "small helpers called as whole statements written out in the caller "
              "(frontend/inline.py)",
    "softmax": "softmax written out becomes the fused softmax rules (transform/softmax.py)",
    "math": "NumPy calls on Python floats become `math` calls (transform/math_calls.py)",
    "forward-grad": "`grad` of one Python float runs forward mode "
                    "(transform/forward_grad.py)",
    "specialise": "`grad`'s program specialised on float64 arrays (transform/specialise.py)",
    "first-trip": "a loop's first trip computes no adjoint of what came from before the loop "
                  "without one (transform/first_trip.py)",
    "signs": "negations folded into the adjoints they reach (transform/signs.py)",
    "release": "arrays released as soon as nothing reads them (transform/release.py)",
    "reuse": "a cotangent computed in the memory of the adjoint it comes from "
             "(transform/reuse.py)",
    "outline": "`grad` of arrays: the output's elements not computed, its shape alone "
               "(transform/outline.py)",
    "copies": "copies propagated in a fused program (transform/copies.py)",
    "dead-code": "a tangent alone computed without what leads only to the output "
                 "(transform/dead_code.py)",
    "replay": "a reverse Jacobian's rows replay one forward sweep (replay.py)",
    "batch": "a forward Jacobian by one batched tangent program (jacobian_batches.py)",
}

_OFF = [frozenset()]  # (a list: `off` replaces its one item whole)


class _ThisThread(threading.local):
    off = frozenset()  # (a class default: a thread that set none reads it without the
    #                    AttributeError that made `enabled` cost half a microsecond)


_HERE = _ThisThread()  # `off_in_this_thread`'s, for `srcad.show` (no other thread sees it)


def enabled(name: str) -> bool:
    """Whether the optimisation `name` (a key of OPTIONAL) is in use."""
    return name not in _OFF[0] and name not in getattr(_HERE, "off", ())


def switched_off() -> frozenset:
    """The optimisations left out now (part of the transformation cache's key)."""
    return _OFF[0] | getattr(_HERE, "off", frozenset())


@contextlib.contextmanager
def off(*names: str):
    """Leave the optimisations `names` out inside the block."""
    unknown = sorted(set(names) - set(OPTIONAL))
    if unknown:
        raise ValueError(f"unknown optimisation(s) {unknown}; srcad's are {sorted(OPTIONAL)}")
    previous = _OFF[0]
    _OFF[0] = previous | frozenset(names)
    try:
        yield
    finally:
        _OFF[0] = previous


@contextlib.contextmanager
def off_in_this_thread(*names: str):
    """Leave the optimisations `names` out inside the block, in this thread alone (what
    `srcad.show(f, upto="differentiate")` shows while other threads compile as usual)."""
    previous = getattr(_HERE, "off", frozenset())
    _HERE.off = previous | frozenset(names)
    try:
        yield
    finally:
        _HERE.off = previous
