"""Rules for Python builtins, for code written on Python floats and lists, and for reading a
named tuple's field (`np.linalg.eigh(a).eigenvalues`): VJPs and JVPs. A function of Python
numbers has a diagonal Jacobian, so one rule per argument (`g` times the partial
derivative) serves as its VJP and its JVP: `define_pointwise` (the `math` module's rules
are in python_math.py)."""
import builtins
import linecache
import operator

import numpy as np

from srcad.errors import Location, MissingRuleError, UnsupportedSyntaxError
from srcad.ops.numpy_ufuncs import absolute_jvp, absolute_vjp, define_pointwise
from srcad.ops.registry import declare, defjvp, defvjp, jvp_rules, nondifferentiable, vjp_rules
from srcad.kernels.adjoints import (accumulate, dtype_of, field, field_adjoint, field_tangent,
                                    held_attribute, held_item, held_tangent, index_adjoint,
                                    record_tangent, unbroadcast, unpacked_adjoint)
from srcad.kernels.tangents import broadcast_like, dense


def sum_vjp_iterable(g, ans, iterable, start=0):
    """`sum(xs)` adds the elements (or the rows of an array) one by one."""
    if isinstance(iterable, np.ndarray):
        return np.broadcast_to(g, iterable.shape)
    return type(iterable)(unbroadcast(g, item) for item in iterable) \
        if isinstance(iterable, (list, tuple)) else [unbroadcast(g, item) for item in iterable]


def sequence_vjp(g, ans, iterable=()):
    """`list(xs)` / `tuple(xs)`: item i of the result is item i of `xs` (for an array, its
    row i); a dict's keys carry no derivative."""
    if isinstance(iterable, np.ndarray):
        return np.stack(dense(g, list(iterable))) if len(iterable) \
            else np.zeros(np.shape(iterable), np.promote_types(iterable.dtype, np.float16))
    if isinstance(iterable, dict):
        return dict.fromkeys(iterable)  # (a zero per key: a dict display reads them)
    return type(iterable)(g) if isinstance(iterable, (list, tuple)) else list(g)


def extremum_rule(position: int):
    """The rule of argument `position` of `max`/`min`: the cotangent goes to the value that
    was returned (the first of equal ones, as Python picks it); over one iterable, to that
    element."""
    def rule(g, ans, *args, key=None, default=None):
        if len(args) == 1:
            items = list(args[0])
            chosen = _chosen(ans, items)
            if isinstance(args[0], np.ndarray):  # an array's elements: an array cotangent
                return None if chosen is None else index_adjoint(g, args[0], chosen)
            return tuple(g if k == chosen else None for k in range(len(items)))
        return g if _chosen(ans, args) == position else 0.0 * g
    rule.__name__ = f"extremum_vjp_{position}"
    return rule


def _chosen(ans, items):
    """The position of the item `max`/`min` returned: the first that is `ans`, or else (an
    array's elements are new objects at each iteration) the first equal to it; None if
    none is (`default` was returned)."""
    position = next((k for k, item in enumerate(items) if item is ans), None)
    if position is None:
        position = next((k for k, item in enumerate(items)
                         if np.array_equal(item, ans, equal_nan=True)), None)
    return position


def extremum_jvp(position: int):
    """The rule of argument `position` of `max`/`min`: the returned value's tangent is that
    of the argument returned (over one iterable, of the element returned), zero for the
    others."""
    def rule(g, ans, *args, key=None, default=None):
        if len(args) == 1:  # g: the iterable's tangents, None for an element without one
            items = list(args[0])
            chosen = _chosen(ans, items)
            return dense([None], [ans])[0] if chosen is None \
                else dense([g[chosen]], [items[chosen]])[0]
        return g if _chosen(ans, args) == position else dense([None], [ans])[0]
    rule.__name__ = f"extremum_jvp_{position}"
    return rule


