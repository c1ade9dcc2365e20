"""control: what the user marks to shape differentiation.

`stop_gradient(x)` passes `x` through with no derivative; `with stop_recording():` runs a
block whose results are constants to the derivative (and records nothing for it);
`@custom_gradient` supplies the derivative of a function, TensorFlow style; `@checkpoint`
makes a derivative keep a function's inputs instead of its intermediates, and compute them
again when the gradient reaches the call; `for t in checkpointed(range(T)):` does the same
for a loop, segment by segment. All five are ordinary Python at run time, so
decorated and marked code also runs undifferentiated.
Source mode recognises them by object however they are imported; the rule registry gives
the same meaning to tape mode.
"""
from __future__ import annotations

import contextlib
import functools
import numbers
from typing import Callable, Iterable, Iterator, TypeVar

import numpy as np

from srcad.errors import NotCallableError, SrcadError, UsageError
from srcad.ops.registry import nondifferentiable
from srcad.runtime.arguments import leaves, like_argument, rebuilt
from srcad.runtime.hooks import ABOVE
from srcad.tracebacks import api_boundary

T = TypeVar("T")


def stop_gradient(x: T) -> T:
    """Mark a value through which no derivative flows.

    Parameters
    ----------
    x : array, number or pytree
        Any value in a function srcad differentiates.

    Returns
    -------
    The value itself (in tape mode, a constant copy), a constant to the derivative.

    Examples
    --------
    >>> def f(x):
    ...     return x * srcad.stop_gradient(x)
    >>> srcad.grad(f)(3.0)  # d/dx of x * c, c = 3
    3.0
    """
    return ABOVE.tape_stop_gradient(x)


nondifferentiable(stop_gradient)


@contextlib.contextmanager
def stop_recording() -> Iterator[None]:
    """A block, inside a differentiated function, whose results are constants.

    The block runs; nothing is differentiated or recorded in it (in tape mode, no tape
    records inside it).

    Examples
    --------
    >>> def f(x):
    ...     with srcad.stop_recording():
    ...         scale = np.max(np.abs(x))
    ...     return np.sum(x / scale)
    >>> srcad.grad(f)(np.array([1.0, -2.0]))  # 1 / scale, scale held constant
    array([0.5, 0.5])
    """
    with ABOVE.tape_paused():
        yield


class CustomGradient:
    """A function that returns `(y, grad_fn)`; called, it returns `y`. Differentiated
    code calls `grad_fn(dy)` for the cotangents of its positional arguments (one, or a
    tuple of one per argument, None for none)."""

    def __init__(self, function):
        self.function = function
        functools.update_wrapper(self, function)

    def __call__(self, *args, **kwargs):
        return ABOVE.tape_custom_gradient(self, args, kwargs)

    def __get__(self, instance, owner):
        return self if instance is None else functools.partial(self, instance)

    def forward(self, *args, **kwargs):
        """`(y, grad_fn)`, as the decorated function returns them."""
        result = self.function(*args, **kwargs)
        if not (isinstance(result, tuple) and len(result) == 2 and callable(result[1])):
            raise TypeError(f"@custom_gradient function {self.__name__} must return "
                            "(value, grad_fn)")
        return result


    def jvp(self, active, tangents, args, kwargs):
        """`(y, tangent of y)` from `grad_fn` alone: `grad_fn(u)` is `Jᵀu`, linear in `u`, so
        `J t` is the gradient over `u` of `⟨grad_fn(u), t⟩`, which reverse mode computes by
        transforming `grad_fn` (at `u = 0`). Forward mode keeps the custom rule's stability."""
        positional_only(self, active)
        result, grad_fn = self.forward(*args, **kwargs)
        pairing = ABOVE.value_and_grad(_pairing, wrt=1, has_aux=True)
        (_, returned), tangent = pairing(grad_fn, like_argument(None, result), active, tangents)
        if returned != len(args):
            wrong_count(self, returned, len(args))
        return result, tangent


