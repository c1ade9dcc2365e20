"""compile: adjoint gast module → Python source → a function bound to the user's globals.

The source is printed from the gast tree as `ast.unparse` writes it (printer.py) and
registered in `linecache` under a filename such as `<srcad-1 vjp of loss (model.py:12)>`,
so tracebacks, `pdb` and `inspect` show the generated lines. The generated function runs
with the user's function's globals (globals are read at call time) and with closure cells:
the user's own cells (a changed closure value is seen by the next call) and one cell per
object the adjoint needs (see bindings).
"""
from __future__ import annotations

import ast
import builtins
import functools
import itertools
import linecache
import math
import types
import weakref
from dataclasses import dataclass, field

import gast

from srcad.compiler.frontend.resolve import Guard
from srcad.compiler.printer import Unprintable, printed
from srcad.compiler.transform.reverse import SCOPE
from srcad.ops.registry import RULES_EDITION

_SERIAL = itertools.count(1)
_ABSENT = object()
_BUILTINS = vars(builtins)


@dataclass(frozen=True)
class CompiledAdjoint:
    """A transformed function: its source, its code, and what it needs to run."""

    source: str
    filename: str
    code: types.CodeType       # the VJP maker's code object
    cells: dict                # bound name → object
    guards: tuple[Guard, ...]  # bindings of the user's names the transformation relied on
    replayable: bool = False   # the backward sweep may run again after a snapshot (replay)
    writes: bool = True        # it may write into its arguments (run it on copies to repeat)
    optimistic: bool = False   # a failure or a result that is not finite means: run the
    #                            general program instead (pipeline.transform, mode "grad")
    by_forward_mode: bool = False  # a gradient computed as a tangent (mode "forward-grad")
    argument_writes: dict = field(default_factory=dict, compare=False)  # parameter → the
    #                            refusal for a call that passes it something mutable
    rules_edition: int = 0     # registry.RULES_EDITION when the transformation began
    _bound: weakref.WeakKeyDictionary = field(default_factory=weakref.WeakKeyDictionary,
                                              compare=False, repr=False)

    def guards_hold(self, fn) -> bool:
        """Whether the names the transformation resolved are still bound as they were."""
        if not self.globals_hold(fn.__globals__):
            return False
        for guard in self._cells:
            if not guard.holds(fn):
                return False
        return True

    @property
    def guards_cells(self) -> bool:
        """Whether a guard reads a closure cell (else `globals_hold` decides alone)."""
        return bool(self._cells)

    def __post_init__(self):
        object.__setattr__(self, "globals_hold", _namespace_check(
            [g for g in self.guards if g.cell is None], self.rules_edition))
        object.__setattr__(self, "_cells", tuple(g for g in self.guards if g.cell is not None
                                                 and not g.attributes))

    def bound(self, fn) -> types.FunctionType:
        """`bind(fn)`, made once per function object (calls of helpers go through here)."""
        made = self._bound.get(fn)
        if made is None or made.__defaults__ is not fn.__defaults__ \
                or made.__kwdefaults__ is not fn.__kwdefaults__:  # (they were reassigned)
            made = self._bound[fn] = self.bind(fn)
        return made

    def bind(self, fn) -> types.FunctionType:
        """The VJP maker as a function running in `fn`'s globals and closure."""
        user_cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        closure = tuple(user_cells[name] if name in user_cells else types.CellType(self.cells[name])
                        for name in self.code.co_freevars)
        made = types.FunctionType(self.code, fn.__globals__, self.code.co_name,
                                  fn.__defaults__, closure)
        made.__kwdefaults__ = fn.__kwdefaults__
        made.srcad_program = True  # (writing into its arguments is the user's function's:
        return made                # runtime/calls.py does not refuse it again)


def _namespace_check(guards: list, rules_edition: int) -> types.FunctionType:
    """`namespace → whether each guard holds in it (a name bound as it was, or among the
    builtins for a name it lacks; an attribute chain such as `np.sin` still naming what it
    did) and no rule was registered since `rules_edition``, written out as one expression:
    it runs on every call, where a loop over the guards took twice as long (0.2 us of a
    1 us scalar gradient)."""
    terms = [f"edition[0] == {rules_edition}"]
    for i, guard in enumerate(guards):
        first, *rest = guard.attributes or ("",)
        if guard.attributes and isinstance(guard.root, types.ModuleType) \
                and first in vars(guard.root):  # (a module's dict read directly: faster)
            terms.append(f"root_{i}[{first!r}]{''.join('.' + a for a in rest)} is value_{i}")
        elif guard.attributes:
            terms.append(f"root_{i}.{'.'.join(guard.attributes)} is value_{i}")
        elif not guard.builtin:  # (deleted since: a KeyError, so False)
            terms.append(f"namespace[{guard.name!r}] is value_{i}")
        else:
            terms.append(f"(namespace[{guard.name!r}] if {guard.name!r} in namespace "
                         f"else builtins.get({guard.name!r}, absent)) is value_{i}")
    source = (f"def globals_hold(namespace):\n    try:\n        return {' and '.join(terms)}\n"
              "    except (AttributeError, KeyError):  # (a chain's attribute was deleted)\n"
              "        return False\n")
    scope = {"builtins": _BUILTINS, "absent": _ABSENT, "edition": RULES_EDITION}
    for i, guard in enumerate(guards):
        scope[f"value_{i}"] = guard.value
        scope[f"root_{i}"] = vars(guard.root) if isinstance(guard.root, types.ModuleType) \
            and guard.attributes and guard.attributes[0] in vars(guard.root) else guard.root
    exec(_guards_code(source), scope)
    return scope["globals_hold"]


