"""fence: refuse, before any transformation, what srcad cannot differentiate correctly.

Input: a parsed function. Output: nothing, or an `UnsupportedSyntaxError` naming the
user's file, line, column and construct, with a suggested rewrite. Every later stage may
assume that the tree holds only the constructs allowed here.
"""
from __future__ import annotations

import functools

import gast

from srcad.compiler.frontend.parse import ParsedFunction
from srcad.compiler.frontend.scopes import local_names
from srcad.compiler.frontend.trees import walk
from srcad.errors import UnsupportedSyntaxError

ALLOWED_STATEMENTS = (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Return, gast.Expr,
                      gast.Pass, gast.If, gast.For, gast.While, gast.Break, gast.Continue,
                      gast.FunctionDef, gast.With, gast.Raise, gast.Assert, gast.Delete,
                      gast.Try)
COMPOUND = (gast.If, gast.For, gast.While)
ALLOWED_EXPRESSIONS = (gast.BinOp, gast.UnaryOp, gast.Compare, gast.Call, gast.Attribute,
                       gast.IfExp, gast.BoolOp, gast.boolop, gast.ListComp, gast.GeneratorExp,
                       gast.DictComp, gast.SetComp, gast.Set,
                       gast.Lambda,
                       gast.comprehension,
                       gast.Subscript, gast.Name, gast.Constant, gast.Tuple, gast.List, gast.Dict,
                       gast.Slice, gast.keyword, gast.JoinedStr, gast.FormattedValue)
# Parts of the tree that are neither statements nor expressions.
STRUCTURAL = (gast.expr_context, gast.operator, gast.unaryop, gast.cmpop, gast.arguments,
              gast.alias, gast.withitem)

# What to tell the user for each construct we refuse: (what it is, how to rewrite it).
REFUSED = {
    gast.TryStar: ("`except*` (exception groups)", "catch the group with `except`"),
    gast.Global: ("`global` declarations", "pass the value as an argument and return the new one"),
    gast.Nonlocal: ("`nonlocal` declarations", "pass the value as an argument and return the new one"),
    gast.AsyncFunctionDef: ("`async` functions", "differentiate a synchronous function"),
    gast.ClassDef: ("class definitions", "define the class at module level"),
    gast.Yield: ("generators (`yield`)", "return a value instead of yielding it"),
    gast.YieldFrom: ("generators (`yield from`)", "return a value instead of yielding it"),
    gast.Await: ("`await` expressions", "differentiate a synchronous function"),
    gast.NamedExpr: ("assignment expressions (`:=`)", "assign in a statement of its own"),
    gast.Starred: ("starred expressions (`*x`)", "pass the elements explicitly"),
    gast.Import: ("imports inside the function", "import at module level"),
    gast.ImportFrom: ("imports inside the function", "import at module level"),
}


def fence(parsed: ParsedFunction, lists=frozenset()) -> None:
    """Raise `UnsupportedSyntaxError` for the first construct srcad cannot differentiate.
    `lists`: the names surely holding lists (frontend/container_writes.py), whose `del xs[i]`
    srcad follows."""
    fn = parsed.node
    if isinstance(fn, gast.AsyncFunctionDef):
        _refuse(fn, parsed)
    expressions = not _every_kind_allowed(parsed.held.kinds)
    if expressions:
        for default in [*fn.args.defaults, *filter(None, fn.args.kw_defaults)]:
            _check_expression_tree(default, parsed)
    # (the function's own names asked only of a write into an element, which few make:
    # a walk of the whole function otherwise)
    local = functools.cache(lambda: frozenset(local_names(fn)))
    _check_block(fn.body, parsed, local=local, lists=lists, expressions=expressions)


def _every_kind_allowed(kinds) -> bool:
    """Whether every kind of node the function holds (its census) is allowed where it may
    stand: then no expression needs a walk of its own (nearly every function), as none
    could be refused. Not so where a starred argument or a comprehension (which may be
    asynchronous) asks for a closer look."""
    return gast.Starred not in kinds and gast.comprehension not in kinds and all(
        issubclass(kind, (*ALLOWED_STATEMENTS, *ALLOWED_EXPRESSIONS, *STRUCTURAL,
                          gast.ExceptHandler)) for kind in kinds)


