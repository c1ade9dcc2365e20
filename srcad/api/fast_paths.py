"""fast_paths: the quick calls of `grad` and `value_and_grad` (api.Derivative), closures
made once per derivative that reach a compiled program with the fewest checks a call needs:
Python-float `wrt` arguments (the fused reverse program, or forward mode where it applies:
transform/forward_grad.py), float arrays seen before (the gradient-only program), and
dicts, lists and tuples of them (the program taking their leaves, through code generated
per structure: `structure_call`). Each returns None where its kind of call does not
apply, and the general path runs."""
from __future__ import annotations

import math
import operator
import weakref
from typing import Callable, NamedTuple

import numpy as np

from srcad.compiler import cache, numba_backend
from srcad.compiler.frontend.leaves import NotUnpackable
from srcad.compiler.passes import enabled
from srcad.errors import SrcadError
from srcad.kernels.pytrees import plain_leaves, plain_rebuilt
from srcad.runtime.arguments import like_argument, refuse_not_plain_arguments, seed_for

def fused_runner(derivative):
    """`fused_call(args)`: `(output, gradients)` by one program without a backward closure
    (pipeline.transform, mode "fused", or "forward-grad" where it applies: one `wrt`
    argument, no aux) when every `wrt` argument is a Python float passed by position;
    None when one is not, or when that program is optimistic (`math` in place of NumPy)
    and raised or made something not finite: the general program then runs the call
    again, so NumPy's values, warnings and errors prevail. Where the derivative, not the
    function, divided a Python float by zero, the call runs again on NumPy floats: inf or
    nan, as for arrays, rather than Python's ZeroDivisionError.

    A closure over what it reads, made once: it runs on every scalar call, where a
    microsecond is the whole budget (a method reading attributes cost 0.7 us more)."""
    if not derivative.positional:
        return declined
    positions, receiver, single, as_tuple = (derivative.positions, derivative.receiver,
                                             derivative.single, derivative.as_tuple)
    needed, count = derivative.last_position + 1, len(derivative.positions)
    latest = derivative.latest_quick  # (`array_runner`'s: the quick call `grad` tries first)
    parameters = derivative.parameters  # (after the receiver, by position)
    # The program, made on the first call and replaced whole (threads read it once per
    # call, so none runs one program with another's specialisation): see `FloatProgram`.
    program = None

    def compiled(args):
        nonlocal program
        others = tuple(p for p in range(min(len(args), len(parameters)))
                       if p not in positions and type(args[p]) is float)
        numbers = frozenset(parameters[p] for p in positions + others)
        made = float_program(derivative.function, derivative.names, derivative.has_aux,
                             numbers, derivative.backend)
        run = made.bind(derivative.function)
        if derivative.backend == "numba":
            run = numba_backend.compiled(made, run)
        on_floats, holds = numba_backend.unchecked(run), derivative.guards(made)
        quick = None if receiver or made.writes or derivative.has_aux \
            or len(args) != count + len(others) else \
            numbers_call(len(args), on_floats, holds, made, single, as_tuple)
        program = FloatProgram(run, on_floats, made.optimistic, holds, made.by_forward_mode,
                               made.writes, others, quick)
        return program

    def fused(args):
        if len(args) < needed:
            return None
        for position in positions:
            if type(args[position]) is not float:
                return None
        if len(args) > count:  # (the others may be anything: a matrix is refused)
            refuse_not_plain_arguments(args, {})
        current = program
        if current is None or not current.holds():
            if derivative.follow_call():
                return None  # (the general path runs what the class calls now)
            current = compiled(args)
        elif current.others:
            for position in current.others:
                if len(args) <= position or type(args[position]) is not float:
                    current = compiled(args)
                    break
        optimistic = current.optimistic
        try:  # (Python floats alone: numba's program need not test them)
            output, raw = current.run(*receiver, *args) if receiver else \
                current.on_floats(*args) if len(args) == count else current.run(*args)
        except Exception as error:
            if type(error) in _PYTHONS_OWN:
                if derivative_failed(args, type(error), current):
                    return by_numpy(args)
                if not rerunnable(args, current):
                    error.add_note(_NOT_RERUN)
            if optimistic:
                return None
            raise
        if single:
            if current.by_forward_mode and type(output) is not float:
                raw = _tangent_of_number(output, raw)
            if type(raw) is not float:  # None (no derivative reached it) or np.float64
                raw = like_argument(raw, 0.0)
            if optimistic:
                try:  # (a sum is finite only if every term is)
                    if not math.isfinite(output + raw):
                        return None
                except Exception:  # (an int too large for a float: the general program)
                    return None
            if latest[0] is not current.quick is not None:
                latest[0] = current.quick  # (`grad`'s next call of floats alone)
            return output, (raw,) if as_tuple else raw
        for gradient in raw:
            if type(gradient) is not float:
                raw = tuple(like_argument(g, 0.0) for g in raw)
                break
        if optimistic:
            try:
                if not math.isfinite(output + sum(raw)):
                    return None
            except Exception:  # an overflowing sum only reruns the call
                return None
        if latest[0] is not current.quick is not None:
            latest[0] = current.quick
        return output, raw

    def derivative_failed(args, error: type, current):
        """Whether the derivative, not the function, met Python's float arithmetic's
        `error` (`0.0 ** -0.5` in the rule of `x ** 0.5`, where NumPy gives inf): the
        function runs on these arguments without it. Only a function of numbers alone, which
        writes nowhere, is run again to tell: elsewhere the error stands."""
        if not rerunnable(args, current):
            return False
        try:
            derivative.fn(*args)
        except error:
            return False
        return True

    def rerunnable(args, current) -> bool:
        """Whether running the function again cannot repeat an effect of the call."""
        return not (current.writes or receiver or not all(type(a) in _NUMBERS for a in args))

    def by_numpy(args):
        promoted = [np.float64(a) if type(a) is float else a for a in args]
        output, gradients = derivative.value_and_gradients(promoted, {})
        if derivative.has_aux:
            output = (_as_python_float(output[0]), *output[1:])
        return _as_python_float(output), (tuple(map(_as_python_float, gradients))
                                          if isinstance(gradients, tuple)
                                          else _as_python_float(gradients))
    return fused


