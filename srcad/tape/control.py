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
- `call_checkpoint(checkpointed, args, kwargs)` → runs the function with no tape recording
  and records one node holding the call's tensors (and copies of its other arrays) alone;
  its rules run the function again under a tape of their own and take that tape's gradient.
  A tensor the tapes differentiate that the function reads other than through its
  arguments (a closure, a Variable) is refused: the recomputation would miss its path.
"""
from __future__ import annotations

import contextlib

from srcad.errors import SrcadError, UnsoundAliasingError, UnsupportedDerivativeError
import srcad.tape.dispatch as dispatch
import srcad.tape.nest as nest
from srcad.tape.errors import caller_location
from srcad.tape.gradient_tape import GradientTape
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


def call_checkpoint(checkpointed, args, kwargs):
    """`checkpointed(*args, **kwargs)` for a `srcad.checkpoint` function, recorded as one
    node whose derivative recomputes the function from the arguments the node keeps.
    Differentiated are the tensors a tape tracks among the arguments, in lists, tuples,
    dicts and registered containers, positional or keyword; the result's tensors are new."""
    leaves = nest.flatten((args, kwargs))
    live = [k for k, leaf in enumerate(leaves)
            if isinstance(leaf, dispatch.Tensor) and dispatch.is_live(leaf)]
    if not live:
        return checkpointed.function(*args, **kwargs)
    values, ids = dispatch.unwrap_arguments(leaves)
    with _arguments_only(checkpointed, [ids[k] for k in live]):
        result = checkpointed.function(*args, **kwargs)
    if any(leaves[k]._id != ids[k] for k in live):
        raise UnsoundAliasingError(
            f"the checkpointed function {checkpointed.__name__} writes into a tensor passed to "
            "it: the write is not recorded, and recomputing from the argument would start "
            "from the written value.", caller_location(),
            fix="write into a copy inside the function (`h = h.copy()` before the write), or "
            "pass it a copy.")
    results = nest.flatten(result)
    outputs = [k for k, leaf in enumerate(results) if isinstance(leaf, dispatch.Tensor)]
    if not outputs:
        return result
    kept = tuple(value if k in live else dispatch.kept(value) for k, value in enumerate(values))
    ids = tuple(i if k in live else None for k, i in enumerate(ids))
    tensors = [dispatch.new_tensor(dispatch.value_of(results[k])) for k in outputs]
    skeleton = (args, kwargs)  # (the structure itself: a None-filled copy of a dataclass
    #                             holds no floats, so it would flatten to no children)
    rules = _recomputing_rules(checkpointed, skeleton, live, outputs, len(leaves))
    dispatch.record_on(RECORDING.tapes, (rules, kept, None, ids, tuple(t._id for t in tensors),
                                         tuple(t._value for t in tensors)))
    for k, tensor in zip(outputs, tensors):
        results[k] = tensor
    return nest.pack_as(result, results)


@contextlib.contextmanager
def _arguments_only(checkpointed, argument_ids):
    """A block in which no tape records, and a tensor that a recording tape differentiates
    is refused unless it is one of the arguments (`argument_ids`)."""
    tapes = RECORDING.tapes
    saved = tapes[:]
    guard = _ArgumentsOnly(checkpointed, saved, argument_ids)
    tapes[:] = [guard]
    try:
        yield
    finally:
        tapes[:] = saved + [tape for tape in tapes if tape is not guard]


class _ArgumentsOnly:
    """Stands on the recording tapes' place while a checkpointed function runs forward. It
    tracks nothing, so nothing is recorded; dispatch and Variables ask it whether it tracks
    a tensor, and it refuses one that the tapes it stands for track (or a trainable
    Variable they would watch) but that is not an argument of the call."""

    _nodes = ()

    def __init__(self, checkpointed, tapes, argument_ids):
        self._checkpointed, self._tapes = checkpointed, tapes
        self._arguments = set(argument_ids)
        self._tracked = self
        self._watch_accessed_variables = any(t._watch_accessed_variables for t in tapes)

    def __contains__(self, tensor_id) -> bool:
        if tensor_id not in self._arguments and any(tensor_id in t._tracked
                                                    for t in self._tapes):
            raise self._refusal()
        return False

    def _watch_variable(self, variable):
        if variable._id not in self._arguments:
            raise self._refusal()

    def _refusal(self):
        name = self._checkpointed.__name__
        return UnsupportedDerivativeError(
            f"the checkpointed function {name} reads a tensor the tape differentiates that is "
            "not one of its arguments (from a closure, a global or a Variable): recomputing "
            f"{name} from its arguments would miss that path of the gradient.",
            caller_location(), fix=f"pass that tensor to {name} as an argument.")


def _recomputing_rules(checkpointed, skeleton, live: list, outputs: list, count: int) -> tuple:
    """One rule per argument leaf (None for the constant ones); the function runs again
    once per cotangent `g`, shared by the arguments."""
    last = [None, None]  # (g, gradients of the live leaves) of the latest run

    def gradients_for(g, leaves):
        if last[0] is not g:
            last[:] = [g, _recomputed_gradients(checkpointed, skeleton, leaves, live, outputs, g)]
        return last[1]

    def rule_for(position):
        index = live.index(position)

        def rule(g, ans, *leaves):
            return gradients_for(g, leaves)[index]
        rule.__name__ = f"{checkpointed.__name__}_recomputed_{position}"
        return rule

    return tuple(rule_for(k) if k in live else None for k in range(count))


def _recomputed_gradients(checkpointed, skeleton, leaves, live, outputs, g) -> list:
    """The gradients of the live leaves, from the function run again on `leaves` under a
    tape of its own, weighted by the cotangents `g` of its output tensors. When a tape
    records this sweep (a higher derivative), the leaves are its tensors, so it records
    the recomputation too."""
    with GradientTape(watch_accessed_variables=False) as tape:
        sources = [leaves[k] if isinstance(leaves[k], dispatch.Tensor)
                   else dispatch.new_tensor(leaves[k]) for k in live]
        tape.watch(sources)
        filled = list(leaves)
        for k, source in zip(live, sources):
            filled[k] = source
        args, kwargs = nest.pack_as(skeleton, filled)
        results = nest.flatten(checkpointed.function(*args, **kwargs))
    weighted = [(results[k], part) for k, part in zip(outputs, g)
                if part is not None and isinstance(results[k], dispatch.Tensor)]
    if not weighted:
        return [None] * len(live)
    gradients = tape.gradient([t for t, _ in weighted], sources,
                              output_gradients=[part for _, part in weighted])
    return gradients if RECORDING.tapes else [dispatch.value_of(x) for x in gradients]