def _check_block(statements, parsed, in_handler=False, local=frozenset, lists=frozenset(),
                 expressions=True):
    """`local()`: the function's own names; `expressions`: whether the expressions need
    checking (`_every_kind_allowed`)."""
    for statement in statements:
        if not isinstance(statement, ALLOWED_STATEMENTS):
            _refuse(statement, parsed)
        if isinstance(statement, gast.Raise) and statement.exc is None and not in_handler:
            _refuse(statement, parsed, what="`raise` without an exception outside `except:`",
                    fix="raise the exception by name")
        if isinstance(statement, gast.Delete) and not all(
                isinstance(t, gast.Name) or isinstance(t, gast.Subscript)
                and isinstance(t.value, gast.Name) and t.value.id in lists
                for t in statement.targets):
            _refuse(statement, parsed, what="`del` of an element or attribute",
                    fix="build a new list or dict without it; `del xs[i]` of a list the "
                    "function makes (`xs = list(...)`, a display) is followed")
        if isinstance(statement, gast.Expr) and isinstance(statement.value, gast.Call) \
                and any(k.arg == "out" and not (isinstance(k.value, gast.Constant)
                                                and k.value.value is None)
                        for k in statement.value.keywords):
            _refuse(statement, parsed, what="`out=` arguments (they write in place)",
                    fix="assign the result instead: `y = np.add(a, b)`")
        if isinstance(statement, gast.With):
            for item in statement.items:
                _check_with_target(item.optional_vars, parsed)
        _check_targets(statement, parsed, local)
        for field, child in gast.iter_fields(statement):
            if field in ("body", "orelse", "finalbody"):
                _check_block(child, parsed, in_handler and not isinstance(
                    statement, (gast.FunctionDef, gast.Try)), local,
                    frozenset() if isinstance(statement, gast.FunctionDef) else lists,
                    expressions)
            elif field == "handlers":  # (where `raise` alone raises what was caught again)
                for handler in child:
                    if handler.type is not None and expressions:
                        _check_expression_tree(handler.type, parsed)
                    _check_block(handler.body, parsed, True, local, lists, expressions)
            elif not expressions or field == "targets" and starred_unpacking(statement):
                continue  # (a starred target: names only, desugar.starred_unpackings
                #           rewrites it)
            else:
                for part in child if isinstance(child, list) else [child]:
                    if isinstance(part, gast.AST):
                        _check_expression_tree(part, parsed)


def _check_targets(statement, parsed, local):
    """Targets are names, `name[index]` of the function's own variables, `obj.attr`, or
    nests of tuples of them (`y[0], y[1] = ...`); a loop's target holds names only."""
    if isinstance(statement, (gast.Assign, gast.AugAssign)):
        targets = statement.targets if isinstance(statement, gast.Assign) else [statement.target]
        leaves = [t for target in targets for t in _leaves(target)]
        for target in leaves:
            if isinstance(target, gast.Subscript) and not isinstance(target.value, gast.Name):
                _refuse(target, parsed, what="assignment into an element of an element",
                        fix="index once, e.g. `y[i, j] = v` instead of `y[i][j] = v`")
            if isinstance(target, gast.Subscript) and target.value.id not in local():
                _refuse(target, parsed, what=f"assignment into an element of "
                        f"`{target.value.id}`, a global (read back, what it holds would be a "
                        "constant to the derivative)",
                        fix=f"pass `{target.value.id}` in as an argument and return it")
        targets = [t for t in leaves if not isinstance(t, (gast.Subscript, gast.Attribute))]
    elif isinstance(statement, (gast.For, gast.AnnAssign)):
        targets = [statement.target]
    else:
        targets = []
    for target in targets:
        if type(target) is gast.Name:  # (nearly every target: nothing under it to refuse)
            continue
        for node in walk(target):
            if isinstance(node, gast.Attribute):
                _refuse(node, parsed, what="assignment to an attribute",
                        fix="keep the value in a local variable and return it")
            if isinstance(node, gast.Subscript):
                _refuse(node, parsed, what="a loop variable that is an element (`for y[i] in`)",
                        fix="loop over a name and assign the element in the body")


def _check_with_target(target, parsed):
    """`with m as v`: v is a name or a tuple of names."""
    if target is not None and not all(isinstance(t, gast.Name) for t in _leaves(target)):
        _refuse(target, parsed, what="`with ... as` an element or attribute",
                fix="bind a name: `with m as v:`")


def _leaves(target):
    """The names, elements and attributes a target binds (through nests of tuples)."""
    if isinstance(target, (gast.Tuple, gast.List)):
        return [leaf for element in target.elts for leaf in _leaves(element)]
    return [target]


def _check_expression_tree(root, parsed):
    spread = {id(argument) for node in walk(root) if isinstance(node, gast.Call)
              for argument in node.args if isinstance(argument, gast.Starred)}
    for node in walk(root):
        if id(node) in spread:  # `f(*xs)`: normalize writes the call as `starred_call`
            continue
        if isinstance(node, (ALLOWED_EXPRESSIONS, STRUCTURAL)):
            if isinstance(node, gast.comprehension) and node.is_async:
                _refuse(node, parsed, what="asynchronous comprehensions",
                        fix="use an ordinary loop")
            continue
        _refuse(node, parsed)


def _refuse(node, parsed, what=None, fix=None):
    default_what, default_fix = REFUSED.get(type(node), (f"`{type(node).__name__}` nodes", None))
    raise UnsupportedSyntaxError(
        f"srcad cannot differentiate {what or default_what} (in {parsed.name}).",
        parsed.location(node), fix or default_fix)


def starred_unpacking(statement) -> bool:
    """`first, *rest = value` (names, one of them starred): desugar rewrites it."""
    if not (isinstance(statement, gast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], (gast.Tuple, gast.List))):
        return False
    elements = statement.targets[0].elts
    starred = [e for e in elements if isinstance(e, gast.Starred)]
    return len(starred) == 1 and isinstance(starred[0].value, gast.Name) and all(
        isinstance(e, gast.Name) for e in elements if not isinstance(e, gast.Starred))