def numbers_call(count: int, run, holds, made, single: bool, as_tuple: bool):
    """`quick(args)`: `grad`'s gradients by the fused program `run` (`made`'s) for `count`
    Python floats (the `wrt` arguments and the others), or None: for other arguments,
    where its guards `holds()` fail, and where it raises or (optimistic) gives what is not
    finite, for `fused_call` to run the call and decide as it does (a function of numbers
    alone that writes nowhere: running it again repeats nothing). Generated code that
    checks each argument and gradient by name, where `fused_call` loops over them (a tenth
    of the call of a compiled 200-step loop)."""
    names = [f"a{i}" for i in range(count)]
    gradients = [f"g{i}" for i in range(1 if single else count)]
    body = [f"if len(args) != {count}:", "    return None", f"{', '.join(names)}, = args",
            f"if {' or '.join(f'type({name}) is not float' for name in names)}:",
            "    return None", "if not holds():", "    return None", "try:",
            f"    output, {gradients[0] if single else 'raw'} = run({', '.join(names)})",
            "except Exception:", "    return None"]
    if made.by_forward_mode:  # (a tangent of an output that is no float: `fused_call`'s)
        body += ["if type(output) is not float:", "    return None"]
    if not single:
        body.append(f"{', '.join(gradients)}, = raw")
    body += [f"{g} = {g} if type({g}) is float else as_float({g})" for g in gradients]
    if made.optimistic:  # (a sum is finite only if every term is)
        body += ["try:", f"    if not isfinite(output + {' + '.join(gradients)}):",
                 "        return None", "except Exception:", "    return None"]
    body.append(f"return ({', '.join(gradients)},)" if as_tuple or not single
                else "return g0")
    source = "def quick(args):\n" + "".join(f"    {line}\n" for line in body)
    namespace = {"run": run, "holds": holds, "isfinite": math.isfinite,
                 "as_float": lambda gradient: like_argument(gradient, 0.0)}
    exec(compile(source, __file__ + " (a quick call of numbers)", "exec"), namespace)
    return namespace["quick"]


