"""aliasing: names that may share memory, and a refusal where in-place updates meet them.

srcad differentiates `y[i] = v` and `x += v` by restoring overwritten values, which is sound
as long as what is written into is not also visible under another name read later: a view
(`row = y[0]`), a second name (`z = y`), a list element. NumPy keeps no record of views, so
this is decided by a points-to analysis over the function: each name may refer to a set of
abstract objects (a parameter, or the value an operation makes), and a name made by a view,
a copy of a name, a call without a known rule or unpacking refers to its sources' objects.
A list, tuple or dict is an object of its own that *holds* others (its items, what is
appended to it or stored in it): appending to a list writes the list, not the arrays it
holds, and indexing it or iterating over it gives the held objects. An in-place update is
refused, with an error that names both, when a name read afterwards may refer to the
updated object at that point, or to a container holding it, instead of risking a wrong
gradient.
"""
from __future__ import annotations

import inspect
import operator
import types

import gast
import numpy as np

from srcad.compiler.analysis.arrays import among
from srcad.compiler.frontend import trees
from srcad.compiler.frontend.resolve import (IN_PLACE_KINDS, OPERATORS, Branch, Loop, Operation,
                                            operations, own_names, walk)
from srcad.errors import MissingRuleError, UnsoundAliasingError
from srcad.kernels.adjoints import (field, field_tangent, held_attribute, held_item,
                                    held_tangent, record_tangent)
from srcad.kernels.pytrees import constructs_record, is_record_class
from srcad.kernels.tangents import owned
from srcad.ops import is_nondifferentiable, vjp_rules
from srcad.ops.numpy_arrays import copied
from srcad.ops.numpy_dtypes import converted
from srcad.ops.python_statements import attempt, new_record
from srcad.ops.registry import (UNKNOWN, is_view, makes_new_array, read_only_view,
                                sequence_result, view_of)
from srcad.runtime import calls
from srcad.runtime.methods import method_update

class Aliases:
    """Which abstract objects each name may refer to, over the whole function, and what
    each container object may hold; `argument_writes` maps each parameter whose memory the
    function may write into (`p[i] = v`, `p += v`, `p.append(v)`) to the refusal to raise
    where a caller passes it something mutable (`calls.transformed`); `own_writes` holds
    the ids of the in-place writes into memory the function surely made, where they run
    (flow-sensitive: a name rebound later to an argument's array writes into its own where
    it held only the function's)."""

    def __init__(self, points_to: dict, contents: dict, argument_writes: dict,
                 own_writes: frozenset = frozenset()):
        self.points_to = points_to
        self.contents = contents
        self.argument_writes = argument_writes
        self.own_writes = own_writes

    def group(self, name: str) -> set[str]:
        """Every name whose value may show memory of an object `name` may refer to: the
        same object, or a list, tuple or dict holding it."""
        objects = self.points_to.get(name, {name})
        return {n for n, pointed in self.points_to.items()
                if reach(pointed, self.contents) & objects} | {name}

    def may_be_the_callers(self, name: str) -> bool:
        """Whether `name` may refer to memory the function did not make (an argument's, a
        global's), whose writes the caller sees unless the backward sweep undoes them."""
        return any(_site(obj) is None for obj in self.points_to.get(name, {name}))


def reach(objects: set, contents: dict, prefix: str = "") -> set:
    """`objects` and everything they hold, at any depth (`contents[prefix + obj]`: what `obj`
    holds)."""
    reached, todo = set(objects), list(objects)
    while todo:
        for held in contents.get(prefix + todo.pop(), ()):
            if held not in reached:
                reached.add(held)
                todo.append(held)
    return reached


_HOLDS = "holds "  # a state's key for what an object holds (no name has a space)
_FIELD = "field "  # `field obj.name`: what `obj` was given to hold as `.name` (`obj.name = v`)
_OTHER = "other "  # `other obj`: what `obj` holds but through its attributes
_BEFORE = "before"  # in `field obj.name`: and what it held as `.name` before (`other obj`)
_OLDER = "'"  # `obj'2`: what an operation made on earlier trips of the loop at depth 2


def _base(obj: str) -> str:
    return obj.partition(_OLDER)[0]


def _age(obj: str) -> int | None:
    """The depth of the loop on whose earlier trips `obj` was made (None: the latest)."""
    _, older, depth = obj.partition(_OLDER)
    return int(depth) if older else None


