"""jacobians: full Jacobians, batch Jacobians, Hessians and Hessian-vector products.

A Jacobian is built column by column from the tangent program (`srcad.jvp`, one run per
input element) or row by row from the adjoint (`srcad.vjp`, one backward sweep per output
element). Arguments and outputs may be dicts, lists and tuples of arrays (pytrees): the
result nests like JAX's, the output's structure holding, for each output leaf, the `wrt`
arguments' structure with blocks of shape `out_leaf.shape + in_leaf.shape`.

Second derivatives are reverse-over-forward: the tangent program srcad generates for `f`
(srcad/compiler/transform/forward.py) is ordinary Python, and reverse mode transforms it again, so
`hvp(f)(x, v)` is the gradient of `x ↦ ⟨∇f(x), v⟩` computed by one forward and one backward
sweep over that program. Both programs are compiled once and cached. (The same numbers as
forward-over-reverse, since the Hessian is symmetric; this order needs no transformation of
the backward sweep's closures and stack.) The Hessian is the Jacobian of the gradient.
"""
from __future__ import annotations

import functools
import itertools
from typing import Callable

import numpy as np

from srcad.api import derivative as api
from srcad.compiler import cache
from srcad.runtime.arguments import (Wrt, chosen_wrt, copied, is_container, leaves, like_argument,
                                     output_and_aux, promote, rebuilt, wrt_parameters)
from srcad.api import executors
from srcad.api.adapters import PerArity, by_position, per_call, transformable
from srcad.api.fast_paths import checked_float64_ranks, float64_ranks, guards_of
from srcad.api.forward import checked_tangent, jvp, like_output
from srcad.api.jacobian_batches import BatchedColumns, seed_of
from srcad.compiler.frontend.parse import code_of
from srcad.compiler.passes import enabled
from srcad.errors import MissingJVPRuleError, UnsupportedDerivativeError, UsageError
from srcad.kernels.replay import replaying
from srcad.kernels.batched import basis
from srcad.runtime.calls import compiled_source, fixed_arity
from srcad.runtime.hooks import DerivativeFunction
from srcad.tracebacks import api_boundary

_MODES = ("auto", "fwd", "rev")
_NO_CONTAINERS = frozenset()


