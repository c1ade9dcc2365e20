"""Locating a function's source (frontend/parse.py): a `def` parsed from its own block of
lines gives the same tree, line and column numbers included, as the whole file parsed."""
import ast
import linecache

import numpy as np
import pytest

import srcad
from srcad.compiler.frontend import parse


def plain(x):
    return x * 2.0


def with_blank_lines_and_a_comment_at_the_margin(x):

    y = x + 1.0  # a comment
# a comment at the margin, inside the function
    return y * (
        x - 3.0)


def _identity(fn):
    return fn


@_identity
def decorated(x):
    return x ** 2


def multiline_string_at_the_margin(x):
    note = """
text at the margin"""
    return x * len(note)


def string_with_a_comment_line(x):
    text = """a
    # not a comment
   \t
    """
    return x * len(text)


class Model:
    scale = 2.0

    def string_with_indented_lines(self, x):
        text = """a
        b
    c"""
        return x * len(text)

    def string_at_the_margin(self, x):
        note = """
text left of the def"""
        return x * len(note)

    def method(self, x):
        if x > 0:
            return self.scale * x
        return -x


def outer(x):
    def inner(y):
        return y * x
    return inner


def one_liner(x): return x + 1.0


@pytest.mark.parametrize("fn", [plain, with_blank_lines_and_a_comment_at_the_margin, decorated,
                                multiline_string_at_the_margin, Model.method,
                                Model.string_at_the_margin, outer(1.0), one_liner,
                                string_with_a_comment_line, Model.string_with_indented_lines],
                         ids=lambda fn: fn.__qualname__)
def test_a_def_parsed_from_its_block_is_the_def_parsed_from_the_file(fn):
    code = parse.code_of(fn)
    lines = tuple(linecache.getlines(code.co_filename))
    whole = parse._find_definition(parse._file_tree(code.co_filename, "".join(lines)), code)
    block = parse._definition_block(code, lines)
    assert ast.dump(block, include_attributes=True) == ast.dump(whole, include_attributes=True)
    assert parse.parse_function(fn).node.lineno == code.co_firstlineno + (fn is decorated)


_CUT_BY_INDENTATION = """\
def spanning(x):
    y = (x *
3.0)
    return y * x


def continued(x):
    y = x * \\
3.0
    return y * x


def tabbed(x):
\ty = x * 3.0
\treturn y * x


class Holder:
    @staticmethod
    def nested(x):
        y = x * 3.0
# a comment at the margin
        return y * x
    other = 1


@staticmethod
def last(x):
    y = x * 3.0
    return y * x"""


@pytest.mark.parametrize("name", ["spanning", "continued", "tabbed", "nested", "last"])
def test_a_block_cut_by_indentation_is_the_def_of_the_file(tmp_path, name):
    """A line at the margin inside brackets or after a backslash does not end the block (the
    block is cut out by tokenizing it then); nor does one indented with tabs; a comment at
    the margin does not either, nor does the end of the file."""
    path = tmp_path / "shapes.py"
    path.write_text(_CUT_BY_INDENTATION)
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    fn = namespace["Holder"].nested if name == "nested" else namespace[name]
    fn = getattr(fn, "__func__", fn)
    code = parse.code_of(fn)
    lines = tuple(linecache.getlines(code.co_filename))
    whole = parse._find_definition(parse._file_tree(code.co_filename, "".join(lines)), code)
    block = parse._definition_block(code, lines)
    assert ast.dump(block, include_attributes=True) == ast.dump(whole, include_attributes=True)
    assert srcad.grad(fn)(2.0) == pytest.approx(12.0)  # (d/dx 3x^2, shapes aside)


def test_lambdas_on_one_line_are_told_apart():
    first, second = (lambda x: x * 2.0), (lambda x: x + 3.0)  # noqa: E731
    bodies = [parse.parse_function(f).node.body[0].value for f in (first, second)]
    assert [type(b.op).__name__ for b in bodies] == ["Mult", "Add"]


