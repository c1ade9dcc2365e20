"""shipping: a user's function as data another process rebuilds, without the user's file.

`packed(fn)` → a `Parcel` (plain picklable data); `unpacked(parcel)` → a function that runs
and differentiates as `fn` does. A worker of a cluster has srcad and the installed packages,
but not the script, notebook or test file `fn` was defined in, so pickle's by-reference
functions cannot reach it. What a parcel holds:

- the source of each of the user's functions (`fn` and the user's functions it reaches
  through its globals, closure cells, defaults and registered rules): the text srcad's
  parser made of it, so a lambda or a nested `def` ships as well as a module-level one.
  The worker compiles it under a filename registered in `linecache`, so srcad reads it
  there as it reads any file, and transforms it (once per worker: `executors` keeps what it
  rebuilt). The functions of one source file are compiled into one such file, as they were
  defined in one: srcad writes out a helper only into a caller of its own file
  (frontend/inline.py), so a file per function would make the worker's program differ.
- the globals each function reads (the names its code and nested code use), and the
  modules among its globals (generated code may read `np` where the function does not): a
  module by its name, imported on the worker (one the function does not read, where the
  worker can); anything else by pickle (numbers, arrays, and the functions of installed
  packages, which pickle finds by reference).
- closure cell values, in real cells: the rebuilt function is a closure as the original
  was, and two functions of one module share one rebuilt namespace.
- the rules the user registered with `srcad.defvjp`/`defjvp` for those functions and for
  the installed callables they name: re-registered on the worker. Rules ship by source
  like every other user function, not by cloudpickle's by-value pickling: one mechanism,
  no extra dependency (a `concurrent.futures` process pool has no cloudpickle), and a rule
  that is a lambda in a test file reaches the worker as its text.

A user's function is one whose code lies outside the installed packages and srcad (a
script, a notebook, a test directory); the functions of an installed package travel by
reference and must be installed on the workers.
"""
from __future__ import annotations

import hashlib
import importlib
import linecache
import os
import pickle
import sys
import types
from dataclasses import dataclass, field

from srcad.compiler.emit import python_source
from srcad.compiler.frontend.parse import parse_function
from srcad.errors import SourceUnavailableError, UsageError
from srcad.ops import registry

_LIBRARY_PREFIXES = tuple(os.path.join(os.path.realpath(p), "") for p in {
    sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix})
_SRCAD_DIRECTORY = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(
    __file__))), "")


@dataclass(frozen=True)
class _Module:
    name: str


@dataclass(frozen=True)
class _UnreadModule(_Module):
    """A module of the function's globals its code does not read: generated code may read
    it all the same (transform/bindings.py names numpy by the user's `np`), so the worker's
    namespace has it where the worker can import it."""


@dataclass(frozen=True)
class _Function:
    index: int  # into Parcel.functions


@dataclass(frozen=True)
class _EmptyCell:
    """A closure cell not yet assigned (a name the enclosing function defines later)."""


@dataclass
class _Recipe:
    """One user function: its source and what it closes over."""

    name: str
    source: str
    namespace: int    # into Parcel.namespaces
    file: int         # the functions of one source file share a number
    freevars: tuple   # the closure's names, with `cells` their packed values
    cells: tuple
    defaults: tuple | None
    kwdefaults: dict | None


@dataclass
class Parcel:
    """`functions[0]` is the shipped function; `rules[k]` is `(primal, vjp rules or None,
    jvp rules or None)`, every value packed."""

    functions: list = field(default_factory=list)
    namespaces: list = field(default_factory=list)  # name → packed value, one per module
    rules: list = field(default_factory=list)


def packed(fn) -> Parcel:
    """`fn`, a user's plain function or lambda, as a Parcel."""
    if not (isinstance(fn, types.FunctionType) and _is_users(fn)):
        raise UsageError(f"an executor runs a Python function defined in the user's code; "
                         f"{fn!r} is not one.",
                         fix="wrap it: `lambda x: callable_(x)`, defined in your script.")
    parcel, packer = Parcel(), _Packer()
    packer.function(fn, parcel)
    return parcel


class _Packer:
    def __init__(self):
        self.functions: dict[int, int] = {}   # id(function) → its index
        self.namespaces: dict[int, int] = {}  # id(globals dict) → its index
        self.files: dict[str, int] = {}       # a source file's name → its number
        self.reached_rules: set = set()

    def function(self, fn, parcel: Parcel) -> _Function:
        known = self.functions.get(id(fn))
        if known is not None:
            return _Function(known)
        index = self.functions[id(fn)] = len(parcel.functions)
        parcel.functions.append(None)  # (its place, taken before what it reaches)
        try:
            node = parse_function(fn).node  # (a lambda's is a `def lambda_<line>`)
        except SourceUnavailableError as error:
            raise SourceUnavailableError(
                f"an executor ships the source of {fn.__qualname__} to its workers, and srcad "
                f"cannot read it: {error.message}", fix=error.fix) from None
        namespace = self.namespaces.get(id(fn.__globals__))
        if namespace is None:
            namespace = self.namespaces[id(fn.__globals__)] = len(parcel.namespaces)
            parcel.namespaces.append({})
        code = fn.__code__
        parcel.functions[index] = _Recipe(
            node.name, python_source(node) + "\n", namespace,
            self.files.setdefault(code.co_filename, len(self.files)), code.co_freevars,
            tuple(self.value(_cell_value(c), parcel) for c in fn.__closure__ or ()),
            None if fn.__defaults__ is None else tuple(
                self.value(v, parcel) for v in fn.__defaults__),
            None if fn.__kwdefaults__ is None else {
                k: self.value(v, parcel) for k, v in fn.__kwdefaults__.items()})
        names = parcel.namespaces[namespace]
        for name in sorted(_global_names(code)):
            if name in fn.__globals__ and name not in names:
                names[name] = self.value(fn.__globals__[name], parcel)
        for name, value in fn.__globals__.items():
            if isinstance(value, types.ModuleType) and name not in names:
                names[name] = _UnreadModule(value.__name__)
        self.rules_of(fn, parcel)
        return _Function(index)

    def value(self, value, parcel: Parcel):
        if isinstance(value, types.ModuleType):
            return _Module(value.__name__)
        if isinstance(value, types.FunctionType) and _is_users(value):
            return self.function(value, parcel)
        if callable(value):
            self.rules_of(value, parcel)
        return value

    def rules_of(self, primal, parcel: Parcel) -> None:
        """The user's rules for `primal`, packed once."""
        if id(primal) in self.reached_rules or not registry.has_user_rules(primal):
            return
        self.reached_rules.add(id(primal))
        op = registry.op_of(primal)
        vjp_rules, jvp_rules = (
            None if rules is None else tuple(self.value(rule, parcel) for rule in rules.rules)
            for rules in (op.vjp, op.jvp))
        parcel.rules.append((self.value(primal, parcel), vjp_rules, jvp_rules))