class _Jacobian(DerivativeFunction):
    """`jacobian(f, wrt, mode)`: callable with f's arguments; `.source` is the program it
    runs (the tangent program for "fwd", the adjoint for "rev", both for "auto")."""

    kind = "form"  # (called where srcad differentiates: its `form` is, runtime/calls.py)

    def form(self, args: tuple, kwargs: dict):
        """The same Jacobian as plain code srcad differentiates: rows of `srcad.vjp`."""
        position = _one_array(self.wrt, args, kwargs, "jacobian")
        return _rows_form(self.fn, position, len(args), tuple(kwargs))

    def __init__(self, fn, wrt, mode):
        if mode not in _MODES:
            raise UsageError(f"mode={mode!r}: jacobian takes \"auto\", \"fwd\" or \"rev\".")
        self.fn, self.wrt, self.mode = transformable(fn), wrt, mode
        self.names, self.positions = _positional(self.fn, wrt, "jacobian")
        self.batched = BatchedColumns(self.fn, self.names, self.positions)

    @property
    def source(self) -> str:
        programs = []
        if self.mode in ("auto", "fwd"):
            programs.append(_tangent_source(self.fn, self.names))
        if self.mode in ("auto", "rev"):
            programs.append(api.Derivative(self.fn, self.wrt).source)
        return "\n".join(programs)

    @api_boundary
    def __call__(self, *args, **kwargs):
        """The Jacobian at `args`; keyword arguments are passed on, not differentiated."""
        if self.mode != "rev" and not isinstance(self.wrt, tuple):  # (the common case first)
            found = self.batched.one_array(args, kwargs, always=self.mode == "fwd")
            if found is not None:
                return found
        inputs = [args[p] for p in self.positions]
        _refuse_complex(inputs, "argument")
        several = isinstance(self.wrt, tuple)
        try:
            batched = self.batched(args, kwargs) if self.mode != "rev" and enabled("batch") \
                else None
            if batched is not None and (self.mode == "fwd"
                                        or _size(batched[0]) >= _size(inputs)):
                output, blocks = batched  # one real array or number (jacobian_batches)
                if not several:  # the common case: no structure to rebuild
                    return blocks[0][0][0]
            elif self.mode == "rev":  # no tangent program: f may have VJP rules only
                output, blocks = _by_rows(self.fn, args, kwargs, self.wrt)
            else:
                columns = _Columns(self.fn, args, kwargs, self.positions)
                output = columns.output
                _refuse_complex([output], "output")
                if self.mode == "auto" and _size(output) < _size(inputs):
                    output, blocks = _by_rows(self.fn, args, kwargs, self.wrt)
                else:
                    blocks = columns.all()
        except MissingJVPRuleError:  # "auto": a callee with VJP rules alone (autograd's
            if self.mode != "auto":  # `defvjp` habit): reverse mode computes it
                raise
            output, blocks = _by_rows(self.fn, args, kwargs, self.wrt)
        return self.assembled(output, blocks, inputs)

    def assembled(self, output, blocks, inputs):
        """The Jacobian, nested as the output and the `wrt` arguments, from its blocks."""
        per_output_leaf = []
        for per_input in blocks:
            arguments = [rebuilt(x, iter(parts)) for x, parts in zip(inputs, per_input)]
            per_output_leaf.append(tuple(arguments) if isinstance(self.wrt, tuple)
                                   else arguments[0])
        return rebuilt(output, iter(per_output_leaf))

    # ---- in blocks, on an executor (api/executors.py) ----
    def parts(self, args, kwargs):
        """`(way, [(which, count)])`: how the local call computes this Jacobian ("batched",
        "columns" or "rows", decided as `__call__` decides, by a run of one column) and how
        many rows or columns there are (per `wrt` argument when "batched")."""
        inputs = [args[p] for p in self.positions]
        _refuse_complex(inputs, "argument")
        try:
            if self.mode != "rev" and enabled("batch") and all(
                    seed_of(args[p]) is not None for p in self.positions):
                ran = self.batched.run(0, seed_of(args[self.positions[0]])[:1], args, kwargs)
                if ran is not None and (self.mode == "fwd" or _size(ran[0]) >= _size(inputs)):
                    return "batched", [(which, _size(args[p]))
                                       for which, p in enumerate(self.positions)]
            if self.mode != "rev":
                output = _Columns(self.fn, args, kwargs, self.positions, range(1)).output
                _refuse_complex([output], "output")
                if self.mode == "fwd" or _size(output) >= _size(inputs):
                    return "columns", [(0, _size(inputs))]
        except MissingJVPRuleError:  # as in `__call__`
            if self.mode != "auto":
                raise
        return "rows", [(0, _size(self.fn(*copied(args), **copied(kwargs))))]

    def part(self, args, kwargs, way: str, which: int, chosen: range):
        """`(output, matrix)`: the rows `chosen` (rows × all input elements) or the columns
        (all output elements × columns) of the `which`-th `wrt` argument when "batched"."""
        if way == "rows":
            return _rows(self.fn, args, kwargs, self.wrt, chosen)
        if way == "batched":
            x = args[self.positions[which]]
            ran = self.batched.run(which, seed_of(x)[chosen.start:chosen.stop], args, kwargs)
            if ran is not None:
                output, tangent = ran
                return output, np.zeros((_size(output), len(chosen))) if tangent is None \
                    else np.reshape(tangent, (len(chosen), -1)).T
            # a form without a batched rule met on this run: columns, as the local call
            offset = sum(_size(args[p]) for p in self.positions[:which])
            chosen = range(offset + chosen.start, offset + chosen.stop)
        columns = _Columns(self.fn, args, kwargs, self.positions, chosen)
        return columns.output, np.concatenate(columns.matrices(), axis=0)

    def from_parts(self, args, way: str, parts: list):
        """The Jacobian from `part`'s results, in order."""
        output, inputs = parts[0][0], [args[p] for p in self.positions]
        _refuse_complex([output], "output")
        matrix = np.concatenate([m for _, m in parts], axis=0 if way == "rows" else 1)
        return self.assembled(output, _row_blocks(matrix, output, inputs), inputs)


class _Columns:
    """The Jacobian column by column (where `jacobian_batches` has no batched program): one
    run of the tangent program per input element, the program compiled once per `wrt`
    argument and called directly. The first run also gives the output, which `auto` needs
    to choose a mode. `chosen`, a range of the columns, runs those alone (a block an
    executor computes)."""

    def __init__(self, fn, args, kwargs, positions, chosen: range | None = None):
        self.fn, self.positions, self.kwargs = fn, positions, kwargs
        self.args = list(args)
        names, _ = wrt_parameters(code_of(fn), tuple(positions))
        for position, name in zip(positions, names):
            self.args[position] = promote(args[position], name)
        function = transformable(fn)
        compiled = [cache.compiled_adjoint(
            function, (name,), containers=frozenset({name}) if is_container(
                self.args[position]) else frozenset(), mode="fwd")
            for position, name in zip(positions, names)]
        self.programs = [c.bound(function) for c in compiled]
        self.writes = any(c.writes for c in compiled)  # each run then gets its own copies
        self.units = iter(_units(self.args, positions)) if chosen is None else \
            itertools.islice(_units(self.args, positions), chosen.start, chosen.stop)
        self.runs = []
        first = next(self.units, None)
        if first is None:
            self.output = fn(*args, **kwargs)
        else:
            self.output = self._run(*first)

    def _run(self, which: int, tangent):
        args, kwargs = (copied(self.args), copied(self.kwargs)) if self.writes \
            else (self.args, self.kwargs)
        output, raw = self.programs[which]((tangent,), *args, **kwargs)
        self.runs.append(like_output(raw, output))
        return output

    def all(self):
        """Blocks `[output leaf][wrt argument][input leaf]`, each `out.shape + in.shape`."""
        return [_split(column, out, [self.args[p] for p in self.positions])
                for column, out in zip(self.matrices(), leaves(self.output))]

    def matrices(self) -> list:
        """Per output leaf, its columns: `(leaf size, columns run)`."""
        for which, tangent in self.units:
            self._run(which, tangent)
        outputs = leaves(self.output)
        return [np.array([np.reshape(leaves(run)[o], -1) for run in self.runs]).reshape(
            len(self.runs), -1).T for o in range(len(outputs))]


