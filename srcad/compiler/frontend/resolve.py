"""resolve: simple-form statements → `Operation`s whose callees are real objects.

Names of called functions (`np.sin`, `numpy.linalg.norm`, `exp` after `from numpy import
exp`, a closure variable) are looked up when the function is transformed, in its closure,
globals and builtins, so the rule registry can be consulted by object. Values are still
read at call time: the transformation only records which objects it relied on
(`Resolver.guards`), and the cache transforms again if one of them is rebound.
"""
from __future__ import annotations

import ast
import builtins
import functools
import operator
import types
from dataclasses import dataclass

import gast
import numpy as np

from srcad.compiler.frontend import trees
from srcad.compiler.frontend.parse import ParsedFunction, param_names
from srcad.compiler.frontend.scopes import enclosing_reads, local_names
from srcad.errors import UnresolvedNameError, UnsupportedSyntaxError
from srcad.kernels import adjoints as helpers
from srcad.kernels.pytrees import constructs_node, constructs_record
from srcad.ops import is_nondifferentiable, vjp_rules
from srcad.ops.callables import unwrapped
from srcad.ops.numpy_arrays import is_concatenator, joined_by
from srcad.ops.python_statements import LIST_UPDATES, attribute_written, list_insert, popped
from srcad.runtime.calls import is_derivative
from srcad.runtime.control import Checkpoint, CustomGradient

OPERATORS = {
    gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
    gast.Div: operator.truediv, gast.Pow: operator.pow, gast.MatMult: operator.matmul,
    gast.FloorDiv: operator.floordiv, gast.Mod: operator.mod, gast.LShift: operator.lshift,
    gast.RShift: operator.rshift, gast.BitAnd: operator.and_, gast.BitOr: operator.or_,
    gast.BitXor: operator.xor, gast.USub: operator.neg, gast.UAdd: operator.pos,
    gast.Not: operator.not_, gast.Invert: operator.invert,
}
SYMBOLS = {
    gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.Pow: "**",
    gast.MatMult: "@", gast.FloorDiv: "//", gast.Mod: "%", gast.LShift: "<<",
    gast.RShift: ">>", gast.BitAnd: "&", gast.BitOr: "|", gast.BitXor: "^",
    gast.USub: "unary -", gast.UAdd: "unary +", gast.Not: "not", gast.Invert: "~",
}


@dataclass(frozen=True)
class Guard:
    """`name` (a global, or a closure cell when `cell` is set) was bound to `value`; or, for
    an attribute chain (`attributes` set, `name` its dotted text), reading `attributes` from
    `root` gave `value` (`np.sin`: rebinding it changes what the program calls)."""

    name: str
    value: object
    cell: int | None = None
    attributes: tuple = ()
    root: object = None
    builtin: bool = False  # the name was found among the builtins, not the globals

    @property
    def key(self):
        """What tells guards apart: the name, or the chain's root object and attributes."""
        return (id(self.root), self.attributes) if self.attributes else self.name

    def holds(self, fn=None) -> bool:
        """Whether the binding still holds (`fn`: the function whose names it guards)."""
        if self.attributes:
            return follow(self.root, self.attributes, _MISSING) is self.value
        if self.cell is not None:
            return fn.__closure__[self.cell].cell_contents is self.value
        namespace = fn.__globals__
        if self.name in namespace:
            return namespace[self.name] is self.value
        return getattr(builtins, self.name, _MISSING) is self.value


def follow(value, attributes, missing=None):
    """`value.a.b` for attributes `(a, b)`, or `missing` if one is missing."""
    for attribute in attributes:
        value = getattr(value, attribute, _MISSING)
        if value is _MISSING:
            return missing
    return value


