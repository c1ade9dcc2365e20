"""The printer writes a gast tree as `ast.unparse` writes its `ast` twin, byte for byte, or
says it cannot (and python_source then unparses)."""
import ast
import math
import textwrap

import gast
import numpy as np
import pytest

from srcad.bench.first_call import define, loop_source, straight_line_source
from srcad.compiler.emit import as_python_ast, python_source
from srcad.compiler.frontend.trees import as_gast
from srcad.compiler.pipeline import Program, run_passes
from srcad.compiler.printer import Unprintable, printed

SOURCES = [
    "a = b + c * d - e / f // g % h @ k",
    "a = (b + c) * (d - e) ** 2 ** f",
    "a = -b ** 2, (-b) ** 2, not a or b and c, (a or b) and not (c or d)",
    "a = b < c <= d == e != f > g >= h is k is not m in n not in p",
    "a = b if c else d if e else (f if g else h)",
    "a = (b if c else d) + 1",
    "a = b | c ^ d & e << f >> g | ~h",
    "a = f(b, *c, d=1, **e)(g)[h][1:2, ::3, ...][:, None]",
    "a = b[1:], b[:-1], b[::2], b[c, d], b[(c, d)], b[()], b[c,]",
    "a.b.c = (1).real + 1.5.imag + x.y",
    "a, *b = c, = d = [e, f], {g: h, **k}, {m, n}, set(), (), (p,)",
    "a = lambda: 0",
    "a = lambda x, y=1, *args, z, w=2, **kw: x + y",
    "a = [x * y for x in range(3) if x if x > 1 for y in (1, 2)]",
    "a = {x: y for x, y in z}, {x for x in y}, (x for x in y), f(x for x in y)",
    "a = 'it''s', \"say \\\"hi\\\"\", b'\\x00', 1e300 * 1e300, 10 ** 400, 1j, -1j, True",
    "a += 1\nb -= c\nc **= 2\nd @= e",
    "(a := 1) + (b := 2)",
    "print((yield_ := 3))",
    "del a, b[1], c.d",
    "assert a > 0, 'message'",
    "import numpy as np, os\nfrom . import x\nfrom ..a.b import c as d, e",
    "global a, b",
    "for i, j in enumerate(k):\n    pass\nelse:\n    break",
    "while a:\n    continue\nelse:\n    a = 1",
    "if a:\n    b = 1\nelif c:\n    b = 2\nelif d:\n    b = 3\nelse:\n    b = 4",
    "if a:\n    b = 1\nelse:\n    if c:\n        b = 2\n    b = 3",
    "with a as b, c:\n    d = b",
    "try:\n    a = 1\nexcept ValueError as e:\n    raise TypeError() from e\n"
    "except (KeyError, IndexError):\n    raise\nexcept:\n    pass\nelse:\n    b = 2\n"
    "finally:\n    c = 3",
    "def f(a, b, /, c, d=1, *, e, f=2, **g):\n    nonlocal x\n    return",
    "def f(a: int, *b: str, c: 'x' = 1, **d: float) -> None:\n    return a, b",
    "@dec\n@dec2(1)\ndef f():\n    x = 1\n\n    def g(*, a):\n        return a\n    return g",
    "def f():\n    def g():\n        pass\n    return g",
    "x = f(a)(b).c[d](e)",
    "x = -(-1) + +a - ~b",
    "x = a if b else lambda: c",
    "x = (a, b) if c else [d]",
    "x = a[b:c:d]\nx = a[b:, :c]\nx = a[lambda: 1]",
]


@pytest.mark.parametrize("source", SOURCES)
def test_a_parsed_tree_prints_as_ast_unparse_writes_it(source):
    tree = as_gast(ast.parse(source))
    assert printed(tree) == ast.unparse(as_python_ast(tree))


def number(value):
    return gast.Constant(value, None)


def name(identifier):
    return gast.Name(identifier, gast.Load(), None, None)


@pytest.mark.parametrize("value", [-2, -2.5, -0.0, 0.0, 3, float("-inf"), float("inf"),
                                   float("nan"), True, (1, -2.0, "a"), ("one",), (),
                                   complex(-1, -2), "a'b\"c\n"])
def test_constants_print_as_the_parser_never_makes_them(value):
    """Negative numbers stand as constants in generated code: under `**` and `.` they are
    written in parentheses (emit._signed), elsewhere as they are."""
    expressions = [
        number(value),
        gast.BinOp(number(value), gast.Pow(), name("x")),
        gast.BinOp(name("x"), gast.Pow(), number(value)),
        gast.BinOp(name("x"), gast.Sub(), number(value)),
        gast.Attribute(number(value), "real", gast.Load()),
        gast.UnaryOp(gast.USub(), number(value)),
        gast.Call(name("f"), [number(value)], [gast.keyword("k", number(value))]),
    ]
    for expression in expressions:
        statement = gast.Assign([gast.Name("y", gast.Store(), None, None)], expression, None)
        assert printed(statement) == ast.unparse(as_python_ast(statement))
        assert printed(expression) == ast.unparse(as_python_ast(expression))


def test_the_names_read_are_gathered_as_as_python_ast_gathers_them():
    tree = as_gast(ast.parse(textwrap.dedent("""
        def f(a: annotated = default, *b: also):
            c = d + a
            e.f = g(h, k=m)
            del n
            return [p for q in r]
    """)))
    read, expected = set(), set()
    printed(tree, read)
    as_python_ast(tree, expected)
    assert read == expected == {"default", "d", "a", "e", "g", "h", "m", "p", "r"}


def test_the_first_functions_parameters_are_named_after_the_rest_is_printed():
    tree = as_gast(ast.parse("def scope():\n    def inner(x):\n        return np.sin(x) * c\n"
                             "    return inner\n"))
    text = printed(tree, set(), lambda read: sorted(read & {"np", "c", "unread"}) + ["free"])
    assert text.splitlines()[0] == "def scope(c, np, free):"


@pytest.mark.parametrize("source", [
    "def f():\n    'a docstring'\n    return 1",
    "x = f'{a!r:>{width}}'",
    "match x:\n    case 1:\n        pass",
    "class C:\n    pass",
    "async def f():\n    await g()",
])
def test_what_it_cannot_print_is_unparsed(source):
    tree = as_gast(ast.parse(source))
    with pytest.raises(Unprintable):
        printed(tree)
    assert python_source(tree) == ast.unparse(as_python_ast(tree))


@pytest.mark.parametrize("mode", ["rev", "gradient", "fused", "fwd", "slope"])
@pytest.mark.parametrize("source, name", [(loop_source(), "short_loop"),
                                          (straight_line_source(120, seed=3), "straight_line")])
def test_derivative_programs_print_as_ast_unparse_writes_them(source, name, mode):
    fn = define(source, name)
    options = {"arrays": frozenset({("x", 1), ("w", 2)})} if mode == "gradient" else {}
    program = run_passes(Program(fn, ("x", "w"), mode, **options))
    tree = program.module
    assert printed(tree) == ast.unparse(as_python_ast(tree))


def test_infinities_print_as_numbers_that_read_back_as_them():
    expression = gast.BinOp(number(float("inf")), gast.Add(), number(float("nan")))
    value = eval(printed(expression))
    assert math.isnan(value) and np.isnan(eval(ast.unparse(as_python_ast(expression))))
