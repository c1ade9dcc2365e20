"""tensor: the array type of tape mode → NumPy values that record what is done to them.

A `Tensor` holds a NumPy value (an ndarray or a NumPy scalar) and an id. Operators,
comparisons, indexing, `.T`, `.shape`/`.dtype`/`.ndim` and the common array methods act on the
value; NumPy's functions and ufuncs called with tensors come here through
`__array_function__` and `__array_ufunc__`, so plain NumPy code runs on tensors unchanged.
Every operation returns what NumPy returns on the values, as tensors, and is recorded on each
recording tape that tracks an input (`dispatch`); in-place writes and views follow NumPy's
aliasing (`inplace`).

`np.asarray(t)` gives the value, except while a recording tape differentiates `t`: then the
conversion would silently drop the gradient (an `np.zeros` buffer written with tensors, a
library that calls `np.asarray`), and it raises `TapeConversionError`, as PyTorch refuses
`.numpy()` on a tensor that requires grad; `t.numpy()` takes the value deliberately.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from srcad.errors import MissingRuleError
from srcad.ops import is_nondifferentiable, vjp_rules
import srcad.tape.dispatch as dispatch
import srcad.tape.inplace as inplace
from srcad.tape.dispatch import binary, constant_result, conversion_error, is_live, unary
from srcad.tape.errors import caller_location


def _rules_of(fn):
    return vjp_rules(fn).rules


def _differentiable(op, name):
    """`__op__`, `__rop__` and `__iop__` for an operator with rules in the registry."""
    rules = _rules_of(op)

    def forward(self, other):
        return binary(op, rules, self, other)

    def reflected(self, other):
        return binary(op, rules, other, self)

    def in_place(self, other):
        return inplace.inplace_operator(op, rules, self, other)

    for method, prefix in ((forward, ""), (reflected, "r"), (in_place, "i")):
        method.__name__ = method.__qualname__ = f"__{prefix}{name}__"
    return forward, reflected, in_place


def _constant(op, name):
    """`__op__` and `__rop__` for an operator without a derivative (comparison, //, &)."""
    def forward(self, other):
        return constant_result(op, self, other)

    def reflected(self, other):
        return constant_result(op, other, self)

    forward.__name__, reflected.__name__ = f"__{name}__", f"__r{name}__"
    return forward, reflected


def _method(function, name):
    """An array method that is the NumPy function with the tensor first (`t.sum(axis=0)`)."""
    def method(self, *args, **kwargs):
        return function(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`np.{function.__name__}(self, ...)`, recorded."
    return method


class Tensor:
    """A NumPy value whose operations are recorded by the GradientTapes that watch it."""

    __slots__ = ("_value", "_id", "_alias", "__weakref__")
    __hash__ = None  # `==` is elementwise, as for arrays (TensorFlow tensors are unhashable too)

    def __init__(self, value, dtype=None):
        self._value = np.array(dispatch.value_of(value), dtype=dtype)
        self._id = dispatch.new_id()
        self._alias = None

    def _read(self):
        """(value, id) of this tensor as an operation reads it."""
        return self._value, self._id

    # ---- arithmetic ------------------------------------------------------------------------
    __add__, __radd__, __iadd__ = _differentiable(operator.add, "add")
    __sub__, __rsub__, __isub__ = _differentiable(operator.sub, "sub")
    __mul__, __rmul__, __imul__ = _differentiable(operator.mul, "mul")
    __truediv__, __rtruediv__, __itruediv__ = _differentiable(operator.truediv, "truediv")
    __pow__, __rpow__, __ipow__ = _differentiable(operator.pow, "pow")
    __mod__, __rmod__, __imod__ = _differentiable(operator.mod, "mod")
    __matmul__, __rmatmul__, __imatmul__ = _differentiable(operator.matmul, "matmul")
    __floordiv__, __rfloordiv__ = _constant(operator.floordiv, "floordiv")
    __and__, __rand__ = _constant(operator.and_, "and")
    __or__, __ror__ = _constant(operator.or_, "or")
    __xor__, __rxor__ = _constant(operator.xor, "xor")
    __lt__, _ = _constant(operator.lt, "lt")
    __le__, _ = _constant(operator.le, "le")
    __gt__, _ = _constant(operator.gt, "gt")
    __ge__, _ = _constant(operator.ge, "ge")
    __eq__, _ = _constant(operator.eq, "eq")
    __ne__, _ = _constant(operator.ne, "ne")
    del _

    def __neg__(self):
        return unary(operator.neg, _NEG_RULES, self)

    def __pos__(self):
        return unary(operator.pos, _POS_RULES, self)

    def __abs__(self):
        return unary(abs, _ABS_RULES, self)

    def __invert__(self):
        return constant_result(operator.invert, self)

    # ---- indexing and iteration ----------------------------------------------------------
    def __getitem__(self, index):
        out, raw_index = dispatch.getitem(self, index)
        result = out._value
        if type(self) is Tensor and type(result) is np.ndarray and result.base is not None \
                and np.may_share_memory(result, self._value):
            inplace.register_view(out, self, inplace.ViewFunction(
                operator.getitem, (None, raw_index), {}, 0))
        return out

    def __setitem__(self, index, value):
        inplace.assign(self, index, value)

    def __len__(self):
        return len(self._value)

    def __iter__(self):
        if not np.ndim(self._value):
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(len(self._value)))

    def __contains__(self, item):
        return bool(np.any(self._value == dispatch.value_of(item)))

    # ---- attributes -------------------------------------------------------------------------
    @property
    def shape(self):
        return np.shape(self._value)

    @property
    def dtype(self):
        return np.result_type(self._value)

    @property
    def ndim(self):
        return np.ndim(self._value)

    @property
    def size(self):
        return np.size(self._value)

    @property
    def real(self):
        return np.real(self)

    @property
    def imag(self):
        return np.imag(self)

    @property
    def T(self):
        out = unary(inplace.TRANSPOSE, _T_RULES, self)
        if type(self) is Tensor and type(out._value) is np.ndarray and out._value.ndim:
            inplace.register_view(out, self, inplace.ViewFunction(inplace.TRANSPOSE, (None,),
                                                                  {}, 0))
        return out

    # ---- array methods: the NumPy functions, so they share their rules --------------------
    sum = _method(np.sum, "sum")
    mean = _method(np.mean, "mean")
    ravel = _method(np.ravel, "ravel")
    dot = _method(np.dot, "dot")
    copy = _method(np.copy, "copy")
    max = _method(np.max, "max")
    min = _method(np.min, "min")
    prod = _method(np.prod, "prod")
    std = _method(np.std, "std")
    var = _method(np.var, "var")
    cumsum = _method(np.cumsum, "cumsum")
    cumprod = _method(np.cumprod, "cumprod")
    trace = _method(np.trace, "trace")
    diagonal = _method(np.diagonal, "diagonal")
    repeat = _method(np.repeat, "repeat")
    take = _method(np.take, "take")
    argsort = _method(np.argsort, "argsort")
    searchsorted = _method(np.searchsorted, "searchsorted")
    clip = _method(np.clip, "clip")
    squeeze = _method(np.squeeze, "squeeze")
    swapaxes = _method(np.swapaxes, "swapaxes")
    all = _method(np.all, "all")
    any = _method(np.any, "any")
    argmax = _method(np.argmax, "argmax")
    argmin = _method(np.argmin, "argmin")
    nonzero = _method(np.nonzero, "nonzero")
    round = _method(np.round, "round")
    conj = _method(np.conjugate, "conj")
    conjugate = _method(np.conjugate, "conjugate")

    def reshape(self, *shape, order="C"):
        return np.reshape(self, shape[0] if len(shape) == 1 else shape, order=order)

    def transpose(self, *axes):
        return np.transpose(self, (axes[0] if len(axes) == 1 else axes) if axes else None)

    def flatten(self, order="C"):
        return np.copy(np.ravel(self, order))

    def astype(self, dtype, **kwargs):
        value = dispatch.value_of(self)
        if kwargs.get("copy", True) is not True and isinstance(value, np.ndarray) \
                and np.dtype(dtype) == value.dtype:
            return self  # (NumPy returns the array itself, which writes then change)
        method = np.ndarray.astype if isinstance(value, np.ndarray) \
            else np.generic.astype  # (a tensor may hold a NumPy number)
        return dispatch.call(method, (self, dtype), kwargs)

    def fill(self, value):
        inplace.assign(self, Ellipsis, value)

    def item(self, *args):
        if is_live(self):
            raise conversion_error("item() converts")
        return np.asarray(self._value).item(*args)

    def tolist(self):
        if is_live(self):
            raise conversion_error("tolist() converts")
        return np.asarray(self._value).tolist()

    # ---- conversions ------------------------------------------------------------------------
    def numpy(self):
        """The value, as TensorFlow's `.numpy()`: a copy, with no gradient attached."""
        value = self._value
        return value.copy() if type(value) is np.ndarray else value

    def __array__(self, dtype=None, copy=None):
        if is_live(self):
            raise conversion_error("NumPy converted to a plain array")
        if copy:
            return np.array(self._value, dtype=dtype, copy=True)
        return np.asarray(self._value, dtype=dtype)

    def __float__(self):
        if is_live(self):
            raise conversion_error("float() converts")
        return float(self._value)

    def __complex__(self):
        if is_live(self):
            raise conversion_error("complex() converts")
        return complex(self._value)

    def __int__(self):  # integers carry no gradient: nothing is lost
        return int(self._value)

    def __index__(self):
        return operator.index(self._value)

    def __bool__(self):
        return bool(self._value)

    def __copy__(self):
        return np.copy(self)

    def __deepcopy__(self, memo):
        return np.copy(self)

    def __repr__(self):
        value = np.asarray(self._value)
        return (f"<srcad.{type(self).__name__}: shape={value.shape}, dtype={value.dtype}, "
                f"numpy={value!r}>")

    def __str__(self):
        return str(self._value)

    def __format__(self, spec):
        return format(self._value, spec)

    # ---- NumPy's dispatch protocols ---------------------------------------------------------
    def __array_namespace__(self, *, api_version=None):
        """The Array API namespace of its value, NumPy's: its functions called with tensors
        come back through the protocols below (`xp = x.__array_namespace__(); xp.sin(x)`)."""
        return self._value.__array_namespace__(api_version=api_version)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.pop("out", None)
        if method != "__call__":
            if method == "at" and isinstance(inputs[0], Tensor):
                if ufunc not in (np.add, np.subtract) or len(inputs) != 3:
                    raise MissingRuleError(
                        f"tape mode records `np.add.at` and `np.subtract.at` into a tensor, "
                        f"not `np.{ufunc.__name__}.at`.", caller_location(),
                        fix="write `y[index] = ...` instead.")
                target, index, values = inputs
                return inplace.add_at(target, index,
                                      values if ufunc is np.add else np.negative(values))
            result = dispatch.call(getattr(ufunc, method), inputs, kwargs)
        elif kwargs:
            result = _ufunc_with_options(ufunc, inputs, kwargs)
        elif is_nondifferentiable(ufunc):
            result = constant_result(ufunc, *inputs)
        else:
            rules = vjp_rules(ufunc)
            if rules is not None and len(inputs) == 2:
                result = binary(ufunc, rules.rules, *inputs)
            elif rules is not None and len(inputs) == 1:
                result = unary(ufunc, rules.rules, *inputs)
            else:
                result = dispatch.call(ufunc, inputs, {})
        return _into_out(result, out) if out is not None else result

    def __array_function__(self, func, types, args, kwargs):
        if not all(issubclass(t, (Tensor, np.ndarray)) for t in types):
            return NotImplemented
        if func is np.copyto:
            return inplace.copyto(*args, **kwargs)
        dispatch.refuse_in_place(func, args, kwargs)
        out = kwargs.pop("out", None) if "out" in kwargs else None
        result = dispatch.call(func, args, kwargs, getattr(func, "_implementation", func))
        inplace.adopt_views(result, func, args, kwargs)
        return _into_out(result, out) if out is not None else result


_UFUNC_OPTIONS = frozenset(("dtype", "casting", "order", "subok"))


def _ufunc_with_options(ufunc, inputs, kwargs):
    """A ufunc called with keyword options: `dtype=`/`casting=`... change how it computes,
    not its derivative, so its rules apply; `where=` leaves elements unwritten, which no
    rule describes."""
    rules = vjp_rules(ufunc)
    if rules is None or is_nondifferentiable(ufunc) or not set(kwargs) <= _UFUNC_OPTIONS:
        if "where" in kwargs and any(isinstance(i, Tensor) and is_live(i) for i in inputs):
            raise MissingRuleError(
                f"tape mode does not differentiate `np.{ufunc.__name__}(..., where=...)`.",
                caller_location(),
                fix=f"write `np.where(mask, np.{ufunc.__name__}(...), other)` instead.")
        return dispatch.call(ufunc, inputs, kwargs)
    compute = functools.partial(ufunc, **kwargs)
    if len(inputs) == 2:
        return binary(compute, rules.rules, *inputs)
    if len(inputs) == 1:
        return unary(compute, rules.rules, *inputs)
    return dispatch.call(ufunc, inputs, kwargs)


def _into_out(result, out):
    """Honour NumPy's `out=`: a tensor takes the result as a write; a plain array takes the
    value, unless that would drop a gradient."""
    target = out[0] if isinstance(out, tuple) else out
    if target is None:
        return result
    if isinstance(target, Tensor):
        inplace.assign_out(target, result)
        return target
    if isinstance(result, Tensor) and is_live(result):
        raise conversion_error("an `out=` argument that is a plain array received")
    target[...] = dispatch.value_of(result)
    return target


_NEG_RULES = _rules_of(operator.neg)
_POS_RULES = _rules_of(operator.pos)
_ABS_RULES = _rules_of(abs)
_T_RULES = _rules_of(np.ndarray.T)
dispatch.use_tensor_class(Tensor)