def _site(obj: str) -> str | None:
    """The id of the operation that made `obj` (`name@id`, `name@id[]`), if one did."""
    _, at, site = _base(obj).rpartition("@")
    return site.rstrip("[]") if at else None


class _PointsTo:
    """Forward analysis; `before[id(op)]` is the state in front of each operation: the
    objects each name may refer to, and under `_HOLDS + obj` the objects `obj` may hold.

    A list, tuple or dict display makes a container object of its own, which *holds* its
    items' objects: appending to a list, or replacing one of its items, writes the
    container, not the arrays it holds, and reading an item gives the held objects.
    An object is named by the operation that made it; as a trip of a loop at depth d
    starts, what the operations of its body made on its earlier trips becomes one object of
    their own, `obj'd` (a recency abstraction, by loop): a list made and filled on each
    trip, then appended to another (a nested comprehension), is not the list the other one
    already holds, and an inner loop's trips do not confuse the outer one's. `everywhere` and
    `contents` gather, over the whole function, what each name may refer to and what each
    object may hold, the older objects folded into theirs (for `Aliases`)."""

    def __init__(self, return_variable=None, value_of=lambda name: None):
        self.before: dict[int, dict] = {}
        self.everywhere: dict[str, set] = {}
        self.return_variable = return_variable
        self.value_of = value_of  # a free name → the object it is bound to (or None)
        self.contents: dict[str, set] = {}
        self.containers: set[str] = set()  # the objects surely a list, tuple or dict
        self.arrays: set[str] = set()  # the objects surely NumPy arrays (made by NumPy)
        self.updated: dict[str, str] = {}  # `method_update`'s result → the copy it holds
        self.pairs: dict[str, tuple] = {}  # `call_jvp(C, ...)`'s result → (record, derivative)
        self.fresh: set[str] = set()  # the objects a call of nothing made (`State()`), which
        #                               hold under `_FIELD` keys what their attributes hold
        self.read_only: dict[str, str] = {}  # a read-only view's name → the object it is
        #                                      when NumPy made it new (`np.diag`)
        self.depth = 0  # how many loops enclose the operations being analysed

    def block(self, nodes, state: dict) -> dict:
        """The state after `nodes` from `state` (left as it is). Only an operation that
        writes in place keeps the state in front of it: a copy per operation made long
        functions quadratic."""
        state = dict(state)
        for node in nodes:
            if isinstance(node, Branch):
                state = _join(self.block(node.body, state), self.block(node.orelse, state))
            elif isinstance(node, Loop):
                state = self._loop(node, state)
            else:
                if written_into(node) is not None:
                    self.before[id(node)] = dict(state)
                self._operation(node, state)
        return state

    def _operation(self, op: Operation, state: dict) -> None:
        def objects(name):
            return state.get(name, {name})
        names = [a.id for a in op.args if hasattr(a, "id")]
        if op.writes_attribute:  # (into one object it replaces what it held; into one of
            stored = op.args[-1]   # several, or a loop's summary of them, it adds)
            written = objects(op.mutates)
            for container in written:
                self._hold(state, container, objects(stored.id) if hasattr(stored, "id")
                           else set(), op.args[1].value,
                           only=len(written) == 1 and _age(container) is None)
        elif op.kind in ("setitem", "append", "insert"):  # the item (or value) stored is held
            stored = op.args[-1]
            if hasattr(stored, "id") and op.mutates:
                for container in objects(op.mutates):
                    if op.kind != "setitem" or _base(container) not in self.arrays:
                        self._hold(state, container, objects(stored.id))  # (an array copies)
        if op.targets == (self.return_variable,):
            made = None
        elif op.kind == "constant" and isinstance(getattr(op.statement, "value", None),
                                                  gast.Constant):
            made = set()  # (None, a number, a string: no memory anything writes into)
        elif op.augmented and names and names[0] in self.updated:
            made = {self.updated[names[0]]}  # (`s = returned[1]`: the copy a method updated)
        elif op.augmented:  # `x += v`: the result is the object `x` was, not `v`
            made = objects(op.augmented) | (self._of(names, objects) if op.kind == "copy"
                                            else set())
        elif op.kind == "copy":
            made = self._of(names, objects)
        elif among(op.callee, (field, held_attribute)) and names:
            made = self._field(objects(names[0]), op.args[1].value, state)
        elif op.callee is method_update and len(op.targets) == 1 and names:
            made = {self._method_update(op, names, objects, state)}
        elif op.kind == "call" and self._constructs_record(op) and op.targets:
            made = {self._built_record(op, objects, state)}
        elif op.callee is copied and len(op.targets) == 1 and names:
            copy = f"{op.targets[0]}@{id(op)}"  # (a record's copy holds what it holds; an
            self.containers.add(copy)            # array's holds nothing)
            self._hold(state, copy, self._held(objects(names[0]), state))
            made = {copy}
        elif op.kind in ("unpack", "pop") or among(op.callee, _ITEM_READS):
            made = self._held(objects(names[0]), state) if names else None
        elif op.kind == "pack" or op.kind == "call" and (
                sequence_result(op.callee) is not None or self._copies_a_container(op, objects)):
            made = self._container(op, names, objects, state)
        elif op.kind == "call" and self._variant_call(op) is not None:
            made = self._returned_with_copies(op, objects, state)
        elif op.kind == "call" and read_only_view(op.callee) and len(op.targets) == 1:
            own = f"{op.targets[0]}@{id(op)}"  # new memory, or a view NumPy will not write
            self.read_only[op.targets[0]] = own  # through: a write into it is a write of `own`
            made = reach(self._of(op.read_names(), objects), state, _HOLDS) | {own}
        elif op.kind == "call" and op.callee is attempt:
            # a `try` body returns what it was passed, or new values; not the exception types
            made = reach(self._of([v.id for _, v in op.keywords], objects), state, _HOLDS)
        elif op.kind == "call" and (_may_return_a_view(op) or _array_without_copy(op)):
            # (a view of what it reads; of nothing: new memory, as `State()`'s instance)
            made = reach(self._of(op.read_names(), objects), state, _HOLDS) or None
        else:
            made = None
        if op.kind == "unpack" and names and names[0] in self.pairs:
            made = None  # (each part of a record's pair: below)
        for target in op.targets:
            state[target] = made if made is not None else {f"{target}@{id(op)}"}
            if made is None and op.kind == "call" and (op.callee is new_record or (
                    is_record_class(op.callee) and op.callee.__init__ is object.__init__)):
                self.fresh.add(f"{target}@{id(op)}")  # (`State()`: a record, empty)
            if op.kind == "unpack" and names and names[0] in self.pairs:
                state[target] = {self.pairs[names[0]][op.targets.index(target) % 2]}
            self._note(target, state[target])
            if made is None and op.kind == "call" and _makes_an_array(op):
                self.arrays.add(f"{target}@{id(op)}")

    def _variant_call(self, op: Operation):
        """For a call of a helper's functional variant (frontend/functional.py), directly
        or through `call_jvp`/`call_vjp` in a derivative program: `(variant, arguments,
        keywords, {position: tangent})`; else None."""
        if getattr(op.callee, "copied_parameters", None):
            return op.callee, op.args, op.keywords, {}
        if not (among(op.callee, (calls.call_jvp, calls.call_vjp)) and op.args
                and isinstance(op.args[0], gast.Name)):
            return None
        variant = self.value_of(op.args[0].id)
        if not getattr(variant, "copied_parameters", None):
            return None
        if op.callee is calls.call_vjp:
            return variant, op.args[2:], op.keywords, {}
        active, tangents = op.args[1], op.args[2]
        pairs = zip(active.elts, tangents.elts) if isinstance(active, gast.Tuple) \
            and isinstance(tangents, gast.Tuple) else ()
        return variant, op.args[3:], op.keywords, {
            position.value: tangent for position, tangent in pairs
            if isinstance(position, gast.Constant)}

    def _returned_with_copies(self, op: Operation, objects, state) -> set:
        """A helper's functional variant returns a tuple of its value, which may show what
        the other arguments (and their tangents) show, and copies of the arrays passed for
        its `copied_parameters`: new memory (their tangents too)."""
        variant, args, keywords, tangents = self._variant_call(op)
        parameters = list(inspect.signature(variant).parameters)
        copied = {p for p in variant.copied_parameters}
        bound = inspect.signature(variant).bind(*args, **dict(keywords)).arguments
        kept = [value for parameter, value in bound.items() if parameter not in copied] + [
            tangent for position, tangent in tangents.items()
            if (parameters[position] if isinstance(position, int) else position) not in copied]
        others = [n.id for value in kept for n in trees.walk(value) if isinstance(n, gast.Name)]
        container = f"{op.targets[0]}@{id(op)}"
        self.containers.add(container)
        self._hold(state, container, reach(self._of(others, objects), state, _HOLDS)
                   | {f"{container}[]"})
        return {container}

    def _container(self, op: Operation, names, objects, state) -> set:
        """A new list, tuple or dict, holding the objects of the items it was made of (the
        elements of a display; what `list(xs)` or `np.split(x)` takes them from)."""
        container = f"{op.targets[0]}@{id(op)}" if op.targets else f"@{id(op)}"
        self.containers.add(container)
        if op.kind == "pack":
            held = self._of(names, objects)
        elif sequence_result(op.callee) == "shares" or op.callee is owned:
            # `list(xs)` (and a tangent's copy that forward mode writes) holds what xs holds,
            written_out = set(op.read_names()) - set(names)  # `list([y])` y itself
            held = self._held(self._of(names, objects), state) | self._of(written_out, objects)
        else:  # new arrays (`np.linalg.eigh`)
            held = set()
        if len(names) < len(op.args) or not held:  # an item written out (`[[]]`), a new
            held = held | {f"{container}[]"}       # array: an object of its own
        self._hold(state, container, held)
        return {container}

    def _built_record(self, op: Operation, objects, state) -> str:
        """A new record holding what it was given and what its `__init__` made; in a
        derivative program (`a, t_a = call_jvp(C, ...)`), a pair of it and its derivative,
        which the unpacking after it takes apart (`pairs`)."""
        built = f"{op.targets[0]}@{id(op)}"
        self.containers |= {built, f"{built}[]"}
        derived = not constructs_record(op.callee)
        reads = op.read_names()[1:] if derived else op.read_names()  # (not `C` itself)
        self._hold(state, built, reach(self._of(reads, objects), state, _HOLDS)
                   | {f"{built}[]"})
        if not derived:
            return built
        pair, derivative = f"{built}()", f"{built}()[]"
        self.containers |= {pair, derivative}
        self._hold(state, pair, {built, derivative})
        self.pairs[op.targets[0]] = (built, derivative)
        return pair

    def _constructs_record(self, op: Operation) -> bool:
        """`C(...)` of a plain class with a Python `__init__`, directly or through
        `call_jvp`/`call_vjp` in a derivative program (whose first argument is `C`)."""
        if constructs_record(op.callee):
            return True
        return among(op.callee, (calls.call_jvp, calls.call_vjp)) and bool(op.args) \
            and isinstance(op.args[0], gast.Name) \
            and constructs_record(self.value_of(op.args[0].id))

    def _method_update(self, op: Operation, names, objects, state) -> str:
        """`returned = method_update(s, "m", ...)` (normalize._record_update): a tuple of the
        method's value and the copy of `s` it updated, which `s` is next. The copy holds
        the arrays `s` holds, copies of its lists (holding their items) and what the
        arguments hold (a method may keep them); the value may be any of those."""
        container = f"{op.targets[0]}@{id(op)}"
        copy, lists = f"{container}[]", f"{container}[][]"
        self.containers |= {container, copy, lists}
        receiver = objects(names[0])
        held = self._held(receiver, state) - receiver
        self._hold(state, lists, reach(held & self.containers, state, _HOLDS)
                   - (held & self.containers))
        self._hold(state, copy, (held - self.containers) | {lists} | reach(
            self._of(op.read_names()[1:], objects), state, _HOLDS))
        self._hold(state, container, reach({copy}, state, _HOLDS))
        self.updated[op.targets[0]] = copy
        return container

    def _copies_a_container(self, op: Operation, objects) -> bool:
        """`owned(t)`, forward mode's copy of a tangent it writes into, of a list, tuple or
        dict: a container holding the same items, as `list(xs)` is (of an array: new
        memory)."""
        return op.callee is owned and len(op.args) == 1 and hasattr(op.args[0], "id") \
            and objects(op.args[0].id) <= self.containers

    def _hold(self, state: dict, container: str, objects: set, attribute=None,
              only=False) -> None:
        """`container` holds `objects` from now on (as its attribute `attribute`: `only`
        these, where the write surely replaced what it held there)."""
        state[_HOLDS + container] = state.get(_HOLDS + container, set()) | objects
        if attribute is None:
            state[_OTHER + container] = state.get(_OTHER + container, set()) | objects
        else:
            key = f"{_FIELD}{container}.{attribute}"
            state[key] = set(objects) if only else self._stored(state, key, container) | objects
        self.contents.setdefault(_base(container), set()).update(map(_base, objects))

    def _stored(self, state: dict, key: str, obj: str) -> set:
        """What `obj` may hold as one attribute (`key`): until a write replaced it, what it
        held before, `_BEFORE` (but for a record made here empty: nothing)."""
        return state.get(key, set() if _base(obj) in self.fresh else {_BEFORE})

    def _field(self, objects: set, name: str, state: dict) -> set:
        """What reading the attribute `name` of a value of `objects` may give: what was
        stored as `name` (`s.n` is not the array `s.y` holds), and until a write surely
        replaced it, whatever it held before (from its `__init__`, or a copy's original)."""
        held = set()
        for obj in objects:
            stored = self._stored(state, f"{_FIELD}{obj}.{name}", obj)
            held |= stored - {_BEFORE}
            if _BEFORE in stored and _base(obj) not in self.fresh:
                held |= state.get(_OTHER + obj, set()) | (
                    set() if obj in self.containers else {obj})
        return held

    def _held(self, objects: set, state: dict) -> set:
        """What indexing, unpacking or iterating over a value of `objects` may give: the
        objects a container holds, and a view of any other (an array's row)."""
        held = set()
        for obj in objects:
            held |= state.get(_HOLDS + obj, set())
            if obj not in self.containers:
                held.add(obj)
        return held

    @staticmethod
    def _of(names, objects) -> set:
        return set().union(*(objects(n) for n in names))

    def _loop(self, node: Loop, state: dict) -> dict:
        sites = {str(id(op)) for op in walk(node.body) if isinstance(op, Operation)}
        header = dict(state)
        self.depth += 1
        while True:
            inside = self._older(header, sites)  # a trip starts: what earlier ones made
            if node.element:
                inside[node.element] = self._held(header.get(node.iterable, {node.iterable}),
                                                  header)
                self._note(node.element, inside[node.element])
            joined = _join(header, self.block(node.body, inside))
            if joined == header:
                self.depth -= 1
                return header
            header = joined

    def _older(self, state: dict, sites: set) -> dict:
        """`state` with each object the operations `sites` (the body of the loop at
        `self.depth`) made as made on this loop's earlier trips, unless an enclosing loop's
        earlier trips made it."""
        def renamed(obj):
            age = _age(obj)
            if age is not None and age <= self.depth or _site(obj) not in sites:
                return obj
            older = f"{_base(obj)}{_OLDER}{self.depth}"
            if obj in self.containers:
                self.containers.add(older)
            return older
        older = {}
        for key, objects in state.items():
            if key.startswith((_HOLDS, _OTHER)):
                key = key[:len(_HOLDS)] + renamed(key[len(_HOLDS):])
            elif key.startswith(_FIELD):
                obj, _, attribute = key[len(_FIELD):].rpartition(".")
                key = f"{_FIELD}{renamed(obj)}.{attribute}"
            older[key] = older.get(key, set()) | set(map(renamed, objects))
        return older

    def _note(self, name, objects):
        self.everywhere.setdefault(name, set()).update(map(_base, objects))