def _pairing(grad_fn, cotangent, positions, tangents):
    """`⟨grad_fn(cotangent), tangents⟩` over the arguments at `positions`, and how many
    cotangents grad_fn returned."""
    cotangents = grad_fn(cotangent)
    if not isinstance(cotangents, (tuple, list)):
        cotangents = (cotangents,)
    total = 0.0
    for position, tangent in zip(positions, tangents):
        part = cotangents[position]
        if part is not None and tangent is not None:
            total = total + np.sum(part * tangent)
    return total, len(cotangents)


def positional_only(fn: CustomGradient, active) -> None:
    """A custom gradient gives cotangents by position: refuse a differentiated keyword."""
    named = [spec for spec in active if isinstance(spec, str)]
    if named:
        raise SrcadError(f"the custom gradient of {fn.__name__} gives cotangents for positional "
                         f"arguments; `{named[0]}` is passed by keyword.",
                         fix=f"pass `{named[0]}` positionally.")


def wrong_count(fn: CustomGradient, returned: int, expected: int):
    raise SrcadError(f"the grad_fn of {fn.__name__} returned {returned} cotangent(s) for "
                     f"{expected} positional argument(s).",
                     fix="return one per positional argument (None for none).")


@api_boundary
def custom_gradient(function: Callable) -> CustomGradient:
    """Decorator giving a function its own derivative, as TensorFlow's does.

    Parameters
    ----------
    function : callable
        Returns `(y, grad_fn)`: its value, and `grad_fn(dy)`, the cotangent of each
        positional argument (a tuple of them when there are several, None for none).

    Returns
    -------
    CustomGradient
        Called, it returns `y`; derivatives use `grad_fn`. Forward mode and second
        derivatives differentiate `grad_fn` itself, so they keep the rule's stability.

    Examples
    --------
    >>> @srcad.custom_gradient
    ... def clipped_identity(x):
    ...     def grad_fn(dy):
    ...         return np.clip(dy, -1.0, 1.0)
    ...     return x, grad_fn
    >>> srcad.grad(lambda x: np.sum(5.0 * clipped_identity(x)))(np.array([1.0, 2.0]))
    array([1., 1.])
    """
    return CustomGradient(function)


class Checkpoint:
    """A function whose call a derivative differentiates by recomputation: the forward sweep
    keeps the call's arguments (by reference, with a hash that refuses a later write into
    them) and runs the function plainly, keeping none of its intermediates; the backward
    sweep runs the function's forward and backward sweeps from those arguments
    (runtime/calls.py; tape mode, which copies plain arrays as any node: tape/control.py). Called plainly, it is the
    function. Two checkpoints of one function are equal, so derivative programs made for
    one serve the other."""

    def __init__(self, function):
        if not callable(function):
            raise NotCallableError(
                f"srcad.checkpoint takes a function; got {type(function).__name__} {function!r}.",
                fix="pass the function itself: `srcad.checkpoint(step)` or decorate it with "
                "`@srcad.checkpoint`, then call the result with the arguments.")
        self.function = function
        self.__name__ = type(function).__name__  # (a partial or a callable object has none)
        functools.update_wrapper(self, function, updated=())

    def __call__(self, *args, **kwargs):
        return ABOVE.tape_checkpoint(self, args, kwargs)

    def __get__(self, instance, owner):
        return self if instance is None else functools.partial(self, instance)

    def __eq__(self, other):
        return isinstance(other, Checkpoint) and other.function == self.function

    def __hash__(self):
        return hash((Checkpoint, self.function))

    def __repr__(self):
        return f"srcad.checkpoint({self.function!r})"


