"""api: the user's entry points: grad, value_and_grad, vjp, show.

Each returns or uses a `Derivative`, which holds the user's function and its `wrt`, fetches
the compiled adjoint from the cache on first use (and again only if a global it relied on is
rebound), and applies the boundary conventions of `srcad.runtime.arguments` on every call.
"""
from __future__ import annotations

import functools
import inspect
import threading
import types
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from srcad.compiler import cache, numba_backend
from srcad.runtime.arguments import (Wrt, chosen_wrt, is_container, like_argument, promote,
                                     refuse_not_plain_arguments, seed_for, unshared, wrt_parameters)
from srcad.api.adapters import (adapter, by_position, has_no_body_of_its_own, per_call,
                                 transformable)
from srcad.api.data_parallel import ChunkedGradient
from srcad.compiler.frontend.parse import code_of
from srcad.compiler.passes import switched_off
from srcad.compiler.pipeline import source_after
from srcad.errors import CotangentError, UsageError
from srcad.ops.callables import call_method_of, unwrapped
from srcad.runtime.calls import fixed_arity
from srcad.runtime.hooks import DerivativeFunction
from srcad.tracebacks import api_boundary, hide_own_frames
from srcad.api.fast_paths import (array_runner, float64_arrays, float64_ranks, float_program,
                              fused_runner, guards_of, tree_runner)


_FLOATS = {(float,) * n for n in range(1, 9)}


