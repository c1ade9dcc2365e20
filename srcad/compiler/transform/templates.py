"""templates: a derivative rule → an expression inlined into the adjoint.

A rule whose body is one expression (a lambda, or a `def` that only returns) is inlined:
its parameters are replaced by the call's arguments, `g` by the output's adjoint and `ans`
by the output, and the names it reads from its own module (`np`, `unbroadcast`) are bound
for the generated code. So the adjoint of `y = np.sin(x)` reads `b_x = b_y * np.cos(x)`.
A longer rule is called by name with the call's own arguments.
"""
from __future__ import annotations

import builtins
import functools
import inspect
import types
from dataclasses import dataclass, field
from typing import Callable

import gast
import numpy as np

from srcad.compiler.frontend.parse import parse_function
from srcad.compiler.frontend.resolve import Guard, chain_guard
from srcad.compiler.frontend.trees import clone, new_name, walk
from srcad.compiler.transform.optimize import constant_node, simplify
from srcad.compiler.transform.refusals import NAMESPACE_READERS
from srcad.errors import SrcadError
from srcad.kernels import adjoints as helpers
from srcad.kernels.adjoints import unbroadcast
from srcad.kernels.tangents import broadcast_like


@dataclass(frozen=True)
class Template:
    rule: Callable
    signature: inspect.Signature  # the rule's parameters after (g, ans): the call's own
    g: str
    ans: str
    body: gast.expr | None        # None: the rule is called, not inlined
    free: dict                    # names the body reads from the rule's module → objects
    reads_ans: bool               # False: a called rule is handed None for `ans`
    chains: tuple = ()            # Guards of the module attributes the rule calls (`np.sin`)
    prepared: dict = field(default_factory=dict, compare=False, repr=False)  # a copier of
    #                               the body substituted and simplified, by the form of the
    #                               substitutes (_copier)
    matches: dict = field(default_factory=dict, compare=False, repr=False)  # parameter →
    #                               argument slot, by the call's count of positional
    #                               arguments and keyword names (_slots)

    def bind(self, args, keywords) -> inspect.BoundArguments:
        """Match a call's argument nodes to the rule's parameters (TypeError if they don't).
        Which argument a parameter takes depends only on how many come by position and the
        keywords' names: matched once per such form (`Signature.bind` costs about 10 us,
        and every operation of a long function binds its rules)."""
        keywords = dict(keywords)
        form = (len(args), tuple(keywords))
        slots = self.matches.get(form)
        if slots is None:
            slots = self.matches[form] = self.signature.bind(
                *range(len(args)), **{name: name for name in keywords}).arguments
        return inspect.BoundArguments(self.signature, {
            parameter: _argument(slot, args, keywords) for parameter, slot in slots.items()})


def _argument(slot, args, keywords):
    """The argument node (or tuple or dict of them, for `*args` and `**kwargs`) in `slot`: a
    position among `args` (an int) or a keyword's name."""
    if type(slot) is int:
        return args[slot]
    if type(slot) is str:
        return keywords[slot]
    if type(slot) is tuple:
        return tuple(args[position] for position in slot)
    return {name: keywords[keyword] for name, keyword in slot.items()}