def _by_rows(fn, args, kwargs, wrt):
    """The output, and blocks as in `_Columns.all` from one backward sweep per output
    element."""
    output, flat = _rows(fn, args, kwargs, wrt)
    inputs = [args[p] for p in _positional(fn, wrt, "jacobian")[1]]
    return output, _row_blocks(flat, output, inputs)


def _rows(fn, args, kwargs, wrt, chosen: range | None = None):
    """The output, and the Jacobian's rows (those of `chosen` alone if given) as one
    matrix `(rows, all input elements)`."""
    derivative = api.Derivative(fn, wrt)
    output, backward, originals, replayable = derivative.forward_sweep(copied(list(args)),
                                                                       copied(kwargs))
    _refuse_complex([output], "output")
    replay = replaying(backward) if replayable and enabled("replay") else None

    def pullback(cotangent):
        if replay is not None:  # the forward sweep ran once
            return derivative.gradients(replay, cotangent, originals)
        # each sweep pops what it saved, and may write into (copies of) the arguments
        _, sweep, again = derivative.forward(copied(list(args)), copied(kwargs))
        return derivative.gradients(sweep, cotangent, again)
    outputs = leaves(output)
    units = ((index, unit) for index, leaf in enumerate(outputs) for unit in _unit_arrays(leaf))
    if chosen is not None:
        units = itertools.islice(units, chosen.start, chosen.stop)
    rows = []
    for index, unit in units:
        cotangent = rebuilt(output, iter(
            [unit if k == index else _zero_like(o) for k, o in enumerate(outputs)]))
        gradients = pullback(cotangent)
        gradients = gradients if isinstance(wrt, tuple) else (gradients,)
        rows.append(np.concatenate([np.reshape(g, -1) for gradient in gradients
                                    for g in leaves(gradient)]))
    return output, np.array(rows).reshape(len(rows), -1)


def _row_blocks(flat, output, inputs) -> list:
    """Blocks as in `_Columns.all` from the Jacobian as one matrix `(all output elements,
    all input elements)`."""
    blocks, start = [], 0
    for leaf in leaves(output):
        blocks.append(_split(flat[start:start + _size(leaf)], leaf, inputs))
        start += _size(leaf)
    return blocks


def _split(matrix, output_leaf, inputs):
    """Rows of one output leaf (out.size × all input elements) cut into blocks per input
    leaf, shaped `out.shape + in.shape`."""
    blocks, start = [], 0
    for x in inputs:
        parts = []
        for leaf in leaves(x):
            size = _size(leaf)
            parts.append(np.reshape(matrix[:, start:start + size],
                                    np.shape(output_leaf) + np.shape(leaf)))
            start += size
        blocks.append(parts)
    return blocks


def _units(args, positions):
    """The tangents of a Jacobian's columns, `(which wrt argument, its tangent)`: one unit
    element in one input leaf."""
    for which, position in enumerate(positions):
        argument = args[position]
        arguments_leaves = leaves(argument)
        for index, leaf in enumerate(arguments_leaves):
            for unit in _unit_arrays(leaf):
                yield which, rebuilt(argument, iter([unit if k == index else _zero_like(x)
                                                     for k, x in enumerate(arguments_leaves)]))


def _unit_arrays(value):
    """The unit values of `value`'s shape (floats for a Python number), one per element."""
    dtype = np.promote_types(getattr(value, "dtype", np.float64), np.float16)
    if np.ndim(value) == 0 and not isinstance(value, np.ndarray):
        yield from ([1.0] if type(value) is float else [dtype.type(1)])  # np.float64 too is a float
        return
    for k in range(np.size(value)):
        unit = np.zeros(np.size(value), dtype)
        unit[k] = 1
        yield unit.reshape(np.shape(value))


def _refuse_complex(values, what: str) -> None:
    """Jacobians here are real: a complex input or output would need two real directions
    per element, which these loops do not take, so it is refused rather than half done."""
    for value in values:
        if type(value) is np.ndarray and value.dtype.kind != "c":  # the common case
            continue
        for leaf in leaves(value):
            if np.iscomplexobj(leaf):
                raise UsageError(f"srcad's Jacobians and Hessians take real values; this "
                                 f"{what} is complex.",
                                 fix="differentiate the real and imaginary parts as separate "
                                 "real functions (`np.real(f(z))`, `np.imag(f(z))`), or use "
                                 "`srcad.vjp`/`srcad.jvp` directly.")


def _zero_like(value):
    return like_argument(None, value) if not isinstance(value, (int, np.integer)) else 0.0


def _size(value) -> int:
    if type(value) is np.ndarray:
        return value.size
    if type(value) is list and len(value) == 1 and type(value[0]) is np.ndarray:
        return value[0].size  # one argument: the common case
    return sum(int(np.size(leaf)) for leaf in leaves(value))


def _positional(fn, wrt, what: str):
    names, positions = wrt_parameters(code_of(fn), wrt)
    if None in positions:
        raise UsageError(f"{what} differentiates with respect to positional parameters; "
                         f"wrt={wrt!r} names a keyword-only one.",
                         fix="make it a positional parameter.")
    return names, positions


