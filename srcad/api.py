"""api: the user's entry points: grad, value_and_grad, vjp, show.

Each returns or uses a `Derivative`, which holds the user's function and its `wrt`, fetches
the compiled adjoint from the cache on first use (and again only if a global it relied on is
rebound), and applies the boundary conventions of `srcad.arguments` on every call.
"""
from __future__ import annotations

import functools
import inspect
import math
import types

import numpy as np

from srcad import cache
from srcad.arguments import is_container, like_argument, promote, seed_for, wrt_parameters
from srcad.errors import CotangentError, SrcadError, UsageError
from srcad.frontend.parse import code_of, unwrapped
from srcad.derivative_calls import adapter, has_no_body_of_its_own, transformable


_FLOATS = {(float,) * n for n in range(1, 9)}
_ARRAY_GRADIENT = ((np.ndarray,), "gradient")  # (`Derivative._latest`'s key for array_call)


class Derivative:
    """A user function with the parameters to differentiate, bound to its compiled adjoint."""

    def __init__(self, fn, wrt=0, has_aux=False):
        self.fn = fn
        self.wrt = wrt
        self.has_aux = has_aux
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
        self._last_position = max((p for p in self.positions if p is not None), default=-1)
        self._positional = None not in self.positions
        self._single, self._tuple = len(self.names) == 1, isinstance(wrt, tuple)
        self._compiled = {}  # (containers, numbers, mode) → (compiled program, bound)
        self.replayable = False  # whether the last forward sweep's backward may be replayed
        self._latest = {}  # (the types of the wrt arguments, mode) → (compiled, bound)
        self.fused_call = self._fused_runner()  # for Python-float wrt arguments
        self.array_call = self._array_runner()  # for one float-array wrt argument

    @property
    def source(self) -> str:
        """The generated adjoint program (for array or float arguments), as Python source."""
        return self._program(frozenset())[0].source

    def _program(self, containers: frozenset, numbers: tuple = (), mode: str = "rev"):
        """The compiled program of `mode` (pipeline.transform) and its bound function, for
        arguments of this kind: `numbers[i]` tells whether the i-th `wrt` argument is a
        Python number."""
        entry = self._compiled.get((containers, numbers, mode))
        if entry is None or not entry[0].guards_hold(self.function):
            scalars = frozenset(n for n, number in zip(self.names, numbers) if number)
            compiled = cache.compiled_adjoint(self.function, self.names, self.has_aux, containers,
                                              mode=mode, scalars=scalars)
            entry = self._compiled[containers, numbers, mode] = (compiled,
                                                                 compiled.bind(self.function))
        return entry

    def _run(self, args, kwargs, mode: str):
        """`(compiled program, its result, the unpromoted wrt arguments)`: the program of
        `mode` for arguments of these kinds, run on them."""
        if self._single and self._positional and self._last_position < len(args):
            position = self._last_position  # the common case: one argument, by position
            value = args[position]
            kind = type(value)
            if kind is not float and not (kind is np.ndarray and value.dtype.kind in "fc"):
                args = (*args[:position], promote(value, self.names[0]), *args[position + 1:])
            originals, kinds = [value], (kind,)
        elif self._positional and self._last_position < len(args):
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
        entry = self._latest.get((kinds, mode))  # arguments of kinds seen before: no analysis
        if entry is None or not entry[2]():
            containers = frozenset(n for n, v in zip(self.names, originals)
                                   if is_container(v))
            compiled, program = self._program(
                containers, tuple(k is float or k is int for k in kinds), mode)
            entry = self._latest[kinds, mode] = (compiled, program, _guards_of(compiled,
                                                                              self.function))
        compiled, program, _ = entry
        if kwargs:
            return compiled, program(*self.receiver, *args, **kwargs), originals
        return compiled, program(*self.receiver, *args), originals

    def forward(self, args, kwargs):
        """Run the forward sweep: (output, backward, the unpromoted wrt arguments)."""
        compiled, (output, backward), originals = self._run(args, kwargs, "rev")
        self.replayable = compiled.replayable
        if compiled.writes:  # the backward sweep restores what the function wrote in place,
            output = _detached(output)  # and an output array may be that memory
        return output, backward, originals

    def gradients_only(self, args, kwargs):
        """`grad`'s gradients, by a program that computes no more of the output than the
        seed needs (pipeline.transform, "gradient"); `_Grad` tries `fused_call` first."""
        _, raw, originals = self._run(args, kwargs, "gradient")
        return self._shaped(raw, originals)

    def value_and_gradients(self, args, kwargs):
        """`(output, gradients)` for `value_and_grad`: by the fused program when every `wrt`
        argument is a Python float passed by position (the common scalar case), else by the
        forward sweep and its backward closure."""
        result = None if kwargs else self.fused_call(args)
        if result is not None:
            return result
        output, backward, originals = self.forward(args, kwargs)
        seed = seed_for(output[0] if self.has_aux else output)
        return output, self.gradients(backward, seed, originals)

    def _fused_runner(self):
        """`fused_call(args)`: `(output, gradients)` by one program without a backward closure
        (pipeline.transform, mode "fused", or "forward-grad" where it applies: one `wrt`
        argument, no aux) when every `wrt` argument is a Python float passed by position;
        None when one is not, or when that program is optimistic (`math` in place of NumPy)
        and raised or made something not finite: the general program then runs the call
        again, so NumPy's values, warnings and errors prevail.

        A closure over what it reads, made once: it runs on every scalar call, where a
        microsecond is the whole budget (a method reading attributes cost 0.7 us more)."""
        if not self._positional:
            return _declined
        positions, receiver, single, as_tuple = (self.positions, self.receiver, self._single,
                                                 self._tuple)
        needed = self._last_position + 1
        code = code_of(self.function)  # (the parameters after the receiver, by position)
        parameters = code.co_varnames[len(receiver):code.co_argcount]
        reverse_only = set()  # the sets of float parameters forward mode was refused for
        # The program, made on the first call: its function, whether it is optimistic, its
        # guards, whether it is forward mode's, and the positions of the other arguments it
        # is specialised on as Python floats.
        run = optimistic = holds = by_forward_mode = None
        others = ()

        def compiled(args):
            nonlocal run, optimistic, holds, by_forward_mode, others
            others = tuple(p for p in range(min(len(args), len(parameters)))
                           if p not in positions and type(args[p]) is float)
            numbers = frozenset(parameters[p] for p in positions + others)
            made = _float_program(self.function, self.names, self.has_aux, numbers,
                                  reverse_only)
            run, optimistic, holds = (made.bind(self.function), made.optimistic,
                                      _guards_of(made, self.function))
            by_forward_mode = made.by_forward_mode

        def fused(args):
            if len(args) < needed:
                return None
            for position in positions:
                if type(args[position]) is not float:
                    return None
            if run is None or not holds():
                compiled(args)
            else:
                for position in others:
                    if len(args) <= position or type(args[position]) is not float:
                        compiled(args)
                        break
            try:
                output, raw = run(*receiver, *args) if receiver else run(*args)
            except Exception:
                if optimistic:
                    return None
                raise
            if single:
                if by_forward_mode and type(output) is not float:
                    raw = _tangent_of_number(output, raw)
                if type(raw) is not float:  # None (no derivative reached it) or np.float64
                    raw = like_argument(raw, 0.0)
                if optimistic:
                    try:  # (a sum is finite only if every term is)
                        if not math.isfinite(output + raw):
                            return None
                    except Exception:  # (an int too large for a float: the general program)
                        return None
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
            return output, raw
        return fused

    def _array_runner(self):
        """`array_call(args)`: `grad`'s gradient when the one `wrt` argument, passed by
        position, is a float or complex array and the gradient-only program for arrays has
        been compiled (by `gradients_only`) and its guards hold; None otherwise. A closure,
        like `_fused_runner`'s: it halves the microsecond and a half that `_run` and
        `_shaped` cost every call."""
        if not (self._single and self._positional):
            return _declined
        position, receiver, as_tuple, latest = (self.positions[0], self.receiver,
                                                self._tuple, self._latest)

        def array_call(args):
            if len(args) <= position:
                return None
            value = args[position]
            if type(value) is not np.ndarray or value.dtype.kind not in "fc":
                return None
            entry = latest.get(_ARRAY_GRADIENT)
            if entry is None or not entry[2]():
                return None
            gradient = like_argument(entry[1](*receiver, *args), value)
            return (gradient,) if as_tuple else gradient
        return array_call

    def gradients(self, backward, cotangent, originals):
        return self._shaped(backward(cotangent), originals)

    def _shaped(self, raw, originals):
        """The gradients a program returned, with the types, shapes and dtypes of `wrt`."""
        if self._single:
            argument = originals[0]
            shaped = float(raw) if type(argument) is float and isinstance(raw, float) \
                else like_argument(raw, argument)  # (the common case first)
            return (shaped,) if self._tuple else shaped
        shaped = tuple(float(g) if type(x) is float and isinstance(g, float)
                       else like_argument(g, x) for g, x in zip(raw, originals))
        return shaped if self._tuple else shaped[0]


