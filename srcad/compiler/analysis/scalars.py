"""scalars: names that surely hold a number (shape `()`) when given parameters are floats.

`srcad.grad` of a function of Python floats is specialised on that fact: an adjoint rule's
`unbroadcast(g, x)` (and a tangent rule's `broadcast_like`) is the identity when the
operation's output and `x` are both numbers, so the generated code leaves the call out. A
name is a number if every definition of it is: a float parameter, a numeric constant, a
copy of a number, or arithmetic, a one-output ufunc, a `math` function or `abs`/`float`
applied to numbers only, or the element of a loop over a `range`. Computed as a greatest
fixpoint, so loops and branches are covered; anything else (an array, another call's
result, another loop's element, a value written in place) is not.

Where parameters hold float64 arrays of known ranks (`grad`'s gradient-only program, made
for such arrays), an element read by integer indices (`p[0]`, `W[i, j]`) is a number too,
a NumPy float64: an ODE whose rates are `p[0]`..`p[3]` is then scalar code, with no
`unbroadcast` per operation and no copy of a rate pushed per step. So is an element of a
float64 array the function makes of them (`array_ranks`): an integrator's state `y[0]`.

`only_numbers` tells whether a whole function is such arithmetic (plus comparisons and
`range` loops): then `grad` may run an optimistic variant of it with `math` in place of
NumPy (transform/math_calls.py), because running it a second time changes nothing.
"""
from __future__ import annotations

import builtins
import operator

import gast
import numpy as np

from srcad.compiler.frontend import trees
from srcad.compiler.frontend.resolve import Loop, Operation, operations, walk
from srcad.ops.numpy_arrays import filled

_ARITHMETIC = {"+", "-", "*", "/", "**", "%", "//", "unary -", "unary +"}
_NUMBER_BUILTINS = {builtins.abs, builtins.float, builtins.pow}


def scalar_names(block: list, params, scalar_params: frozenset,
                 return_variable: str | None = None, elements: dict | None = None
                 ) -> frozenset:
    """The names of `block` (and its parameters) that hold numbers on every path, given that
    the parameters in `scalar_params` do, and that those of `elements` (see
    `element_sources`) hold float64 arrays of the given ranks. The element of a loop over a
    `range` is a number; so is `return_variable`, a lowered `return`'s value, if all it is
    given besides its first `None` is (that None is returned only where the function
    returns no value)."""
    if not scalar_params and not elements:
        return frozenset()
    candidates, ranges = {*params}, _made_by_range(block)
    for node in walk(block):
        if isinstance(node, Operation):
            candidates.update(node.targets)
        elif isinstance(node, Loop) and node.element and node.iterable in ranges:
            candidates.add(node.element)
    candidates -= set(params) - set(scalar_params)
    while True:  # (an operation none of whose targets is a candidate any more: not asked)
        size = len(candidates)
        for node in walk(block):
            if isinstance(node, Loop) and node.element and node.iterable not in ranges:
                candidates.discard(node.element)
            elif isinstance(node, Operation):
                if node.mutates:
                    candidates.discard(node.mutates)
                if not candidates.isdisjoint(node.targets) \
                        and not makes_a_number(node, candidates, elements) \
                        and not _placeholder(node, return_variable):
                    candidates.difference_update(node.targets)
        if len(candidates) == size:
            return frozenset(candidates)


def _made_by_range(block: list) -> set:
    """The names every definition of which is a `range(...)` call."""
    made, other = set(), set()
    for op in operations(block):
        (made if op.kind == "call" and op.callee is range else other).update(op.targets)
    return made - other


def _placeholder(op: Operation, return_variable) -> bool:
    """`return_variable = None`, as normalize writes it before the body."""
    return return_variable is not None and op.targets == (return_variable,) \
        and op.kind == "constant" and isinstance(getattr(op.statement, "value", None), gast.Constant) \
        and op.statement.value.value is None


def element_sources(block: list, arrays: dict) -> dict:
    """`arrays` (parameter → rank of the float64 array it holds) without the parameters the
    function binds again: indexing those gives float64 numbers wherever it happens."""
    if not arrays:
        return {}
    bound = {t for op in operations(block) for t in op.targets}
    bound.update(node.element for node in walk(block) if isinstance(node, Loop))
    return {name: rank for name, rank in arrays.items() if name not in bound}


def array_ranks(block: list, params, arrays: dict, numbers: frozenset) -> dict:
    """The names of `block` that hold float64 arrays of one known rank on every path, and
    that rank, given the parameters of `arrays` (parameter → the rank of the float64 array
    it holds) and the names of `numbers`: arithmetic and one-output ufuncs of such arrays
    and numbers (arrays of one rank), copies, and buffers filled element by element
    (`filled`, one axis). An element read of one of them (`y[0]` of an RK4 state) is then a
    number, as an element of such a parameter is. Writes into them keep both dtype and rank.
    A greatest fixpoint: each definition must give the rank its name is given."""
    if not arrays:
        return {}
    ranks: dict = {name: rank for name, rank in arrays.items()}
    for node in walk(block):
        if isinstance(node, Operation):
            for target in node.targets:
                ranks.setdefault(target, None)
    excluded = (set(params) - set(arrays)) | {
        node.element for node in walk(block) if isinstance(node, Loop) and node.element}
    for name in excluded:
        ranks.pop(name, None)
    while True:  # (optimistic: a name's rank is the first its definitions give)
        changed = False
        for node in walk(block):
            if isinstance(node, Operation) and len(node.targets) == 1 \
                    and ranks.get(node.targets[0], 0) is None:
                rank = _array_rank(node, ranks, numbers)
                if rank:
                    ranks[node.targets[0]] = rank
                    changed = True
        if not changed:
            break
    ranks = {name: rank for name, rank in ranks.items() if rank}
    while True:  # (then every definition must give it, else the name goes: a definition
        size = len(ranks)  # of names no longer ranked is not asked again)
        for node in walk(block):
            if isinstance(node, Operation) and not ranks.keys().isdisjoint(node.targets) and (
                    len(node.targets) != 1 or _array_rank(node, ranks, numbers)
                    != ranks.get(node.targets[0])):
                for target in node.targets:
                    ranks.pop(target, None)
        if len(ranks) == size:
            return ranks