def _tangent_source(fn, names) -> str:
    return cache.compiled_adjoint(transformable(fn), tuple(names), mode="fwd").source


@api_boundary
def jacobian(fn: Callable, wrt: Wrt | None = None, mode: str = "auto", *,
             argnums: Wrt | None = None, has_aux: bool = False, executor=None,
             block_size: int | None = None) -> Callable:
    """The Jacobian of a function.

    Parameters
    ----------
    fn : callable
        The function, of array, number or pytree arguments and output.
    wrt, argnums : int, str or tuple, optional
        As for `grad`.
    mode : {"auto", "fwd", "rev"}
        "fwd" runs the tangent program once per input element, "rev" the backward sweep
        once per output element, "auto" whichever runs fewer times.
    has_aux : bool
        `fn` returns `(output, aux)`: only `output` is differentiated, and the Jacobian
        function returns `(jacobian, aux)`, as JAX's `jacrev(f, has_aux=True)` (the aux
        from one more plain run of `fn`, as with `hessian` and `hvp`).
    executor : concurrent.futures.Executor or dask.distributed.Client, optional
        Run those rows or columns in blocks there (docs/distributed.md); the result is
        the same, bit for bit. "dask" names the current Dask client.
    block_size : int, optional
        Rows or columns per task (about four tasks per worker by default).

    Returns
    -------
    callable
        Takes `fn`'s arguments (keyword arguments are passed on) and returns the Jacobian,
        of shape `out.shape + x.shape`; nested like JAX's for a tuple `wrt` and pytrees.

    Examples
    --------
    >>> def f(x):
    ...     return np.array([x[0] * x[1], np.sin(x[0])])
    >>> srcad.jacobian(f)(np.array([0.0, 2.0]))
    array([[2., 0.],
           [1., 0.]])
    >>> def f_with_aux(x):
    ...     y = x ** 2
    ...     return y, {"total": np.sum(y)}
    >>> srcad.jacobian(f_with_aux, has_aux=True)(np.array([1.0, 3.0]))
    (array([[2., 0.],
           [0., 6.]]), {'total': np.float64(10.0)})
    """
    wrt = chosen_wrt(wrt, argnums)
    differentiated = _gradient_of(fn, wrt)
    if differentiated is not None and mode == "auto" and not has_aux:  # (JAX's Hessian idiom)
        return hessian(differentiated, wrt, executor=executor, block_size=block_size)
    if executor is not None or block_size is not None:
        return _on_executor(fn, wrt, _Jacobian, (wrt, mode), executor, block_size, has_aux,
                            "jacobian")
    if has_aux:
        return _with_aux(fn, ("jacobian", wrt, mode), lambda f: jacobian(f, wrt, mode),
                         "jacobian")
    if per_call(fn, wrt):
        return PerArity(fn, wrt, lambda f, w: _Jacobian(f, w, mode))
    return api.shared(fn, ("jacobian", wrt, mode), lambda: _Jacobian(fn, wrt, mode))


def _gradient_of(fn, wrt):
    """`f` where `fn` is `grad(f)` of the one parameter `wrt` names too, else None. The
    Jacobian of that gradient is f's Hessian, which `hessian` computes in one batched
    tangent run of the gradient program where one exists, else by Hessian-vector
    products; `jacobian` would choose rows, running the gradient program once per row."""
    derivative = getattr(fn, "derivative", None)
    if getattr(fn, "kind", None) != "grad" or derivative.has_aux \
            or derivative.backend != "python" or len(derivative.positions) != 1:
        return None
    try:
        _, positions = _positional(transformable(fn), wrt, "jacobian")
    except UsageError:
        return None  # (the general path says what is wrong)
    return derivative.fn if positions == derivative.positions \
        and not isinstance(wrt, tuple) and not isinstance(derivative.wrt, tuple) else None


def _output_of(fn, what: str):
    """`fn` returning the first of the pair `(output, aux)` it returns, with `fn`'s
    signature (`wrt` names its parameters): what `has_aux` differentiates."""
    @functools.wraps(fn)
    def output(*args, **kwargs):
        return output_and_aux(fn(*args, **kwargs), what)[0]
    return output


class _WithAux(DerivativeFunction):
    """A derivative function of `fn`'s output with `has_aux`: `(derivative, aux)`, the aux
    from one more run of `fn` (the derivative's runs keep only the output). `trailing`
    counts the arguments that are the derivative's own (hvp's `v`), not `fn`'s."""

    kind = "with_aux"  # (not differentiated where it is called: api/derivative_calls.py)

    def __init__(self, fn, derivative, what: str, trailing: int = 0):
        self.fn, self.derivative, self.what, self.trailing = fn, derivative, what, trailing
        functools.update_wrapper(self, fn, updated=())

    @property
    def source(self) -> str:
        return self.derivative.source

    @api_boundary
    def __call__(self, *args, **kwargs):
        derivative = self.derivative(*args, **kwargs)
        own = args[:len(args) - self.trailing]
        return derivative, output_and_aux(self.fn(*own, **kwargs), self.what)[1]


def _with_aux(fn, key: tuple, make, what: str, trailing: int = 0):
    """The derivative function `make(f)` builds of `fn`, with `has_aux`: shared per `fn`
    and `key` as the others are."""
    return api.shared(fn, (*key, "has_aux"), lambda: _WithAux(
        fn, make(_output_of(fn, what)), what, trailing))