defvjp(builtins.sum, sum_vjp_iterable, lambda g, ans, iterable, start=0: unbroadcast(g, start))
defjvp(builtins.sum,
       lambda g, ans, iterable, start=0: broadcast_like(sum(dense(g, iterable), 0.0), ans),
       lambda g, ans, iterable, start=0: broadcast_like(g, ans))
# float(x) of a NumPy complex number, and np.float64(x), keep the real part (x's tangent's;
# the real part of the cotangent, which a real x's may carry an imaginary part beside)
define_pointwise(float, lambda g, ans, x: np.real(g))
# NumPy's scalar types as casts (`np.float64(x)`, like `float(x)`: the cotangent in x's
# precision); integer and boolean casts have no derivative (as `int`). (The narrower float
# types round off what a finite-difference check could confirm: they have no rule.)
defvjp(np.float64, lambda g, ans, x: np.asarray(np.real(g), dtype_of(x))[()])
defjvp(np.float64, lambda g, ans, x: np.float64(np.real(g)))
nondifferentiable(np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                  np.uint32, np.uint64)
# `list(xs)` / `tuple(xs)`: item i's tangent is item i's of `xs`; a dict's keys have none
# (`list(g)` of its tangent would list the keys)
# (both branches a `list(...)`: the tangent is a list of its own, aliasing.py tells)
defvjp(list, sequence_vjp)
defjvp(list, lambda g, ans, iterable=(): list((None,) * len(ans)) if isinstance(iterable, dict)
       else list(g))
defvjp(tuple, sequence_vjp)
defjvp(tuple, lambda g, ans, iterable=(): tuple((None,) * len(ans)) if isinstance(iterable, dict)
       else tuple(g))


def _sorting_order(iterable, key=None, reverse=False) -> list:
    """Where each item of `sorted(iterable, key=key, reverse=reverse)` came from: sorting
    the positions by their items' keys is as stable as `sorted` itself."""
    items = list(iterable)
    return sorted(range(len(items)), key=lambda i: items[i] if key is None else key(items[i]),
                  reverse=reverse)


def sorted_vjp(g, ans, iterable, key=None, reverse=False):
    """`sorted(xs)` permutes the items: each gets the cotangent of the place it went to (an
    array's rows theirs); a dict's keys carry no derivative."""
    if isinstance(iterable, dict):
        return None
    cotangents = [None] * len(ans)
    for place, origin in enumerate(_sorting_order(iterable, key, reverse)):
        cotangents[origin] = g[place]
    return sequence_vjp(cotangents, None, iterable)


def sorted_jvp(g, ans, iterable, key=None, reverse=False):
    """`sorted(xs)`: the tangents of the items, in the order they were sorted into."""
    if isinstance(iterable, dict):
        return [None] * len(ans)
    return [g[origin] for origin in _sorting_order(iterable, key, reverse)]


defvjp(sorted, sorted_vjp, None, None)
defjvp(sorted, sorted_jvp, None, None)
declare(sorted_jvp, sequence="shares")  # a new list of the tangents (analysis/aliasing.py)
nondifferentiable(_sorting_order)  # (positions: a derivative of the rules reads them)


def dict_copy_rule(g, ans, mapping=(), **items):
    """`dict(d)` of a dict `d` (what `d.copy()` runs): each key's derivative is `d`'s
    (VJP and JVP alike); built from pairs or keywords, a dict has no rule here."""
    if items or not isinstance(mapping, dict):
        raise MissingRuleError("srcad differentiates `dict(d)` of a dict `d` (a copy), not "
                               "a dict built from pairs or keyword arguments.",
                               fix="write a dict display instead: `{'a': x, 'b': y}`.")
    return None if g is None else {key: g.get(key) for key in mapping}


defvjp(dict, dict_copy_rule)
defjvp(dict, dict_copy_rule)


