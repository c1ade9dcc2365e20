"""parse: a Python function → the gast `FunctionDef` of its source.

The whole source file is read through `linecache` (files, notebooks and `exec`'d code that
registered itself there all work) and the `def` or `lambda` whose code object is the
function's is located in it: by name and first line for a `def`, by the column span of its
bytecode for a `lambda`, so several lambdas on one line are told apart. Line and column
numbers stay those of the user's file, so every later error points at a real line.

A `def` is parsed from its own block of lines (parsing and walking a whole file was half
of a first derivative's time); a lambda, and a `def` whose block cannot be cut out, from
the whole file, parsed once and searched only along the nodes that span its line.

Invariant of the result: a `FunctionDef` without decorators or annotations; a lambda
becomes a `FunctionDef` named `lambda_<line>` whose body is `return <expr>`.
"""
from __future__ import annotations

import __future__
import ast
import functools
import inspect
import linecache
import operator
import threading
import types
import weakref
from dataclasses import dataclass

import gast

from srcad.compiler.frontend.trees import Census, as_gast, census
from srcad.errors import Location, SourceUnavailableError
from srcad.ops.callables import unwrapped


@dataclass(frozen=True)
class ParsedFunction:
    """A function's tree and where it came from (for error messages)."""

    node: gast.FunctionDef
    filename: str
    lines: tuple[str, ...]
    name: str

    @functools.cached_property
    def held(self) -> Census:
        """What `node` holds (trees.census): the frontend's passes ask it before looking
        for a construct the function may not have. (`node` is never changed.)"""
        return census(self.node)

    def location(self, node) -> Location | None:
        lineno = getattr(node, "lineno", None)
        if lineno is None or not 0 < lineno <= len(self.lines):
            return None
        end_col = getattr(node, "end_col_offset", None)
        if getattr(node, "end_lineno", lineno) != lineno:
            end_col = None
        return Location(self.filename, lineno, node.col_offset, end_col, self.name,
                        self.lines[lineno - 1])


def code_of(fn):
    """The code object behind a plain function, or a clear error for anything else."""
    code = getattr(unwrapped(fn), "__code__", None)
    if code is None:
        raise SourceUnavailableError(
            f"{fn!r} has no Python source for srcad to transform (it is a builtin, a C "
            "extension or another kind of callable).",
            fix="register its derivative with `srcad.defvjp(fn, rule, ...)`, or "
            "differentiate a Python function that calls it.",
        )
    return code


# id(code object) → (its weak reference, the tree srcad made it from): frontend/
# functional.py's variants of helpers. By identity, as two variants made from closures of
# one factory have equal code objects; an entry leaves with its code object.
_VARIANTS: dict = {}


# id(code object) → (its weak reference, its tree): each function is parsed once, however
# many modes and derivatives of it are made (the tree is never changed: normalize copies it)
_PARSED: dict = {}


def register_variant(code, parsed) -> None:
    """Let `parse_function` give `parsed` for a function whose code is `code`."""
    _remember(_VARIANTS, code, parsed)


def _remember(table: dict, code, parsed) -> None:
    key = id(code)

    def forget(reference):
        if table.get(key, (None,))[0] is reference:
            del table[key]
    table[key] = (weakref.ref(code, forget), parsed)


def forget_parses() -> None:
    """Parse every function again from its source (`clear_cache`)."""
    _PARSED.clear()
    _LINES.clear()


# filename → (linecache's list of its lines, the same as a tuple): the functions of a file
# kept parsed share one tuple of its lines
_LINES: dict = {}


def _file_lines(filename: str) -> tuple:
    listed = linecache.getlines(filename)
    known = _LINES.get(filename)
    if known is None or known[0] is not listed:
        known = _LINES[filename] = (listed, tuple(listed))
    return known[1]


def parse_function(fn) -> ParsedFunction:
    """Locate `fn`'s definition in its source file and return it as gast (once per code
    object: the same tree serves every later call)."""
    code = code_of(fn)
    for table in (_VARIANTS, _PARSED):
        known = table.get(id(code))
        if known is not None and known[0]() is code:
            return known[1]
    parsed = _parsed(fn, code)
    _remember(_PARSED, code, parsed)
    return parsed