def _array_rank(op: Operation, ranks: dict, numbers) -> int | None:
    """The rank of the float64 array `op` makes from those of `ranks` and `numbers`, or None."""
    if op.keywords:
        return None
    if op.kind == "copy":
        return ranks.get(op.args[0].id) if isinstance(op.args[0], gast.Name) else None
    if op.kind != "call" or op.method:
        return None
    if op.callee is filled:  # (np.zeros(n) written element by element: else it raises)
        return 1
    if not (op.label in _ARRAY_ARITHMETIC or _float64_ufunc(op.callee, len(op.args))):
        return None
    found = set()
    for argument in op.args:
        if isinstance(argument, gast.Name) and ranks.get(argument.id):
            found.add(ranks[argument.id])
        elif not _is_number_atom(argument, numbers):
            return None
    return found.pop() if len(found) == 1 else None


_ARRAY_ARITHMETIC = {"+", "-", "*", "/", "**", "unary -", "unary +"}


def _float64_ufunc(callee, count: int) -> bool:
    """Whether `callee` is a ufunc of one output that gives float64 for float64 inputs."""
    if not (isinstance(callee, np.ufunc) and callee.nout == 1 and callee.nin == count):
        return False
    known = _FLOAT64_UFUNCS.get(callee)
    if known is None:
        try:
            with np.errstate(all="ignore"):
                known = type(callee(*[np.float64(0.5)] * count)) is np.float64
        except Exception:
            known = False
        _FLOAT64_UFUNCS[callee] = known
    return known


_FLOAT64_UFUNCS: dict = {}  # ufunc → whether it gives float64 for float64 inputs


def makes_a_number(op: Operation, numbers: set, elements: dict | None = None) -> bool:
    """Whether `op` binds a number, given `numbers` and the arrays of `elements` (parameter
    → rank of a float64 array, see `element_sources`)."""
    if len(op.targets) != 1 or op.keywords:
        return False
    if elements and op.kind == "call" and op.callee is operator.getitem and not op.method:
        return _reads_an_element(op.args, numbers, elements)
    if op.kind == "constant":
        value = getattr(op.statement, "value", None)
        return isinstance(value, gast.Constant) and _is_number(value.value)
    if op.kind == "copy":
        return _is_number_atom(op.args[0], numbers)
    if op.kind != "call" or op.method or not _number_callee(op):
        return False
    return all(_is_number_atom(a, numbers) for a in op.args)


def _reads_an_element(args, numbers: set, elements: dict) -> bool:
    """`array[i]` or `array[i, j]`: one integer (or number: anything else raises) per axis
    of a float64 array of `elements`."""
    array, index = args
    if not (isinstance(array, gast.Name) and array.id in elements):
        return False
    indices = index.elts if isinstance(index, gast.Tuple) else [index]
    return len(indices) == elements[array.id] and all(
        _is_number_atom(i, numbers) and not (isinstance(i, gast.Constant)
                                             and isinstance(i.value, float))
        for i in indices)


def _number_callee(op: Operation) -> bool:
    callee = op.callee
    if op.label in _ARITHMETIC:
        return True
    if isinstance(callee, np.ufunc):
        return callee.nout == 1
    try:
        return callee in _NUMBER_BUILTINS or getattr(callee, "__module__", None) == "math"
    except TypeError:  # an unhashable callee
        return False


def _is_number_atom(node, numbers: set) -> bool:
    if isinstance(node, gast.Name):
        return node.id in numbers
    return isinstance(node, gast.Constant) and _is_number(node.value)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def only_numbers(block: list, numbers: frozenset, callee_of) -> bool:
    """Whether `block` computes nothing but numbers: every statement makes a number from
    numbers (see `scalar_names`), compares numbers, or makes a `range`. Such a program has no
    effect besides its result, so running it again is harmless: a faster variant specialised
    on floats may run first and hand a call over to the general program when it fails
    (transform/math_calls.py). `callee_of(func_node)` is the object a called name denotes."""
    for op in operations(block):
        if op.kind == "opaque":
            if not _compares_numbers(op.statement.value, numbers, callee_of):
                return False
        elif not (op.targets and set(op.targets) <= numbers
                  or op.kind == "call" and op.callee is range):
            return False
    return True


def _compares_numbers(expression, numbers: frozenset, callee_of) -> bool:
    """A comparison (`abs(x * x - a) > 1e-12 * a`) of numbers, calling only number functions."""
    if not isinstance(expression, gast.Compare):
        return False
    for node in trees.walk(expression):
        if isinstance(node, gast.Call):
            callee = callee_of(node.func)
            if node.keywords or not (any(callee is b for b in _NUMBER_BUILTINS)
                                     or isinstance(callee, np.ufunc)
                                     or getattr(callee, "__module__", None) == "math"):
                return False
        elif isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) \
                and node.id not in numbers and not _is_callee(node, expression):
            return False
    return True


def _is_callee(name: gast.Name, expression) -> bool:
    return any(isinstance(n, gast.Call) and _root(n.func) is name for n in trees.walk(expression))


def _root(node):
    while isinstance(node, gast.Attribute):
        node = node.value
    return node