def starred_parts(value, before: int, after: int) -> tuple:
    """What `first, *rest, last = value` unpacks (`before` names, then `rest`, a list, then
    `after` names), raising as Python does when `value` is too short."""
    items = list(value)
    if len(items) < before + after:
        raise ValueError(f"not enough values to unpack (expected at least {before + after}, "
                         f"got {len(items)})")
    end = len(items) - after
    return (*items[:before], items[before:end], *items[end:])


def _items_of_parts(parts, before: int, count: int) -> tuple:
    """The items' derivatives in `starred_parts`'s result `parts` (the middle one a list),
    None for those without."""
    middle = parts[before] if parts[before] is not None else [None] * count
    return (*parts[:before], *middle, *parts[before + 1:])


defvjp(starred_parts, lambda g, ans, value, before, after: None if g is None else
       unpacked_adjoint(_items_of_parts(g, before, len(ans[before])), value), None, None)
defjvp(starred_parts, lambda g, ans, value, before, after: None if g is None else
       starred_parts(g, before, after), None, None)


def starred_call(fn, positional, keywords: dict):
    """`fn(*positional, **keywords)`: what the frontend writes for a call with `*xs` or
    `**kw` arguments; runtime/calls.py differentiates it as the call of `fn` it makes."""
    return fn(*positional, **keywords)


def starred_method(receiver, name: str, positional, keywords: dict):
    """`receiver.name(*positional, **keywords)`, as `starred_call` (a method's receiver may
    carry a derivative, as `x` in `x.reshape(*shape)` does)."""
    return getattr(receiver, name)(*positional, **keywords)


def without_out(out, fn, call: str, filename: str, lineno: int, col: int, function: str):
    """`fn`, for the call `fn(..., out=out)` when `out` is None (NumPy's own functions pass
    `out=out` on), which then is `fn(...)`: what the frontend writes for an `out=` argument
    known only when the call runs. An array `out` raises: srcad does not differentiate
    writes through `out=`."""
    if out is None:
        return fn
    raise UnsupportedSyntaxError(
        f"srcad cannot differentiate `out=` arguments (they write in place): `{call}(...)` "
        "is given an array.", Location(filename, lineno, col, None, function,
                                       linecache.getline(filename, lineno)),
        "assign the result instead: `y = np.add(a, b)`")


nondifferentiable(without_out)


def merged(a: dict, b: dict) -> dict:
    """`{**a, **b}`: what the frontend writes for a dict display with `**` entries."""
    return {**a, **b}


def _merged_vjp(first: bool):
    """Each key's cotangent goes to the mapping the key's value came from (`b` where both
    have it)."""
    def rule(g, ans, a, b):
        if g is None:
            return None
        return {key: None if first and key in b else g.get(key) for key in (a if first else b)}
    return rule


def _merged_jvp(first: bool):
    """A key of the result takes its tangent from the mapping its value came from."""
    def rule(g, ans, a, b):
        if g is None:
            return None
        return {key: g.get(key) if (key in b) != first else None for key in ans}
    return rule


defvjp(merged, _merged_vjp(True), _merged_vjp(False))
defjvp(merged, _merged_jvp(True), _merged_jvp(False))
defvjp(abs, absolute_vjp)  # np.abs's rules: conj(z) / |z| for complex z
defjvp(abs, absolute_jvp)
for _extremum in (builtins.max, builtins.min):
    defvjp(_extremum, *[extremum_rule(position) for position in range(8)])
    defjvp(_extremum, *[extremum_jvp(position) for position in range(8)])
defvjp(builtins.pow, *vjp_rules(operator.pow).rules)
defjvp(builtins.pow, *jvp_rules(operator.pow).rules)

nondifferentiable(int, bool, len, range, isinstance, round)


# ---- a dict's views: what `d.items()`, `d.values()` and `d.keys()` run as (runtime/calls.py) ----
def dict_items(mapping: dict) -> list:
    """`mapping.items()`, as the list of (key, value) pairs a loop over it sees (a method of
    the builtin dict has no source; this has rules)."""
    return list(mapping.items())


def dict_values(mapping: dict) -> list:
    """`mapping.values()`, as a list."""
    return list(mapping.values())