class Derivative:
    """A user function with the parameters to differentiate, bound to its compiled adjoint."""

    def __init__(self, fn, wrt=0, has_aux=False, backend="python"):
        self.fn = fn
        self.wrt = wrt
        self.has_aux = has_aux
        self.backend = backend  # "numba": grad's programs compiled by numba_backend
        self._resolve()

    def _resolve(self):
        """What `fn` runs, its parameters, and empty program tables. For an object whose
        class defines `__call__` (`dispatch`), again whenever the class's `__call__` is
        replaced, as calling the object would follow it."""
        fn, wrt = self.fn, self.wrt
        call = call_method_of(fn)
        self.dispatch = None if call is None else (fn, call)
        # A bound method (`model.loss`) is its function with the receiver passed first;
        # `wrt` counts the arguments the user passes, as for any other callable.
        target = unwrapped(fn)  # a decorated function runs in its own module
        self.function = getattr(target, "__func__", target if isinstance(
            target, types.FunctionType) else fn)
        self.receiver = (target.__self__,) if hasattr(target, "__func__") else ()
        if has_no_body_of_its_own(fn):
            self.function, self.receiver = adapter(fn), ()  # transform a call of it
        self.names, self.positions = wrt_parameters(code_of(self.function), wrt,
                                                    len(self.receiver))
        self.last_position = max((p for p in self.positions if p is not None), default=-1)
        code = code_of(self.function)  # (the parameters the caller passes by position)
        self.parameters = code.co_varnames[len(self.receiver):code.co_argcount]
        self.positional = None not in self.positions
        self.single, self.as_tuple = len(self.names) == 1, isinstance(wrt, tuple)
        self._compiled = {}  # (containers, numbers, mode) → (compiled program, bound)
        self.latest = {}  # (wrt arguments' types, mode, ranks) → (compiled, bound, guards)
        self.latest_quick = [None]  # the quick call of the latest call (fast_paths.py)
        self.fused_call = fused_runner(self)  # for Python-float wrt arguments
        self.array_call = array_runner(self)  # for float-array wrt arguments
        self.tree_pair = tree_runner(self, "rev")  # value_and_grad of plain containers

    @property
    def source(self) -> str:
        """The generated adjoint program (for array or float arguments), as Python source."""
        return self._program(frozenset())[0].source

    def _program(self, containers: frozenset, numbers: tuple = (), mode: str = "rev",
                 ranks: tuple = ()):
        """The compiled program of `mode` (pipeline.transform) and its bound function, for
        arguments of this kind: `numbers[i]` tells whether the i-th `wrt` argument is a
        Python number, `ranks[i]` the rank of the i-th positional argument where it is a
        float64 array (mode "gradient": transform/specialise.py)."""
        entry = self._compiled.get((containers, numbers, mode, ranks))
        if entry is None or not entry[2]():
            self.follow_call()
            scalars = frozenset(n for n, number in zip(self.names, numbers) if number)
            backend = self.backend if mode in ("fused", "gradient") else "python"
            compiled = cache.compiled_adjoint(self.function, self.names, self.has_aux, containers,
                                              mode=mode, scalars=scalars,
                                              arrays=float64_arrays(self.parameters, ranks),
                                              backend=backend)
            bound = compiled.bind(self.function)
            if backend == "numba":
                bound = numba_backend.compiled(compiled, bound)
            entry = self._compiled[containers, numbers, mode, ranks] = (
                compiled, bound, self.guards(compiled))
        return entry[:2]

    def guards(self, compiled):
        """`() → whether compiled, made for this function, may run its next call`."""
        return guards_of(compiled, self.function, self.dispatch)

    def follow_call(self) -> bool:
        """Whether the object's class's `__call__` was replaced (then derived anew)."""
        if self.dispatch is None or type(self.fn).__call__ is self.dispatch[1]:
            return False
        self._resolve()
        return True

    def _run(self, args, kwargs, mode: str):
        """`(compiled program, its result, the unpromoted wrt arguments)`: the program of
        `mode` for arguments of these kinds, run on them."""
        if self.dispatch is not None:
            self.follow_call()
        if self.single and self.positional and self.last_position < len(args):
            position = self.last_position  # the common case: one argument, by position
            value = args[position]
            kind = type(value)
            if kind is not float and not (kind is np.ndarray and value.dtype.kind in "fc"):
                args = (*args[:position], promote(value, self.names[0]), *args[position + 1:])
            originals, kinds = [value], (kind,)
        elif self.positional and self.last_position < len(args):
            originals = [args[p] for p in self.positions]
            kinds = tuple(map(type, originals))
            if kinds not in _FLOATS:  # Python floats need no promotion
                args = list(args)
                for position, name, value in zip(self.positions, self.names, originals):
                    args[position] = promote(value, name)
        else:
            bound = inspect.signature(self.fn).bind(*args, **kwargs)
            bound.apply_defaults()
            originals = [bound.arguments[name] for name in self.names]
            for name, value in zip(self.names, originals):
                bound.arguments[name] = promote(value, name)
            args, kwargs = bound.args, bound.kwargs
            kinds = tuple(map(type, originals))
        ranks = float64_ranks(args, len(self.parameters)) if mode == "gradient" else ()
        refuse_not_plain_arguments(args, kwargs)
        entry = self.latest.get((kinds, mode, ranks))  # arguments of kinds seen before
        if entry is None or not entry[2]():
            containers = frozenset(n for n, v in zip(self.names, originals)
                                   if is_container(v))
            compiled, program = self._program(
                containers, tuple(k is float or k is int for k in kinds), mode, ranks)
            entry = self.latest[kinds, mode, ranks] = (compiled, program,
                                                       self.guards(compiled))
        compiled, program, _ = entry
        if kwargs:
            return compiled, program(*self.receiver, *args, **kwargs), originals
        return compiled, program(*self.receiver, *args), originals

    def forward(self, args, kwargs):
        """Run the forward sweep: (output, backward, the unpromoted wrt arguments)."""
        output, backward, originals, _ = self.forward_sweep(args, kwargs)
        return output, backward, originals

    def forward_sweep(self, args, kwargs):
        """`forward`'s three, and whether the backward sweep may be replayed (replay.py)."""
        compiled, (output, backward), originals = self._run(args, kwargs, "rev")
        if compiled.writes:  # the backward sweep restores what the function wrote in place,
            output = _detached(output)  # and an output array may be that memory
        return output, backward, originals, compiled.replayable

    def gradients_only(self, args, kwargs):
        """`grad`'s gradients, by a program that computes no more of the output than the
        seed needs (pipeline.transform, "gradient"); `_Grad` tries `fused_call` first."""
        _, raw, originals = self._run(args, kwargs, "gradient")
        return self._shaped(raw, originals)

    def value_and_gradients(self, args, kwargs):
        """`(output, gradients)` for `value_and_grad`: by the fused program when every `wrt`
        argument is a Python float passed by position (the common scalar case), by the
        program taking their leaves where some are plain containers (`tree_runner`), else
        by the forward sweep and its backward closure."""
        result = None if kwargs else self.fused_call(args) or self.tree_pair(args)
        if result is None and self.backend == "numba" and not kwargs:
            result = self._fused_on_arrays(args)
        if result is not None:
            return result
        output, backward, originals = self.forward(args, kwargs)
        seed = seed_for(output[0] if self.has_aux else output)
        return output, self.gradients(backward, seed, originals)

    def _fused_on_arrays(self, args):
        """For backend="numba": `(output, gradients)` by the fused program, which numba
        compiles, where every `wrt` argument is a float64 array passed by position; None
        where one is not, or where the program writes into arrays in place (its backward
        sweep restores them, and the output may be one of them)."""
        if not self.positional or self.last_position >= len(args):
            return None
        for position in self.positions:
            value = args[position]
            if type(value) is not np.ndarray or value.dtype != np.float64:
                return None
        compiled, _ = self._program(frozenset(), (False,) * len(self.positions), "fused")
        if compiled.writes:
            return None
        _, (output, raw), originals = self._run(args, {}, "fused")
        return output, self._shaped(raw, originals)

    def gradients(self, backward, cotangent, originals):
        return self._shaped(backward(cotangent), originals)

    def _shaped(self, raw, originals):
        """The gradients a program returned, with the types, shapes and dtypes of `wrt`."""
        if self.single:
            argument = originals[0]
            shaped = float(raw) if type(argument) is float and isinstance(raw, float) \
                else like_argument(raw, argument)  # (the common case first)
            return (shaped,) if self.as_tuple else shaped
        shaped = tuple(float(g) if type(x) is float and isinstance(g, float)
                       else like_argument(g, x) for g, x in zip(raw, originals))
        return shaped if self.as_tuple else shaped[0]


