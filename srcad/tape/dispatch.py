"""dispatch: one NumPy operation on tensors → its plain NumPy result wrapped as a tensor, and
one node on every recording tape that tracks an input.

A node is a plain tuple, built once and shared by every tape that records it:

    (rules, args, kwargs, ids, out_id, out)

`rules` are the shared registry's VJP rules of the callee (one per positional parameter,
`rule(g, ans, *args, **kwargs)`), `args`/`kwargs` the call's arguments with each tensor
replaced by its value (a list of tensors stays a list), `ids` the id of each positional
argument's tensor (None for a non-tensor, a tuple for a list), `out_id` the result's id (a
tuple of ids for a tuple of results) and `out` its value. Arrays a node holds are never
written again (`inplace` copies before writing anything else refers to).

Invariant: the value of an operation on tensors is exactly what NumPy computes on their
values. Without a recording tape, or when no input is tracked, an operation costs the NumPy
call plus one small object; nothing is recorded and nothing is kept.
"""
from __future__ import annotations

import operator

import numpy as np

from srcad.errors import MissingRuleError
from srcad.kernels.adjoints import holds_floats
from srcad.ops import is_nondifferentiable, vjp_rules
from srcad.ops.array_arguments import array_positions
from srcad.ops.registry import rule_slot
from srcad.tape.errors import TapeConversionError, caller_location
from srcad.tape.state import RECORDING, new_id

Tensor = None  # the tensor class; set by `use_tensor_class` (its methods call this module)
_new_object = object.__new__
_WRAPPED = (np.ndarray, np.generic, float)


def use_tensor_class(cls) -> None:
    """Make `cls` the class of every tensor this module creates."""
    global Tensor
    Tensor = cls


def new_tensor(value):
    """A fresh tensor (a new id, tracked by no tape) holding `value` as it is."""
    tensor = _new_object(Tensor)
    tensor._value = value
    tensor._id = new_id()
    tensor._alias = None
    return tensor


def handle(value, tensor_id):
    """A tensor for an existing id: how the backward sweep hands a recorded value to a rule
    so that an outer tape, which tracks that id, records what the rule computes."""
    tensor = _new_object(Tensor)
    tensor._value = value
    tensor._id = tensor_id
    tensor._alias = None
    return tensor


def is_live(tensor) -> bool:
    """Whether a recording tape tracks `tensor`, i.e. it carries a gradient right now."""
    if type(tensor) is not Tensor:
        tensor._read()  # a Variable: tapes that watch accessed variables watch it now
    return any(tensor._id in tape._tracked for tape in RECORDING.tapes)


# ---- operators: one or two arguments, no keywords (the hot path) ---------------------------
def unary(op, rules, a):
    """`op(a)` for the tensor `a` (a Variable is read)."""
    if type(a) is Tensor:
        av, ia = a._value, a._id
    else:
        av, ia = a._read()
    value = op(av)
    out = _new_object(Tensor)
    out._value = value
    out._id = out_id = new_id()
    out._alias = None
    tapes = RECORDING.tapes
    if tapes:
        node = None
        for tape in tapes:
            tracked = tape._tracked
            if ia in tracked:
                if node is None:
                    node = (rules, (av,), None, (ia,), out_id, value)
                tape._nodes.append(node)
                tracked.add(out_id)
    return out


def binary(op, rules, a, b):
    """`op(a, b)` where at least one of `a`, `b` is a tensor."""
    if type(a) is Tensor:
        av, ia = a._value, a._id
    elif isinstance(a, Tensor):
        av, ia = a._read()
    else:
        av, ia = a, None
    if type(b) is Tensor:
        bv, ib = b._value, b._id
    elif isinstance(b, Tensor):
        bv, ib = b._read()
    else:
        bv, ib = b, None
    value = op(av, bv)
    out = _new_object(Tensor)
    out._value = value
    out._id = out_id = new_id()
    out._alias = None
    tapes = RECORDING.tapes
    if tapes:
        node = None
        for tape in tapes:
            tracked = tape._tracked
            if ia in tracked or ib in tracked:
                if node is None:  # (a list operand as NumPy's array of it, for the rules)
                    node = (rules, (_operand(av, ia), _operand(bv, ib)), None, (ia, ib),
                            out_id, value)
                tape._nodes.append(node)
                tracked.add(out_id)
    return out