@functools.lru_cache(maxsize=None)
def template_of(rule: Callable) -> Template:
    parameters = list(inspect.signature(rule).parameters.values())
    if len(parameters) < 2:
        raise SrcadError(f"a VJP rule takes (g, ans, *args); {rule!r} takes fewer parameters")
    g, ans, *own = parameters
    signature = inspect.Signature(own)
    body = _inlinable_body(rule)
    packed = {p.name for p in own if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    if body is not None and any(isinstance(n, gast.Name) and n.id in packed
                                for n in walk(body)):
        body = None  # `*args`/`**kwargs` have no single node to substitute: call the rule
    free = {} if body is None else _free_names(rule, body, {p.name for p in parameters})
    if free is None:
        body, free = None, {}
    return Template(rule, signature, g.name, ans.name, body, free,
                    body is not None or _reads_parameter(rule, ans.name), _chains_read(rule))


def rebound_chain(template: Template) -> Guard | None:
    """The first module attribute the rule calls that no longer names what its module
    defines: rebound since the rule was first used (`np.sin = ...`), or, for srcad's own
    rules, before, to something from another package. The rule's arithmetic would then
    call it. (A user's rule may call what its module imported from elsewhere.)"""
    own = (getattr(template.rule, "__module__", None) or "").split(".")[0] == "srcad"
    for guard in template.chains:
        if not guard.holds() or own and not _native(guard):
            return guard
    return None


def _native(guard: Guard) -> bool:
    """Whether the chain's object comes from its root module's package (NumPy's `sin`,
    `np.linalg.norm` from numpy.linalg); a ufunc of SciPy's has no `__module__`."""
    module = getattr(guard.value, "__module__", None)
    return not isinstance(module, str) or \
        module.split(".")[0] == guard.root.__name__.split(".")[0]


def _chains_read(rule) -> tuple:
    """Guards of the attribute chains on modules (`np.linalg.solve`) that the rule's own
    code reads. (Not those of the helpers it calls: every guard costs each call about
    30 ns, and a rule's helpers are srcad's, rebound by nobody who does not rebind NumPy.)"""
    try:
        node = parse_function(rule).node
    except SrcadError:
        return ()
    namespace = {**rule.__globals__, **dict(zip(rule.__code__.co_freevars, (
        c.cell_contents for c in rule.__closure__ or ())))}
    local = {n.id for n in walk(node) if isinstance(n, gast.Name)
             and not isinstance(n.ctx, gast.Load)}
    inner = {id(n.value) for n in walk(node) if isinstance(n, gast.Attribute)}
    guards = {}
    for part in walk(node):
        if not isinstance(part, gast.Attribute) or id(part) in inner:
            continue
        attributes, root = [], part
        while isinstance(root, gast.Attribute):
            attributes.append(root.attr)
            root = root.value
        if isinstance(root, gast.Name) and root.id not in local and \
                isinstance(namespace.get(root.id), types.ModuleType):
            guard = chain_guard(namespace[root.id], root.id, reversed(attributes))
            if guard is not None:
                guards[guard.key] = guard
    return tuple(guards.values())


def instantiate(template: Template, bound: inspect.BoundArguments, g: gast.expr,
                ans: gast.expr, bind: Callable[[str, object], str],
                same_shape: frozenset = frozenset()) -> gast.expr:
    """The rule's cotangent expression for one call.

    `bind(name, obj)` returns the name under which generated code can read `obj`;
    `same_shape` holds argument names known to have the output's shape, for which
    `unbroadcast` is dropped (and, in a tangent rule, the output's name when the argument
    has its shape, for which `broadcast_like` is).
    """
    if template.body is None:
        name = getattr(template.rule, "__name__", "")
        name = bind(name if name.isidentifier() else "vjp_rule", template.rule)
        if not template.reads_ans:
            ans = gast.Constant(None, None)  # so the forward sweep need not keep the output
        return gast.Call(gast.Name(name, gast.Load(), None, None),
                         [g, ans, *bound.args],
                         [gast.keyword(k, v) for k, v in bound.kwargs.items()])
    substitutes = {template.g: g, template.ans: ans}
    for parameter in template.signature.parameters.values():
        if parameter.name in bound.arguments:
            substitutes[parameter.name] = bound.arguments[parameter.name]
        else:
            substitutes[parameter.name] = constant_node(parameter.default) or gast.Name(
                bind(parameter.name, parameter.default), gast.Load(), None, None)
    form = _form(substitutes, same_shape, template.free)
    if form is None:  # (a substitute simplify may look into: made for this call alone)
        expression = _simplified(template, _substituted(template.body, substitutes),
                                 same_shape)
        _bind_free_names(expression, template.free, bind)
        return expression
    copy = template.prepared.get(form)
    if copy is None:
        copy = _copier(_prepared(template, substitutes, form))
        if len(template.prepared) < _PREPARED_FORMS:
            template.prepared[form] = copy
    return copy(list(substitutes.values()), template.free, bind)


def _simplified(template: Template, expression, same_shape):
    unbroadcast_names = {n for n, obj in template.free.items()
                         if obj is unbroadcast or obj is broadcast_like}
    return simplify(expression, unbroadcast_names, same_shape,
                    lambda func: _names_object(func, template.free) is np.where)


# A rule is inlined the same way for every call whose substitutes have the same form: what
# simplify reads of them (a name's membership of `same_shape`, a constant's value) is
# the same. Such calls share one prepared body, the substitutes left as placeholders, and
# a call copies it, filling them in: the rule is substituted and simplified once, not per
# operation (a sixth of the adjoint's making, a long function's first call).
_PREPARED_FORMS = 64  # per rule (forms differ by constants: 0.5, 2.0, ...)
_FORM_CONSTANTS = (int, float, bool, str, type(None))


def _form(substitutes: dict, same_shape: frozenset, free: dict) -> tuple | None:
    """What simplify reads of the substitutes (and of the rule's free names, which
    `same_shape` might hold too), or None where a substitute is more than a name or a
    constant."""
    form = []
    for node in substitutes.values():
        kind = type(node)
        if kind is gast.Name and "free_in_rule" not in node.__dict__:
            form.append(node.id in same_shape)
        elif kind is gast.Constant and type(node.value) in _FORM_CONSTANTS:
            form.append((type(node.value), repr(node.value)))
        else:
            return None
    form.append(tuple(name for name in free if name in same_shape))
    return tuple(form)


def _prepared(template: Template, substitutes: dict, form: tuple):
    """The rule's body substituted by placeholders of the substitutes' form, simplified:
    a placeholder carries the position of the substitute that fills it (_copier)."""
    placeholders, same_shape = {}, set(form[-1])
    for position, (name, node) in enumerate(substitutes.items()):
        if type(node) is gast.Name:
            placeholder = new_name(f"<substitute {position}>", gast.Load)
            if form[position]:
                same_shape.add(placeholder.id)
        else:
            placeholder = gast.Constant(node.value, None)
        placeholder.placeholder = position
        placeholders[name] = placeholder
    return _simplified(template, _substituted(template.body, placeholders),
                       frozenset(same_shape))


def _copier(node) -> Callable:
    """`copy(substitutes, free, bind)` of a prepared body `node`: a copy with each placeholder
    a copy of its substitute and the rule's free names named as `bind` says, names read only
    for their shape tagged as `_bind_free_names` tags them: the instantiation of its rule for
    one call. What each node's copy takes is worked out here, once per prepared body, not
    field by field on every call: this runs for every rule inlined."""
    if type(node) is list:
        items = [_copier(item) for item in node]
        return lambda substitutes, free, bind: [copy(substitutes, free, bind) for copy in items]
    if not isinstance(node, gast.AST) or not node.__dict__:
        return lambda substitutes, free, bind: node  # (a leaf, a context or an operator:
    fields = node.__dict__                           # it holds nothing, shared as `ast` does)
    if "placeholder" in fields:
        position = fields["placeholder"]
        return lambda substitutes, free, bind: _atom_copy(substitutes[position])
    kind = type(node)
    children = [(key, _copier(value)) for key, value in fields.items()
                if type(value) is list or isinstance(value, gast.AST) and value.__dict__]
    free_name = kind is gast.Name and fields.get("free_in_rule", False)

    def copy(substitutes, free, bind):
        copied = _NEW(kind)
        state = copied.__dict__
        state.update(fields)  # (then each child's copy in its place, in the order of fields)
        for key, child in children:
            state[key] = child(substitutes, free, bind)
        if free_name:
            copied.id = bind(node.id, free[node.id])
        elif kind is gast.Call:
            _tag_shape_argument(node, copied.args, free)
        return copied

    return copy


def _atom_copy(node):
    """A copy of a substitute of a prepared body (a name or a constant: `_form`), its
    context shared: it holds nothing (a name's annotation, which a parameter has, is copied)."""
    if getattr(node, "annotation", None) is not None:
        return clone(node)
    copied = _NEW(type(node))
    copied.__dict__.update(node.__dict__)
    return copied


_NEW = gast.AST.__new__


# Runtime helpers that read one argument only for its shape, and which argument.
SHAPE_ARGUMENTS = {helpers.unbroadcast: 1, helpers.expand_reduced: 1, helpers.reduced_size: 0}


def _names_object(node, free: dict):
    """The object an attribute chain of the rule's free names denotes (`np.where`)."""
    attributes = []
    while isinstance(node, gast.Attribute):
        attributes.append(node.attr)
        node = node.value
    if not (isinstance(node, gast.Name) and getattr(node, "free_in_rule", False)):
        return None
    value = free.get(node.id)
    for attribute in reversed(attributes):
        value = getattr(value, attribute, None)
    return value


def _bind_free_names(expression, free: dict, bind: Callable[[str, object], str]) -> None:
    """Name the rule's free names as `bind` says, in one walk that first tags names read only
    for their shape (`x` in `unbroadcast(g, x)`): the forward sweep may then record just the
    shape of an overwritten `x` (see reverse._settle). A call comes before its callee's name
    in the walk, so the tag reads the name the rule wrote."""
    for node in walk(expression):
        kind = type(node)
        if kind is gast.Call:
            _tag_shape_argument(node, node.args, free)
        elif kind is gast.Name and getattr(node, "free_in_rule", False):
            node.id = bind(node.id, free[node.id])


def _tag_shape_argument(call, arguments: list, free: dict) -> None:
    """Tag the argument among `arguments` (the call's, or its copy's) that a helper of
    SHAPE_ARGUMENTS reads for its shape alone, where it is a name."""
    if isinstance(call.func, gast.Name) and getattr(call.func, "free_in_rule", False):
        position = SHAPE_ARGUMENTS.get(free.get(call.func.id))
        if position is not None and position < len(arguments) \
                and isinstance(arguments[position], gast.Name):
            arguments[position].shape_only = True


def _reads_parameter(rule, name: str) -> bool:
    """Whether the rule's source reads `name` (its own code or a nested function's); True
    where it cannot be told. Read from the AST, not the bytecode, whose instruction forms
    change between Python versions (3.13 loads two names in one `LOAD_FAST_LOAD_FAST`)."""
    try:
        node = parse_function(rule).node
    except SrcadError:
        return True
    return any(isinstance(n, gast.Name) and (
        n.id == name and isinstance(n.ctx, gast.Load) or n.id in _READS_BY_NAME)
        for n in walk(node))


_READS_BY_NAME = frozenset(NAMESPACE_READERS.values())


def _inlinable_body(rule):
    try:
        node = parse_function(rule).node
    except SrcadError:
        return None
    statements = [s for s in node.body if not (
        isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant))]
    if len(statements) != 1 or not isinstance(statements[0], gast.Return):
        return None
    body = statements[0].value
    scoped = (gast.Lambda, gast.ListComp, gast.GeneratorExp, gast.DictComp, gast.SetComp,
              gast.NamedExpr)
    # (a copy: its names are marked as the rule's own, and the parsed tree is shared)
    return None if any(isinstance(n, scoped) for n in walk(body)) else clone(body)


