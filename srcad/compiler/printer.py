"""printer: a gast tree → Python source, the text `ast.unparse` writes for its `ast` twin.

Every derivative program is compiled from text. Converting its gast tree to `ast` and
unparsing that cost as much as compiling the text (a third of a long function's emit);
this prints the kinds of node the generated programs hold straight from gast, with
`ast.unparse`'s precedence rules and spacing, byte for byte. A tree holding anything else
(f-strings, docstrings, `match`, classes, `async`, u-strings, type comments) raises
`Unprintable`, and its caller unparses the `ast` twin instead (emit.python_source).

Invariant: `printed(tree)` is `ast.unparse(emit.as_python_ast(tree))` wherever it returns.
"""
from __future__ import annotations

import math
import sys

import gast

# ast._Precedence's values, in the same order (`ast` does not export them)
(NAMED_EXPR, TUPLE, YIELD, TEST, OR, AND, NOT, CMP, EXPR, BXOR, BAND, SHIFT, ARITH, TERM,
 FACTOR, POWER, AWAIT, ATOM) = range(1, 19)

_BINARY = {gast.Add: (" + ", ARITH), gast.Sub: (" - ", ARITH), gast.Mult: (" * ", TERM),
           gast.MatMult: (" @ ", TERM), gast.Div: (" / ", TERM), gast.Mod: (" % ", TERM),
           gast.FloorDiv: (" // ", TERM), gast.LShift: (" << ", SHIFT),
           gast.RShift: (" >> ", SHIFT), gast.BitOr: (" | ", EXPR), gast.BitXor: (" ^ ", BXOR),
           gast.BitAnd: (" & ", BAND), gast.Pow: (" ** ", POWER)}
_UNARY = {gast.USub: ("-", FACTOR), gast.UAdd: ("+", FACTOR), gast.Invert: ("~", FACTOR),
          gast.Not: ("not ", NOT)}
_COMPARE = {gast.Eq: " == ", gast.NotEq: " != ", gast.Lt: " < ", gast.LtE: " <= ",
            gast.Gt: " > ", gast.GtE: " >= ", gast.Is: " is ", gast.IsNot: " is not ",
            gast.In: " in ", gast.NotIn: " not in "}
_INFINITY = "1e" + repr(sys.float_info.max_10_exp + 1)  # (as ast.unparse writes inf)


def _number_or_repr(value) -> str:
    """A constant's text: infinities and NaNs spelled as ast.unparse spells them."""
    if isinstance(value, (float, complex)):
        return repr(value).replace("inf", _INFINITY).replace(
            "nan", f"({_INFINITY}-{_INFINITY})")
    return repr(value)


class Unprintable(Exception):
    """The tree holds a node the printer leaves to `ast.unparse`."""


def printed(tree, read: set | None = None, parameters=None) -> str:
    """The source of `tree` (a module, a statement, an expression or a list of them) as
    `ast.unparse` writes it; `read`, if given, gathers the names it reads (not those in
    parameters' annotations). `parameters(read)`, if given, names the parameters of the
    module's first function, written once the rest is printed (emit.compile_adjoint: the
    cells its body reads). Raises Unprintable."""
    printer = _Printer(read)
    if type(tree) is gast.Module and tree.type_ignores:
        raise Unprintable("type: ignore comments")
    if isinstance(tree, gast.expr):
        printer.expression(tree, TEST)
    else:
        printer.statements(tree.body if type(tree) is gast.Module else
                           tree if type(tree) is list else [tree], parameters)
    return "".join(printer.parts)