class FloatProgram(NamedTuple):
    """A program `fused_call` runs, with what a call needs to know of it."""

    run: Callable           # the program bound to the function's globals and closure
    on_floats: Callable     # `run` for arguments that are Python floats alone
    optimistic: bool        # a failure or a result that is not finite: run the general one
    holds: Callable         # () → whether its guards hold (`guards_of`)
    by_forward_mode: bool   # it returns the output's tangent (a gradient by forward mode)
    writes: bool            # it may write into its arguments
    others: tuple           # positions of the other arguments it takes as Python floats
    quick: Callable | None  # `grad`'s call of floats alone (`numbers_call`)


def array_runner(derivative):
    """`array_call(args)`: `grad`'s gradients when every `wrt` argument, passed by position,
    is a float or complex array and the gradient-only program for arrays has been compiled
    (by `gradients_only`) and its guards hold; None otherwise. A closure, like
    `fused_runner`'s: `_run` and `_shaped` cost 1.5 us a call for one argument and 4 us for
    three, most of it spent on what this checks in a loop of type tests. Where a `wrt`
    argument is a container, `tree_runner`'s call. Each sets `derivative.latest_quick[0]`
    to the generated quick call of the arguments of the latest call it ran
    (`structure_call`), which `grad` tries before any other (each frame between costs a
    tenth of a small gradient)."""
    if not derivative.positional:
        return declined
    structure = derivative.latest_quick
    positions, receiver, single, as_tuple, latest = (
        derivative.positions, derivative.receiver, derivative.single, derivative.as_tuple,
        derivative.latest)
    kinds = (np.ndarray,) * len(positions)
    needed, count = derivative.last_position + 1, len(derivative.parameters)
    wrt_of = operator.itemgetter(*positions)  # args → the wrt arguments (a tuple if many)
    tree_call = tree_runner(derivative, latest=structure)
    quick_calls = {}  # `latest`'s key → (its entry, the quick call of its arguments or None)

    def quick_call(entry, args, ranks):
        compiled, program, guards = entry
        if derivative.dispatch is None:
            guards = quick_guards(compiled, derivative.function, len(args))
        return structure_call(args, positions, ranks, program, guards, as_tuple)

    def array_call(args):
        if len(args) < needed:
            return None
        arrays = wrt_of(args)
        for value in (arrays,) if single else arrays:
            if type(value) is not np.ndarray or value.dtype.kind not in "fc":
                return tree_call(args)
        # (`_run`'s key; the others may be anything: a matrix among them is refused)
        ranks = checked_float64_ranks(args, count) if len(args) > len(positions) \
            else float64_ranks(args, count)
        key = (kinds, "gradient", ranks)
        entry = latest.get(key)
        if entry is None or not entry[2]():
            return None
        raw = entry[1](*receiver, *args)
        if not receiver:  # (the next calls of these kinds: by the quick call of the entry)
            made = quick_calls.get(key)
            if made is None or made[0] is not entry:
                made = quick_calls[key] = (entry, quick_call(entry, args, ranks))
            structure[0] = made[1]
        if single:
            gradient = like_argument(raw, arrays)
            return (gradient,) if as_tuple else gradient
        gradients = tuple(map(like_argument, raw, arrays))
        return gradients if as_tuple else gradients[0]
    return array_call