@functools.lru_cache(maxsize=256)
def _guards_code(source: str) -> types.CodeType:
    """The guards' check compiled, once per text: a function's programs of other modes
    guard the same names."""
    return compile(source, "<srcad guards>", "exec")


def compile_adjoint(module: gast.Module, function_name: str, cells: dict, user_freevars,
                    guards, label: str, replayable: bool = False,
                    optimistic: bool = False, writes: bool = True,
                    argument_writes: dict | None = None,
                    by_forward_mode: bool = False, rules_edition: int = 0) -> CompiledAdjoint:
    """`module` holds the scope function (transform/reverse.py): it gets a parameter for
    each of the `cells` its body reads (a rule inlined and then simplified away may have
    bound a helper it no longer calls; fusing binds more), then the user's free variables."""
    def parameters(read: set) -> list:
        return [*sorted(name for name in cells if name in read), *user_freevars]

    try:
        source = printed(module, set(), parameters) + "\n"
    except Unprintable:
        read = set()
        tree = as_python_ast(module, read)  # (the names read gathered by the same walk)
        tree.body[0].args.args = [ast.arg(name, None, None) for name in parameters(read)]
        source = ast.unparse(tree) + "\n"
    filename = f"<srcad-{next(_SERIAL)} {label}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module_code = compile(source, filename, "exec")
    scope = _nested_code(module_code, SCOPE)
    return CompiledAdjoint(source, filename, _nested_code(scope, function_name), dict(cells),
                           tuple(guards), replayable, writes, optimistic,
                           by_forward_mode, argument_writes or {}, rules_edition)


def python_source(node: gast.AST) -> str:
    """`node` as Python source: printed straight from gast (printer.py), or where it holds
    what the printer leaves out, by `ast.unparse` of its `ast` twin (`as_python_ast`)."""
    try:
        return printed(node)
    except Unprintable:
        return ast.unparse(as_python_ast(node))


def as_python_ast(node, read: set | None = None):
    """The `ast` tree of a gast tree, as `gast.gast_to_ast` makes it, in one walk that also
    does what `ast.unparse` needs: a line number on each statement (it reads one where a
    type comment may stand, and nothing else of locations: the source is compiled from
    text) and a negative number under `**` or `.` written as a negation, which it then
    parenthesises (it writes Constant(-1) ** 2 as `-1 ** 2`, which Python reads as
    -(1 ** 2)). gast's own visitor, then a walk for each of these, cost a sixth of a long
    function's first call. `read`, if given, gathers the names the tree reads (not those in
    parameters' annotations)."""
    kind = type(node)
    if kind is list:
        return [as_python_ast(item, read) for item in node]
    plan = _PLANS.get(kind)
    if plan is None:
        if not isinstance(node, gast.AST):
            return node
        plan = _PLANS[kind] = _plan(kind)
    if type(plan) is not tuple:  # (a context or an operator, shared; or None: no twin)
        return plan
    if kind is gast.Name:
        if read is not None and type(node.ctx) is gast.Load:
            read.add(node.id)
        return ast.Name(node.id, as_python_ast(node.ctx))
    if kind is gast.arguments:
        return ast.arguments(*[_parameters(getattr(node, field)) for field in (
            "posonlyargs", "args", "vararg", "kwonlyargs")],
            as_python_ast(node.kw_defaults, read), _parameters(node.kwarg),
            as_python_ast(node.defaults, read))
    twin, fields, numbered = plan
    made = twin.__new__(twin)
    made.__dict__.update({field: as_python_ast(value, read) if type(value) is list
                          or isinstance(value, gast.AST) else value
                          for field in fields
                          if (value := getattr(node, field, _ABSENT)) is not _ABSENT})
    if kind is gast.ExceptHandler and node.name is not None:
        made.name = node.name.id
    elif kind is gast.BinOp and type(node.op) is gast.Pow:
        made.left = _signed(made.left)
    elif kind is gast.Attribute:
        made.value = _signed(made.value)
    if numbered:
        made.lineno = 1
    return made


def _plan(kind):
    """How as_python_ast converts a node of the gast class `kind`: its `ast` twin, the
    fields it copies and whether it gets a line number; for a class without fields
    (contexts and operators) one instance every tree shares, as the parser shares them;
    None where `ast` has no such node (gast leaves it out too)."""
    twin = getattr(ast, kind.__name__, None)
    if twin is None:
        return None
    if not kind._fields:
        return twin()
    left_out = _LEFT_OUT.get(kind, ())
    return (twin, tuple(field for field in kind._fields if field not in left_out),
            issubclass(twin, _NUMBERED))


_PLANS: dict = {}  # gast class → its _plan
_LEFT_OUT = {gast.Assign: ("type_comment",)}  # (as gast_to_ast leaves it out)
_NUMBERED = (ast.stmt, ast.excepthandler, ast.mod, *(
    (ast.match_case,) if hasattr(ast, "match_case") else ()))


def _parameters(node):
    """A parameter, a gast Name, as an `ast.arg` (a list of them, or None)."""
    if node is None:
        return None
    if type(node) is list:
        return [_parameters(item) for item in node]
    return ast.arg(node.id, as_python_ast(node.annotation), node.type_comment)


def _signed(node: ast.expr) -> ast.expr:
    """A negative number constant as the negation of its magnitude, which ast.unparse
    parenthesises where it binds less tightly than its surroundings; any other node."""
    if type(node) is ast.Constant and type(node.value) in (int, float) \
            and math.copysign(1.0, node.value) < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-node.value))
    return node


def _nested_code(code: types.CodeType, name: str) -> types.CodeType:
    return next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == name)
