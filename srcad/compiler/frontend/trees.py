"""trees: copying, converting and walking gast trees, on the path of every first call.

Every rule inlined into an adjoint starts from a fresh copy of its template, and every pass
walks the trees. `copy.deepcopy` is general (a memo of every object, the pickle protocol)
and made up a quarter of a transformation, and `ast.walk` goes through a generator per node;
a gast tree needs neither: nodes, lists of nodes, and immutable leaves (strings, numbers,
None), visited through each node's `_fields`. A pass that looks for names or statements
alone visits only what can hold them (`name_nodes`, `blocks`), and a function's census says
which kinds of node it holds at all, so a pass looks for a construct only where it is.
"""
from __future__ import annotations

import ast
from collections import Counter, deque
from typing import NamedTuple

import gast
import gast.ast3


def clone(node, twins: dict | None = None):
    """A deep copy of a gast node (or list of nodes), with every attribute it carries;
    `twins`, if given, gets each node's copy under the node's id. A context or an operator
    (`Load`, `Add`: a node of no fields and no attributes, which holds nothing) is not
    copied but shared, as Python's own parser shares them: they are near half the nodes of
    a function."""
    kind = type(node)
    if kind is list:
        return [clone(item, twins) for item in node]
    if not _COPIED[kind]:
        return node
    copied = kind.__new__(kind)
    state = copied.__dict__
    state.update(node.__dict__)
    for key, value in state.items():  # (the leaves as they are: strings, numbers, None)
        if type(value) is list:
            state[key] = [clone(item, twins) for item in value]
        elif _COPIED[type(value)]:
            state[key] = clone(value, twins)
    if twins is not None:
        twins[id(node)] = copied
    return copied


_STATELESS = frozenset(kind for kind in vars(gast).values() if isinstance(kind, type)
                       and issubclass(kind, (gast.expr_context, gast.operator, gast.unaryop,
                                             gast.cmpop, gast.boolop))
                       and not kind._fields and not kind._attributes)


class _Copied(dict):
    """Type → whether `clone` copies a value of it: a node, but a context or an operator.
    One lookup per value, where an `isinstance` and a set's lookup each cost as much (the
    clones of the simple form are a twentieth of a long function's first call)."""

    def __missing__(self, kind) -> bool:
        copied = self[kind] = issubclass(kind, gast.AST) and kind not in _STATELESS
        return copied


_COPIED = _Copied()


def new_name(identifier: str, context: type) -> gast.Name:
    """`gast.Name(identifier, context(), None, None)`, made as `clone` makes nodes: gast's
    constructor sets each field by a call of `setattr` and takes twice as long, and the
    passes make tens of thousands of names in a long function's first call. Its context
    is the one instance of `context` all names share (as `clone` shares it)."""
    made = _NEW(gast.Name)
    made.__dict__.update(id=identifier, ctx=_SHARED[context], annotation=None,
                         type_comment=None)
    return made


_NEW = gast.AST.__new__
# each context and operator class → its one instance that the trees made here share: a
# node fewer per name, operator and comparison to make, and to keep for the collector
_SHARED = {kind: _NEW(kind) for kind in _STATELESS}


def located(node, origin):
    """`gast.copy_location(node, origin)`: `node` given the location attributes of `origin`
    that both kinds of node have, and returned. gast's asks both classes' attribute lists
    for each of the four on every call; normalize locates each node it makes, a tenth of
    its time so."""
    shared = _SHARED_LOCATIONS.get((type(node), type(origin)))
    if shared is None:
        shared = _SHARED_LOCATIONS[type(node), type(origin)] = tuple(
            name for name in _LOCATION if name in node._attributes
            and name in origin._attributes)
    state = node.__dict__
    for name in shared:
        if (value := getattr(origin, name, _ABSENT)) is not _ABSENT:
            state[name] = value
    return node


_LOCATION = ("lineno", "col_offset", "end_lineno", "end_col_offset")
_SHARED_LOCATIONS: dict = {}  # (kind of node, kind of origin) → the location both have