def constant_result(op, *args):
    """`op(*args)` for an operation without a derivative (comparison, floor division):
    computed on values, wrapped, never recorded."""
    return new_tensor(op(*[value_of(a) for a in args]))


def value_of(x):
    """The value of a tensor (a Variable is read), anything else unchanged."""
    if type(x) is Tensor:
        return x._value
    if isinstance(x, Tensor):
        return x._read()[0]
    return x


# ---- indexing ------------------------------------------------------------------------------
def getitem(tensor, index):
    """`tensor[index]`: the NumPy result (a view for basic indexing), recorded with the
    registry's rule for `operator.getitem`. `index` may hold tensors (masks, positions)."""
    if type(tensor) is Tensor:
        value, tensor_id = tensor._value, tensor._id
    else:
        value, tensor_id = tensor._read()
    raw_index = unwrap_index(index)
    result = value[raw_index]
    out = new_tensor(result)
    tapes = RECORDING.tapes
    if tapes:
        record_on(tapes, (vjp_rules(operator.getitem).rules, (value, kept(raw_index)),
                          None, (tensor_id, None), out._id, result))
    return out, raw_index


def unwrap_index(index):
    """An index with every tensor in it replaced by its value (integers and slices as is)."""
    kind = type(index)
    if kind is int or kind is slice:
        return index
    if kind is tuple:
        return tuple(value_of(part) for part in index)
    return value_of(index)


# ---- any NumPy function or ufunc ---------------------------------------------------------
def call(func, args, kwargs, implementation=None):
    """`func(*args, **kwargs)` with tensors anywhere in the positional arguments (also inside
    lists and tuples, as `np.stack` takes them) or as keyword values.

    Recorded with the registry's rules of `func`. A function the registry marks as
    non-differentiable, or whose result holds no floats (a shape, a mask, an index), gives
    constant tensors. A float result computed from a tracked input by a function without
    rules is recorded with rules that raise `MissingRuleError` (naming this call's line) if
    a gradient flows through it, as TensorFlow does: never a silent zero, and using only
    such a result's shape stays possible.
    """
    raw_args, ids = unwrap_arguments(args)
    raw_kwargs = {key: value_of(v) for key, v in kwargs.items()} if kwargs else {}
    value = (implementation or func)(*raw_args, **raw_kwargs)
    tapes = RECORDING.tapes
    recorders = [tape for tape in tapes if any_tracked(tape._tracked, ids)] if tapes else ()
    if kwargs and tapes and any(isinstance(v, Tensor) and is_live(v) for v in kwargs.values()):
        if not is_nondifferentiable(func) and holds_floats(value):
            raise MissingRuleError(
                f"tape mode differentiates {_name(func)} only through positional arguments; "
                "a tensor that carries a gradient was passed by keyword.",
                caller_location(), fix="pass it positionally.")
    rules = None
    if recorders:
        if is_nondifferentiable(func) or not holds_floats(value):
            recorders = ()
        else:
            rules = vjp_rules(func)
            rules = missing_rules(func, len(ids)) if rules is None else rules.rules
            _check_rule_coverage(func, rules, ids, tapes)
    out, out_id = wrap(value)
    if recorders and out_id is not None:
        raw_args = _with_arrays(func, raw_args, ids)
        ids = NestedIds(ids) if any(type(i) is tuple for i in ids) else tuple(ids)
        node = (rules, tuple(kept(a, i) for a, i in zip(raw_args, ids)),
                {key: kept(v) for key, v in raw_kwargs.items()} or None, ids, out_id, value)
        for tape in recorders:
            tape._nodes.append(node)
            _track(tape._tracked, out_id)
    return out