def chain_guard(root, root_name: str, attributes) -> Guard | None:
    """The guard that `root_name.a.b` still names what it does now, or None. An attribute
    that gives a new object on every read (a bound method: `np.add.reduce`) is left off:
    its owner (`np.add`) is guarded instead, if it is a module or something callable; an
    owner that is data (`data.scale` of `data.scale.sum()`, reassigned at every step of a
    training loop) is not: the program does not depend on which array it is."""
    attributes = tuple(attributes)
    while attributes and follow(root, attributes) is not follow(root, attributes):
        attributes = attributes[:-1]
    value = follow(root, attributes)
    if not attributes or not (callable(value) or isinstance(value, types.ModuleType)):
        return None
    return Guard(".".join([root_name, *attributes]), value, attributes=attributes, root=root)


def _read(node, names: list) -> None:
    """Add the names `node` reads to `names`."""
    kind = type(node)
    if kind is gast.Name and getattr(node, "annotation", None) is None:
        if type(node.ctx) is gast.Load:
            names.append(node.id)
    elif kind is not gast.Constant:
        names += [n.id for n in trees.walk(node) if isinstance(n, gast.Name)
                  and isinstance(n.ctx, gast.Load)]


_MISSING = object()
# the operations that write into the container `mutates` names (and the backward sweep undoes)
IN_PLACE_KINDS = ("setitem", "append", "insert", "pop")


@dataclass
class Operation:
    """One statement of the simple form, as the derivative sees it.

    kind: "call" (a callee applied to atoms; operators, indexing and attributes included),
    "copy", "pack" (building a tuple, list or dict), "unpack", "setitem" (`y[i] = v`,
    which mutates `y`), "append" (`xs.append(v)`, which mutates `xs`), "pop" and "insert"
    (`v = xs.pop(i)`, `xs.insert(i, v)`: frontend/container_writes.py), "constant", "opaque" (a
    value with no derivative: comparisons, f-strings), "effect" (an expression statement)
    or "jump" (`break`).
    """

    statement: gast.stmt
    kind: str
    targets: tuple = ()
    callee: object = None
    args: tuple = ()
    keywords: tuple = ()
    label: str = ""
    keys: tuple = ()  # for "pack": how each element is looked up in the packed value
    mutates: str | None = None  # for "setitem": the array or list written into
    method: str | None = None   # for a method call `x.name(...)`: the name (x is args[0])
    dynamic: bool = False       # the callee's derivative is found when it runs (runtime/calls.py)
    forward: gast.stmt | None = None  # what the forward sweep runs instead of `statement`
    captures: frozenset = frozenset()  # for a nested function: the outer names it reads
    unrecorded: bool = False  # inside `with stop_recording():`

    @property
    def writes_attribute(self) -> bool:
        """Whether this "setitem" is `obj.name = v` into a record (its index is the name)."""
        return self.kind == "setitem" and isinstance(self.statement, gast.Expr)

    @property
    def augmented(self) -> str | None:
        """For a rebinding that came from `x op= v` (which mutates an array in place): the
        name of the `x` updated."""
        return getattr(self.statement, "augmented", None)

    def read_names(self) -> list[str]:
        """The names the operation reads, in the order of its arguments, keywords and (for
        a function value called) callee. (The analyses ask each operation in every sweep:
        no list of the nodes made first, nor a call per argument.)"""
        names = []
        for node in self.args:  # (an atom, nearly always: a name or a constant, read directly)
            if type(node) is gast.Name and type(node.ctx) is gast.Load \
                    and getattr(node, "annotation", None) is None:
                names.append(node.id)
            elif type(node) is not gast.Constant:
                _read(node, names)
        for _, node in self.keywords:
            _read(node, names)
        if self.kind == "call" and self.dynamic and self.callee is None and self.method is None:
            _read(self.statement.value.func, names)  # a function value: it may hold floats
        return names