def _parsed(fn, code) -> ParsedFunction:
    lines = _file_lines(code.co_filename)
    if not lines:
        linecache.checkcache(code.co_filename)
        lines = _file_lines(code.co_filename)
    if not lines:
        raise _no_source(code)
    node = _definition_block(code, lines) if code.co_name != "<lambda>" else None
    if node is None:
        node = _find_definition(_file_tree(code.co_filename, "".join(lines)), code)
    if node is None and _is_pseudo_file(code.co_filename):
        raise _no_source(code)  # the lines are another snippet's (`python -c` on 3.13 keeps its own)
    if node is None or not _compiles_to(node, code, fn, lines):
        raise SourceUnavailableError(
            f"srcad cannot find the definition of {code.co_name!r} at line "
            f"{code.co_firstlineno} of {code.co_filename!r}"
            + ("" if node is None else " as it runs: the text there compiles to other code")
            + "; the file has changed since it was imported.",
            fix="re-import the module (or restart the interpreter) so source and code agree.",
        )
    return ParsedFunction(_mangled(_to_function_def(node), _enclosing_class(code)),
                          code.co_filename, lines, _name_of(node))


def _enclosing_class(code) -> str | None:
    """The innermost class whose body encloses the definition (`Model` for `Model.loss`
    and for a lambda in it, `Model.loss.<locals>.<lambda>`), or None."""
    parts = code.co_qualname.split(".")[:-1]
    while parts:
        part = parts.pop()
        if part != "<locals>":
            return part
        if parts:
            parts.pop()  # (the function whose locals these are)
    return None


def _mangled(function: gast.FunctionDef, class_name: str | None) -> gast.FunctionDef:
    """The definition with private names (`self.__factor`, `__helper`) as Python compiled
    them in the class body (`self._Model__factor`): generated code is compiled outside
    the class, where no name is mangled."""
    stem = (class_name or "").lstrip("_")
    if not stem:
        return function

    def mangle(identifier):
        if identifier and identifier.startswith("__") and not identifier.endswith("__") \
                and "." not in identifier:
            return f"_{stem}{identifier}"
        return identifier

    for node in gast.walk(function):
        if isinstance(node, gast.Name):
            node.id = mangle(node.id)
        elif isinstance(node, gast.Attribute):
            node.attr = mangle(node.attr)
        elif isinstance(node, gast.keyword):
            node.arg = mangle(node.arg)
        elif isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)) and node is not function:
            node.name = mangle(node.name)
        elif isinstance(node, (gast.Global, gast.Nonlocal)):
            node.names = [mangle(name) for name in node.names]
    return function


_FUTURE_FLAGS = functools.reduce(operator.or_, (
    getattr(__future__, feature).compiler_flag for feature in __future__.all_feature_names))


def _compiles_to(node, code, fn, lines: tuple) -> bool:
    """Whether the definition found compiles to the code that runs: a file edited since
    it was imported may hold, at the same line, a function of the same name that does
    something else (srcad would differentiate the new text while the old code runs).

    The file is compiled again as Python compiled it (its imports, enclosing functions and
    classes all shape the code: a method of an imported module is read with another
    instruction, a class mangles private names), and the code of that name at that line
    compared with the running one: instructions, names and constants, nested code too.
    Text that no longer compiles cannot be checked and is taken as it is; pytest rewrites
    the asserts of test modules, so there a function with an `assert` is too."""
    compiled = _compiled_file(code.co_filename, "".join(lines), code.co_flags & _FUTURE_FLAGS)
    if compiled is None:
        return True
    if any(_same_code(found, code)
           for found in nested_codes(compiled, code.co_name, code.co_firstlineno)):
        return True
    rewritten_by_pytest = "@py_builtins" in getattr(fn, "__globals__", {})
    return rewritten_by_pytest and any(isinstance(n, ast.Assert) for n in ast.walk(node))


@functools.lru_cache(maxsize=64)
def _compiled_file(filename: str, text: str, flags: int):
    try:
        return compile(text, filename, "exec", flags=flags, dont_inherit=True)
    except (SyntaxError, ValueError):
        return None