def _cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _EmptyCell()


def _global_names(code) -> set:
    """The names `code` and the code nested in it may read from its globals."""
    names, stack = set(), [code]
    while stack:
        current = stack.pop()
        names.update(current.co_names)
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return names


def _is_users(fn) -> bool:
    """Whether `fn` is defined outside srcad and the installed packages (so a worker may not
    be able to import it)."""
    filename = fn.__code__.co_filename
    if filename.startswith("<"):  # (exec'd text registered in linecache, a notebook cell)
        return not (fn.__module__ or "").startswith(("srcad.", "srcad_shipped"))
    path = os.path.realpath(filename)
    return not path.startswith(_LIBRARY_PREFIXES) and not path.startswith(_SRCAD_DIRECTORY)


def unpacked(parcel: Parcel):
    """The function a Parcel holds, rebuilt in this process with its rules registered."""
    namespaces = [{"__builtins__": __builtins__, "__name__": "srcad_shipped"}
                  for _ in parcel.namespaces]
    functions = _compiled(parcel.functions, namespaces)

    def value(packed_value):
        if isinstance(packed_value, _Module):
            return importlib.import_module(packed_value.name)
        if isinstance(packed_value, _Function):
            return functions[packed_value.index]
        return packed_value
    for namespace, names in zip(namespaces, parcel.namespaces):
        for name, packed_value in names.items():
            try:
                namespace[name] = value(packed_value)
            except Exception:  # (importing an unread module must not stop the function)
                if not isinstance(packed_value, _UnreadModule):
                    raise
    for fn, recipe in zip(functions, parcel.functions):
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        for name, cell_value in zip(recipe.freevars, recipe.cells):
            if not isinstance(cell_value, _EmptyCell):
                cells[name].cell_contents = value(cell_value)
        if recipe.defaults is not None:
            fn.__defaults__ = tuple(value(v) for v in recipe.defaults)
        if recipe.kwdefaults is not None:
            fn.__kwdefaults__ = {k: value(v) for k, v in recipe.kwdefaults.items()}
    for primal, vjp_rules, jvp_rules in parcel.rules:
        if vjp_rules is not None:
            registry.defvjp(value(primal), *map(value, vjp_rules))
        if jvp_rules is not None:
            registry.defjvp(value(primal), *map(value, jvp_rules))
    return functions[0]


def _compiled(recipes: list, namespaces: list) -> list:
    """The functions of `recipes`, those of one source file compiled from one text (and so
    with one filename), so that the worker writes out the helpers the client does. (Rather
    than teaching frontend/inline.py another notion of a file: it then sees here what it
    sees there, and an error's lines stay within one file.) Each is made inside a function
    whose parameters are its closure's names, so that it gets cells of those names (filled
    by `unpacked`)."""
    files: dict = {}  # (namespace, file) → the indices of its recipes
    for index, recipe in enumerate(recipes):
        files.setdefault((recipe.namespace, recipe.file), []).append(index)
    functions = [None] * len(recipes)
    for (namespace, _), indices in files.items():
        text = "".join(_enclosed(index, recipes[index]) for index in indices)
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]  # (one file per text)
        filename = f"<srcad-shipped {recipes[indices[0]].name} {digest}>"
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        exec(compile(text, filename, "exec"), namespaces[namespace])
        for index in indices:
            functions[index] = namespaces[namespace].pop(f"srcad_closure_{index}")(
                *[None] * len(recipes[index].freevars))
    return functions


def _enclosed(index: int, recipe: _Recipe) -> str:
    body = "".join("    " + line if line.strip() else line
                   for line in recipe.source.splitlines(True))
    return (f"def srcad_closure_{index}({', '.join(recipe.freevars)}):\n{body}"
            f"    return {recipe.name}\n")


def dumped(parcel: Parcel) -> bytes:
    """The parcel as bytes, or an error naming what could not be pickled."""
    try:
        return pickle.dumps(parcel, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError) as error:
        raise UsageError(f"an executor could not pickle what the function reads: {error}",
                         fix="make the function read its data from its arguments, or from "
                         "globals holding arrays, numbers and modules.") from None