def _join(a: dict, b: dict) -> dict:
    """Either state (an attribute one path wrote, the other did not: held before, maybe)."""
    def either(state, name):
        return state.get(name, {_BEFORE} if name.startswith(_FIELD) else set())
    return {name: either(a, name) | either(b, name) for name in set(a) | set(b)}


_ITEM_READS = (operator.getitem, field, field_tangent, held_tangent, held_item, record_tangent)



def _makes_an_array(op: Operation) -> bool:
    """Whether the call surely returns a new NumPy array (or number), into which a stored
    value is copied, not held as a list holds it."""
    made = makes_new_array(op.callee) or isinstance(op.callee, np.ufunc)
    return made and not _array_without_copy(op)


def _array_without_copy(op: Operation) -> bool:
    """`np.array(y, copy=False)` or `copy=None`, `y.astype(t, copy=False)`: `y` itself
    where no copy is needed."""
    return (op.callee is np.array or op.callee is converted) and any(
        name == "copy" and not (isinstance(value, gast.Constant) and value.value is True)
        for name, value in op.keywords)


def _may_return_a_view(op: Operation) -> bool:
    callee = op.callee
    if is_view(callee):  # (an unhashable callee has no rules either: a view, maybe)
        constants = tuple(a.value if isinstance(a, gast.Constant) else UNKNOWN for a in op.args)
        return view_of(callee, constants, tuple(name for name, _ in op.keywords))
    if isinstance(callee, np.ufunc) or is_nondifferentiable(callee):
        return False
    return vjp_rules(callee) is None