def nested_codes(code, name: str, line: int | None = None) -> list:
    """The code objects named `name` (whose first line is `line`, if given) nested anywhere
    in `code`, outermost first (several lambdas may share a line)."""
    found = []
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            if constant.co_name == name and line in (None, constant.co_firstlineno):
                found.append(constant)
            found += nested_codes(constant, name, line)
    return found


def _same_code(a, b) -> bool:
    if (a.co_code, a.co_names, a.co_varnames, a.co_freevars) != (
            b.co_code, b.co_names, b.co_varnames, b.co_freevars) \
            or len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) or isinstance(y, types.CodeType):
            if not (isinstance(x, types.CodeType) and isinstance(y, types.CodeType)
                    and _same_code(x, y)):
                return False
        elif type(x) is not type(y) or x != y and x == x:  # (nan is its own constant)
            return False
    return True


def _no_source(code) -> SourceUnavailableError:
    return SourceUnavailableError(
        f"srcad cannot read the source of {code.co_name!r}: {code.co_filename!r} is not a "
        "file it can open. Code typed at the interactive prompt of Python 3.11 and 3.12, "
        "given to `python -c`, piped on standard input or run by `exec` of a string keeps "
        "no source.",
        fix="define the function in a file (a module or a script), an IPython or Jupyter "
        "cell, or at the interactive prompt of Python 3.13 or newer; for `exec`, register "
        "the text with `linecache` under the filename you compile it with.",
    )


def _is_pseudo_file(filename: str) -> bool:
    """`<string>`, `<stdin>`: a name Python gives code that came from no file."""
    return filename.startswith("<") and filename.endswith(">")


def _definition_block(code, lines: tuple):
    """The `def` starting at `code`'s first line, parsed from its block alone, with the
    file's line and column numbers; None where the block is not one such `def`."""
    first = code.co_firstlineno
    body = _parsed_block(_indented_block(lines, first), first)
    if body is None:
        body = _parsed_block(_tokenized_block(lines, first), first)
    node = body[0] if body is not None and len(body) == 1 else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != code.co_name:
        return None
    return node if _first_line(node) == first else None


def _parsed_block(block, first: int) -> list | None:
    """The statements of `block`, lines of the file from line `first`, parsed with the
    file's line and column numbers; None where there are none or they do not parse."""
    if not block:
        return None
    # an indented `def` (a method, a nested function) parses as the body of an `if`, its
    # lines untouched: a string spanning lines keeps its text, columns stay right; blank
    # lines before it give the nodes the file's line numbers as they are made
    indented = block[0][:1].isspace()
    try:
        tree = python_tree("\n" * (first - 1 - indented) + ("if 1:\n" if indented else "")
                           + "".join(block))
    except (SyntaxError, ValueError):  # (IndentationError is a SyntaxError)
        return None
    if not indented:
        return tree.body
    return tree.body[0].body if len(tree.body) == 1 and isinstance(tree.body[0], ast.If) \
        else None


def _tokenized_block(lines: tuple, first: int) -> list | None:
    """The block of lines from line `first` as `inspect.getblock` cuts it out by tokenizing
    them; None where it cannot."""
    try:
        return inspect.getblock(lines[first - 1:])
    except (SyntaxError, IndexError, ValueError):
        return None


def _indented_block(lines: tuple, first: int) -> list | None:
    """The lines from line `first` (a definition's decorators or `def`) to the last before
    the first line after its `def` line indented no deeper than it, blank lines and
    comments aside: getblock's block without tokenizing every line (a third of a long
    function's parse). A cut inside a string, brackets or a line continued by a backslash
    leaves text that does not parse (the caller asks getblock then); None where an
    indentation holds a tab or a form feed, whose width is the tokenizer's to measure."""
    if not 0 < first <= len(lines):
        return None
    head = lines[first - 1]
    margin = len(head) - len(head.lstrip())
    in_body = False  # (past the `def` line)
    for at in range(first - 1, len(lines)):
        line = lines[at]
        text = line.lstrip()
        if not text or text[0] == "#":
            continue
        indentation = line[:len(line) - len(text)]
        if "\t" in indentation or "\f" in indentation:
            return None
        if not in_body:
            in_body = text.startswith(("def ", "async def ")) and len(indentation) == margin
        elif len(indentation) <= margin:
            return list(lines[first - 1:at])
    return list(lines[first - 1:]) if in_body else None