class ByArity:
    """A Derivative of a function that gathers positional arguments in `*args`, with `wrt`
    indexing one of them, or of a callable with rules (`adapters.per_call`): one Derivative
    per count of positional arguments and names of keyword arguments, of a function with
    those parameters calling it (`calls.fixed_arity`)."""

    def __init__(self, fn, wrt=0, has_aux=False, backend="python"):
        self.fn, self.wrt, self.has_aux = fn, by_position(fn, wrt), has_aux
        self.backend = backend
        self._made = {}
        self.latest = None
        self.latest_quick = (None,)  # (each call finds its Derivative first: `at`)

    def at(self, args, kwargs) -> Derivative:
        """The Derivative for a call with these arguments."""
        key = (len(args), tuple(kwargs))
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = Derivative(fixed_arity(self.fn, *key), self.wrt,
                                                self.has_aux, self.backend)
        self.latest = made
        return made

    @property
    def source(self) -> str:
        if self.latest is None:
            raise UsageError(f"the program of {self.fn!r} is made for the arguments of a call "
                             "(it gathers `*args`, or srcad applies its rules), and it has not "
                             "been called yet.",
                             fix="call the derivative once first, or use `srcad.show(f, "
                             "wrt, args=(...))`.")
        return self.latest.source

    def fused_call(self, args):
        return self.at(args, {}).fused_call(args)

    def array_call(self, args):
        return self.at(args, {}).array_call(args)

    def gradients_only(self, args, kwargs):
        return self.at(args, kwargs).gradients_only(args, kwargs)

    def value_and_gradients(self, args, kwargs):
        return self.at(args, kwargs).value_and_gradients(args, kwargs)

    def forward(self, args, kwargs):
        return self.at(args, kwargs).forward(args, kwargs)

    def forward_sweep(self, args, kwargs):
        return self.at(args, kwargs).forward_sweep(args, kwargs)

    def gradients(self, backward, cotangent, originals):
        return self.latest.gradients(backward, cotangent, originals)  # (same for any count)


def derivative_of(fn, wrt=0, has_aux=False, backend="python"):
    """A Derivative of `fn`, or one per count of arguments where `wrt` indexes `*args`."""
    return shared(fn, ("derivative", wrt, has_aux, backend), lambda: ByArity(
        fn, wrt, has_aux, backend) if per_call(fn, wrt) else Derivative(fn, wrt, has_aux,
                                                                        backend))