def check_in_place_updates(block: list, output: str, params, versions: dict, parsed,
                           return_variable=None, numbers=frozenset(),
                           value_of=lambda name: None) -> Aliases:
    """Refuse an in-place update of memory that another name, read later, also shows, and
    return what may share memory with what (to decide which in-place updates to undo).

    `versions` maps SSA versions to the user's names: `x_1` and `x` are one variable.
    `return_variable` holds the value of a lowered `return`: once it is assigned no user
    statement runs, so it never sees a later update. `numbers`: names that surely hold
    Python numbers (analysis/scalars.py), whose `x += v` only rebinds `x`; `value_of(name)`:
    the object a free name is bound to (Resolver.peek)."""
    analysis = _PointsTo(return_variable, value_of)
    start = {name: {name} for name in params}
    for name, objects in start.items():
        analysis._note(name, objects)
    analysis.block(block, start)
    _refuse_operators_on_records(block, parsed)
    argument_writes = {}
    updated, copies, owners, writes = set(), {}, {}, []  # (gathered in one walk)
    for op in operations(block):
        if op.targets and op.callee is method_update:  # (normalize._record_update)
            updated.add(op.targets[0])
        elif op.targets and op.callee is copied and isinstance(op.args[0], gast.Name):
            copies[versions.get(op.targets[0], op.targets[0])] = versions.get(
                op.args[0].id, op.args[0].id)
        elif op.targets and among(op.callee, (held_attribute, held_tangent, held_item)):
            owners[op.targets[0]] = (versions.get(op.args[0].id, op.args[0].id), _held_as(op))
        written = written_into(op)
        if written is not None and not (written in numbers and op.augmented):
            writes.append((op, written))
    later, bound, own_writes = {}, set(), set()
    if writes:  # (nearly every function writes in place nowhere: no liveness asked for then)
        _live(block, {output}, later)
        bound = own_names(block, params)
    for node, written in writes:
        state = analysis.before[id(node)]
        objects = state.get(written, {written})
        if node.augmented and node.args and getattr(node.args[0], "id", None) in updated:
            # `s.add(v)` may update the lists `s` holds, which its variant copies (arrays it
            # writes into are refused where it is called: runtime/calls.py)
            objects = objects | (analysis._held(objects, state) & analysis.containers)
        if written in analysis.read_only:  # (where it is a view, NumPy refuses the write)
            objects = objects & {analysis.read_only[written]}
        if all(_site(obj) is not None for obj in objects):
            own_writes.add(id(node))
        variable = versions.get(written, written)
        # `s.t += v` is `t = held_attribute(s, "t")`, this update, `s.t = t`: `s` shows the
        # update as it should (held_attribute checks `s` holds it as `.t` only)
        owner, attribute = owners.get(written, (None, None))
        label = variable if owner is None else f"{owner}{attribute}"
        for param in sorted(objects & set(params)):
            # (through a copy of the record `param`, `s.n += 1` writes into what `param` holds
            # as `.n`: nothing, where that is a number when the function is called)
            through = attribute[1:] if copies.get(owner) == param \
                and attribute.startswith(".") else None
            refusal = argument_writes.get(param) or _argument_write(param, label, node, parsed)
            refusal.attributes = None if through is None or refusal.attributes is None \
                else refusal.attributes | {through}
            argument_writes[param] = refusal
        shared = sorted(n for n in later[id(node)] if versions.get(n, n) not in (variable, owner)
                        and n not in node.targets  # (`x += v`'s result is the `x` updated)
                        and reach(state.get(n, {n}), state, _HOLDS) & objects
                        and not (n not in bound and _is_code(value_of(n))))
        if shared:
            other = versions.get(shared[0], shared[0])  # (the user's names, not versions)
            raise UnsoundAliasingError(
                f"srcad cannot differentiate this in-place update soundly: `{label}` may "
                f"share memory with `{other}`, which is read after the update "
                f"(in {parsed.name}).",
                parsed.location(node.statement),
                f"make a new array before writing into it (`{label} = np.copy({label})`"
                f"), or write `{label} = {label} + ...` instead of an in-place update.")
    return Aliases(analysis.everywhere, analysis.contents, argument_writes,
                   frozenset(own_writes))