class Resolver:
    """Looks callee names up in a function's closure, globals and builtins."""

    def __init__(self, fn, parsed: ParsedFunction):
        self.fn = fn
        self.parsed = parsed
        self.cells = {name: i for i, name in enumerate(fn.__code__.co_freevars)}
        self.guards: dict = {}  # name, or (id(root), attributes) → Guard
        self.local_names: set[str] = set(param_names(parsed.node))
        self.helpers: dict[str, object] = {}  # name → srcad's own function, see `helper`

    def copy(self, fn) -> Resolver:
        """A resolver for `fn` (of the same code) that knows what this one knows, and records
        guards apart from it."""
        made = Resolver(fn, self.parsed)
        made.guards, made.local_names, made.helpers = (
            dict(self.guards), set(self.local_names), dict(self.helpers))
        return made

    def helper(self, obj, namer) -> gast.Name:
        """A name for srcad's own `obj`, which a frontend rewrite calls (`indexable` in a
        loop over `zip`): claimed from `namer`, so it collides with nothing of the user's,
        and passed to the generated code as a cell (transform/bindings.py), not guarded."""
        name = next((n for n, o in self.helpers.items() if o is obj), None)
        if name is None:
            name = namer.claim(obj.__name__)
            self.helpers[name] = obj
        return gast.Name(name, gast.Load(), None, None)

    def is_builtin(self, name: str, builtin) -> bool:
        """Whether `name`, not a local, is bound to `builtin` (guarded if so)."""
        return name not in self.local_names and self.peek(name) is builtin \
            and self.lookup(name) is builtin

    def peek(self, name: str):
        """The object `name` is bound to now in the closure, globals or builtins."""
        if name in self.helpers:
            return self.helpers[name]
        if name in self.cells:
            try:
                return self.fn.__closure__[self.cells[name]].cell_contents
            except ValueError:  # an empty cell
                return _MISSING
        return self.fn.__globals__.get(name, getattr(builtins, name, _MISSING))

    def lookup(self, name: str):
        """Like `peek`, and records that the transformation relies on this binding."""
        value = self.peek(name)
        if value is not _MISSING and name not in self.helpers:
            self.guards[name] = Guard(name, value, self.cells.get(name),
                                      builtin=name not in self.fn.__globals__)
        return value

    def peek_chain(self, node):
        """Like `chain_value`, recording no guard (None where the chain names nothing)."""
        root, attributes = trees.attribute_chain(node)
        value = self.peek(root.id) if isinstance(root, gast.Name) else None
        for attribute in attributes:
            value = getattr(value, attribute, None)
        return None if value is _MISSING else value

    def chain_value(self, node):
        """The object an attribute chain of globals names now, or None (records guards)."""
        root, _ = trees.attribute_chain(node)
        if not isinstance(root, gast.Name) or root.id in self.local_names:
            return None
        try:
            return self.resolve_chain(node)
        except UnresolvedNameError:
            return None

    def resolve_chain(self, node):
        """The object an attribute chain such as `np.linalg.norm` names."""
        node, attributes = trees.attribute_chain(node)
        root = value = self.lookup(node.id)
        if value is _MISSING:
            raise UnresolvedNameError(
                f"srcad cannot resolve the name {node.id!r} called in {self.parsed.name}.",
                self.parsed.location(node), "define or import it before calling the derivative.")
        for attribute in attributes:
            if not hasattr(value, attribute):
                raise UnresolvedNameError(
                    f"{gast_label(node)!r} has no attribute {attribute!r}.",
                    self.parsed.location(node))
            value = getattr(value, attribute)
        guard = chain_guard(root, node.id, attributes)
        if guard is not None:
            self.rely_on(guard)
        return value

    def rely_on(self, guard: Guard) -> None:
        """Record an attribute chain's guard (keyed apart from names: a chain's root object
        may be bound to a name the user reuses for something else)."""
        self.guards[guard.key] = guard


@dataclass
class Branch:
    """`if condition: body else: orelse`, with resolved blocks."""

    statement: gast.If
    condition: str
    body: list
    orelse: list


@dataclass
class Loop:
    """A `for element in iterable` (both names) or a `while` loop (both None)."""

    statement: gast.stmt
    element: str | None
    iterable: str | None
    body: list