def _guards_of(compiled, function):
    """`() → whether compiled's guards hold for function`, with the arguments bound (the
    globals check alone where no guard reads a closure cell): it runs on every call."""
    if compiled.guards_cells:
        return functools.partial(compiled.guards_hold, function)
    return functools.partial(compiled.globals_hold, function.__globals__)


def _tangent_of_number(output, tangent):
    """The gradient in a tangent of `grad`'s output, once checked (as `seed_for` does) that
    the output is a real number with one element, which may be an array of any shape."""
    seed_for(output)
    return np.reshape(tangent, ()) if np.ndim(tangent) else tangent


def _declined(args):
    """The quick call of a derivative whose arguments never suit it."""
    return None


class _DerivativeFunction:
    """A derivative of a user function, callable, with the generated program as `.source`."""

    def __init__(self, derivative: Derivative):
        functools.update_wrapper(self, derivative.fn)  # first: it copies fn's __dict__, and
        self.derivative = derivative                    # fn may be a derivative itself

    @property
    def source(self) -> str:
        return self.derivative.source

    def __repr__(self):
        name = getattr(self, "__name__", None) or repr(self.derivative.fn)  # (a partial has none)
        return f"<srcad.{type(self).__name__.lstrip('_').lower()} of {name}>"


class _Grad(_DerivativeFunction):
    def __call__(self, *args, **kwargs):
        derivative = self.derivative
        if not kwargs:  # (Python floats first: their calls are the shortest)
            result = derivative.fused_call(args)
            if result is not None:
                return result[1]
            gradient = derivative.array_call(args)
            if gradient is not None:
                return gradient
        return derivative.gradients_only(args, kwargs)