def _with_arrays(func, raw_args: list, ids) -> list:
    """`raw_args` with the array NumPy made of each list or tuple it took as one
    (`np.dot(x, [1.0, 2.0])`): the rules are written for arrays (ops/array_arguments.py);
    a cotangent reaches the tensors in the list by its rows."""
    if not any(type(a) in (list, tuple) for a in raw_args):
        return raw_args
    positions = set(array_positions(func, len(raw_args)))
    return [np.asarray(a) if k in positions and type(a) in (list, tuple) else a
            for k, a in enumerate(raw_args)]


# NumPy functions that write into their first argument: `dispatch.call` would change the
# tensor's array behind the tape's back, so the gradients would silently be wrong.
IN_PLACE_FUNCTIONS = {
    np.put_along_axis: "`y[np.arange(n)[:, None], j] = values` (an indexed write, recorded)",
    np.put: "`y[np.unravel_index(ind, y.shape)] = values` (an indexed write, recorded)",
    np.place: "`y[mask] = values` (an indexed write, recorded) or `np.where(mask, values, y)`",
    np.putmask: "`y = np.where(mask, values, y)`",
    np.fill_diagonal: "`y[np.diag_indices(n)] = value` (an indexed write, recorded)",
}


def refuse_in_place(func, args, kwargs) -> None:
    """Refuse a NumPy function that writes into an array in place (`np.put_along_axis`,
    `np.fill_diagonal`, ...) when a tensor it reads or writes carries a gradient: tape mode
    records writes made by indexing and operators only. Without a recording tape that
    tracks them, the call runs on the values, as NumPy would."""
    if func not in IN_PLACE_FUNCTIONS:
        return
    _, ids = unwrap_arguments(list(args) + list(kwargs.values()))
    if any(any_tracked(tape._tracked, ids) for tape in RECORDING.tapes):
        raise MissingRuleError(
            f"tape mode cannot record {_name(func)}, which writes into an array in place; a "
            "tensor the tape differentiates is written or written from, so the gradient "
            "would be wrong.", caller_location(),
            fix=f"write it as {IN_PLACE_FUNCTIONS[func]} instead.")


def _operand(value, tensor_id):
    """What a binary node keeps of an operand: `kept`, a list as NumPy's array of it."""
    return np.array(value) if type(value) in (list, tuple) else kept(value, tensor_id)


def kept(value, tensor_id=None):
    """What a node keeps of an operand for its rules, which read it when the gradient is
    computed: a tensor's value as it is (writes into tensors copy on write, see inplace),
    and of anything else a copy of each array in it, in lists and tuples too (`w = v[:-1];
    p = w * x; v += 1` with `v` a plain array wrote into the `w` the product's rule reads
    later: a wrong gradient)."""
    if tensor_id is not None and type(tensor_id) is not tuple:
        return value
    kind = type(value)
    if isinstance(value, np.ndarray):  # (a subclass too: np.memmap is written in place)
        return value.copy()
    if kind is list or kind is tuple:
        inner = tensor_id or (None,) * len(value)
        return kind(kept(v, i) for v, i in zip(value, inner))
    return value


def unwrap_arguments(args):
    """(values, ids): each tensor replaced by its value, lists and tuples of tensors by lists
    and tuples of values; ids parallel, None where no tensor is."""
    values, ids = [], []
    for arg in args:
        kind = type(arg)
        if kind is Tensor:
            values.append(arg._value)
            ids.append(arg._id)
        elif isinstance(arg, Tensor):
            value, tensor_id = arg._read()
            values.append(value)
            ids.append(tensor_id)
        elif kind is list or kind is tuple:
            inner_values, inner_ids = unwrap_arguments(arg)
            values.append(kind(inner_values))
            ids.append(tuple(inner_ids) if any(i is not None for i in inner_ids) else None)
        else:
            values.append(arg)
            ids.append(None)
    return values, ids


