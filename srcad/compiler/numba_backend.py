"""numba_backend: a gradient program compiled to machine code by numba.

`srcad.grad(f, backend="numba")` asks for it. The program is the one srcad makes anyway,
for Python floats ("fused") or float64 arrays ("gradient"; "fused" for `value_and_grad`),
with a typed tape (a list per recorded name and loop: transform/recording.py `Tape`), then
made numba's:

- a name recorded before its first binding starts as 0.0 (0 for an integer), not None,
  where it holds a number (a list of floats, not of optional floats);
- the seed of a number output is 1.0; `del` statements go (numba frees at the end);
- it is made without the rewrites that serve Python alone (PYTHON_ONLY);
- it is compiled only where it runs a loop: a gradient of whole-array NumPy calls is
  NumPy's compiled loops already;
- srcad's helpers it calls (`unbroadcast`, `add_at`, `matmul_vjp_a`, ...) keep their names:
  runtime/numba_twins.py gives numba an implementation of each;
- numba compiles a copy of it written next to it (numba_program.py): its tapes of numbers
  are arrays, and it returns with its result whether that is finite.

The generated Python stays the program's readable reference, and the fallback: where numba
is not installed, or the program calls anything numba cannot compile (a helper of srcad's
without a twin, a function of the user's, a global array numba would freeze as a constant,
`np.random`), or numba cannot type it at its first call, the Python program runs, and keeps
running for it (where numba cannot type the copy, it compiles the program itself first);
so does a call on arrays numba would compute with otherwise (float32, uint8), and a call
whose result numba finds not finite or that raises in numba's code.
One difference is left: an integer the program computes past 64 bits wraps in numba's code.
"""
from __future__ import annotations

import builtins
import dis
import types
import warnings
import weakref

import gast
import numpy as np

from srcad.compiler.numba_program import numba_copy
from srcad.compiler.transform.adjoints import load
from srcad.kernels.numba_programs import all_finite
from srcad.runtime.arguments import seed_for


def lower(module: gast.Module, name: str, numbers: frozenset, bindings) -> None:
    """Make the program `name` of `module` numba's (see the module's docstring), in place."""
    scope, function = next((node, inner) for node in gast.walk(module)
                           if isinstance(node, gast.FunctionDef) for inner in node.body
                           if isinstance(inner, gast.FunctionDef) and inner.name == name)
    integers = _integers(function)
    function.body = _lowered(function.body, numbers, integers & numbers)
    for node in gast.walk(function):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                and bindings.named(node.func.id) is seed_for and len(node.args) == 1 \
                and isinstance(node.args[0], gast.Name) and node.args[0].id in numbers:
            # (`seed_for(y)` of a number is 1.0: written `float(1.0)`, a call in its place)
            node.func = load(bindings.name_for("float", builtins.float))
            node.args = [gast.Constant(1.0, None)]
    # (next to it, where `compiled` finds it)
    scope.body.insert(scope.body.index(function) + 1,
                      numba_copy(function, numbers, integers, bindings))


def _integers(function: gast.FunctionDef) -> set:
    """The names `function` binds to integers alone: a loop's element (of a range, where it
    is a number), and integer arithmetic of them and of integer constants (`i - 1`). A
    placeholder None, a value popped off the tape and `del` leave a name's kind as it is."""
    assigned: dict = {}
    for node in gast.walk(function):
        if isinstance(node, gast.For) and isinstance(node.target, gast.Name):
            assigned.setdefault(node.target.id, []).append(_COUNTER)
        elif isinstance(node, gast.Assign):
            for target in node.targets:
                for name in gast.walk(target):
                    if isinstance(name, gast.Name) and isinstance(name.ctx, gast.Store):
                        value = node.value if target is name else None  # (unpacked: unknown)
                        assigned.setdefault(name.id, []).append(value)
    integers = set(assigned)
    while True:
        size = len(integers)
        integers = {name for name in integers
                    if all(_integer(value, integers) for value in assigned[name])}
        if len(integers) == size:
            return integers


