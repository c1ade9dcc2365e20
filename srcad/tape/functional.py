"""functional: `grad(f, wrt=...)` → `f` differentiated in tape mode, with source mode's
conventions, so any program can be differentiated both ways and the results compared.

The call runs `f` once under a fresh GradientTape with the `wrt` arguments as watched
tensors (copies: in-place writes inside `f` do not reach the caller's arrays, as in source
mode, which restores them), and returns what `srcad.grad` returns: one gradient for a single
`wrt`, a tuple for a tuple; a float for a Python number, an array of the argument's shape
and floating dtype, zeros for an argument the output does not depend on; a Python `int` is
promoted to float and an integer array refused. The output must be a real value with one
element (`NonScalarOutputError` otherwise).

Inside another tape (an outer `tape.grad`, a `GradientTape`), gradients that the outer tape
tracks are returned as tensors, so derivatives compose: `grad(lambda x: grad(f)(x))`.
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable

import numpy as np

from srcad.errors import WrtError
from srcad.ops.callables import unwrapped
from srcad.runtime.arguments import (Wrt, chosen_wrt, is_container, like_argument,
                                     output_and_aux, promote, seed_for, wrt_parameters)
from srcad.runtime.hooks import ABOVE, DerivativeFunction
import srcad.tape.nest as nest
from srcad.tape.dispatch import is_live, new_tensor, value_of
from srcad.tape.gradient_tape import GradientTape
from srcad.tape.tensor import Tensor
from srcad.tracebacks import api_boundary


def grad(fn: Callable | None = None, wrt: Wrt | None = None, *,
         argnums: Wrt | None = None, has_aux: bool = False) -> TapeGradient | Callable:
    """The gradient of `fn` computed by recording it on a GradientTape, with `srcad.grad`'s
    conventions: `wrt` (or JAX's `argnums`) is an index, a name, or a tuple of them, and
    without `fn` this is a decorator. With `has_aux`, `fn` returns `(output, aux)`, only
    `output` is differentiated, and the gradient function returns `(gradient, aux)`.

    Examples
    --------
    >>> def f(x, y):
    ...     return np.sum(x * y)
    >>> srcad.tape.grad(f, 1)(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    array([1., 2.])
    >>> def f_with_aux(x):
    ...     return np.sum(x ** 2), "aux"
    >>> srcad.tape.grad(f_with_aux, has_aux=True)(np.array([1.0, 2.0]))
    (array([2., 4.]), 'aux')
    """
    if fn is None:
        return functools.partial(grad, wrt=wrt, argnums=argnums, has_aux=has_aux)
    return TapeGradient(fn, chosen_wrt(wrt, argnums), has_aux)


class TapeGradient(DerivativeFunction):
    """`fn`'s gradient function in tape mode (see the module docstring)."""

    _source_twin = None

    def __init__(self, fn, wrt=0, has_aux=False):
        self.fn, self.wrt, self.has_aux = fn, wrt, has_aux
        target = unwrapped(fn)
        function = getattr(target, "__func__", target)  # a bound method's function
        code = getattr(function, "__code__", None)
        if code is not None:
            receivers = 1 if hasattr(target, "__func__") else 0
            self.names, self.positions = wrt_parameters(code, wrt, receivers, gathered=True)
        else:  # a ufunc, builtin or other callable without code: positions only
            items = wrt if isinstance(wrt, tuple) else (wrt,)
            if not all(isinstance(i, int) and i >= 0 for i in items):
                raise WrtError(f"wrt={wrt!r}: {fn!r} has no Python signature to look names "
                               "up in; give argument positions.")
            self.positions, self.names = items, tuple(f"argument {i}" for i in items)
        functools.update_wrapper(self, fn, updated=())  # not fn.__dict__: T(T(f)) is not T(f)

    @api_boundary
    def __call__(self, *args, **kwargs):
        args, kwargs = self._bound(args, kwargs)
        originals = [self._get(args, kwargs, p, n) for p, n in zip(self.positions, self.names)]
        with GradientTape(watch_accessed_variables=False) as tape:
            sources = []  # per wrt argument: its tensors, flattened (one for an array)
            for position, name, original in zip(self.positions, self.names, originals):
                argument = _as_source(original, name)
                leaves = nest.flatten(argument)
                tape.watch(leaves)
                sources.append([leaf._id for leaf in leaves])  # before any in-place write
                self._set(args, kwargs, position, name, argument)
            output = self.fn(*args, **kwargs)
            if self.has_aux:
                output, aux = output_and_aux(output, "tape.grad")
        seed = seed_for(value_of(output))
        tape._begin_derivative()
        cotangents = tape._sweep({output._id: seed}, [i for ids in sources for i in ids]) \
            if isinstance(output, Tensor) else {}
        tape._end_derivative()
        gradients = tuple(_like(original, [cotangents.get(i) for i in ids])
                          for ids, original in zip(sources, originals))
        gradients = gradients if isinstance(self.wrt, tuple) else gradients[0]
        if self.has_aux:  # (its tensors as values, but where an outer tape tracks them)
            return gradients, nest.pack_as(aux, [_plain_unless_live(leaf)
                                                 for leaf in nest.flatten(aux)])
        return gradients

    def in_source_mode(self):
        """`srcad.grad(fn, wrt)`, which computes the function this one does: its derivatives
        are this one's (`__wrapped__`, fn, would give fn's derivatives instead)."""
        if self._source_twin is None:
            self._source_twin = ABOVE.grad(self.fn, wrt=self.wrt, has_aux=self.has_aux)
        return self._source_twin

    def _bound(self, args, kwargs):
        """Arguments with every `wrt` parameter present by position or by name."""
        if all(p is not None and p < len(args) for p in self.positions):
            return list(args), dict(kwargs)
        bound = inspect.signature(self.fn).bind(*args, **kwargs)
        bound.apply_defaults()
        return list(bound.args), dict(bound.kwargs)

    @staticmethod
    def _get(args, kwargs, position, name):
        return args[position] if position is not None and position < len(args) \
            else kwargs[name]

    @staticmethod
    def _set(args, kwargs, position, name, value):
        if position is not None and position < len(args):
            args[position] = value
        else:
            kwargs[name] = value


def _as_source(original, name):
    """The watched stand-in for an argument: a tensor, or a dict/list/tuple of tensors."""
    if isinstance(original, Tensor):
        return original  # already a tensor (an outer tape's): keep its id, so derivatives nest
    promoted = promote(original, name)
    return nest.pack_as(promoted, [_leaf_tensor(v) for v in nest.flatten(promoted)])


def _leaf_tensor(value):
    """A fresh tensor: an array is copied, a Python float becomes an (immutable) float64, a
    Python complex a complex128."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, np.ndarray):
        return new_tensor(value.copy())
    if isinstance(value, np.generic):
        return new_tensor(value)
    return new_tensor(np.complex128(value) if isinstance(value, complex) else np.float64(value))


def _like(original, cotangents):
    """The gradient of one argument in source mode's form (see the module docstring)."""
    if isinstance(original, Tensor):
        (cotangent,) = cotangents
        if cotangent is None:
            return new_tensor(np.zeros(np.shape(original._value)))
        cotangent = _real_for_real(cotangent, original._value)
        return cotangent if isinstance(cotangent, Tensor) else new_tensor(cotangent)
    leaves = [_real_for_real(_plain_unless_live(c), x)
              for c, x in zip(cotangents, nest.flatten(original))]
    if any(isinstance(leaf, Tensor) for leaf in leaves):  # inside an outer tape: keep tensors
        return nest.pack_as(original, leaves)
    if not is_container(original):
        return like_argument(leaves[0], original)
    # zeros, not None, where no cotangent came: a dataclass counts a field holding None as
    # a constant, not one of its children (kernels/pytrees.py)
    leaves = [like_argument(None, x) if c is None else c
              for c, x in zip(leaves, nest.flatten(original))]
    return like_argument(nest.pack_as(original, leaves), original)


def _real_for_real(cotangent, argument):
    """The real part of a real argument's cotangent (the imaginary part a real value's
    cotangent may carry means nothing, as `like_argument` drops it); as a tensor inside an
    outer tape, so that the outer gradient is real too."""
    if cotangent is None or np.iscomplexobj(argument) \
            or not np.iscomplexobj(value_of(cotangent)):
        return cotangent
    return np.real(cotangent)


def _plain_unless_live(cotangent):
    if isinstance(cotangent, Tensor) and not is_live(cotangent):
        return cotangent._value
    return cotangent