class _Printer:
    """One tree's text, in parts; each method writes a kind of node."""

    def __init__(self, read: set | None):
        self.parts, self.indent = [], ""
        self.read = read if read is not None else set()

    def fill(self, text: str) -> None:
        """A new line at the current indentation (none before the first)."""
        if self.parts:
            self.parts.append("\n")
        self.parts.append(self.indent + text)

    def statements(self, body: list, parameters=None) -> None:
        if body and type(body[0]) is gast.Expr and type(body[0].value) is gast.Constant \
                and type(body[0].value.value) is str:
            raise Unprintable("a docstring")
        for statement in body:
            method = _STATEMENTS.get(type(statement))
            if method is None:
                raise Unprintable(type(statement).__name__)
            if parameters is not None:
                if method is not _Printer.function:
                    raise Unprintable("no function to name the parameters of")
                method(self, statement, parameters)
                parameters = None
            else:
                method(self, statement)

    def block(self, body: list) -> None:
        self.parts.append(":")
        outer, self.indent = self.indent, self.indent + "    "
        self.statements(body)
        self.indent = outer

    # ---- statements ------------------------------------------------------------------
    def function(self, node, parameters=None) -> None:
        if node.type_comment is not None or getattr(node, "type_params", None):
            raise Unprintable("a type comment or type parameters")
        if self.parts:
            self.parts.append("\n")
        for decorator in node.decorator_list:
            self.fill("@")
            self.expression(decorator, TEST)
        self.fill(f"def {node.name}(")
        if parameters is None:
            self.arguments(node.args)
        else:
            arguments = node.args
            if arguments.posonlyargs or arguments.vararg or arguments.kwonlyargs \
                    or arguments.kwarg or arguments.defaults:
                raise Unprintable("a scope function with parameters of its own")
            slot = len(self.parts)
            self.parts.append("")
        self.parts.append(")")
        self.optional(" -> ", node.returns)
        self.block(node.body)
        if parameters is not None:
            self.parts[slot] = ", ".join(parameters(self.read))

    def arguments(self, node) -> None:
        written = []
        positional = node.posonlyargs + node.args
        defaults = [None] * (len(positional) - len(node.defaults)) + node.defaults
        for index, (parameter, default) in enumerate(zip(positional, defaults), 1):
            written.append(self.parameter(parameter, "", default))
            if index == len(node.posonlyargs):
                written[-1] += ", /"
        if node.vararg is not None or node.kwonlyargs:
            written.append("*" if node.vararg is None else self.parameter(node.vararg, "*"))
        written += [self.parameter(parameter, "", default)
                    for parameter, default in zip(node.kwonlyargs, node.kw_defaults)]
        if node.kwarg is not None:
            written.append(self.parameter(node.kwarg, "**"))
        self.parts.append(", ".join(written))

    def parameter(self, node, prefix: str, default=None) -> str:
        """A parameter's text, its annotation (names not gathered) and default included."""
        text = prefix + node.id
        if node.annotation is not None:
            read, self.read = self.read, set()
            text += ": " + self.text_of(node.annotation, TEST)
            self.read = read
        if default is not None:
            text += "=" + self.text_of(default, TEST)
        return text

    def text_of(self, node, precedence: int) -> str:
        """The text of one expression, apart."""
        parts, self.parts = self.parts, []
        self.expression(node, precedence)
        text, self.parts = "".join(self.parts), parts
        return text

    def assign(self, node) -> None:
        self.fill("")
        for target in node.targets:
            self.expression(target, TUPLE)
            self.parts.append(" = ")
        self.expression(node.value, TEST)

    def augmented(self, node) -> None:
        self.fill("")
        self.expression(node.target, TEST)
        self.parts.append(f" {_BINARY[type(node.op)][0].strip()}= ")
        self.expression(node.value, TEST)

    def optional(self, separator: str, node) -> None:
        """`separator` and `node`, where there is a node (a clause that may be left out)."""
        if node is not None:
            self.parts.append(separator)
            self.expression(node, TEST)

    def expression_statement(self, node) -> None:
        self.fill("")
        self.expression(node.value, YIELD)

    def branch(self, node) -> None:
        self.fill("if ")
        self.expression(node.test, TEST)
        self.block(node.body)
        while len(node.orelse) == 1 and type(node.orelse[0]) is gast.If:
            node = node.orelse[0]
            self.fill("elif ")
            self.expression(node.test, TEST)
            self.block(node.body)
        self.otherwise(node.orelse)

    def otherwise(self, orelse: list) -> None:
        if orelse:
            self.fill("else")
            self.block(orelse)

    def loop(self, node) -> None:
        if node.type_comment is not None:
            raise Unprintable("a type comment")
        self.fill("for ")
        self.expression(node.target, TUPLE)
        self.parts.append(" in ")
        self.expression(node.iter, TEST)
        self.block(node.body)
        self.otherwise(node.orelse)

    def while_loop(self, node) -> None:
        self.fill("while ")
        self.expression(node.test, TEST)
        self.block(node.body)
        self.otherwise(node.orelse)

    def with_block(self, node) -> None:
        if node.type_comment is not None:
            raise Unprintable("a type comment")
        self.fill("with ")
        for index, item in enumerate(node.items):
            if index:
                self.parts.append(", ")
            self.expression(item.context_expr, TEST)
            self.optional(" as ", item.optional_vars)
        self.block(node.body)

    def try_block(self, node) -> None:
        self.fill("try")
        self.block(node.body)
        for handler in node.handlers:
            self.fill("except")
            self.optional(" ", handler.type)
            if handler.name is not None:
                self.parts.append(" as " + handler.name.id)
            self.block(handler.body)
        self.otherwise(node.orelse)
        if node.finalbody:
            self.fill("finally")
            self.block(node.finalbody)

    def deleted(self, node) -> None:
        self.fill("del ")
        self.listed(node.targets, TEST)

    def declared(self, node) -> None:
        self.fill(("global " if type(node) is gast.Global else "nonlocal ")
                  + ", ".join(node.names))

    def imported(self, node) -> None:
        if type(node) is gast.ImportFrom:
            self.fill(f"from {'.' * (node.level or 0)}{node.module or ''} import ")
        else:
            self.fill("import ")
        self.parts.append(", ".join(alias.name + (f" as {alias.asname}" if alias.asname else "")
                                    for alias in node.names))

    def clauses(self, node) -> None:
        """A statement of a keyword and optional clauses (_CLAUSES)."""
        keyword, *clauses = _CLAUSES[type(node)]
        if type(node) is gast.Raise and node.exc is None and node.cause is not None:
            raise Unprintable("a raise from without an exception")
        self.fill(keyword)
        for separator, field in clauses:
            self.optional(separator, getattr(node, field))

    # ---- expressions -------------------------------------------------------------------
    def expression(self, node, precedence: int) -> None:
        """`node` written where its surroundings bind as `precedence` (ast's set_precedence;
        TEST where they set none)."""
        kind = type(node)
        if kind is gast.Name:
            if type(node.ctx) is gast.Load:
                self.read.add(node.id)
            self.parts.append(node.id)
            return
        method = _EXPRESSIONS.get(kind)
        if method is None:
            raise Unprintable(kind.__name__)
        method(self, node, precedence)

    def listed(self, nodes: list, precedence: int) -> None:
        for index, node in enumerate(nodes):
            if index:
                self.parts.append(", ")
            self.expression(node, precedence)

    def constant(self, node, precedence: int) -> None:
        value = node.value
        if node.kind is not None:
            raise Unprintable("a u-string")
        if type(value) is tuple:
            self.parts.append("(" + ", ".join(map(_number_or_repr, value))
                              + ("," if len(value) == 1 else "") + ")")
        else:
            self.parts.append("..." if value is ... else _number_or_repr(value))

    def signed(self, node, precedence: int) -> None:
        """`node` where a negative number is written as a negation in parentheses, as
        emit._signed has ast.unparse write it (the left of `**`, the object of `.`)."""
        if type(node) is gast.Constant and type(node.value) in (int, float) \
                and math.copysign(1.0, node.value) < 0:
            self.parts.append(f"(-{_number_or_repr(-node.value)})")
        else:
            self.expression(node, precedence)

    def written(self, parenthesised: bool, pieces) -> None:
        """`pieces` in order, a string as it is, `(node, precedence)` as an expression and
        a function by calling it, in parentheses where `parenthesised`."""
        if parenthesised:
            self.parts.append("(")
        for piece in pieces:
            if type(piece) is str:
                self.parts.append(piece)
            elif type(piece) is tuple:
                self.expression(*piece)
            else:
                piece()
        if parenthesised:
            self.parts.append(")")

    def binary(self, node, precedence: int) -> None:
        """(Written out, not through `written`: a third of a derivative's expressions.)"""
        operator, own = _BINARY[type(node.op)]
        parenthesised = precedence > own
        if parenthesised:
            self.parts.append("(")
        if own == POWER:  # (right-associative; a negative number on its left signed)
            self.signed(node.left, own + 1)
            self.parts.append(" ** ")
            self.expression(node.right, own)
        else:
            self.expression(node.left, own)
            self.parts.append(operator)
            self.expression(node.right, own + 1)
        if parenthesised:
            self.parts.append(")")

    def unary(self, node, precedence: int) -> None:
        operator, own = _UNARY[type(node.op)]
        self.written(precedence > own, (operator, (node.operand, own)))

    def compare(self, node, precedence: int) -> None:
        pieces = [(node.left, CMP + 1)]
        for operator, right in zip(node.ops, node.comparators):
            pieces += (_COMPARE[type(operator)], (right, CMP + 1))
        self.written(precedence > CMP, pieces)

    def boolean(self, node, precedence: int) -> None:
        operator, own = (" and ", AND) if type(node.op) is gast.And else (" or ", OR)
        pieces = []
        for index, value in enumerate(node.values):
            pieces += (operator, (value, min(own + 1 + index, ATOM))) if index else \
                ((value, own + 1),)
        self.written(precedence > own, pieces)

    def conditional(self, node, precedence: int) -> None:
        self.written(precedence > TEST, ((node.body, OR), " if ", (node.test, OR), " else ",
                                         (node.orelse, TEST)))

    def named(self, node, precedence: int) -> None:
        self.written(precedence > NAMED_EXPR, ((node.target, ATOM), " := ",
                                               (node.value, ATOM)))

    def call(self, node, precedence: int) -> None:
        self.expression(node.func, ATOM)
        self.parts.append("(")
        self.listed(node.args, TEST)
        for index, keyword in enumerate(node.keywords):
            if index or node.args:
                self.parts.append(", ")
            self.parts.append("**" if keyword.arg is None else keyword.arg + "=")
            self.expression(keyword.value, TEST)
        self.parts.append(")")

    def attribute(self, node, precedence: int) -> None:
        value = node.value
        self.signed(value, ATOM)
        if type(value) is gast.Constant and isinstance(value.value, int) \
                and not (type(value.value) is int and value.value < 0):
            self.parts.append(" ")
        self.parts.append("." + node.attr)

    def subscript(self, node, precedence: int) -> None:
        self.expression(node.value, ATOM)
        self.parts.append("[")
        index = node.slice
        if type(index) is gast.Tuple and index.elts:
            self.items(index.elts)
        else:
            self.expression(index, TEST)
        self.parts.append("]")

    def items(self, elements: list) -> None:
        """Elements separated by commas, one alone followed by one (ast's items_view)."""
        self.listed(elements, TEST)
        if len(elements) == 1:
            self.parts.append(",")

    def sliced(self, node, precedence: int) -> None:
        self.optional("", node.lower)
        self.parts.append(":")
        self.optional("", node.upper)
        self.optional(":", node.step)

    def tuple_(self, node, precedence: int) -> None:
        self.written(not node.elts or precedence > TUPLE, (lambda: self.items(node.elts),))

    def list_(self, node, precedence: int) -> None:
        self.parts.append("[")
        self.listed(node.elts, TEST)
        self.parts.append("]")

    def set_(self, node, precedence: int) -> None:
        if not node.elts:
            self.parts.append("{*()}")
            return
        self.parts.append("{")
        self.listed(node.elts, TEST)
        self.parts.append("}")

    def dictionary(self, node, precedence: int) -> None:
        self.parts.append("{")
        for index, (key, value) in enumerate(zip(node.keys, node.values)):
            if index:
                self.parts.append(", ")
            if key is None:
                self.parts.append("**")
                self.expression(value, EXPR)
            else:
                self.expression(key, TEST)
                self.parts.append(": ")
                self.expression(value, TEST)
        self.parts.append("}")

    def starred(self, node, precedence: int) -> None:
        self.parts.append("*")
        self.expression(node.value, EXPR)

    def lambda_(self, node, precedence: int) -> None:
        parameters = self.text_of_arguments(node.args)
        self.written(precedence > TEST, ("lambda" + (" " + parameters if parameters else "")
                                         + ": ", (node.body, TEST)))

    def text_of_arguments(self, node) -> str:
        parts, self.parts = self.parts, []
        self.arguments(node)
        text, self.parts = "".join(self.parts), parts
        return text

    def comprehension(self, node, precedence: int) -> None:
        opening, closing = _COMPREHENSIONS[type(node)]
        self.parts.append(opening)
        if type(node) is gast.DictComp:
            self.expression(node.key, TEST)
            self.parts.append(": ")
            self.expression(node.value, TEST)
        else:
            self.expression(node.elt, TEST)
        for generator in node.generators:
            self.parts.append(" async for " if generator.is_async else " for ")
            self.expression(generator.target, TUPLE)
            self.parts.append(" in ")
            self.expression(generator.iter, OR)
            for condition in generator.ifs:
                self.parts.append(" if ")
                self.expression(condition, OR)
        self.parts.append(closing)


