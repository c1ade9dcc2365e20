"""arguments: the conventions at the API boundary, shared by every derivative function.

Which parameters `wrt` names (an index, a name, or a tuple of them, as JAX's argnums);
how an argument is promoted before differentiation (a Python `int` becomes a float, an
integer array is refused, a complex one is kept); which outputs `grad` accepts (real,
exactly one element) and the seed it starts from; and how a gradient is given the
structure, shape and dtype of its argument (float for float, float32 stays float32,
complex for complex). Complex values follow JAX's and autograd's convention (see
srcad/ops/numpy_ufuncs.py): the gradient of a real L at z = x + iy is dL/dx - i dL/dy,
and a real argument's gradient is the real part of what the backward sweep computed.
"""
from __future__ import annotations

import functools
import inspect
import numbers

import numpy as np

from srcad.errors import (AuxOutputError, NonDifferentiableInputError, NonScalarOutputError,
                          SrcadError, UsageError, WrtError)
from srcad.kernels.outlines import Outline
from srcad.kernels.pytrees import node


Wrt = int | str | tuple  # what `wrt` takes: an index, a name, or a tuple of them


def chosen_wrt(wrt: Wrt | None, argnums: Wrt | None) -> Wrt:
    """`wrt`, or JAX's spelling of it, `argnums`; the first argument if neither is given.
    Both at once would be two answers to one question, and one of them silently ignored."""
    if argnums is None:
        return 0 if wrt is None else wrt
    if wrt is not None:
        raise UsageError(f"wrt={wrt!r} and argnums={argnums!r} both say which arguments to "
                         "differentiate.", fix="give one of them (argnums is JAX's name for wrt).")
    return argnums


def wrt_parameters(code, wrt, bound=0, gathered=False
                   ) -> tuple[tuple[str, ...], tuple[int | None, ...]]:
    """Names of the parameters `wrt` selects, and their positions (None if keyword-only).

    `bound` leading parameters are already bound (a method's `self`) and not counted. With
    `gathered`, a position past the named ones selects an argument `*args` gathers (named
    `args[k]`), as JAX's argnums do; source mode differentiates those through a function
    with one parameter per argument (api/adapters.py) instead."""
    receivers = code.co_varnames[:bound]
    positional = code.co_varnames[bound:code.co_argcount]
    keyword_only = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
    if gathered and code.co_flags & inspect.CO_VARARGS:
        star = code.co_varnames[code.co_argcount + code.co_kwonlyargcount]
        positional = positional + tuple(f"{star}[{k}]" for k in range(max(
            [i - len(positional) + 1 for i in (wrt if isinstance(wrt, tuple) else (wrt,))
             if isinstance(i, (int, np.integer)) and not isinstance(i, bool)] + [0])))
    if wrt == ():
        raise WrtError(f"wrt=() selects no parameter of {code.co_name} to differentiate.",
                       fix="name at least one: wrt=0, wrt=(0, 1) or wrt='w'.")
    names = []
    for item in (wrt if isinstance(wrt, tuple) else (wrt,)):
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            if not 0 <= item < len(positional):
                raise WrtError(f"wrt={item} is out of range: {code.co_name} has "
                               f"{len(positional)} positional parameter(s) {positional}.")
            names.append(positional[item])
        elif isinstance(item, str) and item in receivers:
            raise WrtError(f"wrt={item!r}: srcad differentiates with respect to arguments, not "
                           f"the object a method is bound to.",
                           fix="keep the parameters in a dict or array attribute and pass them "
                           "to the method as an argument.")
        elif isinstance(item, str):
            if item not in positional + keyword_only:
                raise WrtError(f"wrt={item!r} names no parameter of {code.co_name}; its "
                               f"parameters are {positional + keyword_only}.")
            names.append(item)
        else:
            raise WrtError(f"wrt takes parameter indices or names, got {item!r}.")
    if len(set(names)) != len(names):
        raise WrtError(f"wrt={wrt!r} names a parameter twice.")
    positions = tuple(positional.index(n) if n in positional else None for n in names)
    return tuple(names), positions


CONTAINERS = (dict, list, tuple)


def is_container(value) -> bool:
    """Parameters kept in dicts, lists, tuples, dataclasses and registered classes (nested,
    kernels/pytrees.py): their gradient has their shape."""
    return isinstance(value, CONTAINERS) or node(value) is not None


def rebuild(container, items):
    """A container of `container`'s kind (dict keys, namedtuple type, class) holding `items`."""
    if isinstance(container, dict):
        return dict(zip(container, items))
    if hasattr(container, "_fields"):  # a namedtuple
        return type(container)(*items)
    if isinstance(container, CONTAINERS):
        return type(container)(items)
    return node(container)[1](items)


def children(container) -> list:
    """The items of a container, in the order `rebuild` takes them."""
    if isinstance(container, dict):
        return list(container.values())
    parts = node(container)
    return list(container) if parts is None else parts[0]  # (an array: its rows)