def _held_as(op: Operation) -> str:
    """How `held_attribute`, `held_tangent` or `held_item` reads what its owner holds:
    `.t`, `[...]`."""
    if op.callee is held_item:
        return "[...]"
    return "." + op.args[1 if op.callee is held_attribute else 2].value


def _refuse_operators_on_records(block, parsed) -> None:
    """`a + b` of objects the function made (records: kernels/pytrees.py) runs their class's
    `__add__`, which an operator's derivative (NumPy's arithmetic) does not follow."""
    records = _record_names(block)
    if not records:  # (nearly every function: then no operand is one)
        return
    for op in walk(block):
        if not isinstance(op, Operation) or op.kind != "call" \
                or not among(op.callee, _OPERATOR_CALLEES):
            continue
        operand = next((a.id for a in op.args if getattr(a, "id", None) in records), None)
        if operand is not None:
            raise MissingRuleError(
                f"srcad cannot differentiate `{op.label}` of `{operand}`, an object of a class "
                f"of yours (in {parsed.name}): the operator runs its class's method, which "
                "srcad does not follow there.", parsed.location(op.statement),
                "call the method by name (`a.add(b)`, `a.scaled(2.0)`), which srcad follows.")


_OPERATOR_CALLEES = tuple(OPERATORS.values())