class NestedIds(tuple):
    """The ids of a node some of whose arguments are lists of tensors (tuples inside)."""

    __slots__ = ()


def wrap(value):
    """(result with arrays as tensors, their id or tuple of ids); other results as they are.
    A tuple, list or named tuple of arrays (`np.split`, `np.linalg.eigh`) holds tensors."""
    if isinstance(value, _WRAPPED):
        tensor = new_tensor(value)
        return tensor, tensor._id
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, _WRAPPED) for v in value):
        tensors = [new_tensor(v) for v in value]
        return same_kind(value, tensors), tuple(t._id for t in tensors)
    return value, None


def same_kind(like, items):
    """`items` as a sequence of `like`'s type: a list, a tuple or a named tuple."""
    if hasattr(type(like), "_fields"):  # a named tuple takes its fields one by one
        return type(like)(*items)
    return type(like)(items)


def any_tracked(tracked, ids) -> bool:
    """Whether any id in `ids` (which may nest tuples of ids) is in the set `tracked`."""
    for tensor_id in ids:
        if tensor_id is None:
            continue
        if type(tensor_id) is tuple:
            if any_tracked(tracked, tensor_id):
                return True
        elif tensor_id in tracked:
            return True
    return False


def _track(tracked, out_id):
    if type(out_id) is tuple:
        tracked.update(out_id)
    else:
        tracked.add(out_id)


def record_on(tapes, node):
    """Append `node` to each of `tapes` that tracks one of its inputs."""
    for tape in tapes:
        if any_tracked(tape._tracked, node[3]):
            tape._nodes.append(node)
            _track(tape._tracked, node[4])


def missing_rules(func, count: int) -> tuple:
    """Rules for a function without any: each raises `MissingRuleError` for this call."""
    location = caller_location()

    def missing(g, ans, *args, **kwargs):
        raise MissingRuleError(
            f"srcad has no derivative rule for {_name(func)}, and the gradient flows "
            "through it (the call is shown below).", location,
            fix=f"register one with `srcad.defvjp({_name(func)}, lambda g, ans, x: ...)`: "
            "one rule per positional argument, `None` for an argument without a gradient.")

    return (missing,) * count


def _check_rule_coverage(func, rules, ids, tapes):
    """A tracked argument beyond the registered rules would silently get no gradient."""
    for position, tensor_id in enumerate(ids):
        if rule_slot(rules, position) is None and tensor_id is not None and \
                any(any_tracked(tape._tracked, (tensor_id,)) for tape in tapes):
            raise MissingRuleError(
                f"{_name(func)} has rules for {len(rules)} positional argument(s), but a value "
                f"the tape differentiates is argument {position}.", caller_location(),
                fix=f"register a rule for every positional argument of {_name(func)} with "
                "`srcad.defvjp`.")


def _name(func) -> str:
    module = getattr(func, "__module__", None) or "numpy"
    name = getattr(func, "__name__", repr(func))
    return f"`np.{name}`" if module.startswith("numpy") else f"`{module}.{name}`"


def conversion_error(what: str) -> TapeConversionError:
    """The error for turning a tensor that carries a gradient into a plain value."""
    return TapeConversionError(
        f"{what} a tensor that a recording GradientTape differentiates; the plain NumPy "
        "value would carry no gradient, so the derivative would be silently lost (a write "
        "into an array made by np.zeros or np.empty does this, as do np.asarray and float).",
        caller_location(),
        fix="keep the value a tensor: make buffers from one (`out = np.zeros_like(x, "
        "shape=(n,))`) or build a list and `np.stack` it; take the value deliberately with "
        "`t.numpy()`, or convert inside `tape.stop_recording()`.")