_STATEMENTS = {
    gast.FunctionDef: _Printer.function, gast.Assign: _Printer.assign,
    gast.AugAssign: _Printer.augmented, gast.Expr: _Printer.expression_statement,
    gast.If: _Printer.branch, gast.For: _Printer.loop, gast.While: _Printer.while_loop,
    gast.With: _Printer.with_block, gast.Try: _Printer.try_block,
    gast.Delete: _Printer.deleted, gast.Global: _Printer.declared,
    gast.Nonlocal: _Printer.declared, gast.Import: _Printer.imported,
    gast.ImportFrom: _Printer.imported,
    **dict.fromkeys((gast.Return, gast.Raise, gast.Assert, gast.Pass, gast.Break,
                     gast.Continue), _Printer.clauses),
}
_CLAUSES = {  # statement → its keyword, then (separator, field) of each clause it may have
    gast.Return: ("return", (" ", "value")), gast.Raise: ("raise", (" ", "exc"),
                                                          (" from ", "cause")),
    gast.Assert: ("assert ", ("", "test"), (", ", "msg")), gast.Pass: ("pass",),
    gast.Break: ("break",), gast.Continue: ("continue",),
}
_EXPRESSIONS = {
    gast.Constant: _Printer.constant, gast.BinOp: _Printer.binary,
    gast.UnaryOp: _Printer.unary, gast.Compare: _Printer.compare,
    gast.BoolOp: _Printer.boolean, gast.IfExp: _Printer.conditional,
    gast.NamedExpr: _Printer.named, gast.Call: _Printer.call,
    gast.Attribute: _Printer.attribute, gast.Subscript: _Printer.subscript,
    gast.Slice: _Printer.sliced, gast.Tuple: _Printer.tuple_, gast.List: _Printer.list_,
    gast.Set: _Printer.set_, gast.Dict: _Printer.dictionary, gast.Starred: _Printer.starred,
    gast.Lambda: _Printer.lambda_, gast.ListComp: _Printer.comprehension,
    gast.GeneratorExp: _Printer.comprehension, gast.SetComp: _Printer.comprehension,
    gast.DictComp: _Printer.comprehension,
}
_COMPREHENSIONS = {gast.ListComp: ("[", "]"), gast.GeneratorExp: ("(", ")"),
                   gast.SetComp: ("{", "}"), gast.DictComp: ("{", "}")}