def walk(block):
    """Every node of a resolved block, nested ones included, in program order. (By exact
    type, an operation first: the analyses walk a block some fifty times, and two
    `isinstance` calls per node were half the walk.)"""
    for node in block:
        yield node
        kind = type(node)
        if kind is Operation:
            continue
        if kind is Branch:
            yield from walk(node.body)
            yield from walk(node.orelse)
        elif kind is Loop:
            yield from walk(node.body)


def operations(block):
    """Every `Operation` of a resolved block, nested ones included, in program order."""
    return (node for node in walk(block) if isinstance(node, Operation))


def bound_names(block, params=()) -> set:
    """The names the function binds (the targets of the operations of `block` and the
    elements of its loops), but for `params`: a parameter holds what the caller gave until
    it is bound, which no fixpoint over the bindings (`surely`) vouches for (`x = x * 2`
    keeps a list a list)."""
    bound = set()
    for node in walk(block):
        if isinstance(node, Operation):
            bound.update(node.targets)
        elif isinstance(node, Loop) and node.element:
            bound.add(node.element)
    return bound - set(params)


def own_names(block, params) -> set:
    """The function's own names, its parameters and those it binds: not the free names it
    reads, nor those the generated code binds beside them."""
    return bound_names(block) | set(params)


def surely(block, candidates, makes) -> frozenset:
    """The names among `candidates` that hold a kind of value on every path: each operation
    binding one makes that kind (`makes(op, names)`, given the names still candidates: a
    question without effects), and no loop binds one as its element (a greatest fixpoint, as
    the names depend on each other). An operation none of whose names is a candidate any
    more is not asked again."""
    candidates = set(candidates)
    nodes = list(walk(block))  # (walked once: `makes` changes nothing)
    while True:
        size = len(candidates)
        for node in nodes:
            if isinstance(node, Loop) and node.element:
                candidates.discard(node.element)
            elif isinstance(node, Operation):
                if candidates.isdisjoint(node.targets) and node.mutates not in candidates:
                    continue
                if node.kind == "pop":  # (an item, whatever the list held; `makes` says
                    candidates.difference_update(node.targets)  # what became of the list)
                if not makes(node, candidates):
                    candidates.difference_update(node.targets)
                    candidates.discard(node.mutates)
        if len(candidates) == size:
            return frozenset(candidates)


def resolve(simple_fn: gast.FunctionDef, resolver: Resolver) -> list:
    """The function's block of `Operation`s, `Branch`es and `Loop`s, without the `return`."""
    resolver.local_names = local_names(simple_fn)
    return _block([s for s in simple_fn.body if not isinstance(s, gast.Return)], resolver)


def _block(statements, resolver) -> list:
    return [_unrecorded(_node(s, resolver)) for s in statements if not isinstance(s, gast.Pass)]


def _unrecorded(node):
    """Inside `with stop_recording():` values are constants: what would carry a derivative
    becomes opaque, and an element written in place is written with a constant."""
    if isinstance(node, Operation) and getattr(node.statement, "unrecorded", False):
        if node.kind in ("call", "copy", "pack", "unpack"):
            node.kind = "opaque"
        node.unrecorded = True
    return node