@pytest.mark.parametrize("fn", [lambda x: x * 5.0, lambda x: x - 7.0])
def test_a_lambda_in_a_decorator_is_found(fn):
    body = parse.parse_function(fn).node.body[0].value
    assert type(body.op).__name__ in ("Mult", "Sub") and body.right.value in (5.0, 7.0)


def test_a_string_spanning_lines_keeps_its_text():
    assert srcad.grad(string_with_a_comment_line)(1.0) == len("""a
    # not a comment
   \t
    """)
    assert srcad.grad(Model().string_with_indented_lines)(1.0) == len("""a
        b
    c""")


@pytest.mark.parametrize("second, found", [("x ** 3", True), ("x ** 2", False)])
def test_lambdas_whose_positions_span_their_statement(tmp_path, second, found):
    """A tool that rewrites code may give the lambdas inside a statement the statement's
    positions (pytest 8.0 does so in an `assert`): lambdas of one text are still found, and
    different ones are not guessed between."""
    path = tmp_path / "rewritten.py"
    path.write_text(f"def pair(g):\n    return g(lambda x: x ** 3) + g(lambda x: {second})\n")
    tree = ast.parse(path.read_text())
    statement = tree.body[0].body[0]
    for node in ast.walk(statement):
        ast.copy_location(node, statement)
    namespace = {}
    exec(compile(tree, str(path), "exec"), namespace)
    if found:
        assert namespace["pair"](lambda f: srcad.grad(f)(2.0)) == 24.0
    else:
        with pytest.raises(srcad.errors.SourceUnavailableError):
            namespace["pair"](lambda f: srcad.grad(f)(2.0))


def _write_module(tmp_path, name: str, text: str):
    import importlib.util
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


@pytest.mark.parametrize("before, after", [
    ("    return np.sum(x * 2.0)\n", "    return np.sum(x * 3.0)\n"),          # a constant
    ("    return np.sum(np.sin(x))\n", "    return np.sum(np.cos(x))\n"),      # a name
    ("    return np.sum(x * x)\n", "    return np.sum(x + x)\n"),              # an operator
])
def test_a_file_edited_after_import_is_not_differentiated_for_the_old_code(
        tmp_path, before, after):
    """srcad read the new text while the old code ran: a silently wrong derivative."""
    module, path = _write_module(tmp_path, "edited_after_import",
                                 "import numpy as np\n\n\ndef f(x):\n" + before)
    path.write_text("import numpy as np\n\n\ndef f(x):\n" + after)
    linecache.checkcache(str(path))
    with pytest.raises(srcad.errors.SourceUnavailableError, match="compiles to other code"):
        srcad.grad(module.f)(np.ones(2))


SHAPES = '''
from __future__ import annotations

import numpy as np
from numpy import linalg


class Base:
    def scale(self, x):
        return 2.0 * x


class Model(Base):
    factor = 3.0

    def loss(self, x):
        inner = lambda v: np.sum(v * self.factor)  # noqa: E731
        return inner(x) + np.sum(super().scale(x)) + linalg.norm(x)


def make(c):
    def closure(x, y: float = 1.0):
        def twice(v: np.ndarray) -> np.ndarray:
            return v * c * y
        return np.sum(twice(x)) + np.sum([t * t for t in x])
    return closure


def recursive(x, n=2):
    return np.sum(x) if n == 0 else recursive(x * 1.5, n - 1)
'''


def test_definitions_that_compile_with_context_are_accepted(tmp_path):
    """super(), closures, nested annotations under `from __future__ import annotations`,
    recursion, a method of an imported module: the file compiles to the code that runs."""
    module, _ = _write_module(tmp_path, "compiled_shapes", SHAPES)
    x = np.array([1.0, 2.0])
    model = module.Model()
    np.testing.assert_allclose(srcad.grad(model.loss)(x),
                               3.0 + 2.0 + x / np.linalg.norm(x))
    np.testing.assert_allclose(srcad.grad(module.make(2.0))(x), 2.0 + 2 * x)
    np.testing.assert_allclose(srcad.grad(module.recursive)(x), [2.25, 2.25])