def copied(value):
    """`value` with its arrays copied, and the dicts, lists and tuples holding them: what a
    function that writes into its arguments may be given without changing the caller's."""
    if is_container(value):
        return rebuild(value, [copied(v) for v in children(value)])
    return value.copy() if isinstance(value, np.ndarray) else value


def unshared(result, inputs):
    """`result` with each array that may share memory with an array of `inputs` copied: a
    derivative handed back is the caller's own, never one of their arguments (the pullback
    of the identity is its cotangent), which they may go on to change."""
    given = [leaf for leaf in leaves(inputs) if isinstance(leaf, np.ndarray)]
    if not given:
        return result
    if is_container(result):
        return rebuild(result, [unshared(child, given) for child in children(result)])
    if isinstance(result, np.ndarray) and any(np.may_share_memory(result, a) for a in given):
        return result.copy()
    return result


def leaves(value) -> list:
    """The arrays and numbers of a value kept in dicts, lists and tuples, in order."""
    if is_container(value):
        return [leaf for child in children(value) for leaf in leaves(child)]
    return [value]


def rebuilt(template, parts):
    """`template`'s nesting with its leaves replaced, in order, by `parts` (an iterator)."""
    if is_container(template):
        return rebuild(template, [rebuilt(child, parts) for child in children(template)])
    return next(parts)


# What an ndarray subclass may override to compute otherwise than plain arrays do.
_ARITHMETIC = ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
               "__truediv__", "__rtruediv__", "__matmul__", "__rmatmul__", "__pow__",
               "__rpow__", "__neg__", "__getitem__", "__setitem__", "__array_ufunc__",
               "__array_function__", "__array_wrap__")


@functools.lru_cache(maxsize=256)
def _own_arithmetic(kind: type) -> bool:
    return any(getattr(kind, name, None) is not getattr(np.ndarray, name, None)
               for name in _ARITHMETIC)


def _not_plain(value) -> bool:
    """An ndarray subclass with arithmetic of its own (np.matrix, masked arrays, a user's
    class overriding `__mul__` or `__array_ufunc__`); one that only adds attributes is
    plain, and so is np.memmap (its overrides keep the file mapping, not the arithmetic)."""
    return isinstance(value, np.ndarray) and type(value) is not np.ndarray \
        and not isinstance(value, np.memmap) and _own_arithmetic(type(value))


def refuse_not_plain_arguments(args, kwargs) -> None:
    """Refuse a matrix or masked array among the arguments not differentiated too: the
    function computes with it, and its arithmetic is not the one the rules follow."""
    for position, value in enumerate(args):  # (a float or an array, the common cases, first)
        if type(value) is not float and type(value) is not np.ndarray and _not_plain(value):
            _refuse_not_plain(value, f"argument {position}")
    for name, value in kwargs.items():
        if _not_plain(value):
            _refuse_not_plain(value, f"argument {name!r}")


def _refuse_not_plain(value, which: str):
    raise NonDifferentiableInputError(
        f"{which} is a {type(value).__name__}, an ndarray subclass whose arithmetic is not "
        "the plain arrays' (`*` of matrices is a matrix product; masked elements are left "
        "out; a class may override `*` or `__array_ufunc__`) that srcad's derivative rules "
        "follow.",
        fix="pass a plain array: `np.asarray(x)`, or for a masked array `x.filled(value)` "
        "or `x.compressed()`.")


def promote(value, name: str):
    """The value differentiated in place of an argument: ints become floats, floats and
    complex numbers stay, and the leaves of dicts, lists and tuples are promoted one by one."""
    if type(value) is float or type(value) is np.ndarray and value.dtype.kind in "fc":
        return value
    if is_container(value):
        return rebuild(value, [promote(v, name) for v in children(value)])
    if isinstance(value, (float, complex, np.inexact)) and not isinstance(value, bool):
        return value
    if _not_plain(value):
        _refuse_not_plain(value, f"argument {name!r} in wrt")
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fc":
            return value
        what = f"an array of dtype {value.dtype}"
    elif isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return np.float64(value) if isinstance(value, np.integer) else float(value)
    elif type(value).__module__ == "srcad.tape.tensor":
        raise NonDifferentiableInputError(
            f"argument {name!r} in wrt is a tape-mode tensor: a derivative srcad's source "
            "mode made (`srcad.grad(f)`) was called while a GradientTape records, and tape "
            "mode cannot record through it.",
            fix="use `srcad.tape.grad(f)` inside (tape mode differentiates its own "
            "derivatives), or differentiate the outer function with `srcad.grad` (source mode "
            "differentiates both kinds).")
    elif hasattr(type(value), "__array_namespace__"):  # (array_api_strict's, for one)
        raise NonDifferentiableInputError(
            f"argument {name!r} in wrt is an array of {type(value).__module__.split('.')[0]}: "
            "srcad differentiates NumPy arrays (Array API code included), not other array "
            "libraries.", fix="convert it to a NumPy array, e.g. `np.from_dlpack(x)`.")
    else:
        what = f"a value of type {type(value).__name__}"
    hint = ("convert it with `x.astype(float)`" if isinstance(value, np.ndarray)
            and value.dtype.kind in "iub" else "pass a float or a float array")
    raise NonDifferentiableInputError(
        f"argument {name!r} in wrt is {what}, which has no float or complex gradient.",
        fix=hint)