def shared(fn, key: tuple, make):
    """`make()`, for a plain function `fn` made once per `key` (what is made and its options):
    `srcad.grad(f)(x)` written in a loop, or a Hessian of `f` made per call, resolves and
    compiles `f` once, as a derivative kept in a variable does. As many are kept as the
    cache keeps programs (closures made in a loop come and go; `srcad.set_cache_size`);
    `srcad.clear_cache`, and a program leaving the cache, forget them."""
    if not isinstance(fn, types.FunctionType):
        return make()
    key = (fn, key, switched_off())  # (a derivative keeps the programs it made: one made
    try:                             # with an optimisation switched off is another)
        found = _SHARED.get(key)
    except TypeError:  # (an unhashable option, a `wrt` list: its error is make's to raise)
        return make()
    if found is None:
        found = make()  # (outside the lock: what it makes may share what it is made of)
    with _SHARED_LOCK:
        found = _SHARED.setdefault(key, found)
        _SHARED.move_to_end(key)
        while len(_SHARED) > cache.cache_size():
            _SHARED.popitem(last=False)
    return found


def chosen_backend(backend: str) -> str:
    """`backend`, checked: "python" or "numba"."""
    if backend not in ("python", "numba"):
        raise UsageError(f"backend must be \"python\" or \"numba\"; got {backend!r}.",
                         fix="leave it out for the Python program, or pass backend=\"numba\" "
                         "(pip install numba) to compile loops over numbers.")
    return backend


_SHARED: OrderedDict = OrderedDict()  # (function, key, optimisations off) → what `shared`
# made, oldest use first
_SHARED_LOCK = threading.Lock()
cache.forgotten_with_cache(_SHARED.clear)


class _DerivativeFunction(DerivativeFunction):
    """A derivative of a user function, callable, with the generated program as `.source`.
    `kind`, of the class, says what a call returns: "grad" the gradients, "value_and_grad"
    the value and the gradients, "vjp" (a pullback) the cotangents of one forward sweep
    (read it from the class: `update_wrapper` copies the function's own attributes, and a
    function may have a `kind` of its own)."""

    def __init__(self, derivative: Derivative):
        functools.update_wrapper(self, derivative.fn)  # first: it copies fn's __dict__, and
        self.derivative = derivative                    # fn may be a derivative itself

    @property
    @api_boundary
    def source(self) -> str:
        return self.derivative.source

    def __repr__(self):
        name = getattr(self, "__name__", None) or repr(self.derivative.fn)  # (a partial has none)
        return f"<srcad.{type(self).__name__.lstrip('_').lower()} of {name}>"


class _Grad(_DerivativeFunction):
    kind = "grad"

    def __init__(self, derivative: Derivative):
        super().__init__(derivative)
        self._fused_call, self._array_call, self._latest = (
            derivative.fused_call, derivative.array_call, derivative.latest_quick)

    def __call__(self, *args, **kwargs):
        try:  # (not `api_boundary`: a wrapper's frame would cost a tenth of a quick call)
            if not kwargs:  # (the quick call of the latest call's kinds first, if any;
                quick = self._latest[0]  # then Python floats: their calls are the shortest)
                if quick is not None:
                    gradients = quick(args)
                    if gradients is not None:
                        return gradients
                result = self._fused_call(args)
                if result is not None:
                    return result[1]
                gradient = self._array_call(args)
                if gradient is not None:
                    return gradient
            derivative = self.derivative
            gradients = derivative.gradients_only(args, kwargs)
            self._fused_call, self._array_call, self._latest = (
                derivative.fused_call, derivative.array_call, derivative.latest_quick)
            return gradients  # (the quick calls are made anew when `follow_call` derives anew)
        except Exception as error:
            hide_own_frames(error)
            raise


class _ValueAndGrad(_DerivativeFunction):
    kind = "value_and_grad"

    def __call__(self, *args, **kwargs):
        try:  # (as in `_Grad.__call__`)
            return self.derivative.value_and_gradients(args, kwargs)
        except Exception as error:
            hide_own_frames(error)
            raise


class _VJP(_DerivativeFunction):
    """The pullback `srcad.vjp` returns. The backward sweep pops the stack the forward sweep
    filled, so it runs once per forward sweep: a second call runs the forward sweep again."""

    kind = "vjp"

    def __init__(self, derivative, args, kwargs):
        super().__init__(derivative)
        self.arguments = (args, kwargs)  # (what it holds: api/derivative_calls.py)
        self.output, self._backward, self._originals = derivative.forward(args, kwargs)

    @api_boundary
    def __call__(self, cotangent):
        output = self.output[0] if self.derivative.has_aux else self.output
        cotangent = _checked_cotangent(cotangent, output)
        backward, self._backward = self._backward, None
        if backward is None:
            _, backward, self._originals = self.derivative.forward(*self.arguments)
        return unshared(self.derivative.gradients(backward, cotangent, self._originals),
                        cotangent)