class _HVP(DerivativeFunction):
    """`hvp(f, wrt)`: `(*args, v) -> H v`; `.source` is the reverse-over-forward program."""

    kind = "form"

    def form(self, args: tuple, kwargs: dict):
        """H v as plain code srcad differentiates: the pullback of the gradient at v (H is
        symmetric)."""
        position = _one_array(self.position, args[:-1], kwargs, "hvp")
        return _hvp_form(api.grad(self.fn, wrt=self.position), position, len(args) - 1,
                         tuple(kwargs))

    def __init__(self, fn, wrt):
        if isinstance(wrt, tuple):
            raise UsageError(f"hvp takes one argument in wrt, got {wrt!r}.",
                             fix="differentiate with respect to one argument (a dict or tuple "
                             "of arrays is one argument).")
        self.fn = transformable(fn)
        (self.name,), (self.position,) = _positional(self.fn, wrt, "hvp")
        self._quick = None  # (ranks, program, guards, the tangent program's guards) of the
        #                     gradient program last run on float arrays: `_remember`
        self._derivatives = {}  # argument containers → (P compiled, for function, reverse
        #                         mode over P)

    def _derivative(self, containers: frozenset) -> api.Derivative:
        """Reverse mode over the tangent program P, which returns the output's tangent
        alone (pipeline.transform, mode "slope"); made again when the names P's
        transformation relied on were rebound."""
        entry = self._derivatives.get(containers)
        if entry is None or not entry[0]():
            function = transformable(self.fn)
            compiled = cache.compiled_adjoint(function, (self.name,), containers=containers,
                                              mode="slope")
            entry = self._derivatives[containers] = (guards_of(compiled, function),
                                                     api.Derivative(compiled.bound(function),
                                                                    wrt=self.position + 1))
        return entry[1]

    @property
    def source(self) -> str:
        """The program an hvp runs (for array arguments): `grad` over the tangent program."""
        return self._derivative(frozenset())._program(frozenset(), mode="gradient")[0].source

    @api_boundary
    def __call__(self, *args_and_vector, **kwargs):
        """H v at `args`; keyword arguments are passed on, not differentiated."""
        *args, vector = args_and_vector
        x = args[self.position]
        common = type(x) is np.ndarray and type(vector) is np.ndarray \
            and x.dtype.kind == "f" and vector.dtype.kind == "f" and x.shape == vector.shape
        flat = (vector, *args)  # (the gradient program's arguments)
        quick = self._quick
        if common and not kwargs and quick is not None:  # arrays of the kinds seen last
            ranks, run, hold, slope_holds = quick
            if checked_float64_ranks(flat, len(ranks)) == ranks and hold() and slope_holds():
                return like_argument(run(*flat), x)
        if not common:
            _refuse_complex([x, vector], "argument")
            x = args[self.position] = promote(x, self.name)
            vector = checked_tangent(vector, x, "v")
            flat = (vector, *args)
        containers = frozenset({self.name}) if is_container(x) else _NO_CONTAINERS
        # the gradient of the tangent, which has the output's shape and kind: `grad` refuses
        # it with a clear error unless it is one real number
        derivative = self._derivative(containers)
        product = derivative.gradients_only(flat, kwargs)
        if common and not kwargs:
            self._remember(derivative, flat)
        return product

    def _remember(self, derivative: api.Derivative, flat: tuple) -> None:
        """Keep the gradient program `derivative` ran on the float arrays `flat`, with the
        float64 ranks it was made for and both programs' guards: the next call on arrays of
        those kinds runs it at once (a call through `array_call` and the tangent program's
        table cost 5 us of a 35 us product)."""
        ranks = float64_ranks(flat, len(derivative.parameters))
        entry = derivative.latest.get(((np.ndarray,), "gradient", ranks))  # (`_run`'s key)
        if entry is not None:
            self._quick = (ranks, entry[1], entry[2], self._derivatives[_NO_CONTAINERS][0])


@api_boundary
def hvp(fn: Callable, wrt: Wrt | None = None, *, argnums: Wrt | None = None,
        has_aux: bool = False) -> Callable:
    """Hessian-vector products of a function of real, one-element output.

    Parameters
    ----------
    fn : callable
        The function, twice differentiable where it is evaluated.
    wrt, argnums : int or str, optional
        The one argument to differentiate in, as for `grad`.
    has_aux : bool
        `fn` returns `(output, aux)`: only `output` is differentiated, and the product
        function returns `(H v, aux)`.

    Returns
    -------
    callable
        `hvp(f)(*args, v)` is the Hessian in that argument, times `v` (of the argument's
        structure and shape), computed without forming the Hessian.

    Examples
    --------
    >>> def f(x):
    ...     return np.sum(x ** 3)
    >>> srcad.hvp(f)(np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    array([ 6., 12.])
    >>> def f_with_aux(x):
    ...     return np.sum(x ** 3), len(x)
    >>> srcad.hvp(f_with_aux, has_aux=True)(np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    (array([6., 0.]), 2)
    """
    wrt = chosen_wrt(wrt, argnums)
    if has_aux:
        return _with_aux(fn, ("hvp", wrt), lambda f: hvp(f, wrt), "hvp", trailing=1)
    if per_call(fn, wrt):
        return PerArity(fn, wrt, _HVP, trailing=1)
    return api.shared(fn, ("hvp", wrt), lambda: _HVP(fn, wrt))