def tree_runner(derivative, mode: str = "gradient", latest: list | None = None):
    """`tree_call(args)`: `grad`'s gradients (mode "gradient"), or `value_and_grad`'s
    `(output, gradients)` (mode "rev"), when a `wrt` argument passed by position is a dict,
    list or tuple of float arrays and Python floats (kernels/pytrees.plain_leaves) and the
    other `wrt` arguments float arrays or Python floats: by the program made for those
    leaves (compiler/frontend/leaves.py), which takes them as parameters, unpacked here
    once per call, and returns their gradients one by one. None for another kind of call,
    and where the function uses such an argument otherwise than by reads at fixed keys, or
    (mode "rev") writes into its arguments: the container program then runs, as before.
    The program is kept per leaves' paths and kinds and the ranks of the float64 arrays
    among the others. In mode "gradient", `latest[0]` becomes the quick call of the
    structure of the latest call (`structure_call`), which the caller tries first."""
    if not derivative.positional or derivative.receiver or derivative.dispatch is not None \
            or derivative.backend != "python" or (derivative.has_aux and mode == "gradient"):
        return declined
    positions, names, parameters = derivative.positions, derivative.names, derivative.parameters
    single, as_tuple, has_aux = derivative.single, derivative.as_tuple, derivative.has_aux
    needed, count = derivative.last_position + 1, len(parameters)
    programs = {}  # (leaves per wrt argument, ranks) → (program, guards, shallow per wrt
    #                argument: `_rebuilt`, the structure's quick call or None), or None: refused

    def tree_call(args):
        if len(args) < needed:
            return None
        described, leaves, flat = [], [], list(args)  # (flat: the program's arguments)
        for position in reversed(positions):  # (so that splicing keeps later positions)
            value = args[position]
            kind = type(value)
            if kind is dict or kind is list or kind is tuple:
                found = plain_leaves(value)
                if found is None:
                    return None
                described.append(found[0])
                leaves.append(found[1])
                flat[position:position + 1] = found[1]
            elif kind is float or kind is np.ndarray and value.dtype.kind in "fc":
                described.append(None)
                leaves.append(None)
            else:
                return None
        if leaves.count(None) == len(leaves):  # (no container: not this path's call)
            return None
        for value in args:  # (refuse_not_plain_arguments' test, one call less per argument)
            if type(value) is not np.ndarray and isinstance(value, np.ndarray):
                refuse_not_plain_arguments(args, {})
        key = (tuple(described), float64_ranks(args, count) if mode == "gradient" else ())
        entry = programs.get(key, False)
        if entry is False or entry is not None and not entry[1]():
            entry = programs[key] = made(key, args)
        if entry is None:
            return None
        if mode == "gradient":
            if entry[3] is not None:
                latest[0] = entry[3]
            raw = entry[0](*flat)
        else:
            output, backward = entry[0](*flat)
            raw = backward(seed_for(output[0] if has_aux else output))
        if len(flat) - len(args) + len(positions) == 1:
            raw = (raw,)  # (one leaf in all: the program returns its gradient alone)
        gradients, start = [], 0
        for position, found, shallow in zip(positions, reversed(leaves), entry[2]):
            if found is None:
                gradients.append(_shaped_leaf(raw[start], args[position]))
                start += 1
            else:
                end = start + len(found)
                gradients.append(_rebuilt(args[position], map(
                    _shaped_leaf, raw[start:end], found), shallow))
                start = end
        gradients = (tuple(gradients) if as_tuple else gradients[0]) if not single \
            else (gradients[0],) if as_tuple else gradients[0]
        return gradients if mode == "gradient" else (output, gradients)

    def made(key, args):
        described, ranks = key  # (described: per wrt argument, last first)
        leaves = tuple((name, paths) for name, paths in zip(names, reversed(described))
                       if paths is not None)
        numbers = frozenset(name for name, position in zip(names, positions)
                            if type(args[position]) is float)
        try:
            compiled = cache.compiled_adjoint(derivative.function, names, has_aux, mode=mode,
                                              scalars=numbers,
                                              arrays=float64_arrays(parameters, ranks),
                                              leaves=leaves)
        except NotUnpackable:
            return None
        if mode == "rev" and compiled.writes:  # (its output may be memory it restores)
            return None
        shallow = tuple(paths is None or all(len(path) == 1 for path, _ in paths)
                        for paths in reversed(described))
        function = derivative.function
        program, guards = compiled.bind(function), derivative.guards(compiled)
        quick = structure_call(args, positions, ranks, program, quick_guards(
            compiled, function, len(args)), as_tuple) if mode == "gradient" else None
        return program, guards, shallow, quick
    return tree_call