def as_gast(node):
    """The gast tree of an `ast` tree, as `gast.ast_to_gast` makes it, without its visitor's
    dispatch by method name (a tenth of a long function's frontend): each node the gast
    class of its name with the same fields and locations; parameters, names and handlers as
    gast's visitor writes them; a node its visitor rewrites otherwise on this Python (type
    parameters on 3.12, definitions before it) is handed to it. Leaf values (names,
    numbers, None) are handed over without a call."""
    kind = type(node)
    if kind is list:
        return [as_gast(item) for item in node]
    plan = _GAST_PLANS.get(kind)
    if plan is None:
        if not isinstance(node, ast.AST):
            return node
        plan = _GAST_PLANS[kind] = _gast_plan(kind)
    if plan is _REWRITTEN:
        return gast.ast_to_gast(node)
    if kind is ast.Name:  # (located as ast.copy_location would, without its loop)
        made = new_name(node.id, _CONTEXTS[type(node.ctx)])
        state = made.__dict__
        for attribute in ("lineno", "col_offset"):
            if (value := getattr(node, attribute, None)) is not None:
                state[attribute] = value
        state.update(end_lineno=getattr(node, "end_lineno", None),
                     end_col_offset=getattr(node, "end_col_offset", None))
        return made
    if kind is ast.arg:
        return ast.copy_location(gast.Name(node.arg, gast.Param(), as_gast(node.annotation),
                                           node.type_comment), node)
    if kind is ast.ExceptHandler and node.name:
        return ast.copy_location(gast.ExceptHandler(
            as_gast(node.type), gast.Name(node.name, gast.Store(), None, None),
            as_gast(node.body)), node)
    if plan is _ABSENT:
        return None  # (as gast's visitor leaves out what gast has no node for)
    if type(plan) is not tuple:
        return plan  # (a context or an operator: shared)
    twin, fields, attributes = plan
    made = _NEW(twin)
    made.__dict__.update({field: as_gast(value) if type(value) is list
                          or isinstance(value, ast.AST) else value
                          for field in fields
                          if (value := getattr(node, field, _ABSENT)) is not _ABSENT})
    made.__dict__.update({attribute: value for attribute in attributes
                          if (value := getattr(node, attribute, _ABSENT)) is not _ABSENT})
    return made


def _gast_plan(kind):
    """How as_gast converts a node of the `ast` class `kind`: handed to gast's visitor
    (_REWRITTEN), left out (_ABSENT: gast has no such node), the shared instance of its gast
    twin (a context or an operator), or its gast twin with the fields and the location
    attributes it copies."""
    if kind.__name__ in _GAST_REWRITES:
        return _REWRITTEN
    twin = getattr(gast, kind.__name__, None)
    if twin in _SHARED:
        return _SHARED[twin]
    return _ABSENT if twin is None else (twin, kind._fields, kind._attributes)


_GAST_PLANS: dict = {}  # ast class → its _gast_plan
_CONTEXTS = {ast.Load: gast.Load, ast.Store: gast.Store, ast.Del: gast.Del}
_REWRITTEN, _ABSENT = object(), object()


# what gast's visitor converts by a method of its own: Name, arg and ExceptHandler as_gast
# writes as it does; the others it is handed
_GAST_REWRITES = {name[len("visit_"):] for cls in gast.ast3.Ast3ToGAst.__mro__
                  if cls not in (ast.NodeTransformer, ast.NodeVisitor, object)
                  for name in vars(cls) if name.startswith("visit_")} - {
    "Name", "arg", "ExceptHandler"}


def walk(node):
    """Every node of the tree under `node`, in `ast.walk`'s order (breadth first)."""
    todo = deque([node])
    while todo:
        node = todo.popleft()
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                todo.extend(item for item in value if isinstance(item, gast.AST))
            elif isinstance(value, gast.AST):
                todo.append(value)
        yield node


class Census(NamedTuple):
    """What a tree holds: its kinds of node, the names it reads or binds, the keywords its
    calls pass."""

    kinds: frozenset
    names: frozenset
    keywords: frozenset


def census(tree) -> Census:
    """The tree's census, in one walk: the frontend's rewrites of constructs most functions
    never use (sets, `map`, `dict`, `out=`) look for them only where it finds them, where
    each walked the whole function, a tenth of a long function's first call. Its kinds
    are those of the nodes `NAME_FIELDS` lead to: not contexts and operators, which no
    rewrite looks for (a third of the nodes)."""
    kinds, names, keywords = set(), set(), set()

    def note(node):
        kind = type(node)
        kinds.add(kind)
        if kind is gast.Name:
            names.add(node.id)
        elif kind is gast.keyword:
            keywords.add(node.arg)

    visit_all(tree, note, NAME_FIELDS)
    return Census(frozenset(kinds), frozenset(names), frozenset(keywords))


def statements_in(statement):
    """`statement` and every statement of the blocks it holds, outermost first; not those of
    the functions defined inside it (as `exits.walk_local`). Statements stand only in blocks,
    so this skips the expressions a walk of every node enters."""
    todo = [statement]
    while todo:
        statement = todo.pop()
        yield statement
        for field in _BLOCKS:
            block = getattr(statement, field, None)
            if type(block) is list:
                todo.extend(child for child in reversed(block)
                            if not isinstance(child, gast.FunctionDef))