def _node(statement, resolver: Resolver):
    if isinstance(statement, gast.If):
        return Branch(statement, statement.test.id, _block(statement.body, resolver),
                      _block(statement.orelse, resolver))
    if isinstance(statement, gast.For):
        return Loop(statement, statement.target.id, statement.iter.id,
                    _block(statement.body, resolver))
    if isinstance(statement, gast.While):
        return Loop(statement, None, None, _block(statement.body, resolver))
    if isinstance(statement, gast.Break):
        return Operation(statement, "jump")
    if isinstance(statement, gast.FunctionDef):
        return Operation(statement, "constant", (statement.name,),
                         captures=enclosing_reads(statement))
    if isinstance(statement, gast.Expr):
        call = statement.value
        if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) \
                and isinstance(call.func.value, gast.Name) \
                and call.func.value.id in resolver.local_names:
            if call.func.attr != "append":
                list_update = call.func.attr in LIST_UPDATES
                raise UnsupportedSyntaxError(
                    f"srcad cannot differentiate `{gast_label(call.func)}(...)`, a method call "
                    f"that may modify `{call.func.value.id}` in place (in {resolver.parsed.name})"
                    + (": where it is a list, srcad follows its updates if the function "
                       "made the list itself (a display, `list(...)`, a comprehension)."
                       if list_update else "."),
                    resolver.parsed.location(call),
                    "make a list of your own first (`items = list(xs)`) and update that; of "
                    "an array, assign a new one (`y = np.sort(y)`)." if list_update else
                    "build a new value and assign it instead (`xs = sorted(xs)`, "
                    "`y = y + v`).")
            return Operation(statement, "append", (), args=(call.func.value, call.args[0]),
                             label="list append", mutates=call.func.value.id)
        callee = None
        if isinstance(call, gast.Call) and _is_global_chain(call.func, resolver.local_names):
            callee = resolver.resolve_chain(call.func)
        if callee is list_insert:
            return Operation(statement, "insert", (), args=tuple(call.args), label="list insert",
                             mutates=call.args[0].id)
        if callee is attribute_written:  # a record's attribute: its element (kernels/pytrees)
            return Operation(statement, "setitem", (), args=tuple(call.args[:3]),
                             label="attribute assignment", mutates=call.args[0].id)
        return Operation(statement, "effect", callee=callee, args=(call,),
                         label=gast_label(call.func) if isinstance(call, gast.Call) else "")
    target = statement.targets[0]
    value = statement.value
    if isinstance(target, gast.Subscript):
        return Operation(statement, "setitem", (), args=(
            gast.Name(target.value.id, gast.Load(), None, None), index_expression(target.slice),
            value), label="element assignment", mutates=target.value.id)
    if isinstance(target, gast.Tuple):
        return Operation(statement, "unpack", tuple(t.id for t in target.elts), args=(value,))
    targets = (target.id,)
    if isinstance(value, gast.Name):
        return Operation(statement, "copy", targets, args=(value,))
    if isinstance(value, (gast.Compare, gast.JoinedStr)):
        return Operation(statement, "opaque", targets)
    if isinstance(value, gast.Lambda):
        return Operation(statement, "constant", targets, captures=enclosing_reads(value))
    if isinstance(value, (gast.Tuple, gast.List)):
        keys = tuple(gast.Constant(i, None) for i in range(len(value.elts)))
        return Operation(statement, "pack", targets, args=tuple(value.elts), keys=keys)
    if isinstance(value, gast.Dict):
        return Operation(statement, "pack", targets, args=tuple(value.values),
                         keys=tuple(value.keys))
    if isinstance(value, (gast.BinOp, gast.UnaryOp)):
        operands = (value.left, value.right) if isinstance(value, gast.BinOp) else (value.operand,)
        return Operation(statement, "call", targets, OPERATORS[type(value.op)], operands,
                         label=SYMBOLS[type(value.op)])
    if isinstance(value, gast.Subscript):
        if _is_global_chain(value.value, resolver.local_names) \
                and is_concatenator(resolver.peek_chain(value.value)) \
                and not _matrix_directive(value.slice) \
                and is_concatenator(resolver.chain_value(value.value)):  # `np.r_[x, y]`
            index = index_expression(value.slice)  # (always a tuple: `r_[a]` is `r_[a,]`)
            return Operation(statement, "call", targets, joined_by, (value.value, index if
                             isinstance(index, gast.Tuple) else gast.Tuple([index], gast.Load())),
                             label=f"{gast_label(value.value)}[...]")
        return Operation(statement, "call", targets, operator.getitem,
                         (value.value, index_expression(value.slice)), label="indexing")
    if isinstance(value, gast.Attribute) and isinstance(value.value, gast.Name) \
            and value.value.id in resolver.local_names:
        descriptor = getattr(np.ndarray, value.attr, None)
        if descriptor is None:  # a named tuple's field, say: read by name (helpers.field)
            return Operation(statement, "call", targets, helpers.field,
                             (value.value, gast.Constant(value.attr, None)),
                             label=f".{value.attr}")
        return Operation(statement, "call", targets, descriptor, (value.value,),
                         label=f".{value.attr}")
    if isinstance(value, gast.Call):
        return _call_operation(statement, targets, value, resolver)
    return Operation(statement, "constant", targets)