def structure_call(args, positions: tuple, ranks: tuple, program, guards, as_tuple: bool):
    """`quick(args)`: the gradients by `program`, the one taking leaves, for arguments of
    the structure of `args` (every `wrt` argument at `positions` a plain container, a
    float64 array or a Python float), or None for arguments of any other: generated code
    that checks the containers' types and keys, reads each leaf at its key, checks the
    leaves' kinds and the float64 ranks of the others (`ranks`), and rebuilds the
    gradients' containers with their keys written out, where the general `tree_call` walks
    the containers (5 us of a 15 us gradient of a dict of two parameters). For arguments
    that are float64 arrays and Python floats alone, each is checked, and numba's program
    runs without testing them again (numba_backend.unchecked). None where a `wrt` argument
    is none of those, or a leaf is neither a Python float nor a float64 array."""
    names = [f"a{i}" for i in range(len(args))]
    body = [f"if len(args) != {len(args)}:", "    return None", f"{', '.join(names)}, = args"]
    leaves = []

    def refuse(condition: str) -> None:
        body.extend([f"if {condition}:", "    return None"])

    def unpacked(value, name: str) -> str | None:
        """Check and read `value`'s nesting, held in `name`: the expression of its
        gradients' container, or None where the quick call does not apply."""
        kind = type(value)
        if kind is float or kind is np.ndarray and value.dtype is _FLOAT64:
            refuse(f"type({name}) is not float" if kind is float else
                   f"type({name}) is not ndarray or {name}.dtype is not FLOAT64 "
                   f"or {name}.ndim != {value.ndim}")
            leaves.append(name)
            gradient = f"g{len(leaves) - 1}"  # (like_argument's common case written out)
            return f"(float({gradient}) if type({gradient}) is float64 else " \
                   f"shaped({gradient}, {name}))" if kind is float else \
                f"({gradient} if type({gradient}) is ndarray and {gradient}.dtype is FLOAT64 " \
                f"and {_same_shape(gradient, name, value.ndim)} and ({gradient}.base is None " \
                f"or not isinstance({gradient}.base, ndarray)) and {gradient}.flags.writeable " \
                f"else shaped({gradient}, {name}))"  # (the base of numba's arrays: its memory)
        if kind is dict:  # (its keys unpacked and compared one by one: a tuple of them
            #               cost a tenth of the quick call)
            refuse(f"type({name}) is not dict or len({name}) != {len(value)}")
            keys = [f"{name}_key{i}" for i in range(len(value))]
            body.append(f"{', '.join(keys)}, = {name}")
            refuse(" or ".join(f"{key} != {written!r}" for key, written in zip(keys, value)))
            items = [(key, f"{name}_{i}") for i, key in enumerate(value)]
            body.extend(f"{item} = {name}[{key!r}]" for key, item in items)
            inner = [unpacked(part, item) for (_, item), part in zip(items, value.values())]
            return None if None in inner else \
                "{" + ", ".join(f"{key!r}: {part}" for (key, _), part in zip(items, inner)) + "}"
        if kind is list or kind is tuple:
            items = [f"{name}_{i}" for i in range(len(value))]
            refuse(f"type({name}) is not {kind.__name__} or len({name}) != {len(value)}")
            body.append(f"{', '.join(items)}, = {name}")
            inner = [unpacked(part, item) for item, part in zip(items, value)]
            return None if None in inner else f"[{', '.join(inner)}]" if kind is list \
                else f"({', '.join(inner)},)"
        return None

    flat, results = [], []
    plain = all(type(value) is float or type(value) is np.ndarray and value.dtype is _FLOAT64
                for value in args)
    for position, (name, value) in enumerate(zip(names, args)):
        if position in positions:
            start = len(leaves)
            results.append(unpacked(value, name))
            if results[-1] is None or start == len(leaves):
                return None
            flat += leaves[start:]
        else:
            flat.append(name)
            rank = ranks[position] if position < len(ranks) else None
            refuse(f"type({name}) is not float" if plain and rank is None else
                   f"isinstance({name}, ndarray) and (type({name}) is not ndarray "
                   f"or {name}.dtype is FLOAT64)" if rank is None else
                   f"type({name}) is not ndarray or {name}.dtype is not FLOAT64 "
                   f"or {name}.ndim != {rank}")
    if plain:
        program = numba_backend.unchecked(program)
    refuse("not guards()")
    gradients = ", ".join(f"g{i}" for i in range(len(leaves)))  # (one leaf: returned alone)
    body.append(f"{gradients} = program({', '.join(flat)})")
    body.append(f"return ({', '.join(results)},)" if as_tuple else f"return {results[0]}")
    source = "def quick(args):\n" + "".join(f"    {line}\n" for line in body)
    namespace = {"ndarray": np.ndarray, "float64": np.float64, "FLOAT64": _FLOAT64,
                 "program": program, "guards": guards, "shaped": _shaped_leaf}
    exec(compile(source, __file__ + " (a structure's quick call)", "exec"), namespace)
    return namespace["quick"]