@api_boundary
def checkpoint(function: Callable) -> Checkpoint:
    """Decorator trading memory for time in derivatives (gradient checkpointing).

    The function computes as before, but a derivative of code that calls it keeps only the
    call's arguments, and recomputes the function's intermediates when the gradient reaches
    the call (`jax.checkpoint`, `torch.utils.checkpoint`). Split a long loop into
    checkpointed segments and its gradient needs the memory of one segment plus each
    segment's inputs.

    Parameters
    ----------
    function : callable
        The function whose intermediates are recomputed rather than kept.

    Returns
    -------
    Checkpoint
        Called plainly, it is `function`.

    Examples
    --------
    >>> @srcad.checkpoint
    ... def segment(h, w):
    ...     for _ in range(3):
    ...         h = np.tanh(w * h)
    ...     return h
    >>> def loss(w):
    ...     return np.sum(segment(segment(np.ones(2), w), w))
    >>> round(srcad.grad(loss)(0.5), 6)
    0.3246
    """
    return Checkpoint(function)


class Checkpointed:
    """The iterable of a `for` loop marked for checkpointing (`checkpointed`): iterating it
    iterates `iterable`; source mode reads the mark (transform/loop_checkpoints.py)."""

    def __init__(self, iterable, every: int | None):
        self.iterable = iterable
        self.every = every

    def __iter__(self):
        return iter(self.iterable)

    def __repr__(self):
        every = "" if self.every is None else f", every={self.every}"
        return f"srcad.checkpointed({self.iterable!r}{every})"


def checkpointed(iterable: Iterable[T], every: int | None = None) -> Checkpointed:
    """Mark a `for` loop for checkpointing: `for t in srcad.checkpointed(range(T)):`.

    A derivative (source mode, reverse) then records the loop segment by segment: its
    forward sweep keeps only the values the loop reads from before each segment of `every`
    trips, and its backward sweep runs each segment again, last first, recording it,
    before taking its adjoint. Memory grows as sqrt(T) instead of T, for about one more
    run of the loop. Called plainly, and in tape mode, the loop runs as written. The
    loop's body must compute the same values when run again (no random draws or writes to
    globals): a derivative that finds otherwise raises.

    Parameters
    ----------
    iterable : iterable
        What the loop runs over (a range, a list, an array that is not differentiated).
    every : int, optional
        Trips per segment; about sqrt(T) when left out.

    Returns
    -------
    Checkpointed
        An iterable over `iterable`, which source mode reads as the mark.

    Examples
    --------
    >>> def loss(w):
    ...     h = np.ones(2)
    ...     for t in srcad.checkpointed(range(100)):
    ...         h = np.tanh(w * h) + 0.1
    ...     return np.sum(h)
    >>> round(float(srcad.grad(loss)(0.5)), 6)
    0.781785
    """
    if every is not None and (isinstance(every, (bool, np.bool_))
                              or not isinstance(every, numbers.Integral) or every < 1):
        raise UsageError(f"srcad.checkpointed takes a positive whole number of trips per "
                         f"segment as `every`; got {every!r}.",
                         fix="leave `every` out for about sqrt(T) trips per segment, or pass "
                         "an int >= 1.")
    return Checkpointed(iterable, None if every is None else int(every))


def clip_by_value(grads: T, low: float, high: float) -> T:
    """Clip every leaf of a pytree of gradients into `[low, high]`.

    Examples
    --------
    >>> srcad.clip_by_value({"w": np.array([-3.0, 0.5]), "b": 2.0}, -1.0, 1.0)
    {'w': array([-1. ,  0.5]), 'b': 1.0}
    """
    return rebuilt(grads, (np.clip(g, low, high) if isinstance(g, np.ndarray)
                           else type(g)(np.clip(g, low, high)) for g in leaves(grads)))


def clip_by_global_norm(grads: T, max_norm: float) -> tuple[T, float]:
    """Scale a pytree of gradients so its global L2 norm is at most `max_norm`.

    Returns
    -------
    (clipped, norm)
        The scaled pytree, and the norm before scaling.

    Examples
    --------
    >>> srcad.clip_by_global_norm([np.array([3.0]), 4.0], 1.0)
    ([array([0.6]), 0.8], 5.0)
    """
    norm = float(np.sqrt(sum(np.sum(np.square(g)) for g in leaves(grads))))
    scale = max_norm / norm if norm > max_norm else 1.0
    return rebuilt(grads, (g * scale if isinstance(g, np.ndarray) else float(g * scale)
                           for g in leaves(grads))), norm