class _GradWithAux(_DerivativeFunction):
    """`grad(f, has_aux=True)`: `(gradient, aux)`, by `value_and_grad`'s programs (the value
    is computed anyway, for the aux)."""

    kind = "grad_with_aux"

    @api_boundary
    def __call__(self, *args, **kwargs):
        (_, aux), gradients = self.derivative.value_and_gradients(args, kwargs)
        return gradients, aux


@api_boundary
def grad(fn: Callable | None = None, wrt: Wrt | None = None, *, argnums: Wrt | None = None,
         has_aux: bool = False, backend: str = "python", chunks_of: Wrt | None = None,
         reduction: str | None = None, executor=None, block_size: int | None = None
         ) -> Callable:
    """The gradient of a function of real, one-element output.

    Parameters
    ----------
    fn : callable
        A Python function with source, or any callable srcad has rules for (`np.tanh`).
        Without it, `grad(wrt=...)` is a decorator.
    wrt : int, str or tuple, optional
        The arguments to differentiate: a position, a parameter name, or a tuple of them.
        Default: the first argument.
    argnums : int, str or tuple, optional
        JAX's name for `wrt` (give one of the two).
    has_aux : bool
        `fn` returns `(value, aux)`: only `value` is differentiated, and the gradient
        function returns `(gradient, aux)`.
    backend : {"python", "numba"}
        "numba" compiles the gradient program to machine code with numba (an optional
        dependency) where numba can type it: loops over numbers and over elements of
        float64 arrays, about 100x faster than Python. Where it cannot (numba is not
        installed, the program calls array helpers, reads a global array), the Python
        program runs, as with "python". The first call pays numba's compilation.
    chunks_of : int, str or tuple, optional
        Data arguments (NumPy or `dask.array` arrays, one row per example) to cut into
        chunks of rows: the gradient is computed chunk by chunk and the chunks' gradients
        added by a fixed-order tree (docs/distributed.md). Needs `reduction`.
    reduction : {"sum", "mean"}, optional
        Declares that `fn` is the sum, or the mean, of its values on the chunks: what makes
        cutting its data right. A loss that is neither cannot be cut. Each chunk runs all
        of `fn`: with "sum", a term that is not a sum over rows (a penalty on the
        parameters) counts once per chunk, so add it outside (docs/distributed.md).
    executor : concurrent.futures.Executor or dask.distributed.Client, optional
        Where the chunks' gradients run (for Dask data, where its chunks are, by Dask's
        current scheduler without one); the function's source is shipped to the workers.
    block_size : int, optional
        Rows per chunk of NumPy data; default one chunk, or about four per worker.

    Returns
    -------
    callable
        Takes `fn`'s arguments and returns the gradient, of the type, shape and dtype of
        the argument (a tuple of them for a tuple `wrt`). `.source` is the generated
        program. The same function and options give the same object (with `chunks_of`, a
        new one each time: keep it).

    Raises
    ------
    srcad.errors.NonScalarOutputError
        (a `TypeError`) when called, if the output is not one real number: use `vjp` or
        `jacobian`.

    Examples
    --------
    >>> def loss(w, x):
    ...     return np.sum((x @ w - 1.0) ** 2)
    >>> w, x = np.array([1.0, 2.0]), np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> srcad.grad(loss)(w, x)
    array([0., 2.])
    >>> srcad.grad(lambda x: x ** 3)(2.0)
    12.0
    >>> srcad.grad(loss, 1)(w, x).shape
    (2, 2)
    """
    if fn is None:
        return functools.partial(grad, wrt=wrt, argnums=argnums, has_aux=has_aux,
                                 backend=backend, chunks_of=chunks_of, reduction=reduction,
                                 executor=executor, block_size=block_size)
    wrt, backend = chosen_wrt(wrt, argnums), chosen_backend(backend)
    if (chunks_of, reduction, executor, block_size) != (None,) * 4:
        return ChunkedGradient(grad, fn, wrt, chunks_of=chunks_of, reduction=reduction,
                               executor=executor, block_size=block_size, has_aux=has_aux,
                               backend=backend)
    if has_aux:
        return shared(fn, ("grad_with_aux", wrt, backend), lambda: _GradWithAux(
            derivative_of(fn, wrt, has_aux=True, backend=backend)))
    return shared(fn, ("grad", wrt, backend), lambda: _Grad(derivative_of(
        fn, wrt, backend=backend)))