class _ValueAndGrad(_DerivativeFunction):
    def __call__(self, *args, **kwargs):
        return self.derivative.value_and_gradients(args, kwargs)


class _VJP(_DerivativeFunction):
    """The pullback `srcad.vjp` returns. The backward sweep pops the stack the forward sweep
    filled, so it runs once per forward sweep: a second call runs the forward sweep again."""

    def __init__(self, derivative, args, kwargs):
        super().__init__(derivative)
        self._call = (args, kwargs)
        self.output, self._backward, self._originals = derivative.forward(args, kwargs)

    def __call__(self, cotangent):
        cotangent = _checked_cotangent(cotangent, self.output)
        backward, self._backward = self._backward, None
        if backward is None:
            _, backward, self._originals = self.derivative.forward(*self._call)
        return self.derivative.gradients(backward, cotangent, self._originals)


def _decorator_or_call(make):
    """Let `make(fn, **options)` be used as `make(fn)`, `@make` and `@make(**options)`."""
    @functools.wraps(make)
    def entry(fn=None, **options):
        if fn is None:
            return lambda f: make(f, **options)
        return make(fn, **options)
    return entry


@_decorator_or_call
def grad(fn, wrt=0):
    """The gradient of `fn` with respect to the parameters `wrt` (index, name or tuple).

    `fn` must return a real value with one element. The gradient has the argument's type,
    shape and dtype; a tuple `wrt` gives a tuple of gradients. `.source` is the generated
    adjoint program.
    """
    return _Grad(Derivative(fn, wrt))


@_decorator_or_call
def value_and_grad(fn, wrt=0, has_aux=False):
    """Like `grad`, returning `(value, gradient)`. With `has_aux`, `fn` returns
    `(value, aux)`, only `value` is differentiated, and the result is
    `((value, aux), gradient)`."""
    return _ValueAndGrad(Derivative(fn, wrt, has_aux))


def vjp(fn, *args, wrt=0, **kwargs):
    """`(value, vjp_fn)`: the forward sweep runs once, and `vjp_fn(cotangent)` returns the
    gradient of `sum(cotangent * fn(*args))` with respect to the `wrt` parameters."""
    pullback = _VJP(Derivative(fn, wrt), args, kwargs)
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


def show(fn, wrt=0, mode="rev") -> None:
    """Print the program srcad generates for `fn`: the adjoint `vjp` and `value_and_grad`
    run (mode "rev"), the gradient-only program `grad` runs on arrays (mode "grad"), the
    one `grad` runs when the `wrt` arguments are Python floats (mode "floats": forward mode
    where it applies, see transform/forward_grad.py), or the tangent program of forward mode
    (mode "fwd")."""
    if mode not in ("rev", "grad", "floats", "fwd"):
        raise UsageError(f"mode={mode!r}: srcad shows the adjoint (\"rev\"), the gradient-only "
                         "program of `grad` on arrays (\"grad\") and on Python floats "
                         "(\"floats\"), and the tangent program (\"fwd\").")
    if mode == "rev":
        print(Derivative(fn, wrt).source, end="")
        return
    function = transformable(fn)
    names, _ = wrt_parameters(code_of(function), wrt)
    if mode == "floats":
        program = _float_program(function, names, False, frozenset(names), set())
    else:
        program = cache.compiled_adjoint(function, names,
                                         mode="gradient" if mode == "grad" else mode)
    print(program.source, end="")


def _float_program(function, names: tuple, has_aux: bool, numbers: frozenset, reverse_only):
    """The program `grad` runs when the parameters `numbers` hold Python floats (the `wrt`
    ones and others: `grad(energy)(k, c)` with c a float needs no `broadcast_like` for
    `c * v`): forward mode where it applies (and `reverse_only`, the sets of parameters it
    was refused for, does not hold `numbers`), else reverse mode, fused."""
    if len(names) == 1 and not has_aux and numbers not in reverse_only:
        try:
            return cache.compiled_adjoint(function, names, has_aux, mode="forward-grad",
                                          scalars=numbers)
        except SrcadError:  # (NotForwardable, or a construct forward mode refuses)
            reverse_only.add(numbers)
    return cache.compiled_adjoint(function, names, has_aux, mode="fused", scalars=numbers)