def _same_shape(gradient: str, leaf: str, rank: int) -> str:
    """The test that the array `gradient` has the shape of the array `leaf`, whose rank the
    quick call has checked, as source: for a vector, the shape's tuples are not made."""
    if rank == 1:
        return f"{gradient}.ndim == 1 and len({gradient}) == len({leaf})"
    return f"{gradient}.shape == {leaf}.shape"


def _rebuilt(container, gradients, shallow: bool):
    """`container`'s nesting holding `gradients`, in its leaves' order: at once where
    every leaf is an item of `container` itself (`shallow`: a dict of arrays)."""
    if not shallow:
        return plain_rebuilt(container, gradients)
    kind = type(container)
    return dict(zip(container, gradients)) if kind is dict \
        else list(gradients) if kind is list else tuple(gradients)


def _shaped_leaf(gradient, leaf):
    """A leaf's gradient as `like_argument` gives it (a Python float's first: the common
    case of a bias, whose gradient a sum made a NumPy float64)."""
    if type(leaf) is float and (type(gradient) is float or type(gradient) is np.float64):
        return float(gradient)
    return like_argument(gradient, leaf)


def float64_arrays(parameters: tuple, ranks: tuple) -> frozenset:
    """`(parameter, rank)` of the parameters whose `ranks` entry (float64_ranks) is one:
    what pipeline.transform specialises the gradient program on."""
    return frozenset((name, rank) for name, rank in zip(parameters, ranks) if rank is not None)


def float64_ranks(args, count: int) -> tuple:
    """The rank of each of the first `count` arguments that is a float64 array, None for
    the others: the gradient program is specialised on them (transform/specialise.py)."""
    return tuple([a.ndim if type(a) is np.ndarray and a.dtype is _FLOAT64 else None
                  for a in args[:count]])


def checked_float64_ranks(args, count: int) -> tuple:
    """`float64_ranks(args, count)`, having refused (refuse_not_plain_arguments) an ndarray
    subclass among `args`, in one pass: a quick call checks both."""
    ranks = []
    for value in args:
        kind = type(value)
        if kind is np.ndarray:
            ranks.append(value.ndim if value.dtype is _FLOAT64 else None)
        else:
            if kind is not float and isinstance(value, np.ndarray):
                refuse_not_plain_arguments(args, {})
            ranks.append(None)
    return tuple(ranks[:count])


_FLOAT64 = np.dtype(np.float64)


