"""variables: `Variable` and `constant`, TensorFlow's two ways to make a tensor.

A `constant(value)` is a tensor holding a copy of `value`; a tape differentiates it only
after `tape.watch`. A `Variable` is mutable state with one identity for its whole life: every
read of it, before or after an `assign`, is the same source, so `tape.gradient(loss, v)` sums
the contributions of all reads (TensorFlow's semantics), and a trainable variable read
inside a recording tape is watched automatically. `assign` replaces the variable's array
instead of writing into it, so values that nodes saved stay intact; it is not
differentiated (the new value is a fresh start, as in TensorFlow).
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from srcad.errors import UsageError
import srcad.tape.dispatch as dispatch
from srcad.tape.errors import TapeTypeError, caller_location
from srcad.tape.state import RECORDING
from srcad.tape.tensor import Tensor


def constant(value: ArrayLike, dtype: DTypeLike = None) -> Tensor:
    """A tape-mode tensor holding a copy of `value`, watched only when asked.

    Parameters
    ----------
    value : array-like or Tensor
        The value.
    dtype : dtype, optional
        Its dtype, if not `value`'s.

    Examples
    --------
    >>> c = srcad.constant(3.0)
    >>> with srcad.GradientTape() as tape:
    ...     _ = tape.watch(c)
    ...     y = c * c
    >>> tape.gradient(y, c)
    <srcad.Tensor: shape=(), dtype=float64, numpy=array(6.)>
    """
    return Tensor(value, dtype=dtype)


class Variable(Tensor):
    """A mutable, named tape-mode tensor that tapes watch when it is read (if trainable).

    Parameters
    ----------
    initial_value : array-like
        Its value.
    trainable : bool
        Whether a tape recording with `watch_accessed_variables` watches it when read.
    name : str, optional
        A name, shown in its repr.
    dtype : dtype, optional
        Its dtype, if not `initial_value`'s.

    Examples
    --------
    >>> w = srcad.Variable(np.array([1.0, 2.0]), name="w")
    >>> with srcad.GradientTape() as tape:
    ...     loss = np.sum(w ** 2)
    >>> gradient = tape.gradient(loss, w)
    >>> w.assign(w - 0.1 * gradient).numpy()
    array([0.8, 1.6])
    """

    __slots__ = ("_trainable", "_name")

    def __init__(self, initial_value: ArrayLike, trainable: bool = True, name: str | None = None,
                 dtype: DTypeLike = None):
        super().__init__(initial_value, dtype=dtype)
        self._trainable = bool(trainable)
        self._name = name if name is not None else f"Variable:{self._id}"

    def _read(self):
        """(value, id) of a read; recording tapes that watch accessed variables watch it."""
        if self._trainable:
            for tape in RECORDING.tapes:
                if tape._watch_accessed_variables and self._id not in tape._tracked:
                    tape._watch_variable(self)
        return self._value, self._id

    @property
    def name(self) -> str:
        return self._name

    @property
    def trainable(self) -> bool:
        return self._trainable

    def assign(self, value: ArrayLike, read_value: bool = True) -> Variable | None:
        """Replace the value (same shape; cast to the variable's dtype). Returns the variable,
        or None with `read_value=False` (TensorFlow's eager behaviour)."""
        new = np.array(dispatch.value_of(value), dtype=self._value.dtype
                       if isinstance(self._value, (np.ndarray, np.generic)) else None)
        if new.shape != np.shape(self._value):
            raise UsageError(
                f"cannot assign a value of shape {new.shape} to variable {self._name!r} of "
                f"shape {np.shape(self._value)}.", caller_location(),
                fix="assign a value of the same shape.")
        self._value = new
        return self if read_value else None

    def assign_add(self, delta: ArrayLike, read_value: bool = True) -> Variable | None:
        return self.assign(self._value + dispatch.value_of(delta), read_value)

    def assign_sub(self, delta: ArrayLike, read_value: bool = True) -> Variable | None:
        return self.assign(self._value - dispatch.value_of(delta), read_value)

    def read_value(self) -> Tensor:
        """The current value as a tensor: a recorded read (gradients flow to the variable)."""
        return np.copy(self)

    value = read_value

    def numpy(self) -> np.ndarray:
        return np.array(self._value)

    def __setitem__(self, index, value):
        raise TapeTypeError(f"{type(self).__name__!r} object does not support item "
                            "assignment (TensorFlow's variables do not either).",
                            caller_location(), fix="build the new value and `v.assign(...)` it.")

    def _no_in_place(self, other):
        raise TapeTypeError("`variable op= value` is not supported on a srcad.Variable.",
                            caller_location(), fix="use `v.assign_add(value)` / "
                            "`v.assign_sub(value)` to change the variable, or `out = v + value` "
                            "for a new tensor.")

    __iadd__ = __isub__ = __imul__ = __itruediv__ = __ipow__ = __imod__ = __imatmul__ = \
        _no_in_place

    def __repr__(self):
        value = np.asarray(self._value)
        return (f"<srcad.Variable {self._name!r} shape={value.shape} dtype={value.dtype}, "
                f"numpy={value!r}>")