class _Hessian(_Jacobian):
    """The Jacobian of the gradient, column by column: one Hessian-vector product each."""

    def __init__(self, fn, wrt):
        super().__init__(api.grad(fn, wrt=wrt), wrt, "fwd")
        self.product = _HVP(fn, wrt[0] if isinstance(wrt, tuple) else wrt)

    @property
    def source(self) -> str:
        return self.product.source

    @api_boundary
    def __call__(self, *args, **kwargs):
        """The Hessian in one batched run where one exists; else, for one float array
        argument, one run of the Hessian-vector program per element (which neither
        recomputes the gradient nor dispatches through its call for each column, as the
        gradient's Jacobian does); else the Jacobian of the gradient."""
        position = self.positions[0]
        x = args[position] if not isinstance(self.wrt, tuple) and position < len(args) \
            else None
        if type(x) is not np.ndarray or x.dtype.kind != "f":
            return super().__call__(*args, **kwargs)
        found = self.batched.one_array(args, kwargs, always=True)
        if found is not None:
            return found
        units = np.eye(x.size, dtype=x.dtype)
        columns = [self.product(*args, unit.reshape(x.shape), **kwargs) for unit in units]
        return np.stack(columns, axis=-1).reshape(x.shape + x.shape)


@api_boundary
def hessian(fn: Callable, wrt: Wrt | None = None, *, argnums: Wrt | None = None,
            has_aux: bool = False, executor=None, block_size: int | None = None) -> Callable:
    """The Hessian of a function of real, one-element output.

    Parameters
    ----------
    fn : callable
        The function; its gradient must be differentiable in turn (srcad transforms
        the tangent program it generates).
    wrt, argnums : int, str or tuple, optional
        As for `grad`.
    has_aux : bool
        `fn` returns `(output, aux)`: only `output` is differentiated, and the Hessian
        function returns `(hessian, aux)`.
    executor, block_size : optional
        As for `jacobian`: columns computed in blocks on an executor.

    Returns
    -------
    callable
        Takes `fn`'s arguments and returns the Hessian, of shape `x.shape + x.shape` for
        an array argument `x`; nested like `jacobian(grad(f, wrt), wrt)` for a tuple `wrt`
        and pytrees. Built from one Hessian-vector product per element of `x`.

    Examples
    --------
    >>> def f(x):
    ...     return x[0] ** 2 * x[1]
    >>> srcad.hessian(f)(np.array([1.0, 3.0]))
    array([[6., 2.],
           [2., 0.]])
    >>> def f_with_aux(x):
    ...     return x[0] ** 2 * x[1], "fitted"
    >>> srcad.hessian(f_with_aux, has_aux=True)(np.array([1.0, 3.0]))
    (array([[6., 2.],
           [2., 0.]]), 'fitted')
    """
    wrt = chosen_wrt(wrt, argnums)
    if executor is not None or block_size is not None:
        return _on_executor(fn, wrt, _Hessian, (wrt,), executor, block_size, has_aux,
                            "hessian")
    if has_aux:
        return _with_aux(fn, ("hessian", wrt), lambda f: hessian(f, wrt), "hessian")
    if per_call(fn, wrt):
        return PerArity(fn, wrt, _Hessian)
    return api.shared(fn, ("hessian", wrt), lambda: _Hessian(fn, wrt))