def blocks(tree):
    """Every block (list of statements) under `tree`, those of the functions it defines too:
    a rewrite of statements visits these, where a walk of every node enters expressions."""
    todo = [tree]
    while todo:
        node = todo.pop()
        for field in _BLOCKS:
            block = getattr(node, field, None)
            if type(block) is list:
                if field != "handlers" and field != "cases":
                    yield block
                todo.extend(block)


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def every_statement(tree):
    """Every statement under `tree` (itself too, if one), those of the functions it defines
    too, in `walk`'s order: a statement's parent is a statement, a handler or a case, so a
    walk of those alone meets the statements as a walk of every node does."""
    todo = deque([tree])
    while todo:
        node = todo.popleft()
        if isinstance(node, gast.stmt):
            yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                todo.extend(item for item in value if isinstance(item, _HOLDING_STATEMENTS))


_HOLDING_STATEMENTS = (gast.stmt, gast.excepthandler, gast.match_case)


def nodes_of(tree, kind) -> list:
    """Every node of `kind` under `tree`, depth first (where the order does not matter)."""
    found = []
    visit_all(tree, lambda node: found.append(node) if isinstance(node, kind) else None)
    return found


def visit_all(node, action, fields=None) -> None:
    """`action(node)` for every node under `node`, depth first: a recursion through the
    fields, faster than `walk`'s generator where the order does not matter; `fields`, if
    given, maps a kind of node to the fields to enter (`NAME_FIELDS`: not contexts and
    operators). (A module function: a nested one calling itself is a cycle, left for the
    collector to find.)"""
    action(node)
    for field in node._fields if fields is None else fields[type(node)]:
        value = getattr(node, field, None)
        if type(value) is list:
            for item in value:
                if isinstance(item, gast.AST):
                    visit_all(item, action, fields)
        elif isinstance(value, gast.AST):
            visit_all(value, action, fields)


def name_nodes(node, scopes: tuple = ()) -> list:
    """Every `Name` under `node` (a node or a list of nodes), depth first; not those inside
    a node of the kinds `scopes` under it (nested functions: their names are theirs). A
    recursion through the fields that stops at names (but a parameter's annotation): the
    passes that look only for names ran half their time in `walk`'s generator, yielding
    every node."""
    found = []
    if type(node) is list:
        for item in node:
            if isinstance(item, gast.AST) and not isinstance(item, scopes):
                _gather_names(item, found, scopes)
    else:
        _gather_names(node, found, scopes)
    return found


def _gather_names(node, found: list, scopes: tuple) -> None:
    kind = type(node)
    if kind is gast.Name:
        found.append(node)
        if getattr(node, "annotation", None) is None:
            return
    for field in NAME_FIELDS[kind]:
        value = getattr(node, field, None)
        for item in value if type(value) is list else (value,):
            child = type(item)  # (a name or a constant, half the nodes: no call for them)
            if child is gast.Name and getattr(item, "annotation", None) is None:
                found.append(item)
            elif child is not gast.Constant and isinstance(item, gast.AST) \
                    and not isinstance(item, scopes):
                _gather_names(item, found, scopes)


class _NameFields(dict):
    """gast class → its fields that may hold a `Name`: not a context, an operator, a string
    or a number (gast's schema), which a search for names need not enter. Made on a class's
    first lookup."""

    def __missing__(self, kind) -> tuple:
        fields = self[kind] = tuple(field for field in kind._fields
                                    if field not in _FIELDS_WITHOUT_NAMES)
        return fields


_FIELDS_WITHOUT_NAMES = frozenset({"ctx", "op", "ops", "type_comment", "kind", "attr", "arg",
                                   "is_async", "conversion", "level", "module", "simple"})
NAME_FIELDS = _NameFields()


def attribute_chain(node) -> tuple:
    """`(root, attributes)` of an attribute chain: of `np.linalg.norm`, the node `np` and
    `["linalg", "norm"]`; a node that is no attribute is its own root, of no attributes."""
    attributes = []
    while isinstance(node, gast.Attribute):
        attributes.append(node.attr)
        node = node.value
    return node, attributes[::-1]


def names_in(node) -> set:
    """The names `node` mentions, read, bound or deleted."""
    return {name.id for name in name_nodes(node)}


def name_counts(*nodes) -> tuple[Counter, Counter]:
    """How often each name is read (loaded) and bound (stored or deleted) under `nodes`."""
    reads, binds = Counter(), Counter()
    for name in name_nodes(list(nodes)):
        if type(name.ctx) is gast.Load:
            reads[name.id] += 1
        elif type(name.ctx) is not gast.Param:
            binds[name.id] += 1
    return reads, binds


def statement_lists(fn: gast.FunctionDef) -> dict:
    """The statement list each statement of `fn` stands in, by the statement's id (of the
    bodies of functions, loops and branches)."""
    lists, todo = {}, [fn]
    while todo:
        node = todo.pop()
        if isinstance(node, (gast.FunctionDef, gast.For, gast.While, gast.If)):
            for statements in (node.body, getattr(node, "orelse", [])):
                lists.update((id(statement), statements) for statement in statements)
        for field in _BLOCKS:
            block = getattr(node, field, None)
            if type(block) is list:
                todo.extend(block)
    return lists