@functools.lru_cache(maxsize=64)
def _file_tree(filename: str, text: str) -> ast.Module:
    return python_tree(text, filename)


# CPython counts the depth of a conversion between its syntax trees and `ast`'s objects in
# one counter per interpreter, not per thread (python/cpython#106905): two threads parsing
# at once can fail with "SystemError: AST constructor recursion depth mismatch". srcad
# converts one tree at a time.
_AST_CONVERSION = threading.Lock()


def python_tree(text: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse(text, filename)`, one thread at a time."""
    with _AST_CONVERSION:
        return ast.parse(text, filename)


def compiled_tree(module: ast.Module, filename: str) -> types.CodeType:
    """`compile(module, filename, "exec")` of an `ast` tree, one thread at a time."""
    with _AST_CONVERSION:
        return compile(module, filename, "exec")


def _definitions_at(tree: ast.Module, line: int) -> list:
    """The `def`s and lambdas whose code starts on `line`, found by descending only into
    the nodes whose lines contain it."""
    found, todo = [], [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) \
                and _first_line(node) == line:
            found.append(node)
        for child in ast.iter_child_nodes(node):
            if not hasattr(child, "lineno") \
                    or _first_line(child) <= line <= (child.end_lineno or child.lineno):
                todo.append(child)
    return found


def _first_line(node) -> int:
    """The line a function's code object starts on: its first decorator's, if any."""
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno] + [d.lineno for d in decorators])


def _find_definition(tree: ast.Module, code):
    candidates = _definitions_at(tree, code.co_firstlineno)
    if code.co_name == "<lambda>":
        return _innermost_containing([n for n in candidates if isinstance(n, ast.Lambda)], code)
    return next((n for n in candidates if not isinstance(n, ast.Lambda)
                 and n.name == code.co_name), None)


def _innermost_containing(candidates, code):
    """The smallest lambda whose source span contains every instruction of `code`."""
    spans = [(p[0], p[2], p[1], p[3]) for p in code.co_positions()
             if None not in p and p[0] >= code.co_firstlineno and (p[0], p[2]) != (p[1], p[3])]
    if not spans:
        return candidates[0] if candidates else None
    start = min((s[0], s[1]) for s in spans)
    end = max((s[2], s[3]) for s in spans)
    containing = [n for n in candidates
                  if (n.lineno, n.col_offset) <= start and end <= (n.end_lineno, n.end_col_offset)]
    if containing:
        return min(containing, key=lambda n: (n.end_lineno - n.lineno,
                                              n.end_col_offset - n.col_offset))
    # Positions wider than the lambda: a tool that rewrote the code gave its nodes the
    # statement's span (pytest 8.0 does so to the lambdas inside an `assert`). The lambdas
    # within that span will do if they are one and the same text.
    inside = [n for n in candidates
              if start <= (n.lineno, n.col_offset) and (n.end_lineno, n.end_col_offset) <= end]
    same = inside and all(ast.dump(n) == ast.dump(inside[0]) for n in inside)
    return inside[0] if same else None


def _name_of(node) -> str:
    return f"lambda_{node.lineno}" if isinstance(node, ast.Lambda) else node.name


def _to_function_def(node) -> gast.FunctionDef:
    if isinstance(node, ast.Lambda):
        body = [ast.copy_location(ast.Return(value=node.body), node.body)]
        node = ast.copy_location(
            ast.FunctionDef(name=_name_of(node), args=node.args, body=body,
                            decorator_list=[], returns=None, type_params=[]), node)
        ast.fix_missing_locations(node)
    converted = as_gast(node)
    converted.decorator_list = []
    converted.returns = None
    for arg in _all_params(converted.args):
        arg.annotation = None
    return converted


def _all_params(args: gast.arguments):
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    params += [a for a in (args.vararg, args.kwarg) if a is not None]
    return params


def param_names(fn_node: gast.FunctionDef) -> list[str]:
    """Every parameter name of a function, in signature order."""
    return [p.id for p in _all_params(fn_node.args)]