@api_boundary
def value_and_grad(fn: Callable | None = None, wrt: Wrt | None = None, *,
                   argnums: Wrt | None = None, has_aux: bool = False,
                   backend: str = "python", chunks_of: Wrt | None = None,
                   reduction: str | None = None, executor=None,
                   block_size: int | None = None) -> Callable:
    """The value of a function of real, one-element output, and its gradient.

    Parameters
    ----------
    fn, wrt, argnums, has_aux, backend
        As for `grad`; without `fn`, a decorator. `backend="numba"` compiles the program
        of Python-float arguments (array arguments run the forward and backward sweeps in
        Python).
    chunks_of, reduction, executor, block_size
        As for `grad`: the value and the gradient computed chunk by chunk over the rows of
        the data arguments, each added up by the same fixed-order tree.

    Returns
    -------
    callable
        Takes `fn`'s arguments and returns `(value, gradient)`; with `has_aux`,
        `((value, aux), gradient)`.

    Examples
    --------
    >>> def loss(w):
    ...     return np.sum(w ** 2), "aux"
    >>> srcad.value_and_grad(loss, has_aux=True)(np.array([1.0, 2.0]))
    ((np.float64(5.0), 'aux'), array([2., 4.]))
    """
    if fn is None:
        return functools.partial(value_and_grad, wrt=wrt, argnums=argnums, has_aux=has_aux,
                                 backend=backend, chunks_of=chunks_of, reduction=reduction,
                                 executor=executor, block_size=block_size)
    wrt, backend = chosen_wrt(wrt, argnums), chosen_backend(backend)
    if (chunks_of, reduction, executor, block_size) != (None,) * 4:
        return ChunkedGradient(value_and_grad, fn, wrt, chunks_of=chunks_of,
                               reduction=reduction, executor=executor, block_size=block_size,
                               has_aux=has_aux, backend=backend)
    return shared(fn, ("value_and_grad", wrt, has_aux, backend),
                  lambda: _ValueAndGrad(derivative_of(fn, wrt, has_aux, backend)))


@api_boundary
def vjp(fn: Callable, *args: Any, wrt: Wrt | None = None, argnums: Wrt | None = None,
        has_aux: bool = False, **kwargs: Any) -> tuple:
    """Run `fn` once, keeping what its vector-Jacobian product needs.

    Parameters
    ----------
    fn : callable
        The function to differentiate.
    *args, **kwargs
        Its arguments (keyword arguments are passed on, and not differentiated unless
        `wrt` names them; `wrt`, `argnums` and `has_aux` are vjp's own).
    wrt, argnums : int, str or tuple, optional
        As for `grad`.
    has_aux : bool
        `fn` returns `(output, aux)`; only `output` is differentiated.

    Returns
    -------
    (output, vjp_fn) or (output, vjp_fn, aux)
        `vjp_fn(cotangent)`, for a cotangent of the output's structure and shape, returns
        the gradient of `sum(cotangent * fn(*args))` with respect to `wrt`.

    Examples
    --------
    >>> y, vjp_fn = srcad.vjp(np.sin, np.array([0.0, np.pi]))
    >>> vjp_fn(np.array([1.0, 2.0]))
    array([ 1., -2.])
    """
    pullback = _VJP(derivative_of(fn, chosen_wrt(wrt, argnums), has_aux), args, kwargs)
    if has_aux:
        output, aux = pullback.output
        return output, pullback, aux
    return pullback.output, pullback


def _detached(value):
    """`value` with each array in it copied (tuples, lists and dicts rebuilt)."""
    if type(value) is np.ndarray:
        return value.copy()
    if type(value) in (tuple, list):
        return type(value)(_detached(v) for v in value)
    if type(value) is dict:
        return {key: _detached(v) for key, v in value.items()}
    return value