def dict_get(mapping: dict, key, default=None):
    """`mapping.get(key, default)`."""
    return mapping.get(key, default)


def dict_keys(mapping: dict):
    """`mapping.keys()`: keys carry no derivative."""
    return mapping.keys()


def indexable(values):
    """What a loop over `zip`, `enumerate` or `reversed` of `values` indexes (the frontend
    rewrites such loops over indices, frontend/desugar.py): `values` itself where indexing
    gives what iterating does (an array, list, tuple, range or string), else the list that
    iterating gives: a dict's keys (indexing a dict reads its values), a set's or a view's
    items. Only what is passed on carries a derivative (a dict's keys have none)."""
    return values if isinstance(values, INDEXED_AS_ITERATED) else list(values)


INDEXED_AS_ITERATED = (np.ndarray, list, tuple, range, str)


def _passed_on(g, ans, values):  # (not `ans is values`: an inlined rule may copy a display)
    if isinstance(values, INDEXED_AS_ITERATED):
        return g
    return dict.fromkeys(values) if isinstance(values, dict) else None  # (zero per key)


def batched_indexable(ans, tangents, values):
    """`indexable(values)` on batched tangents: the tangent of what it passes on."""
    return tangents[0] if isinstance(values, INDEXED_AS_ITERATED) else None


defvjp(indexable, _passed_on)
# (it returns its argument itself, but for a dict or a set)
declare(indexable, view=True, batched=batched_indexable)
defjvp(indexable, lambda g, ans, values: g if isinstance(values, INDEXED_AS_ITERATED)
       else [None] * len(ans))  # (a dict's keys, a set's items: no tangent)


# ---- `raise` and `assert`, which the frontend writes as calls (frontend/desugar.py) --------
def raised(exception, cause=None):
    """`raise exception` (`from cause`): a statement of the user's validating inputs, run
    by the forward sweep."""
    if cause is not None:
        raise exception from cause
    raise exception


def assertion_failed(*message):
    """`assert test, message` when `test` is false."""
    raise AssertionError(*message)


nondifferentiable(raised, assertion_failed)
declare(raised, control=True)
declare(assertion_failed, control=True)


# ---- `+` and `*` of lists and tuples: concatenation and repetition ---------------------------
# `a + b` and `a * n` where `a` may be a list or tuple (transform/sequences.py picks these in
# place of the operators' rules): `+` of arrays adds, of sequences joins, and a sequence's
# items take their own slices of the output's cotangent, not all of it.
def joined(a, b):
    """`a + b`: what the primal runs; these are its rules."""
    return a + b


def repeated(a, b):
    """`a * b`: what the primal runs; these are its rules."""
    return a * b


def _sequences(*values) -> bool:
    return all(isinstance(v, (list, tuple)) for v in values)


def _like(sequence, items):
    """`items` as a tuple if `sequence` is one, else as a list (not `type(sequence)(items)`:
    a derivative of these rules cannot follow a callee computed from a value)."""
    return tuple(items) if isinstance(sequence, tuple) else list(items)


def _joined_vjp(first: bool):
    def rule(g, ans, a, b):
        if not _sequences(a, b):
            return unbroadcast(g, a if first else b)
        if g is None:
            return None
        return _like(a, g[:len(a)]) if first else _like(b, g[len(a):])
    return rule


def _joined_jvp(first: bool):
    def rule(g, ans, a, b):
        if not _sequences(a, b):
            return broadcast_like(g, ans)
        padding = [None] * len(b if first else a)
        return _like(ans, list(g) + padding if first else padding + list(g))
    return rule


def _repetition(items, count) -> bool:
    """Whether `items * count` repeats a sequence (else NumPy multiplies)."""
    return isinstance(items, (list, tuple)) and isinstance(count, (int, np.integer))