def float_program(function, names: tuple, has_aux: bool, numbers: frozenset,
                  backend: str = "python"):
    """The program `grad` runs when the parameters `numbers` hold Python floats (the `wrt`
    ones and others: `grad(energy)(k, c)` with c a float needs no `broadcast_like` for
    `c * v`): forward mode where it applies, else reverse mode, fused; for the numba
    backend, reverse mode made for it (numba_backend.py)."""
    if backend == "numba":
        return cache.compiled_adjoint(function, names, has_aux, mode="fused", scalars=numbers,
                                      backend=backend)
    if len(names) == 1 and not has_aux and enabled("forward-grad"):
        refused = _FORWARD_REFUSED.setdefault(function.__code__, set())
        if (names, numbers) not in refused:
            try:
                return cache.compiled_adjoint(function, names, has_aux, mode="forward-grad",
                                              scalars=numbers)
            except SrcadError:  # (NotForwardable, or a construct forward mode refuses)
                refused.add((names, numbers))
    return cache.compiled_adjoint(function, names, has_aux, mode="fused", scalars=numbers)


# The `wrt` names and float parameters forward mode was refused for, per function code: a
# `grad` made anew on every call (`grad(f)(x)` in a Newton loop, of a new closure each time)
# tries it once, not on every call (a failed transformation is not cached). Were a refusal stale
# (a helper redefined), reverse mode, as exact, runs instead.
_FORWARD_REFUSED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def guards_of(compiled, function, dispatch=None, reads_defaults: bool = True):
    """`() → whether compiled's guards hold for function` (the globals check alone where no
    guard reads a closure cell) and `function` still has the code and defaults the program
    was made and bound with (assigning `f.__defaults__` left the old derivative in use),
    and, for a callable object (`dispatch`: the object and its class's `__call__`), that
    its class still calls that function: it runs on every call. Not `reads_defaults`: for
    calls that read no default (`passes_every_parameter`), the defaults are not compared
    (each comparison of a function's attribute costs as much as two of the globals')."""
    code, defaults, kwdefaults = function.__code__, function.__defaults__, \
        function.__kwdefaults__
    if compiled.guards_cells:
        hold, against = compiled.guards_hold, function
    else:
        hold, against = compiled.globals_hold, function.__globals__

    def current():
        return function.__code__ is code and function.__defaults__ is defaults \
            and function.__kwdefaults__ is kwdefaults and hold(against)

    def current_code():
        return function.__code__ is code and hold(against)
    if not reads_defaults:
        current = current_code
    if dispatch is None:
        return current
    instance, call = dispatch

    def current_and_called():
        return type(instance).__call__ is call and current()
    return current_and_called


def quick_guards(compiled, function, count: int):
    """`guards_of` for a quick call of `count` arguments by position: the defaults are
    compared only where such a call reads them."""
    return guards_of(compiled, function,
                     reads_defaults=not passes_every_parameter(function, count))


def passes_every_parameter(function, count: int) -> bool:
    """Whether a call passing `count` arguments by position, and none by keyword, reads
    none of `function`'s defaults: it has no keyword-only parameter and no more than
    `count` positional ones."""
    code = function.__code__
    return code.co_kwonlyargcount == 0 and code.co_argcount <= count


def _tangent_of_number(output, tangent):
    """The gradient in a tangent of `grad`'s output, once checked (as `seed_for` does) that
    the output is a real number with one element, which may be an array of any shape."""
    seed_for(output)
    return np.reshape(tangent, ()) if np.ndim(tangent) else tangent


_PYTHONS_OWN = (ZeroDivisionError, OverflowError)  # (where NumPy's floats give inf or nan)
_NOT_RERUN = (
    "srcad: on Python floats this error may come from the function or from its derivative "
    "(where NumPy floats give inf or nan); srcad did not run the function again to tell, as "
    "it may have effects (it is a method, writes into an argument or is passed a list or "
    "an array). Pass NumPy floats (`np.float64(x)`) for NumPy's inf and nan.")
_NUMBERS = (float, int, bool, complex)


def _as_python_float(value):
    """A NumPy float64 as the Python float it equals (what the call was given, it returns)."""
    return float(value) if type(value) is np.float64 else value


def declined(args):
    """The quick call of a derivative whose arguments never suit it."""
    return None