class _BatchJacobian:
    """`batch_jacobian(f, wrt)`: per-example Jacobians of `f` mapping `[batch, ...]` to
    `[batch, ...]` where output row i depends only on input row i."""

    def __init__(self, fn, wrt):
        self.fn = transformable(fn)
        names, (self.position,) = _positional(self.fn, wrt, "batch_jacobian") \
            if not isinstance(wrt, tuple) else (None, (None,))
        if self.position is None:
            raise UsageError("batch_jacobian takes one array argument in wrt.")
        self.batched = BatchedColumns(self.fn, names, (self.position,))

    @property
    def source(self) -> str:
        return _tangent_source(self.fn, wrt_parameters(code_of(self.fn), self.position)[0])

    @api_boundary
    def __call__(self, *args):
        return self.finished(args, *self.directions(args, self.batch_of(args)))

    def batch_of(self, args) -> np.ndarray:
        """The argument `wrt`, checked: real, with a batch axis."""
        x = np.asarray(args[self.position])
        _refuse_complex([x], "argument")
        if x.ndim == 0:
            raise UsageError("batch_jacobian needs an argument with a batch axis first.")
        return x

    # ---- in blocks, on an executor (api/executors.py) ----
    def parts(self, args, kwargs):
        """`("directions", [(0, count)])`: the unit directions of an example (not the
        examples: another argument may be batched as well)."""
        return "directions", [(0, int(np.prod(self.batch_of(args).shape[1:], dtype=int)))]

    def part(self, args, kwargs, way: str, which: int, chosen: range):
        return self.directions(args, self.batch_of(args), chosen)

    def from_parts(self, args, way: str, parts: list):
        return self.finished(args, parts[0][0], np.concatenate([c for _, c in parts], axis=-1))

    def finished(self, args, output, columns):
        """The Jacobians from `directions`' output and columns (all of them)."""
        x = np.asarray(args[self.position])
        if np.ndim(output) == 0 or np.shape(output)[0] != x.shape[0]:
            raise UsageError(f"batch_jacobian needs an output with the batch axis first "
                             f"({x.shape[0]} rows); got shape {np.shape(output)}.")
        self._check_independent(args, output)
        return columns.reshape(np.shape(output) + x.shape[1:])

    def directions(self, args, x, chosen: range | None = None):
        """`(output, columns)`: the derivatives along each unit direction of an example
        (those of `chosen` alone if given) repeated over the batch, stacked on a last axis."""
        chosen = range(int(np.prod(x.shape[1:], dtype=int))) if chosen is None else chosen
        stacked = self._all_at_once(args, x, chosen)
        if stacked is not None:
            return stacked
        columns = []  # one run of the tangent program per chosen element of an example
        example = x[0].astype(np.promote_types(x.dtype, np.float16))
        for unit in itertools.islice(_unit_arrays(example), chosen.start, chosen.stop):
            tangents = [None] * len(args)
            tangents[self.position] = np.broadcast_to(unit, x.shape).copy()
            output, tangent = jvp(self.fn, tuple(args), tuple(tangents))
            columns.append(tangent)
        return output, np.stack(columns, axis=-1)  # batch + out + (in elements)

    def _all_at_once(self, args, x, chosen: range):
        """`(output, columns)` from one run of the batched tangent program, seeded with
        each chosen unit direction of an example repeated over the batch, or None."""
        size = int(np.prod(x.shape[1:], dtype=int))
        unit = basis(size, np.promote_types(x.dtype, np.float16)).reshape(
            (size, 1) + x.shape[1:])[chosen.start:chosen.stop]
        ran = self.batched.run(0, np.broadcast_to(unit, (len(chosen),) + x.shape), args, {})
        if ran is None:
            return None
        output, tangent = ran
        if tangent is None:
            return output, np.zeros(np.shape(output) + (len(chosen),))
        return output, np.moveaxis(np.asarray(tangent), 0, -1)

    def _check_independent(self, args, output):
        """Refuse a function that mixes rows (a mean over the batch): its per-example
        Jacobians would be wrong, not merely slow."""
        x = np.asarray(args[self.position])
        if x.shape[0] < 2:
            return
        probe = np.zeros(x.shape, np.promote_types(x.dtype, np.float16))
        probe[0] = np.random.default_rng(0).standard_normal(x.shape[1:])
        tangents = tuple(probe if i == self.position else None for i in range(len(args)))
        leak = np.asarray(jvp(self.fn, tuple(args), tangents)[1])[1:]
        if np.any(np.abs(leak) > 1e-12 * (1.0 + np.max(np.abs(output)))):
            raise UsageError("batch_jacobian: output rows depend on other rows of the input "
                             "(a sum or mean over the batch axis?), so per-example Jacobians "
                             "are not defined.",
                             fix="use `srcad.jacobian` for the full Jacobian.")


@api_boundary
def batch_jacobian(fn: Callable, wrt: Wrt | None = None, *, argnums: Wrt | None = None,
                   executor=None, block_size: int | None = None) -> Callable:
    """Per-example Jacobians of a function that treats the rows of a batch apart.

    Parameters
    ----------
    fn : callable
        Maps `x` of shape `(batch, *in)` to an output of shape `(batch, *out)` whose row i
        depends only on row i of `x` (a function that mixes rows is refused).
    wrt, argnums : int or str, optional
        The one array argument `x`, as for `grad`.
    executor, block_size : optional
        As for `jacobian`: the directions of an example computed in blocks on an executor.

    Returns
    -------
    callable
        Takes `fn`'s arguments and returns the Jacobians, of shape `(batch, *out, *in)`,
        from one run of the tangent program per element of `in`.

    Examples
    --------
    >>> def f(x):
    ...     return x ** 2
    >>> srcad.batch_jacobian(f)(np.array([[1.0, 2.0], [3.0, 4.0]]))
    array([[[2., 0.],
            [0., 4.]],
    <BLANKLINE>
           [[6., 0.],
            [0., 8.]]])
    """
    wrt = chosen_wrt(wrt, argnums)
    if executor is not None or block_size is not None:
        return _on_executor(fn, wrt, _BatchJacobian, (wrt,), executor, block_size)
    return _BatchJacobian(fn, wrt)


def _on_executor(fn, wrt, kind, options: tuple, executor, block_size, has_aux=False,
                 what=""):
    """`kind(fn, *options)` (a class above, `options[0]` its `wrt`) computed in blocks on
    `executor`. With `has_aux`, the workers differentiate the output alone and the aux comes
    from one more run here, as in the local call; a callable with rules of its own, or one
    gathering `*args`, ships as the local call differentiates it: a function of a fixed
    number of arguments calling it (`calls.fixed_arity`), which reaches its rules."""
    if executor is None:
        raise UsageError("block_size= cuts the work into tasks for an executor; no "
                         "executor= was given.", fix="pass executor=, or leave block_size out.")
    if not (has_aux or per_call(fn, wrt)):
        return executors.OnExecutor(fn, kind, options, executor, block_size)
    per_arity = _ArityOnExecutor(fn, wrt, kind, what if has_aux else None, options, executor,
                                 block_size)
    return _WithAux(fn, per_arity, what) if has_aux else per_arity