def _repeated_vjp(first: bool):
    """The rule of argument `a` (`first`) or `b`: only a repeated sequence has one (its
    count is an integer), or either factor of a product."""
    def rule(g, ans, a, b):
        mine, other = (a, b) if first else (b, a)
        if _repetition(other, mine):
            return None
        if not _repetition(mine, other):
            return unbroadcast(g * b, a) if first else unbroadcast(g * a, b)
        if g is None:
            return None
        size = len(mine)
        total = [None] * size
        for k, item in enumerate(g):  # item k of the output is item k % size of `mine`
            total[k % size] = accumulate(total[k % size], item)
        return _like(mine, total)
    return rule


def _repeated_jvp(first: bool):
    def rule(g, ans, a, b):
        mine, other = (a, b) if first else (b, a)
        if _repetition(other, mine):
            return _like(ans, [None] * len(ans))
        if not _repetition(mine, other):  # (a list's tangent as the array NumPy makes of it)
            g = np.asarray(dense(g, mine)) if isinstance(g, (list, tuple)) else g
            return broadcast_like(g * other, ans)
        return _like(ans, list(g) * other)
    return rule


defvjp(joined, _joined_vjp(True), _joined_vjp(False))
defjvp(joined, _joined_jvp(True), _joined_jvp(False))
defvjp(repeated, _repeated_vjp(True), _repeated_vjp(False))
defjvp(repeated, _repeated_jvp(True), _repeated_jvp(False))
for _sequence_maker in (joined, repeated):  # new lists of the items (analysis/aliasing.py)
    declare(_sequence_maker, sequence="shares")


def _by_key(mapping: dict, cotangents) -> dict | None:
    """The adjoint of `mapping` from the cotangents of its items in order (None: zero)."""
    return None if cotangents is None else dict(zip(mapping, cotangents))


defvjp(dict_items, lambda g, ans, mapping: _by_key(
    mapping, None if g is None else [None if pair is None else pair[1] for pair in g]))
defjvp(dict_items, lambda g, ans, mapping: [(None, g[key]) for key in mapping])
defvjp(dict_values, lambda g, ans, mapping: _by_key(mapping, g))
defjvp(dict_values, lambda g, ans, mapping: [g[key] for key in mapping])
# `mapping.get(key, default)`: the cotangent goes to the item read, or to the default
defvjp(dict_get, lambda g, ans, mapping, key, default=None: {
           k: g if k == key else None for k in mapping},
       None, lambda g, ans, mapping, key, default=None: _zero_like(default)
       if key in mapping else g)
defjvp(dict_get, lambda g, ans, mapping, key, default=None: g[key] if key in mapping
       else _zero_like(ans), None, lambda g, ans, mapping, key, default=None:
       _zero_like(ans) if key in mapping else g)


def _zero_like(value):
    return np.zeros(np.shape(value), np.promote_types(dtype_of(value), np.float16))

nondifferentiable(dict_keys)


# `result.field` of a named tuple or a dataclass: the tuple's adjoint holds `g` at the
# field's place; its tangent (a tuple of the fields' tangents) gives the field's.
defvjp(field, lambda g, ans, value, name: field_adjoint(g, value, name), None)
defjvp(field, lambda g, ans, value, name: field_tangent(g, value, name), None)
defvjp(held_attribute, lambda g, ans, value, name, where: field_adjoint(g, value, name), None,
       None)
defjvp(held_attribute, lambda g, ans, value, name, where: held_tangent(g, value, name), None,
       None)
defvjp(held_item, lambda g, ans, container, key, where: index_adjoint(g, container, key), None,
       None)
defjvp(held_item, lambda g, ans, container, key, where: g[key], None, None)
for _tangent in (record_tangent, held_tangent):  # (linear in a record's tangent, a dict)
    defvjp(_tangent, lambda g, ans, t, record, name: {name: g}, None, None)
    defjvp(_tangent, lambda g, ans, t, record, name: record_tangent(g, record, name), None,
           None)

for _container in (list, tuple, dict):  # of their argument's items (analysis/aliasing.py)
    declare(_container, sequence="shares")
