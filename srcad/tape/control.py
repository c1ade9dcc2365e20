"""control: the gradient-control markers of `srcad.runtime.control` in tape mode.

Source mode recognises `stop_gradient`, `stop_recording()` and `@custom_gradient` in the
code it transforms; a tape only sees what runs, so these functions give the markers their
meaning at run time:

- `stop_gradient(x)` → a constant tensor with `x`'s value (each tensor of a nest); other
  values pass through unchanged.
- `paused()` → a block during which no tape records (`srcad.stop_recording()`); its results
  are constants to every tape, as source mode treats them.
- `call_custom_gradient(custom, args, kwargs)` → runs the function with no tape recording,
  and records one node whose rules call its `grad_fn` (once per cotangent, shared by the
  arguments), with source mode's checks on what `grad_fn` returns.
"""
from __future__ import annotations

import contextlib

from srcad.errors import SrcadError
import srcad.tape.dispatch as dispatch
import srcad.tape.nest as nest
from srcad.tape.errors import caller_location
from srcad.tape.state import RECORDING


def stop_gradient(x):
    """`x` with every tensor in it replaced by a constant tensor of the same value."""
    if isinstance(x, dispatch.Tensor):
        return dispatch.new_tensor(dispatch.value_of(x))
    if isinstance(x, (list, tuple, dict)):
        return nest.pack_as(x, [stop_gradient(leaf) for leaf in nest.flatten(x)])
    return x


@contextlib.contextmanager
def paused():
    """No tape of this thread records inside the block."""
    tapes = RECORDING.tapes
    saved = tapes[:]
    tapes.clear()
    try:
        yield
    finally:
        tapes[:] = saved + tapes  # tapes entered (and still open) inside the block stay


def call_custom_gradient(custom, args, kwargs):
    """`custom(*args, **kwargs)` for a `srcad.custom_gradient` function, recorded as one
    operation whose derivative is the function's own `grad_fn`."""
    values, ids = dispatch.unwrap_arguments(args)
    tapes = [tape for tape in RECORDING.tapes if dispatch.any_tracked(tape._tracked, ids)]
    live_keywords = [key for key, v in kwargs.items()
                     if isinstance(v, dispatch.Tensor) and dispatch.is_live(v)]
    if live_keywords:
        raise SrcadError(f"the custom gradient of {custom.__name__} gives cotangents for "
                         f"positional arguments; `{live_keywords[0]}` is passed by keyword.",
                         caller_location(),
                         fix=f"pass `{live_keywords[0]}` positionally.")
    if not tapes:
        return custom.function(*args, **kwargs)[0]
    with paused():
        result, grad_fn = custom.forward(*args, **kwargs)
    value = dispatch.value_of(result)
    out = dispatch.new_tensor(value)
    node = (_rules_calling(custom, grad_fn, len(args)), tuple(values), None,
            tuple(ids), out._id, value)
    for tape in tapes:
        tape._nodes.append(node)
        tape._tracked.add(out._id)
    return out


def _rules_calling(custom, grad_fn, count: int) -> tuple:
    """One rule per positional argument; `grad_fn` runs once per cotangent `g`."""
    last = [None, None]  # (g, cotangents) of the latest call

    def cotangents_for(g):
        if last[0] is not g:
            cotangents = grad_fn(g)
            if not isinstance(cotangents, (tuple, list)):
                cotangents = (cotangents,)
            if len(cotangents) != count:
                raise SrcadError(f"the grad_fn of {custom.__name__} returned "
                                 f"{len(cotangents)} cotangent(s) for {count} positional "
                                 "argument(s).",
                                 fix="return one per positional argument (None for none).")
            last[:] = [g, cotangents]
        return last[1]

    def rule_for(position):
        def rule(g, ans, *args, **kwargs):
            return cotangents_for(g)[position]
        rule.__name__ = f"{custom.__name__}_grad_fn_{position}"
        return rule

    return tuple(rule_for(position) for position in range(count))