def _free_names(rule, body, parameters) -> dict | None:
    """Objects of the names the body reads besides its parameters; None if one is unbound."""
    closure = dict(zip(rule.__code__.co_freevars,
                       (c.cell_contents for c in rule.__closure__ or ())))
    free = {}
    for node in walk(body):
        if isinstance(node, gast.Name) and node.id not in parameters:
            for namespace in (closure, rule.__globals__, vars(builtins)):
                if node.id in namespace:
                    free[node.id] = namespace[node.id]
                    break
            else:
                return None
            node.free_in_rule = True
    return free


def _substituted(node, substitutes: dict):
    """A copy of the rule's `node` (as `clone` makes) in which each name of `substitutes` that
    is not one of the rule's free names is a copy of its substitute, not searched itself.
    One pass that copies and substitutes at once: this runs for every rule inlined."""
    kind = type(node)
    if kind is list:
        return [_substituted(item, substitutes) for item in node]
    if kind is gast.Name and node.id in substitutes and not getattr(node, "free_in_rule", False):
        return clone(substitutes[node.id])
    if not isinstance(node, gast.AST):
        return node
    copied = kind.__new__(kind)
    copied.__dict__.update({key: _substituted(value, substitutes) if type(value) is list
                            or isinstance(value, gast.AST) else value
                            for key, value in node.__dict__.items()})
    return copied
