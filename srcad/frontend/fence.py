"""fence: refuse, before any transformation, what srcad cannot differentiate correctly.

Input: a parsed function. Output: nothing, or an `UnsupportedSyntaxError` naming the
user's file, line, column and construct, with a suggested rewrite. Every later stage may
assume that the tree holds only the constructs allowed here.
"""
from __future__ import annotations

import gast

from srcad.errors import UnsupportedSyntaxError
from srcad.frontend.parse import ParsedFunction

ALLOWED_STATEMENTS = (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Return, gast.Expr,
                      gast.Pass)
ALLOWED_EXPRESSIONS = (gast.BinOp, gast.UnaryOp, gast.Compare, gast.Call, gast.Attribute,
                       gast.Subscript, gast.Name, gast.Constant, gast.Tuple, gast.List, gast.Dict,
                       gast.Slice, gast.keyword, gast.JoinedStr, gast.FormattedValue)
# Parts of the tree that are neither statements nor expressions.
STRUCTURAL = (gast.expr_context, gast.operator, gast.unaryop, gast.cmpop, gast.arguments,
              gast.alias)

# What to tell the user for each construct we refuse: (what it is, how to rewrite it).
REFUSED = {
    gast.For: ("`for` loops", "srcad differentiates straight-line code for now; unroll the "
               "loop or wait for control-flow support"),
    gast.While: ("`while` loops", "srcad differentiates straight-line code for now"),
    gast.If: ("`if` statements", "compute both sides and select with `np.where(cond, a, b)`"),
    gast.IfExp: ("conditional expressions", "select with `np.where(cond, a, b)`"),
    gast.BoolOp: ("`and`/`or` expressions", "combine conditions with `np.logical_and`/`np.logical_or`"),
    gast.Try: ("`try` statements", "move the `try` out of the differentiated function"),
    gast.With: ("`with` statements", "move the `with` block out of the differentiated function"),
    gast.Raise: ("`raise` statements", "validate inputs before calling the derivative"),
    gast.Assert: ("`assert` statements", "validate inputs before calling the derivative"),
    gast.Global: ("`global` declarations", "pass the value as an argument and return the new one"),
    gast.Nonlocal: ("`nonlocal` declarations", "pass the value as an argument and return the new one"),
    gast.Delete: ("`del` statements", "let the name go out of scope instead"),
    gast.FunctionDef: ("nested function definitions", "define the helper at module level"),
    gast.AsyncFunctionDef: ("`async` functions", "differentiate a synchronous function"),
    gast.ClassDef: ("class definitions", "define the class at module level"),
    gast.Lambda: ("lambdas inside a differentiated function", "define the helper at module level"),
    gast.Yield: ("generators (`yield`)", "return a value instead of yielding it"),
    gast.YieldFrom: ("generators (`yield from`)", "return a value instead of yielding it"),
    gast.Await: ("`await` expressions", "differentiate a synchronous function"),
    gast.NamedExpr: ("assignment expressions (`:=`)", "assign in a statement of its own"),
    gast.ListComp: ("list comprehensions", "build the list with vectorised NumPy calls"),
    gast.GeneratorExp: ("generator expressions", "use a vectorised NumPy call"),
    gast.DictComp: ("dict comprehensions", "build the dict outside the differentiated function"),
    gast.SetComp: ("set comprehensions", "build the set outside the differentiated function"),
    gast.Set: ("set displays", "use a tuple"),
    gast.Starred: ("starred expressions (`*x`)", "pass the elements explicitly"),
    gast.Import: ("imports inside the function", "import at module level"),
    gast.ImportFrom: ("imports inside the function", "import at module level"),
}


def fence(parsed: ParsedFunction) -> None:
    """Raise `UnsupportedSyntaxError` for the first construct srcad cannot differentiate."""
    fn = parsed.node
    for default in [*fn.args.defaults, *filter(None, fn.args.kw_defaults)]:
        _check_expression_tree(default, parsed)
    for statement in fn.body:
        if not isinstance(statement, ALLOWED_STATEMENTS):
            _refuse(statement, parsed)
        _check_targets(statement, parsed)
        for child in gast.iter_child_nodes(statement):
            _check_expression_tree(child, parsed)


def _check_targets(statement, parsed):
    if isinstance(statement, gast.AugAssign) and not isinstance(statement.target, gast.Name):
        _refuse(statement, parsed, what="augmented assignment to an element or attribute",
                fix="in-place updates are not differentiated yet; write `y = y + v` on a new array")
    targets = statement.targets if isinstance(statement, gast.Assign) else []
    for target in targets:
        for node in gast.walk(target):
            if isinstance(node, (gast.Subscript, gast.Attribute)):
                _refuse(node, parsed, what="assignment to an element or attribute",
                        fix="in-place updates are not differentiated yet; build a new array "
                        "(`np.concatenate`, `np.where`) instead")


def _check_expression_tree(root, parsed):
    for node in gast.walk(root):
        if isinstance(node, (ALLOWED_EXPRESSIONS, STRUCTURAL)):
            if isinstance(node, gast.Call) and any(k.arg is None for k in node.keywords):
                _refuse(node, parsed, what="`**kwargs` in calls", fix="pass keywords explicitly")
            if isinstance(node, gast.Dict) and None in node.keys:
                _refuse(node, parsed, what="`**` in dict displays", fix="list the keys explicitly")
            continue
        _refuse(node, parsed)


def _refuse(node, parsed, what=None, fix=None):
    default_what, default_fix = REFUSED.get(type(node), (f"`{type(node).__name__}` nodes", None))
    raise UnsupportedSyntaxError(
        f"srcad cannot differentiate {what or default_what} (in {parsed.name}).",
        parsed.location(node), fix or default_fix)