def seed_for(output):
    """The cotangent 1 that starts `grad`'s backward sweep, or a clear error."""
    if type(output) is Outline:  # an output not computed (transform/outline.py): an array
        if output.shape == () and output.dtype.kind == "f":  # (the common case)
            return output.dtype.type(1.0)
        output = output.dtype.type(0) if output.shape == () \
            else np.empty(output.shape, output.dtype)  # of its kind stands for it
    if type(output) is float:
        return 1.0
    if isinstance(output, np.floating):
        return output.dtype.type(1.0)
    kind = getattr(getattr(output, "dtype", None), "kind", None)
    if isinstance(output, numbers.Real) and not isinstance(output, (bool, np.bool_)) \
            and kind is None:
        return 1.0
    if kind in ("f", "i", "u") and np.size(output) == 1:
        if isinstance(output, np.ndarray):
            return np.ones_like(output, dtype=np.promote_types(output.dtype, np.float16))
        return np.promote_types(output.dtype, np.float16).type(1.0)
    if kind == "c" or isinstance(output, complex):
        raise NonScalarOutputError(
            f"grad applies to functions whose output is a real number with one element; this "
            f"one returned {_describe(output)}, which is complex.",
            fix="differentiate a real number made of it, e.g. `np.real(z)`, `np.abs(z) ** 2` "
            "or `np.sum(np.abs(z) ** 2)`, or use `srcad.vjp` with a complex cotangent `u`, "
            "which gives the gradient of Re(sum(u * output)).")
    raise NonScalarOutputError(
        f"grad applies to functions whose output is a real number with one element; this "
        f"one returned {_describe(output)}.",
        fix="use `srcad.vjp` (or `srcad.jacobian`) for other outputs, or reduce the output "
        "to a scalar, e.g. with `np.sum`.")


def output_and_aux(result, what: str) -> tuple:
    """`(output, aux)` from what a function differentiated with `has_aux=True` returned
    (`what` names the derivative: "jacobian"), or a clear error if it is not a pair."""
    if isinstance(result, (tuple, list)) and len(result) == 2:
        return tuple(result)
    raise AuxOutputError(
        f"srcad.{what}(..., has_aux=True) differentiates a function that returns a pair "
        f"(output, aux); this one returned {_describe(result)}"
        f"{f' of length {len(result)}' if isinstance(result, (tuple, list)) else ''}.",
        fix="return `output, aux` from the function, or drop has_aux=True.")


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    return f"a value of type {type(value).__name__}"


def like_argument(gradient, argument):
    """`gradient` with the type, shape and dtype of `argument` (the unpromoted value).

    None is the zero the generated code returns for an argument no derivative reached;
    a dict, list or tuple argument gets the same nesting, leaf by leaf. A real argument gets
    the real part of a complex gradient (the imaginary part a real value's cotangent may
    carry means nothing)."""
    if type(gradient) is np.ndarray and type(argument) is np.ndarray \
            and gradient.dtype is argument.dtype and gradient.shape == argument.shape \
            and not isinstance(gradient.base, np.ndarray) and gradient.flags.writeable:
        return gradient  # the common case: an array the backward sweep made, as it is (its
        #                  base a compiler's memory where numba made it, no array's view)
    if type(argument) is float:
        return 0.0 if gradient is None else float(np.real(gradient))
    if type(argument) is complex:
        return 0j if gradient is None else complex(gradient)
    if is_container(argument):
        leaves = children(argument)
        parts = [None] * len(leaves) if gradient is None else children(gradient)
        return rebuild(argument, [like_argument(g, x) for g, x in zip(parts, leaves)])
    if gradient is None:
        gradient = np.zeros(np.shape(argument))
    if isinstance(argument, np.ndarray):
        dtype = argument.dtype if argument.dtype.kind in "fc" else np.dtype(np.float64)
        result = np.asarray(gradient if dtype.kind == "c" else np.real(gradient), dtype=dtype)
        if result.shape != argument.shape:
            raise SrcadError(
                f"internal error: a gradient of shape {result.shape} was computed for an "
                f"argument of shape {argument.shape}; a derivative rule is wrong.",
                fix="please report this with the function that triggered it.")
        if not result.flags.writeable or result.base is not None:
            result = result.copy()
        return result
    if isinstance(argument, np.generic):
        dtype = argument.dtype if argument.dtype.kind in "fc" else np.dtype(np.float64)
        return dtype.type(gradient if dtype.kind == "c" else np.real(gradient))
    return float(np.real(gradient))