def _record_names(block) -> set:
    """The names bound to an object a call of a plain class made (`w = Odd(a, b)`), to a copy
    of such a name, or to the object a method updated (`s = returned[1]`: normalize's
    `_record_update`): surely records, where an operator runs the class's method."""
    names, updated = set(), set()
    for op in walk(block):
        if not isinstance(op, Operation) or len(op.targets) != 1:
            continue
        source = getattr(op.args[0], "id", None) if op.args else None
        if op.kind == "call" and is_record_class(op.callee) \
                or op.kind == "copy" and source in names \
                or op.augmented and source in updated:
            names.add(op.targets[0])
        elif op.callee is method_update:
            updated.add(op.targets[0])
    return names


def _is_code(value) -> bool:
    """A function, class or module a free name is bound to (`method_update`, passed by a
    derivative program to srcad's call helpers): it holds no memory an array write shows."""
    return isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type,
                              types.ModuleType, np.ufunc))


def written_into(op: Operation) -> str | None:
    """The name whose memory `op` writes into, if it writes in place."""
    return op.mutates if op.kind in IN_PLACE_KINDS else op.augmented


def _argument_write(param: str, variable: str, node: Operation, parsed) -> UnsoundAliasingError:
    """The refusal for a call passing `param` something mutable; its `attributes`, where the
    write is only into attributes of a record passed there (else None), for
    runtime/calls.refuse_argument_writes to check."""
    what = f"`{variable}`, which may be its argument `{param}`," if variable != param \
        else f"its argument `{param}`"
    refusal = UnsoundAliasingError(
        f"`{parsed.name}` writes into {what} in place; srcad differentiates a call of a "
        "function only where it leaves the arrays and lists passed to it as they were (the "
        "caller's derivative would not see the write).",
        parsed.location(node.statement),
        f"copy it first (`{param} = np.copy({param})`) and return what the caller needs, or "
        "pass a copy.")
    refusal.attributes = frozenset()
    return refusal


def _live(block, live_out: set, later: dict) -> set:
    """Liveness: record, for each operation that writes in place, the names that may be read
    after it before being assigned again; return the names live at the start of `block`."""
    live = set(live_out)
    for node in reversed(block):
        if isinstance(node, Branch):
            live = _live(node.body, live, later) | _live(node.orelse, live, later) \
                | {node.condition}
        elif isinstance(node, Loop):
            header = live | ({node.iterable} if node.iterable else set())
            while True:
                inside = _live(node.body, header, later) - {node.element}
                if inside <= header:
                    break
                header |= inside
            live = header
        else:
            if written_into(node) is not None:  # (only in-place writes ask)
                later[id(node)] = set(live)
            live.difference_update(node.targets)  # (`live` is this call's own set: updated
            live.update(node.read_names())        # in place, not made again per operation)
    return live