_COUNTER = gast.Constant(0, None)  # (what a loop over a range binds, for `_integers`)


def _integer(value, integers: set) -> bool:
    if isinstance(value, gast.Constant):
        return value.value is None or type(value.value) is int
    if isinstance(value, gast.Name):
        return value.id in integers
    if isinstance(value, gast.BinOp):
        return isinstance(value.op, (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod)) \
            and _integer(value.left, integers) and _integer(value.right, integers)
    if isinstance(value, gast.UnaryOp):
        return isinstance(value.op, gast.USub) and _integer(value.operand, integers)
    return isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) \
        and value.func.attr == "pop" and not value.args  # (off the tape: as it was pushed)


def _lowered(statements: list, numbers: frozenset, counters: set) -> list:
    """`statements` without `del`, and a number set to None set to 0.0 instead (to 0 for
    the `counters`, integers: an index numba must see as one)."""
    kept = []
    for statement in statements:
        if isinstance(statement, gast.Delete):
            continue
        if isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], gast.Name) \
                and statement.targets[0].id in numbers \
                and isinstance(statement.value, gast.Constant) and statement.value.value is None:
            statement.value = gast.Constant(0 if statement.targets[0].id in counters else 0.0,
                                            None)
        for field in ("body", "orelse"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and inner:
                setattr(statement, field, _lowered(inner, numbers, counters) or [gast.Pass()])
        kept.append(statement)
    return kept


PYTHON_ONLY = ("outline", "reuse", "release", "specialise")
"""The rewrites a program for numba is made without: outlines are objects numba cannot type,
and the others save memory or NumPy's dispatch, which numba's compiled loops do not pay."""

# the code objects of programs numba could not compile (they run as Python), and of those it
# did: weak, so that a program the cache lets go is let go here too
_failed: weakref.WeakSet = weakref.WeakSet()
_compiled: weakref.WeakSet = weakref.WeakSet()


def compiled_codes() -> frozenset:
    """The code objects of the programs numba compiled (and runs) so far."""
    return frozenset(_compiled)


def compiled(program, bound: types.FunctionType):
    """`bound` (`program` bound to the user's function: CompiledAdjoint.bind) compiled by
    numba, or `bound` itself where it cannot be (see the module's docstring). numba compiles
    the copy `lower` wrote (numba_program.py: tapes of numbers as arrays), or where it cannot
    type that, the program itself. A call that raises in numba's code (a float divided by
    zero, where NumPy's gives inf; an index out of range), or whose result is not finite,
    runs again as Python, which decides what it gives; so a program that may write into its
    arguments is left to Python."""
    code = bound.__code__
    if program.argument_writes or code in _failed or not _loops(code):
        return bound
    try:
        import numba
    except ImportError:
        _failed.add(code)
        return bound
    if not (_twinned_cells(bound) and _plain_globals(bound)):
        _failed.add(code)
        return bound
    jit = numba.njit(boundscheck=True)  # (an index out of range raises)
    # each returns the result and whether it is finite; the first numba can type runs
    calls = [jit(_numba_copy(program, bound)), _with_finiteness(jit(bound))]
    quiet = [True]  # (numba compiles at the first call: its advice on generated code is not
    #                  the user's)

    def run(*args):
        return plain(*args) if _numba_arguments(args) else bound(*args)

    def plain(*args):
        if not calls:
            return bound(*args)
        call = calls[0]
        try:
            if quiet:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", numba.core.errors.NumbaPerformanceWarning)
                    result, finite = call(*args)
                _compiled.add(code)
                quiet.clear()
            else:
                result, finite = call(*args)
        except numba.core.errors.NumbaError:  # (numba cannot type it: the next, or Python)
            if call in calls:
                calls.remove(call)
            if not calls:
                _failed.add(code)
            return plain(*args)
        except Exception:
            return bound(*args)
        return result if finite else bound(*args)
    _unchecked[run] = plain
    return run


def unchecked(run):
    """The program `run` (`compiled`'s) without its test of the arguments' types, for a
    caller that has checked that each is a float64 array or a Python float (a quick call:
    the test costs a tenth of a small program's call); `run` itself where it is no program
    numba compiled."""
    return _unchecked.get(run, run)


# `compiled`'s programs → their variants without the test of the arguments (`unchecked`)
_unchecked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _numba_copy(program, bound: types.FunctionType) -> types.FunctionType:
    """The copy `lower` wrote next to the program, bound to the globals and closure `bound`
    runs with."""
    scope = next(c for c in compile(program.source, program.filename, "exec").co_consts
                 if isinstance(c, types.CodeType))
    copy = next(c for c in scope.co_consts if isinstance(c, types.CodeType)
                and c.co_name != program.code.co_name)
    cells = dict(zip(bound.__code__.co_freevars, bound.__closure__ or ()))
    closure = tuple(cells[name] if name in cells else types.CellType(program.cells[name])
                    for name in copy.co_freevars)
    made = types.FunctionType(copy, bound.__globals__, copy.co_name, bound.__defaults__,
                              closure)
    made.__kwdefaults__ = bound.__kwdefaults__
    return made


def _with_finiteness(jitted):
    """`jitted`, the program itself compiled, returning what the copy returns: its result
    and whether that is finite (tested by NumPy's code, after the call)."""
    def call(*args):
        result = jitted(*args)
        return result, all_finite(result)
    return call


def _loops(code) -> bool:
    """Whether `code` runs a loop. Without one a gradient is a few calls of NumPy's own
    compiled loops, which numba's array expressions do not beat (a vectorised Rosenbrock
    took 2.6 times NumPy's time in numba)."""
    return any(instruction.opname in ("FOR_ITER", "JUMP_BACKWARD")
               for instruction in dis.get_instructions(code))


def _numba_arguments(args: tuple) -> bool:
    """Whether numba computes with `args` as NumPy and Python do: arrays of float64, int64
    or booleans (the twins compute in float64; NumPy keeps a uint8's wrap-around, numba
    promotes it), and integers that fit in 64 bits."""
    for value in args:
        kind = type(value)
        if kind is np.ndarray:
            dtype = value.dtype  # (float64's first: the common case, without a hash)
            if dtype is not _FLOAT64 and dtype not in _NUMBA_DTYPES:
                return False
        elif kind is int and not -2 ** 63 <= value < 2 ** 63:
            return False
    return True


_FLOAT64 = np.dtype(np.float64)
_NUMBA_DTYPES = frozenset(map(np.dtype, (np.float64, np.int64, np.bool_)))


def _twinned_cells(bound) -> bool:
    """Whether the closure of `bound` holds only srcad's helpers that have numba twins
    (runtime/numba_twins.py registers them with numba) and NumPy's, math's or builtins."""
    from srcad.runtime.numba_twins import TWINNED
    return all((_hashable(cell.cell_contents) and cell.cell_contents in TWINNED)
               or _numpy_or_math(cell.cell_contents) for cell in bound.__closure__ or ())


def _plain_globals(bound) -> bool:
    """Whether the globals the program reads are NumPy, math and their functions (numba
    would freeze an array or a number it reads as a constant)."""
    namespace, names = bound.__globals__, bound.__code__.co_names
    return "random" not in names and all(  # (numba's np.random is a generator of its own)
        _numpy_or_math(namespace[name]) for name in names if name in namespace)


def _numpy_or_math(value) -> bool:
    """A module, function or type of NumPy, math or the builtins (not an array: data)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return False
    module = value.__name__ if isinstance(value, types.ModuleType) \
        else getattr(value, "__module__", None) or ""
    return callable(value) or isinstance(value, types.ModuleType) \
        if module.split(".")[0] in ("numpy", "math", "builtins") else False


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