class _ArityOnExecutor:
    """`kind` of `fn` (of its output without the aux, if `what` names the caller of a
    has_aux), in blocks on an executor, as the local call differentiates it: through
    `fixed_arity`, per count of positional arguments and names of keyword arguments of a
    call, an `OnExecutor` shipping `fn` itself (its rules with it)."""

    def __init__(self, fn, wrt, kind, what: str | None, options: tuple, executor,
                 block_size):
        executor, block_size = executors.checked(fn, executor, block_size)
        self.fn, self.position = fn, by_position(fn, wrt)
        self.made = functools.partial(executors.OnExecutor, fn, _FixedArity, executor=executor,
                                      block_size=block_size)
        self.kind, self.what, self.options = kind, what, options
        self._made, self.latest = {}, None

    def __call__(self, *args, **kwargs):
        arity = (len(args), tuple(kwargs))
        made = self._made.get(arity)
        if made is None:
            made = self._made[arity] = self.made((self.kind, self.what, arity, self.position,
                                                  *self.options[1:]))
        self.latest = made
        return made(*args, **kwargs)

    @property
    def source(self) -> str:
        if self.latest is None:
            raise UsageError("the program is made for the arguments of a call (the function "
                             "has rules, gathers `*args` or returns an aux), and it has not "
                             "been called yet.",
                             fix="call it once first.")
        return self.latest.source


class _FixedArity:
    """`kind(f, *options)`, `f` calling `fn` (or its output without the aux) with `arity`'s
    arguments: what the local call differentiates, made again on a worker."""

    def __new__(cls, fn, kind, what: str | None, arity: tuple, *options):
        return kind(fixed_arity(fn if what is None else _output_of(fn, what), *arity),
                    *options)


# ---- Jacobians, Hessians and hvps called where srcad differentiates ---------------------------
def _one_array(wrt, args: tuple, kwargs: dict, what: str):
    """The one argument (position or keyword name) a form differentiates in."""
    value = args[wrt] if isinstance(wrt, int) and wrt < len(args) else kwargs.get(wrt)
    if isinstance(wrt, tuple) or is_container(value):
        raise UnsupportedDerivativeError(
            f"srcad differentiates `srcad.{what}` called inside a function it differentiates "
            "for one array or number argument (`wrt` an int), not a tuple of them or a "
            "container.", fix=f"take the {what} with respect to one array argument there.")
    return wrt


@functools.lru_cache(maxsize=256)
def _rows_form(fn, wrt, count: int, keywords: tuple):
    """`J(a0, .., k=k, ..)`, the Jacobian of `fn` in argument `wrt` row by row: one
    pullback of `srcad.vjp` per output element (api/derivative_calls.py differentiates
    those calls)."""
    parameters, passed = _signature(count, keywords)
    argument = f"a{wrt}" if isinstance(wrt, int) else wrt
    source = (
        f"def jacobian({parameters}):\n"
        f"    srcad_output, srcad_pullback = srcad_vjp(srcad_function, {passed}, wrt={wrt!r})\n"
        f"    srcad_shape = srcad_numpy.shape(srcad_output)\n"
        f"    srcad_rows = [srcad_pullback(srcad_numpy.reshape(srcad_row, srcad_shape))\n"
        f"                  for srcad_row in srcad_numpy.eye(srcad_numpy.size(srcad_output))]\n"
        f"    return srcad_numpy.reshape(srcad_numpy.stack(srcad_rows),\n"
        f"                               srcad_shape + srcad_numpy.shape({argument}))\n")
    return compiled_source(source, "jacobian", {"srcad_vjp": api.vjp, "srcad_function": fn,
                                                "srcad_numpy": np},
                           f"<srcad-Jacobian of {getattr(fn, '__name__', 'a function')}>")


@functools.lru_cache(maxsize=256)
def _hvp_form(gradient, wrt, count: int, keywords: tuple):
    """`Hv(a0, .., v, k=k, ..)`: the pullback at v of `gradient` (H is symmetric)."""
    parameters, passed = _signature(count, keywords, extra="srcad_vector")
    source = (
        f"def hvp({parameters}):\n"
        f"    srcad_output, srcad_pullback = srcad_vjp(srcad_gradient, {passed}, wrt={wrt!r})\n"
        f"    return srcad_pullback(srcad_vector)\n")
    return compiled_source(source, "hvp", {"srcad_vjp": api.vjp, "srcad_gradient": gradient},
                           "<srcad-Hessian-vector product>")


def _signature(count: int, keywords: tuple, extra: str = "") -> tuple[str, str]:
    """A form's parameters `a0, .., [extra,] *, k, ..` and the arguments it passes on."""
    positional = [f"a{i}" for i in range(count)] + ([extra] if extra else [])
    parameters = ", ".join(positional + (["*", *keywords] if keywords else []))
    passed = ", ".join([f"a{i}" for i in range(count)] + [f"{k}={k}" for k in keywords])
    return parameters, passed