def _call_operation(statement, targets, call: gast.Call, resolver: Resolver) -> Operation:
    func, label = call.func, gast_label(call.func)
    keywords = tuple((k.arg, k.value) for k in call.keywords)
    if isinstance(func, gast.Attribute) and not _is_global_chain(func, resolver.local_names):
        return Operation(statement, "call", targets, None, (func.value, *call.args), keywords,
                         label=label, method=func.attr, dynamic=True)
    if not _is_global_chain(func, resolver.local_names):
        return Operation(statement, "call", targets, None, tuple(call.args), keywords,
                         label=label, dynamic=True)
    callee = resolver.resolve_chain(func)
    if callee is popped:
        return Operation(statement, "pop", targets, args=tuple(call.args), label="list pop",
                         mutates=call.args[0].id)
    if callee is dict and not call.args and keywords and all(k for k, _ in keywords):
        # `dict(a=x, b=y)` builds what the display `{"a": x, "b": y}` builds: it becomes one
        keys = [gast.Constant(k, None) for k, _ in keywords]
        statement.value = gast.copy_location(gast.Dict(keys, [v for _, v in keywords]), call)
        return Operation(statement, "pack", targets, args=tuple(v for _, v in keywords),
                         keys=tuple(keys))
    return Operation(statement, "call", targets, callee, tuple(call.args), keywords,
                     label=label, dynamic=_has_source(callee))


def _has_source(callee) -> bool:
    """A Python function (or bound method) without a rule: its adjoint is generated too."""
    if vjp_rules(callee) is not None or is_nondifferentiable(callee):
        return False
    if isinstance(callee, (Checkpoint, CustomGradient, functools.partial)) \
            or is_derivative(callee) or callee is functools.partial \
            or constructs_node(callee) or constructs_record(callee):  # (runtime/calls.py)
        return True
    return isinstance(unwrapped(callee), (types.FunctionType, types.MethodType))


def _is_global_chain(node, local_names) -> bool:
    while isinstance(node, gast.Attribute):
        node = node.value
    return isinstance(node, gast.Name) and node.id not in local_names


def _matrix_directive(index) -> bool:
    """`np.r_["r", ...]`, `np.r_["c", ...]`: an np.matrix, not a join (its index stays an
    index, which no derivative flows through)."""
    first = index.elts[0] if isinstance(index, gast.Tuple) and index.elts else index
    return isinstance(first, gast.Constant) and isinstance(first.value, str) \
        and first.value.split(",")[0].strip() in ("r", "c")


def index_expression(node):
    """An index as an ordinary expression: `x[1:, None]` → `(slice(1, None), None)`."""
    if isinstance(node, gast.Slice):
        parts = [p if p is not None else gast.Constant(None, None)
                 for p in (node.lower, node.upper, node.step)]
        if node.step is None:
            parts.pop()  # `slice(a, b)`; a single argument would mean the stop, not the start
        return gast.Call(gast.Name("slice", gast.Load(), None, None), parts, [])
    if isinstance(node, gast.Tuple):
        return gast.Tuple([index_expression(e) for e in node.elts], gast.Load())
    return node


def gast_label(node) -> str:
    """How the user wrote a callee: `np.linalg.norm`. A dotted name, as nearly every callee
    is, is read off the tree: unparsing it cost more than the rest of resolving its call."""
    attributes, root = [], node
    while isinstance(root, gast.Attribute):
        attributes.append(root.attr)
        root = root.value
    if isinstance(root, gast.Name):
        return ".".join([root.id, *reversed(attributes)])
    return ast.unparse(gast.gast_to_ast(node))