def _checked_cotangent(cotangent, output):
    """The cotangent, with a list or tuple given for an array output made an array (the
    backward sweep multiplies it, and `[1.0] * -2` is a list, not a number), and a Python
    float given for a NumPy output one of its dtype (`x @ x`'s rule indexes it)."""
    if isinstance(output, (tuple, list)):
        if not isinstance(cotangent, (tuple, list)) or len(cotangent) != len(output):
            raise CotangentError(f"the output is a sequence of {len(output)} values; the "
                                 "cotangent must be a sequence of as many.")
        items = [_checked_cotangent(c, o) for c, o in zip(cotangent, output)]
        if all(new is old for new, old in zip(items, cotangent)):
            return cotangent  # (as given: a named tuple stays one)
        return items if isinstance(cotangent, list) else tuple(items)
    if np.shape(cotangent) != np.shape(output):
        raise CotangentError(f"the cotangent has shape {np.shape(cotangent)} but the output "
                             f"has shape {np.shape(output)}; they must match.")
    if isinstance(cotangent, (list, tuple)):
        return np.asarray(cotangent)
    if type(cotangent) is float and isinstance(output, (np.ndarray, np.generic)) \
            and output.dtype.kind == "f":  # a NumPy number, as rules expect of NumPy code
        return output.dtype.type(cotangent)
    return cotangent


@api_boundary
def show(fn: Callable, wrt: Wrt | None = None, mode: str = "rev", args: tuple | None = None,
         upto: str | None = None, *, argnums: Wrt | None = None) -> None:
    """Print the program srcad generates for a function.

    Parameters
    ----------
    fn : callable
        The function whose derivative program is printed.
    wrt, argnums : int, str or tuple, optional
        As for `grad`.
    mode : {"rev", "grad", "floats", "fwd"}
        "rev": the adjoint `vjp` and `value_and_grad` run; "grad": the gradient-only
        program `grad` runs on arrays (with `args`, the one specialised on that call's
        float64 arrays); "floats": the one `grad` runs when the `wrt` arguments are Python
        floats (forward mode where it applies); "fwd": the tangent program of `jvp`.
    args : tuple, optional
        The arguments of a call, for mode "grad" and for functions gathering `*args`.
    upto : str, optional
        A pass (`python -m srcad show --passes` lists each mode's): the program as it
        stands after it, such as the function in simple form ("frontend") or the plain
        derivative without srcad's rewrites ("differentiate"). For mode "floats" it shows
        the reverse-mode program.

    Examples
    --------
    >>> def f(x):
    ...     return np.sin(x) * x
    >>> srcad.show(f, upto="frontend")
    def f(x):
        sin_0 = np.sin(x)
        mul_1 = sin_0 * x
        return mul_1
    """
    wrt = chosen_wrt(wrt, argnums)
    if mode not in ("rev", "grad", "floats", "fwd"):
        raise UsageError(f"mode={mode!r}: srcad shows the adjoint (\"rev\"), the gradient-only "
                         "program of `grad` on arrays (\"grad\") and on Python floats "
                         "(\"floats\"), and the tangent program (\"fwd\").")
    if per_call(fn, wrt):  # (its program depends on the count of arguments of a call)
        if args is None:
            raise UsageError(f"the program of {fn!r} is made for the arguments of a call (it "
                             "gathers `*args`, or srcad applies its rules).",
                             fix="pass the arguments of a call: `srcad.show(f, wrt, "
                             "args=(...))`.")
        fn, wrt = fixed_arity(fn, len(args), ()), by_position(fn, wrt)
    if mode == "rev" and upto is None:
        print(Derivative(fn, wrt).source, end="")
        return
    function = transformable(fn)
    names, _ = wrt_parameters(code_of(function), wrt)
    if upto is not None:
        options = {"scalars": frozenset(names)} if mode == "floats" else {}
        if mode == "grad" and args is not None:
            parameters = Derivative(fn, wrt).parameters
            options["arrays"] = float64_arrays(parameters,
                                               float64_ranks(tuple(args), len(parameters)))
        pipeline_mode = {"rev": "rev", "grad": "gradient", "floats": "fused", "fwd": "fwd"}
        print(source_after(function, names, pipeline_mode[mode], upto, **options))
        return
    if mode == "floats":
        program = float_program(function, names, False, frozenset(names))
    else:
        arrays = frozenset()
        if mode == "grad" and args is not None:
            parameters = Derivative(fn, wrt).parameters
            arrays = float64_arrays(parameters, float64_ranks(tuple(args), len(parameters)))
        program = cache.compiled_adjoint(function, names, arrays=arrays,
                                         mode="gradient" if mode == "grad" else mode)
    print(program.source, end="")
