"""Every registered derivative rule, exercised in source mode against finite differences.

Each table row names the registered primal it exercises and a small module-level function
that calls it the way users write it (`x * y`, `np.multiply(x, y)`, `x.T`, `x[[0, 0, 2]]`,
...). Rows are crossed with argument shapes (Python floats, 0-d arrays, vectors, matrices,
broadcasting pairs), with `wrt` (0, 1 and (0, 1) for binary operations) and with float64 and
float32. `test_every_shipped_rule_has_a_case` fails when a rule is registered without a row
here, and `test_case_reaches_its_rule` checks that each row really reaches the rule it
claims. Rule areas with tables of their own live in `tests/rule_cases_*.py` (built from
`tests/ops/rule_table.py`) and are exercised here the same way.
"""
import builtins
import math
import operator
import types
from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import srcad
from srcad.compiler import cache as srcad_cache
from srcad.api import derivative as api_derivative
from srcad.kernels import tangents
from srcad.api.derivative import Derivative
from srcad.ops.numpy_arrays import copied, filled
from srcad.ops.numpy_arrays import flattened
from srcad.ops.numpy_dtypes import converted
from srcad.ops.python_builtins import merged, starred_parts
from srcad.ops.python_math import polygamma
from srcad.ops import registry
from srcad.errors import SrcadError
from srcad.runtime import held
from srcad.ops.numpy_contractions import EINSUM_JVPS
from srcad.ops.python_builtins import (dict_get, dict_items, dict_values, indexable, joined,
                                         repeated)
from srcad.kernels.adjoints import (accumulate, held_attribute, held_item, held_tangent,
                                    record_tangent, through_cast)
from srcad.api.testing import numerical_gradient
from tests.ops.rule_table import DOMAINS, Case, on as _on, unary as _unary, binary as _binary


# Constants the test functions index with (globals, read by the generated code).
ROWS = np.array([True, False, True, True])
REPEATED = np.array([2, 0, 2, 2])


# ---- elementwise functions and unary operators ---------------------------------------------
UNARY = [
    (np.exp, lambda x: np.exp(x), "real"),
    (np.exp2, lambda x: np.exp2(x), "real"),
    (np.expm1, lambda x: np.expm1(x), "real"),
    (np.log, lambda x: np.log(x), "positive"),
    (np.log2, lambda x: np.log2(x), "positive"),
    (np.log10, lambda x: np.log10(x), "positive"),
    (np.log1p, lambda x: np.log1p(x), "positive"),
    (np.sqrt, lambda x: np.sqrt(x), "positive"),
    (np.sign, lambda x: np.sign(x) * x, "nonzero"),  # (piecewise constant: x's alone)
    (np.cbrt, lambda x: np.cbrt(x), "nonzero"),
    (np.square, lambda x: np.square(x), "real"),
    (np.reciprocal, lambda x: np.reciprocal(x), "nonzero"),
    (np.absolute, lambda x: np.abs(x), "nonzero"),
    (np.absolute, lambda x: np.absolute(x), "nonzero"),
    (np.sin, lambda x: np.sin(x), "real"),
    (np.cos, lambda x: np.cos(x), "real"),
    (np.tan, lambda x: np.tan(x), "angle"),
    (np.arcsin, lambda x: np.arcsin(x), "unit"),
    (np.arccos, lambda x: np.arccos(x), "unit"),
    (np.arctan, lambda x: np.arctan(x), "real"),
    (np.sinh, lambda x: np.sinh(x), "real"),
    (np.cosh, lambda x: np.cosh(x), "real"),
    (np.tanh, lambda x: np.tanh(x), "real"),
    (np.arcsinh, lambda x: np.arcsinh(x), "real"),
    (np.arccosh, lambda x: np.arccosh(x), "above_one"),
    (np.arctanh, lambda x: np.arctanh(x), "unit"),
    (operator.neg, lambda x: -x, "real"),
    (np.negative, lambda x: np.negative(x), "real"),
    (operator.pos, lambda x: +x, "real"),
    (np.positive, lambda x: np.positive(x), "real"),
    (abs, lambda x: abs(x), "nonzero"),
    (np.fabs, lambda x: np.fabs(x), "nonzero"),
    (np.deg2rad, lambda x: np.deg2rad(x), "real"),
    (np.radians, lambda x: np.radians(x), "real"),
    (np.rad2deg, lambda x: np.rad2deg(x), "real"),
    (np.degrees, lambda x: np.degrees(x), "real"),
]
SCALAR_ONLY = [
    (float, lambda x: float(x), "real"),
    (float, lambda x: float(x) * 3.0 + x, "real"),
    (math.sin, lambda x: math.sin(x), "real"),
    (math.cos, lambda x: math.cos(x), "real"),
    (math.tan, lambda x: math.tan(x), "angle"),
    (math.asin, lambda x: math.asin(x), "unit"),
    (math.acos, lambda x: math.acos(x), "unit"),
    (math.atan, lambda x: math.atan(x), "real"),
    (math.sinh, lambda x: math.sinh(x), "real"),
    (math.cosh, lambda x: math.cosh(x), "real"),
    (math.tanh, lambda x: math.tanh(x), "real"),
    (math.exp, lambda x: math.exp(x), "real"),
    (math.expm1, lambda x: math.expm1(x), "real"),
    (math.log, lambda x: math.log(x), "positive"),
    (math.log, lambda x: math.log(x, 2.0) + math.log(2.0, x + 1.5), "positive"),
    (math.log1p, lambda x: math.log1p(x), "positive"),
    (math.log2, lambda x: math.log2(x), "positive"),
    (math.log10, lambda x: math.log10(x), "positive"),
    (math.sqrt, lambda x: math.sqrt(x), "positive"),
    (math.fabs, lambda x: math.fabs(x), "nonzero"),
    (math.pow, lambda x: math.pow(x, 3.0) + math.pow(1.5, x), "positive"),
    (math.hypot, lambda x: math.hypot(x, 2.0) + math.hypot(0.5, x), "real"),
    (math.atan2, lambda x: math.atan2(x, 2.0) + math.atan2(0.5, x), "nonzero"),
    (dict, lambda x: dict({"a": x * x, "b": 2.0})["a"] + {"c": x}.copy()["c"], "real"),
    (merged, lambda x: merged({"a": x, "b": 2.0 * x}, {"b": x * x})["b"]
     + merged({"a": x, "b": 2.0 * x}, {"b": x * x})["a"], "real"),
    (math.asinh, lambda x: math.asinh(x), "real"),
    (math.acosh, lambda x: math.acosh(x), "above_one"),
    (math.atanh, lambda x: math.atanh(x), "unit"),
    (math.exp2, lambda x: math.exp2(x), "real"),
    (math.cbrt, lambda x: math.cbrt(x), "nonzero"),
    (math.copysign, lambda x: math.copysign(x, -2.0) + math.copysign(3.0, x) * x, "nonzero"),
    (math.fmod, lambda x: math.fmod(x, 0.3) + math.fmod(2.5, x), "positive"),
    (math.remainder, lambda x: math.remainder(x, 0.3) + math.remainder(2.5, x), "positive"),
    (math.ldexp, lambda x: math.ldexp(x, 3), "real"),
    (math.degrees, lambda x: math.degrees(x), "real"),
    (math.radians, lambda x: math.radians(x), "real"),
    (math.erf, lambda x: math.erf(x), "real"),
    (math.erfc, lambda x: math.erfc(x), "real"),
    (math.gamma, lambda x: math.gamma(x), "positive"),
    (math.lgamma, lambda x: math.lgamma(x) + math.lgamma(-x - 0.5), "positive"),
    (polygamma, lambda x: polygamma(0, x) + polygamma(2, x + 0.5), "positive"),
    (math.fsum, lambda x: math.fsum([x, x * x, 2.0]), "real"),
    (math.prod, lambda x: math.prod([x, x + 1.0, 2.0]) + math.prod((x, 0.0), start=2.0), "real"),
    (math.dist, lambda x: math.dist([x, 1.0], (0.5, x * x)), "real"),
    (builtins.max, lambda x: max(x, 0.5 * x, 0.1) * max([x, x + 1.0]), "positive"),
    (builtins.min, lambda x: min(x, 2.0 * x) + min([x, x * x]), "positive"),
    (builtins.pow, lambda x: pow(x, 2) + pow(2.0, x), "positive"),
]

# ---- binary operations ---------------------------------------------------------------------
BINARY = [
    (operator.add, lambda x, y: x + y, "real", "real"),
    (np.add, lambda x, y: np.add(x, y), "real", "real"),
    (operator.sub, lambda x, y: x - y, "real", "real"),
    (np.subtract, lambda x, y: np.subtract(x, y), "real", "real"),
    (operator.mul, lambda x, y: x * y, "real", "real"),
    (np.multiply, lambda x, y: np.multiply(x, y), "real", "real"),
    (operator.truediv, lambda x, y: x / y, "real", "nonzero"),
    (np.divide, lambda x, y: np.divide(x, y), "real", "nonzero"),
    (operator.pow, lambda x, y: x ** y, "positive", "exponent"),
    (np.power, lambda x, y: np.power(x, y), "positive", "exponent"),
    (operator.mod, lambda x, y: x % y, "dividend", "divisor"),
    (np.mod, lambda x, y: np.mod(x, y), "dividend", "divisor"),
    (np.fmod, lambda x, y: np.fmod(x, y), "dividend", "divisor"),
    (np.fmod, lambda x, y: np.fmod(-x, y), "dividend", "divisor"),  # (trunc, not floor)
    (np.maximum, lambda x, y: np.maximum(x, y), "even", "odd"),
    (np.fmax, lambda x, y: np.fmax(x, y), "even", "odd"),
    (np.minimum, lambda x, y: np.minimum(x, y), "even", "odd"),
    (np.fmin, lambda x, y: np.fmin(x, y), "even", "odd"),
    (np.logaddexp, lambda x, y: np.logaddexp(x, y), "real", "real"),
    (np.logaddexp2, lambda x, y: np.logaddexp2(x, y), "real", "real"),
    (np.hypot, lambda x, y: np.hypot(x, y), "nonzero", "nonzero"),
    (np.arctan2, lambda x, y: np.arctan2(x, y), "real", "positive"),
    (np.arctan2, lambda x, y: np.arctan2(x, y), "nonzero", "nonzero"),
    (np.divide, lambda x, y: np.true_divide(x, y), "real", "nonzero"),
    (np.float_power, lambda x, y: np.float_power(x, y), "positive", "exponent"),
]
FIRST_ONLY = [  # the second argument has no derivative
    (np.copysign, lambda x, y: np.copysign(x, y), "nonzero", "nonzero"),
]
BINARY_SHAPES = [
    (None, None),        # Python floats
    ((), ()),            # 0-d arrays
    ((4,), (4,)),
    ((3, 1), (1, 4)),
    ((3, 4), (4,)),
    (None, (2, 3)),      # scalar with array
    ((2, 3), ()),
]
def two_to_the(x):
    return 2.0 ** x


# Operands that are constants, or one argument used twice.
CONSTANT_OPERANDS = [
    (operator.pow, lambda x: x ** 3, "real"),
    (operator.pow, lambda x: x ** 0.5, "positive"),
    (operator.pow, lambda x: x ** -2, "nonzero"),  # negative bases, integer exponents
    (np.power, lambda x: np.power(x, 3.0), "nonzero"),
    (np.float_power, lambda x: np.float_power(x, -3), "nonzero"),
    (operator.pow, two_to_the, "real"),
    (operator.truediv, lambda x: 1.0 / x, "nonzero"),
    (operator.sub, lambda x: 1.0 - x, "real"),
    (operator.mod, lambda x: x % 1.0, "dividend"),
    (operator.mul, lambda x: x * x, "real"),
    (np.maximum, lambda x: np.maximum(x, 0.0), "nonzero"),
    (np.minimum, lambda x: np.minimum(1.0, x), "nonzero"),
    (np.where, lambda x: np.where(x > 0, x, 0.1 * x), "nonzero"),
    (np.where, lambda x: np.where(x > 0, 2.0, x), "nonzero"),
    (np.select, lambda x: np.select([x > 0.5, x < -0.5], [x ** 2, np.sin(x)], x * 3),
     "nonzero"),
    (np.select, lambda x: np.select([x > 0], [x]), "nonzero"),
]
AT_ZERO = [  # a constant power of a base that is exactly 0 in places
    (operator.pow, lambda x: x ** 2, "with_zero"),
    (operator.pow, lambda x: x ** 1.0, "with_zero"),
    (operator.pow, lambda x: x ** 0, "with_zero"),  # 0 * 0 ** -1 would be nan
    (np.power, lambda x: np.power(x, 0.0), "with_zero"),
]

# ---- np.where: the condition has no gradient, both branches do -------------------------------
WHERE_SHAPES = [  # condition, x, y
    ((3, 4), (3, 1), (1, 4)),
    ((3, 4), None, (4,)),
    ((4,), (4,), (4,)),
    ((), (), ()),
    ((2, 3), (2, 3), None),
]


def where_positive(c, x, y):
    return np.where(c > 0, x, y)


WHERE = [Case(np.where, where_positive, (("real", sc), ("real", sx), ("real", sy)), wrt)
         for sc, sx, sy in WHERE_SHAPES for wrt in (1, 2, (1, 2))]

# ---- reductions and shape operations --------------------------------------------------------
ON_CUBE = [  # x of shape (2, 3, 4)
    (np.sum, lambda x: np.sum(x)),
    (np.sum, lambda x: np.sum(x, axis=1)),
    (np.sum, lambda x: np.sum(x, axis=1, keepdims=True)),
    (np.sum, lambda x: np.sum(x, axis=-1)),
    (np.sum, lambda x: np.sum(x, (0, 2))),
    (np.sum, lambda x: np.sum(x, axis=(0, -1), keepdims=True)),
    (np.sum, lambda x: np.sum(x, keepdims=True)),
    (np.sum, lambda x: np.sum(x, axis=())),
    (np.nansum, lambda x: np.nansum(x)),
    (np.nansum, lambda x: np.nansum(x, axis=1, keepdims=True)),
    (np.nanmean, lambda x: np.nanmean(x, axis=(0, 2))),
    (np.nanmean, lambda x: np.nanmean(x, keepdims=True)),
    (np.sum, lambda x: np.sum(x, dtype=np.float64)),
    (np.mean, lambda x: np.mean(x)),
    (np.mean, lambda x: np.mean(x, axis=0)),
    (np.mean, lambda x: np.mean(x, axis=2, keepdims=True)),
    (np.mean, lambda x: np.mean(x, (-1, 0))),
    (np.mean, lambda x: np.mean(x, axis=(1, 2), keepdims=True)),
    (np.max, lambda x: np.max(x)),
    (np.max, lambda x: np.max(x, axis=1, keepdims=True)),
    (np.max, lambda x: x.max(axis=(0, 2))),
    (np.min, lambda x: np.min(x, axis=-1)),
    (np.min, lambda x: x.min()),
    (converted, lambda x: x.astype(np.float64) * 2.0),  # (x surely is an array)
    (converted, lambda x: np.sum(x).astype(np.float64) * x),
    (np.ndarray.astype, lambda x: [x][0].astype(np.float64) * 2.0),  # (a method call)
    (np.generic.astype, lambda x: [np.sum(x)][0].astype(np.float64) * x),
    (copied, lambda x: copied(x * x) * 2.0),
    (filled, lambda x: filled(np.sum(x * x), np.max(x), 2.0) * 3.0),
    (starred_parts, lambda x: starred_parts(x, 1, 0)[1][0] * starred_parts(x, 0, 1)[1]),
    (flattened, lambda x: x.flatten() * 2.0),
    (flattened, lambda x: x.T.flatten("F") * 2.0),
    (np.reshape, lambda x: np.reshape(x, (4, 6))),
    (np.reshape, lambda x: np.reshape(x, -1)),
    (np.reshape, lambda x: np.reshape(x, (6, 4), order="F")),
    (np.reshape, lambda x: np.reshape(x, shape=(3, -1))),
    (np.ravel, lambda x: np.ravel(x)),
    (np.ravel, lambda x: np.ravel(x, order="F")),
    (np.ravel, lambda x: np.ravel(x, "A")),
    (np.copy, lambda x: np.copy(x)),
    (np.ravel, lambda x: np.ravel(x, order="K")),
    (np.ravel, lambda x: np.ravel(x[::-1], order="K")),
    (np.ravel, lambda x: np.ravel(np.transpose(x, (1, 0, 2)), order="K")),
    (np.ravel, lambda x: np.ravel(x.T, order="K")),
    (np.ravel, lambda x: np.ravel(x.T, order="A")),
    (np.transpose, lambda x: np.transpose(x)),
    (np.transpose, lambda x: np.transpose(x, (1, 2, 0))),
    (np.transpose, lambda x: np.transpose(x, axes=(2, 0, 1))),
    (np.transpose, lambda x: np.transpose(x, [0, 2, 1])),
    (np.transpose, lambda x: np.transpose(x, (0, -1, -2))),
    (np.ndarray.T, lambda x: x.T),
    (np.ptp, lambda x: np.ptp(x)),
    (np.ptp, lambda x: np.ptp(x, axis=1)),
    (np.ptp, lambda x: np.ptp(x * x, axis=(0, 2), keepdims=True)),
    (np.median, lambda x: np.median(x)),  # (24 elements: the middle two, half each)
    (np.median, lambda x: np.median(x, axis=1)),  # (3: the middle one)
    (np.median, lambda x: np.median(x, axis=-1, keepdims=True)),
    (np.median, lambda x: np.median(x[0], keepdims=True) * x),
    (np.var, lambda x: np.var(x)),
    (np.var, lambda x: np.var(x, axis=1)),
    (np.var, lambda x: np.var(x, axis=(0, 2), ddof=1, keepdims=True)),
    (np.std, lambda x: np.std(x)),
    (np.std, lambda x: np.std(x, axis=-1, ddof=1)),
    (np.std, lambda x: np.std(x, axis=0, keepdims=True)),
    (np.var, lambda x: np.var(x, axis=1, correction=1)),  # NumPy 2's name for ddof
    (np.std, lambda x: np.std(x, correction=2)),
    (np.cumsum, lambda x: np.cumsum(x)),
    (np.cumsum, lambda x: np.cumsum(x, axis=1)),
    (np.cumsum, lambda x: np.cumsum(x, -1)),
    (np.trace, lambda x: np.trace(x)),
    (np.trace, lambda x: np.trace(x, 1, axis1=1, axis2=2)),
    (np.trace, lambda x: np.trace(x, offset=-1, axis1=2, axis2=0)),
    (np.squeeze, lambda x: np.squeeze(x[:, None, :1])),
    (np.squeeze, lambda x: np.squeeze(x[:1], axis=0)),
    (np.expand_dims, lambda x: np.expand_dims(x, 1)),
    (np.expand_dims, lambda x: np.expand_dims(x, axis=(0, -1))),
    (np.atleast_1d, lambda x: np.atleast_1d(x)),
    (np.atleast_2d, lambda x: np.atleast_2d(x)),
    (np.atleast_3d, lambda x: np.atleast_3d(x)),
    (np.swapaxes, lambda x: np.swapaxes(x, 0, 2)),
    (np.swapaxes, lambda x: np.swapaxes(x, -1, 1)),
    (np.moveaxis, lambda x: np.moveaxis(x, 0, -1)),
    (np.moveaxis, lambda x: np.moveaxis(x, (0, 1), (2, 0))),
    (np.broadcast_to, lambda x: np.broadcast_to(x, (5, 2, 3, 4))),
    (np.broadcast_to, lambda x: np.broadcast_to(x[:, :1], (2, 3, 4))),
    (np.flip, lambda x: np.flip(x)),
    (np.flip, lambda x: np.flip(x, 1)),
    (np.flip, lambda x: np.flip(x, axis=(0, 2))),
    (np.fliplr, lambda x: np.fliplr(x)),
    (np.flipud, lambda x: np.flipud(x)),
    (np.roll, lambda x: np.roll(x, 2)),
    (np.roll, lambda x: np.roll(x, -1, axis=2)),
    (np.roll, lambda x: np.roll(x, (1, 2), axis=(0, 1))),
    (np.rot90, lambda x: np.rot90(x)),
    (np.rot90, lambda x: np.rot90(x, 3, axes=(1, 2))),
    (np.rot90, lambda x: np.rot90(x, k=2, axes=(2, 0))),
    (np.prod, lambda x: np.prod(x)),
    (np.prod, lambda x: np.prod(x, axis=1)),
    (np.prod, lambda x: np.prod(x, axis=(0, 2), keepdims=True)),
    (np.prod, lambda x: np.prod(x, -1, keepdims=True)),
    (np.diagonal, lambda x: np.diagonal(x)),
    (np.diagonal, lambda x: np.diagonal(x, 1, axis1=2, axis2=1)),
    (np.diagonal, lambda x: np.diagonal(x, offset=-1, axis1=-1, axis2=0)),
    (np.triu, lambda x: np.triu(x)),
    (np.tril, lambda x: np.tril(x, -1)),
    (np.einsum, lambda x: np.einsum("ijk->kj", x)),
    (np.einsum, lambda x: np.einsum("iji->ij", x[:, :, :2])),
    (np.einsum, lambda x: np.einsum("...k", x)),
    (np.repeat, lambda x: np.repeat(x, 2)),
    (np.repeat, lambda x: np.repeat(x, 3, axis=1)),
    (np.repeat, lambda x: np.repeat(x, [2, 0, 1, 3], axis=-1)),
    (np.tile, lambda x: np.tile(x, 2)),
    (np.tile, lambda x: np.tile(x, (2, 1, 1, 3))),
    (np.tile, lambda x: np.tile(x, (1, 2))),
    (np.clip, lambda x: np.clip(x, -0.5, 0.5)),
    (np.pad, lambda x: np.pad(x, 1)),
    (np.cumprod, lambda x: np.cumprod(x)),
    (np.cumprod, lambda x: np.cumprod(x, axis=1)),
    (np.cumprod, lambda x: np.cumprod(x, -1)),
    (np.diff, lambda x: np.diff(x)),
    (np.diff, lambda x: np.diff(x, 2, axis=1)),
    (np.diff, lambda x: np.diff(x, axis=0, prepend=1.0, append=2.0)),
    (np.diff, lambda x: np.diff(x, 2, axis=1, prepend=np.zeros((2, 2, 4)))),
    (np.partition, lambda x: np.partition(x, 2)),
    (np.partition, lambda x: np.partition(x, (0, 1), axis=0)),
    (np.partition, lambda x: np.partition(x, 5, axis=None)),
    (np.pad, lambda x: np.pad(x, ((0, 1), (2, 0), (1, 1)), constant_values=3.0)),
    (np.pad, lambda x: np.pad(x, [(1, 2)], mode="constant")),
    (np.clip, lambda x: np.clip(x, None, 0.2)),
    (np.clip, lambda x: np.clip(x, a_min=-0.2, a_max=None)),
]
ON_EQUAL_SIDES = [  # x of shape (3, 3, 3): a wrong permutation would keep the shape
    (np.transpose, lambda x: np.transpose(x, (1, -1, 0))),
]
ON_SCALARS = [  # Python floats and 0-d arrays
    (np.sum, lambda x: np.sum(x)),
    (np.mean, lambda x: np.mean(x)),
    (np.reshape, lambda x: np.reshape(x, (1, 1))),
    (np.ravel, lambda x: np.ravel(x)),
    (np.transpose, lambda x: np.transpose(x)),
    (np.atleast_1d, lambda x: np.atleast_1d(x)),
    (np.atleast_2d, lambda x: np.atleast_2d(x)),
    (np.cumsum, lambda x: np.cumsum(x)),
]
ON_VECTOR = [  # x of shape (5,)
    (np.ndarray.item, lambda x: x.item(3) * x.item(-1) + x.reshape(5, 1).item((2, 0))),
    (np.generic.item, lambda x: np.sum(x * x).item() * x),
    (np.float64, lambda x: np.float64(np.sum(x * x)) * x + np.float64(x)),
    (builtins.max, lambda x: max(x) * 2.0),  # an array's elements are new objects
    (builtins.min, lambda x: min(x) * 2.0),
    (np.sum, lambda x: np.sum(x, axis=0)),
    (np.mean, lambda x: np.mean(x, axis=-1, keepdims=True)),
    (np.reshape, lambda x: np.reshape(x, (5, 1))),
    (np.transpose, lambda x: np.transpose(x)),
    (np.ndarray.T, lambda x: x.T),
    (operator.getitem, lambda x: x[2]),
    (operator.getitem, lambda x: x[[-1, 4, 0]]),
    (operator.getitem, lambda x: x[::-1]),
    (np.var, lambda x: np.var(x, ddof=1)),
    (np.std, lambda x: np.std(x)),
    (np.cumsum, lambda x: np.cumsum(x, axis=0)),
    (np.atleast_2d, lambda x: np.atleast_2d(x)),
    (np.atleast_3d, lambda x: np.atleast_3d(x)),
    (np.prod, lambda x: np.prod(x)),
    (np.diag, lambda x: np.diag(x)),
    (np.diag, lambda x: np.diag(x, -1)),
    (np.repeat, lambda x: np.repeat(x, 2)),
    (np.tile, lambda x: np.tile(x, 3)),
    (np.einsum, lambda x: np.einsum("i,i", x, x)),
]
AT_ZERO_REDUCTIONS = [  # exact zeros: a division by the element would give nan
    (np.prod, lambda x: np.prod(x), "with_zero"),
    (np.prod, lambda x: np.prod(x, axis=0), "with_zero"),
    (np.cumprod, lambda x: np.cumprod(x), "with_zero"),
    (np.cumprod, lambda x: np.cumprod(x, axis=-1), "with_zero"),
    (np.prod, lambda x: np.prod(x[1:], axis=-1, keepdims=True), "with_zero"),
]

# ---- indexing ----------------------------------------------------------------------------------
ON_MATRIX = [  # x of shape (4, 5)
    (operator.getitem, lambda x: x[1]),
    (operator.getitem, lambda x: x[-1, 2]),
    (operator.getitem, lambda x: x[1:3]),
    (operator.getitem, lambda x: x[::-2, 1::2]),
    (operator.getitem, lambda x: x[1:, None]),
    (operator.getitem, lambda x: x[None, ..., 1]),
    (operator.getitem, lambda x: x[[0, 0, 2]]),
    (operator.getitem, lambda x: x[[0, 0], [1, 1]]),
    (operator.getitem, lambda x: x[:, [3, 3, -2]]),
    (operator.getitem, lambda x: x[1:, [2, 2]]),
    (operator.getitem, lambda x: x[[[0, 1], [1, 0]]]),
    (operator.getitem, lambda x: x[REPEATED]),
    (operator.getitem, lambda x: x[..., REPEATED]),
    (operator.getitem, lambda x: x[x > 0]),
    (operator.getitem, lambda x: x[ROWS]),
    (operator.getitem, lambda x: x[[True, False, True, True]]),
    (operator.getitem, lambda x: x[ROWS, 1:]),
    (operator.getitem, lambda x: x[ROWS, [0, 0, 4]]),
    (operator.getitem, lambda x: x[1:][0] * x[1]),
    (np.trace, lambda x: np.trace(x)),
    (np.trace, lambda x: np.trace(x, offset=2)),
    (np.trace, lambda x: np.trace(x, -1)),
    (np.triu, lambda x: np.triu(x, 1)),
    (np.tril, lambda x: np.tril(x, k=2)),
    (np.diag, lambda x: np.diag(x)),
    (np.diag, lambda x: np.diag(x, 1)),
    (np.diag, lambda x: np.diag(x, k=-2)),
    (np.diagonal, lambda x: np.diagonal(x, -1)),
    (np.ndarray.T, lambda x: x.T),
    (np.ndarray.T, lambda x: x.T[1:] * x[:, 0]),
]

# ---- contractions ------------------------------------------------------------------------------
MATMUL = [
    (operator.matmul, lambda a, b: a @ b, "real", "real"),
    (np.matmul, lambda a, b: np.matmul(a, b), "real", "real"),
]
MATMUL_SHAPES = [
    ((3, 4), (4, 2)), ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 5)),
    ((2, 3, 4), (2, 4, 5)), ((1, 3, 4), (2, 4, 5)), ((4,), (2, 4, 5)), ((2, 3, 4), (4,)),
]
TANGENT_0, TANGENT_1, TANGENT_2, TANGENT_3, TANGENT_4, TANGENT_5, TANGENT_6, TANGENT_7 = \
    EINSUM_JVPS[1:9]  # (of the operands after a subscripts string)
EIGHT = "i,i,i,i,i,i,i,i->i"


def _eight_by_sublists(a, b, place):
    """`np.einsum`'s arguments for EIGHT in its sublist form, b the operand at `place`."""
    arguments = [b if k == place else a for k in range(0, 16, 2)]
    return [item for operand in arguments for item in (operand, [0])] + [[0]]


TENSORDOT = [  # (primal, fn, shape pairs)
    (np.tensordot, lambda a, b: np.tensordot(a, b), [((2, 3, 4), (3, 4, 5)), ((3, 4), (3, 4))]),
    (np.tensordot, lambda a, b: np.tensordot(a, b, 1), [((2, 3, 4), (4, 5)), ((3,), (3, 2))]),
    (np.tensordot, lambda a, b: np.tensordot(a, b, axes=0), [((2, 3), (4,)), ((), (3,))]),
    (np.tensordot, lambda a, b: np.tensordot(a, b, axes=([2, 0], [0, 1])),
     [((2, 3, 4), (4, 2, 5))]),
    (np.tensordot, lambda a, b: np.tensordot(a, b, ([-1], 1)), [((2, 3, 4), (5, 4))]),
    (np.outer, lambda a, b: np.outer(a, b), [((3,), (4,)), ((2, 2), (3,)), ((), (3,))]),
    (np.vdot, lambda a, b: np.vdot(a, b), [((3,), (3,)), ((2, 3), (3, 2)), ((), ())]),
    (np.einsum, lambda a, b: np.einsum("ij,jk->ik", a, b), [((2, 3), (3, 4))]),
    (np.einsum, lambda a, b: np.einsum("ij,kj", a, b), [((2, 3), (4, 3))]),
    (np.einsum, lambda a, b: np.einsum("bij, bjk -> bki", a, b), [((2, 3, 4), (2, 4, 5))]),
    (np.einsum, lambda a, b: np.einsum("ii,i->i", a, b), [((3, 3), (3,))]),
    (np.einsum, lambda a, b: np.einsum("ijk,j->", a, b), [((2, 3, 4), (3,))]),
    (np.einsum, lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [0, 2]), [((2, 3), (3, 4))]),
    (np.einsum, lambda a, b: np.einsum(a, [0, 1], b, [2, 1]), [((2, 3), (4, 3))]),
    (np.einsum, lambda a, b: np.einsum(a, (0, 1), (1, 0)) * b, [((3, 4), (4, 3))]),
    (np.einsum, lambda a, b: np.einsum(a, [Ellipsis, 1], b, [Ellipsis, 1], [Ellipsis]),
     [((2, 3), (2, 3))]),
    (np.einsum, lambda a, b: np.einsum("...j,...j->...", a, b),
     [((2, 3, 4), (3, 4)), ((3, 4), (2, 3, 4))]),
    (np.einsum, lambda a, b: np.einsum("i,j->ij", a, b), [((3,), (4,))]),
    (np.einsum, lambda a, b: np.einsum("ij,ij,ij->j", a, b, a), [((2, 3), (2, 3))]),
    (np.inner, lambda a, b: np.inner(a, b),
     [((3,), (3,)), ((2, 3), (3,)), ((3,), (4, 3)), ((2, 3), (4, 2, 3)), ((), (3,)), ((2,), ())]),
    # the tangents of einsum, which Hessians differentiate: operand k replaced by b
    (TANGENT_0, lambda a, b: TANGENT_0(b, None, "ij,jk->ik", a, a.T), [((2, 3), (2, 3))]),
    (TANGENT_1, lambda a, b: TANGENT_1(b, None, "ij,jk->ki", a, b), [((2, 3), (3, 4))]),
    (TANGENT_2, lambda a, b: TANGENT_2(b, None, EIGHT, a, a, a, a, a, a, a, a), [((3,), (3,))]),
    (TANGENT_3, lambda a, b: TANGENT_3(b, None, EIGHT, a, b, a, a, a, a, a, a), [((3,), (3,))]),
    (TANGENT_4, lambda a, b: TANGENT_4(b, None, EIGHT, a, a, a, a, a, a, a, b), [((3,), (3,))]),
    (TANGENT_5, lambda a, b: TANGENT_5(b, None, EIGHT, a, a, a, a, a, a, a, a), [((3,), (3,))]),
    (TANGENT_6, lambda a, b: TANGENT_6(b, None, EIGHT, b, a, a, a, a, a, a, a), [((3,), (3,))]),
    (TANGENT_7, lambda a, b: TANGENT_7(b, None, EIGHT, a, a, a, a, a, a, a, a), [((3,), (3,))]),
    *[(EINSUM_JVPS[k], lambda a, b, k=k: EINSUM_JVPS[k](b, None, *_eight_by_sublists(a, b, k)),
       [((3,), (3,))]) for k in (0, 10, 12, 14)],
    (np.convolve, lambda a, b: np.convolve(a, b),
     [((5,), (3,)), ((3,), (5,)), ((4,), (4,)), ((1,), (3,)), ((), (3,))]),
    (np.convolve, lambda a, b: np.convolve(a, b, "same"), [((5,), (3,)), ((3,), (5,)), ((5,), (4,)),
                                                           ((4,), (5,)), ((2,), (2,))]),
    (np.convolve, lambda a, b: np.convolve(a, b, mode="valid"), [((5,), (3,)), ((3,), (6,)),
                                                                 ((4,), (4,))]),
    (np.kron, lambda a, b: np.kron(a, b), [((2, 3), (3, 2)), ((3,), (2,)), ((2, 3), (2,)),
                                          ((3,), (2, 2))]),
    (np.cross, lambda a, b: np.cross(a, b), [((3,), (3,)), ((4, 3), (3,)), ((2, 4, 3), (4, 3))]),
    (np.cross, lambda a, b: np.cross(a, b, axisa=0, axisb=1, axisc=0), [((3, 4), (4, 3))]),
    (np.cross, lambda a, b: np.cross(a, b, axis=0), [((3, 2), (3, 2))]),
    # a broadcast operand whose vector axis is not the last one
    (np.cross, lambda a, b: np.cross(a, b, axisa=1, axisb=0),
     [((3, 3, 3), (3, 3)), ((2, 3, 4), (3, 4)), ((3, 3), (3, 2, 3))]),
    (np.clip, lambda a, b: np.clip(a, b, 0.3), [((3, 4), (3, 4)), ((3, 4), (4,))]),
    (np.clip, lambda a, b: np.clip(a, -0.3, b), [((3, 4), (3, 4)), ((2, 3), ())]),
    (np.clip, lambda a, b: np.clip(a, b - 1.0, b), [((3, 4), (4,))]),
    (np.split, lambda a, b: np.split(a, 2)[1] * b, [((4, 3), (3,))]),
    (np.split, lambda a, b: np.concatenate(np.split(a, [1, 3], axis=-1)[::-1], -1) * b,
     [((2, 5), (5,))]),
    (np.array_split, lambda a, b: np.array_split(a, 3, axis=1)[0] * b, [((2, 5), (2, 1))]),
    (np.hsplit, lambda a, b: np.hsplit(a, 2)[1] * b, [((3, 4), (3, 2)), ((4,), (2,))]),
    (np.vsplit, lambda a, b: np.vsplit(a, [1])[1] * b, [((3, 4), (4,))]),
]
DOT = [(np.dot, lambda a, b: np.dot(a, b), "real", "real")]
DOT_SHAPES = [
    ((3, 4), (4, 2)), ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 2)), ((2, 3, 4), (4, 5)),
    ((2, 3, 4), (5, 4, 2)), ((4,), (2, 4, 5)), ((2, 3, 4), (4,)), (None, (3,)), ((2, 3), None),
    ((), (2, 3)),
]
SELF_CONTRACTIONS = [  # one argument on both sides
    (np.dot, lambda x: np.dot(x, x.T)),
    (operator.matmul, lambda x: x.T @ x),
    (np.matmul, lambda x: np.matmul(x, x.T)),
]

# ---- joining values into arrays, Python's sum ---------------------------------------------------
JOINING = [  # (primal, fn, shape pairs)
    (np.stack, lambda x, y: np.stack([x, y]),
     [(None, None), ((), ()), ((3,), (3,)), ((2, 3), (2, 3))]),
    (np.stack, lambda x, y: np.stack((x, y), axis=-1), [((3,), (3,)), ((2, 3), (2, 3))]),
    (np.concatenate, lambda x, y: np.concatenate([x, y]), [((3,), (2,)), ((2, 3), (1, 3))]),
    (np.concatenate, lambda x, y: np.concatenate((x, y), axis=1), [((2, 3), (2, 1))]),
    (np.concatenate, lambda x, y: np.concatenate([x, y], axis=-1), [((2, 3), (2, 1))]),
    (np.concatenate, lambda x, y: np.concatenate([x, y], axis=None), [((2, 2), (3,))]),
    (np.vstack, lambda x, y: np.vstack([x, y]), [((3,), (3,)), ((2, 3), (1, 3)), ((2, 3), (3,))]),
    (np.hstack, lambda x, y: np.hstack((x, y)), [((3,), (2,)), ((2, 3), (2, 1)), ((), (3,))]),
    (np.column_stack, lambda x, y: np.column_stack((x, y)), [((3,), (3,)), ((3, 2), (3,)),
                                                            ((2, 1), (2, 3))]),
    (np.array, lambda x, y: np.array([x, y]), [(None, None), ((), ()), ((3,), (3,))]),
    (np.array, lambda x, y: np.array([[x, y], [y, x]]), [(None, None), ((2,), (2,))]),
    (np.array, lambda x, y: np.array(x) * y, [((3,), (3,)), ((2, 3), None)]),
    (np.asarray, lambda x, y: np.asarray((x, y)), [(None, None), ((2, 3), (2, 3))]),
    (np.asanyarray, lambda x, y: np.asanyarray([x, y]), [(None, None), ((2, 3), (2, 3))]),
    (builtins.sum, lambda x, y: sum([x, y, x]), [(None, None), ((3,), (3,)), ((2, 3), (3,))]),
    (builtins.sum, lambda x, y: sum((x,), y), [(None, None), ((3,), ()), ((2, 3), (3,))]),
    (builtins.sum, lambda x, y: sum(x) * y, [((3,), None), ((2, 3), (3,))]),
    (list, lambda x, y: np.stack(list([x, y * x])) * list((y, x))[0], [(None, None), ((3,), (3,))]),
    (list, lambda x, y: np.stack(list(x)) * y, [((3,), None), ((2, 3), (3,))]),  # rows
    (list, lambda x, y: list({2.0: x, 3.0: x * y})[1] * y, [((3,), (3,))]),  # keys: no tangent
    (tuple, lambda x, y: np.stack(tuple([y, x])) + tuple((x * y,))[0], [(None, None),
                                                                          ((3,), (3,))]),
    (tuple, lambda x, y: np.stack(tuple(x)) ** 2 * y, [((3,), None), ((2, 3), (3,))]),
    (dict_items, lambda x, y: dict_items({"a": x * y, "b": y})[0][1] * dict_items({"b": x})[0][1],
     [(None, None), ((3,), (3,)), ((2, 3), (3,))]),
    (dict_values, lambda x, y: dict_values({"a": y, "b": x * x})[1] * y,
     [(None, None), ((3,), (3,)), ((2, 3), (3,))]),
    (dict_get, lambda x, y: dict_get({"a": x * y, "b": y}, "a") * dict_get({"b": x}, "c", y)
     + dict_get({"b": x}, "b", y), [(None, None), ((3,), (3,)), ((2, 3), (3,))]),
    (joined, lambda x, y: np.stack(joined([x], [y * x, x])) * joined(x, y) + joined((y,), (x,))[0],
     [((3,), (3,)), ((2, 3), (3,))]),
    (repeated, lambda x, y: np.stack(repeated([x, y * x], 2)) * repeated(x, y)
     + np.stack(repeated(2, (y,)))[1], [((3,), (3,)), ((2, 3), (3,))]),
    (indexable, lambda x, y: indexable([x, y * x])[1] * indexable(x)[0] + indexable({2: y})[0],
     [((3,), (3,)), ((2, 3), (3,))]),
]

# ---- the helpers of forward mode's tangent programs (differentiated again for 2nd order) -------
TANGENT_HELPERS = [
    (tangents.broadcast_like, lambda x, y: tangents.broadcast_like(x, y) * y,
     [((3,), (2, 3)), (None, (3,)), ((), (2,)), ((2, 3), (2, 3))]),
    (accumulate, lambda x, y: accumulate([x, None], [y * x, x])[0] * accumulate(x, y)
     + accumulate((None, y), (x, None))[1], [((3,), (3,)), ((2, 3), (3,))]),
    (tangents.dense, lambda x, y: np.stack(tangents.dense([x, None], [x, y])) * y,
     [((3,), (3,)), ((), ())]),
]
TANGENT_HELPERS_ON_VECTOR = [
    (tangents.owned, lambda x: tangents.owned(x) * 2.0),
    (through_cast, lambda x: through_cast(x * (1.0 + 2.0j), np.float64) * x
     + through_cast(x, None)),
    (tangents.tangent_elements, lambda x: tangents.tangent_elements((x, x * 2.0), 2)[1] * x),
    (tangents.stored_tangent, lambda x: tangents.stored_tangent(np.zeros(3), x * x) * x),
    # (the pieces of the tangent programs of `srcad.vjp` and of a pullback's call)
    (held.held_parts, lambda x: held.held_tangents(held.held_parts((x * x, x), {}), 2)[0] * x),
    (held.held_tangents, lambda x: held.held_tangents(held.held_parts((x, None), {}), 2)[0]),
    (held.held_form, lambda x: held.held_form(_HELD_SITE, srcad.vjp(np.sin, x * x)[1])[0][0] * x),
    # (a record's attribute read to be updated, and the tangents of records' attributes)
    (held_attribute, lambda x: held_attribute(_record_of(x * x), "value", _WHERE) * x),
    (record_tangent, lambda x: record_tangent({"value": x * x}, _record_of(x), "value") * x),
    (held_tangent, lambda x: held_tangent({"value": x}, _record_of(x), "value") ** 2),
    (held_item, lambda x: held_item({"a": x * x, "b": x}, "a", _WHERE) * x),
]
_HELD_SITE = held.HeldCall(SrcadError("a held call site of the rule tests"))
_WHERE = ("record.value = ...", __file__, 1, 0, "a rule test")


class _Record:
    """A plain class: its instances are records (kernels/pytrees.py)."""


def _record_of(value):
    made = _Record()
    made.value = value
    return made

def _area_modules():
    """The case tables of rule areas kept in files of their own (`tests/ops/rule_cases_*.py`)."""
    import importlib
    from pathlib import Path
    return [importlib.import_module(f"tests.ops.{path.stem}")
            for path in sorted(Path(__file__).parent.glob("rule_cases_*.py"))]


CASES = (
    _unary(UNARY, [None, (), (5,), (2, 3)])
    + _unary(SCALAR_ONLY, [None, ()])
    + _binary(BINARY, BINARY_SHAPES)
    + _binary(FIRST_ONLY, BINARY_SHAPES, wrts=(0,))
    + _unary(CONSTANT_OPERANDS, [None, (2, 3)])
    + _unary(AT_ZERO, [None, (4,)])
    + _unary(AT_ZERO_REDUCTIONS, [(4,), (3, 4)])
    + WHERE
    + _on((2, 3, 4), ON_CUBE) + _on((3, 3, 3), ON_EQUAL_SIDES)
    + _on(None, ON_SCALARS) + _on((), ON_SCALARS)
    + _on((5,), ON_VECTOR)
    + _on((4, 5), ON_MATRIX)
    + _binary(MATMUL, MATMUL_SHAPES)
    + _binary(DOT, DOT_SHAPES)
    + _on((3, 4), SELF_CONTRACTIONS) + _on((4,), [(np.dot, lambda x: np.dot(x, x))])
    + [case for primal, fn, pairs in TENSORDOT
       for case in _binary([(primal, fn, "real", "real")], pairs)]
    + [case for primal, fn, pairs in JOINING
       for case in _binary([(primal, fn, "real", "real")], pairs)]
    + [case for primal, fn, pairs in TANGENT_HELPERS
       for case in _binary([(primal, fn, "real", "real")], pairs, wrts=(0,))]
    + _on((4,), TANGENT_HELPERS_ON_VECTOR)
    + [case for module in _area_modules() for case in module.CASES]
)

TOLERANCES = {np.float64: dict(rtol=1e-5, atol=1e-7), np.float32: dict(rtol=2e-3, atol=2e-4)}


def _label(primal):
    if isinstance(primal, np.ufunc) or getattr(primal, "__module__", "") == "numpy":
        return f"np.{primal.__name__}"
    if primal is np.ndarray.T:
        return "ndarray.T"
    if getattr(primal, "__module__", "") == "_operator":
        return f"operator.{primal.__name__}"
    return primal.__name__


def _case_id(case):
    shapes = ",".join("py" if s is None else "x".join(map(str, s)) or "0d" for _, s in case.args)
    wrt = "".join(map(str, case.wrt)) if isinstance(case.wrt, tuple) else case.wrt
    return f"{_label(case.primal)}:L{case.fn.__code__.co_firstlineno}:{shapes}:wrt{wrt}"


def _xfail(reason):
    """Marks of a case that shows a known srcad bug (its nan/inf warnings are expected)."""
    return [pytest.mark.xfail(strict=True, reason=reason),
            pytest.mark.filterwarnings("ignore::RuntimeWarning")] if reason else []


def _params(cases, dtypes=(np.float64, np.float32)):
    return [pytest.param(case, dtype, id=f"{_case_id(case)}:{np.dtype(dtype).name}",
                         marks=_xfail(case.bug))
            for case in cases for dtype in dtypes]


# ---- the check ---------------------------------------------------------------------------------
COMPLEX = {np.float64: np.complex128, np.float32: np.complex64}


def make_args(specs, dtype, seed=0):
    """Arguments for `specs`: arrays of `dtype`, or of its complex twin for a complex
    domain; shape None gives a Python float or complex (float64) or a NumPy scalar (other
    dtypes)."""
    rng = np.random.default_rng(seed)
    args = []
    for domain, shape in specs:
        value = DOMAINS[domain](rng, () if shape is None else shape)
        value = np.asarray(value, COMPLEX[dtype] if np.iscomplexobj(value) else dtype)
        if shape is None:
            value = value.item() if dtype is np.float64 else value[()]
        args.append(value)
    return tuple(args)


def _as_tuple(value, wrt=None):
    """`value` as a tuple: `wrt` (default: `value` itself) says whether it already is one."""
    return value if isinstance(value if wrt is None else wrt, tuple) else (value,)


def _widened(value):
    """`value` in double precision: float64, or complex128 if it is complex."""
    if isinstance(value, np.ndarray):
        return np.asarray(value, np.complex128 if value.dtype.kind == "c" else np.float64)
    return complex(value) if np.iscomplexobj(value) else float(value)


def numerical_cotangent(loss, args, position):
    """Central differences of the real `loss` at `args`: dL/dx for a real argument, and
    dL/dx - i dL/dy for a complex one z = x + iy (srcad's convention, JAX's)."""
    z = args[position]
    if not np.iscomplexobj(z):
        return numerical_gradient(loss, args, position)

    def along(direction):  # the loss as a function of a real step from z along `direction`
        return lambda *a: loss(*a[:position], z + direction * a[position], *a[position + 1:])

    start = args[:position] + (np.zeros(np.shape(z)),) + args[position + 1:]
    return (numerical_gradient(along(1.0), start, position)
            - 1j * numerical_gradient(along(1j), start, position))


def assert_like_argument(gradient, argument):
    """The gradient has the argument's type, shape and dtype."""
    if isinstance(argument, np.ndarray):
        assert isinstance(gradient, np.ndarray), type(gradient)
        assert (gradient.shape, gradient.dtype) == (argument.shape, argument.dtype)
    else:
        assert type(gradient) is type(argument), (type(gradient), type(argument))


def assert_vjp_matches_finite_differences(fn, args, wrt, rtol, atol, seed=0):
    """srcad's VJP of `fn` for a random cotangent `u` (complex for a complex output) against
    central finite differences of `Re(sum(u * fn(*args)))`, evaluated in double precision,
    along the real and the imaginary parts of complex arguments."""
    value, vjp_fn = srcad.vjp(fn, *args, wrt=wrt)
    np.testing.assert_allclose(value, fn(*args), rtol=1e-6)
    rng = np.random.default_rng(seed)
    cotangent = rng.standard_normal(np.shape(value))
    if np.iscomplexobj(value):
        cotangent = cotangent + 1j * rng.standard_normal(np.shape(value))
    gradients = vjp_fn(cotangent.astype(np.result_type(value))[()])
    wide = tuple(map(_widened, args))

    def weighted(*a):
        return np.real(cotangent * _widened(np.asarray(fn(*a))))

    for position, gradient in zip(_as_tuple(wrt), _as_tuple(gradients, wrt)):
        assert_like_argument(gradient, args[position])
        expected = numerical_cotangent(weighted, wide, position)
        np.testing.assert_allclose(gradient, expected, rtol=rtol, atol=atol,
                                   err_msg=f"gradient of argument {position}")


@pytest.mark.parametrize("case, dtype", _params(CASES))
def test_rule_matches_finite_differences(case, dtype):
    args = make_args(case.args, dtype)
    assert_vjp_matches_finite_differences(case.fn, args, case.wrt, **TOLERANCES[dtype])


@pytest.mark.parametrize("case, dtype", _params(_unary(UNARY, [None, ()]), [np.float32]))
def test_grad_keeps_float32(case, dtype):
    """`grad`, seeded by srcad itself, gives float32 for a float32 scalar or 0-d array."""
    (x,) = make_args(case.args, dtype)
    gradient = srcad.grad(case.fn)(x)
    assert_like_argument(gradient, x)
    np.testing.assert_allclose(gradient, numerical_gradient(case.fn, (_widened(x),), 0),
                               **TOLERANCES[np.float32])


# Rules whose backward sweep turns a float32 cotangent into float64 (the API casts the
# gradient back, so users see float32, but the sweep runs in double precision and memory).
_FLOAT32_SWEEPS = [pytest.param(case, id=_case_id(case)) for case in CASES if not case.bug]


SINGLE = (np.float32, np.complex64)


@pytest.mark.parametrize("case", _FLOAT32_SWEEPS)
def test_backward_sweep_stays_float32(case):
    """The generated backward sweep itself keeps single precision (before the API casts):
    float32, or complex64 for complex values (a real value's cotangent may carry an
    imaginary part)."""
    args = make_args(case.args, np.float32)
    derivative = Derivative(case.fn, case.wrt)
    output, backward, _ = derivative.forward(args, {})
    if np.result_type(output) not in SINGLE:  # float(x), np.sum(x, dtype=np.float64)
        pytest.skip("the output itself is not float32 or complex64")
    raw = backward(np.ones(np.shape(output), np.result_type(output))[()])
    for gradient in _as_tuple(raw, case.wrt):
        assert gradient is None or np.result_type(gradient) in SINGLE, np.result_type(gradient)


# ---- ties and kinks: autograd's conventions ---------------------------------------------------
_PICK = {row[0]: row[1] for row in BINARY}
TIE_X, TIE_Y = [1.0, 2.0, 3.0], [1.0, 0.0, 5.0]
TO_LARGER = ([0.5, 1.0, 0.0], [0.5, 0.0, 1.0])  # each value gets 0.5 where x == y
TIES = [  # (primal, expected gradients of x and y at TIE_X, TIE_Y)
    (np.maximum, TO_LARGER), (np.fmax, TO_LARGER),
    (np.minimum, TO_LARGER[::-1]), (np.fmin, TO_LARGER[::-1]),
]


@pytest.mark.parametrize("primal, expected", TIES, ids=[_label(p) for p, _ in TIES])
def test_ties_split_the_gradient_evenly(primal, expected):
    _, vjp_fn = srcad.vjp(_PICK[primal], np.array(TIE_X), np.array(TIE_Y), wrt=(0, 1))
    for gradient, want in zip(vjp_fn(np.ones(3)), expected):
        np.testing.assert_array_equal(gradient, want)


@pytest.mark.parametrize("reduce", [np.max, np.min])
def test_a_reductions_ties_share_its_cotangent_and_a_nan_row_gives_nan(reduce):
    sign = 1.0 if reduce is np.max else -1.0
    rows = sign * np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0], [np.nan, 1.0, 1.0]])
    g = np.array([[1.0], [2.0], [4.0]])  # the tie of row 0 and the NaN of row 2 count 3
    _, pullback = srcad.vjp(lambda a: reduce(a, axis=1, keepdims=True), rows)  # winners
    with np.errstate(invalid="ignore", divide="ignore"):
        np.testing.assert_array_equal(pullback(g), [[0.0, 0.5, 0.5], [2.0, 0.0, 0.0],
                                                    [np.nan] * 3])
    _, pullback = srcad.vjp(lambda a: reduce(a, axis=0), rows[:2])  # one winner each
    np.testing.assert_array_equal(pullback(np.array([1.0, 2.0, 3.0])),
                                  [[0.0, 2.0, 3.0], [1.0, 0.0, 0.0]])


SELF_TIES = [  # the same value on both sides: 0.5 + 0.5; abs at its kink: 0
    (np.maximum, lambda x: np.maximum(x, x), 1.0),
    (np.fmax, lambda x: np.fmax(x, x), 1.0),
    (np.minimum, lambda x: np.minimum(x, x), 1.0),
    (np.fmin, lambda x: np.fmin(x, x), 1.0),
    (np.maximum, lambda x: np.maximum(x, x) * 0.0 + np.maximum(x, 0.0), 0.5),
    (np.absolute, lambda x: np.abs(x), 0.0),
]


@pytest.mark.parametrize("primal, fn, expected", SELF_TIES,
                         ids=[f"{_label(p)}:L{f.__code__.co_firstlineno}" for p, f, _ in SELF_TIES])
@pytest.mark.parametrize("x", [0.0, np.zeros(3)], ids=["py", "vector"])
def test_kinks_follow_autograd(primal, fn, expected, x):
    gradient = srcad.vjp(fn, x)[1](np.ones_like(x) if np.ndim(x) else 1.0)
    np.testing.assert_array_equal(gradient, np.full(np.shape(x), expected))


# ---- property: random broadcasting pairs for the arithmetic operators -------------------------
ARITHMETIC = [row for row in BINARY if getattr(row[0], "__module__", "") == "_operator"]


BROADCASTING = dict(  # hypothesis strategies: an operator, shapes, `wrt`, Python numbers or not
    row=st.sampled_from(ARITHMETIC),
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
    wrt=st.sampled_from([0, 1, (0, 1)]),
    python_scalars=st.booleans(),
    seed=st.integers(0, 2 ** 16))


def broadcasting_case(row, shapes, python_scalars, seed):
    """`(fn, args)` for one draw of `BROADCASTING` (a () shape may be a Python float)."""
    _, fn, dx, dy = row
    sx, sy = (None if python_scalars and s == () else s for s in shapes.input_shapes)
    return fn, make_args(((dx, sx), (dy, sy)), np.float64, seed)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(**BROADCASTING)
def test_arithmetic_operators_under_random_broadcasting(row, shapes, wrt, python_scalars, seed):
    fn, args = broadcasting_case(row, shapes, python_scalars, seed)
    assert_vjp_matches_finite_differences(fn, args, wrt, seed=seed, **TOLERANCES[np.float64])


# ---- an independent oracle: autograd on composite functions ---------------------------------
def softplus_regression(w, x, y):
    z = x @ w
    return np.mean(np.log1p(np.exp(-y * z))) + 0.1 * np.sum(w ** 2)


def attention(q, k):
    scores = np.dot(q, k.T) / 2.0
    weights = np.exp(scores) / np.sum(np.exp(scores), axis=1, keepdims=True)
    return np.sum(weights * np.tanh(np.matmul(q, k.T))) - np.mean(q ** 3, axis=0)[1]


def gather_and_mask(x, y):
    picked = x[[0, 0, 2]] * y[1:, None]
    gated = np.where(x > 0, x, 0.1 * x)
    return np.sum(picked) + np.mean(gated[ROWS]) + np.sum(np.maximum(x, y[:, None]) ** 2)


def shape_shuffle(x):
    flat = np.reshape(np.transpose(x, (2, 0, 1)), (4, 6))
    return np.sum(np.ravel(flat.T) * np.arange(24.0)) + np.sum(np.dot(flat, flat.T) % 1.5)


def special_functions(x):
    a = np.arcsin(x) + np.arccos(x) * np.arctanh(x) + np.arcsinh(x) + np.arccosh(x + 1.5)
    b = np.log2(x) + np.log10(x) + np.exp2(x) + np.reciprocal(x) + np.square(x) - np.sqrt(x)
    c = np.cosh(x) / np.sinh(x) + np.abs(x - 0.5) + np.tan(x) * np.sin(x) ** np.cos(x)
    return np.sum(a * b + c + np.fmin(x, 0.5) - np.fmax(x, 0.4) + np.expm1(x) / np.log(x))


def ties(x, y):
    return np.sum(np.maximum(x, y) * 2.0 + np.minimum(x, x) + np.maximum(x, 0.0) * y)


_R = np.random.default_rng(11)
AUTOGRAD_CASES = [
    (softplus_regression, (_R.standard_normal(3), _R.standard_normal((5, 3)),
                           np.sign(_R.standard_normal(5))), (0, 1)),
    (attention, (_R.standard_normal((3, 4)), _R.standard_normal((5, 4))), (0, 1)),
    (gather_and_mask, (_R.standard_normal((4, 3)), _R.standard_normal(4)), (0, 1)),
    (shape_shuffle, (_R.uniform(-0.5, 0.5, (2, 3, 4)),), 0),
    (special_functions, (_R.uniform(0.2, 0.8, (2, 3)),), 0),
    (ties, (np.array([1.0, 0.0, -2.0, 3.0]), np.array([1.0, -1.0, -2.0, 4.0])), (0, 1)),
]


@pytest.mark.parametrize("fn, args, wrt", AUTOGRAD_CASES,
                         ids=[fn.__name__ for fn, *_ in AUTOGRAD_CASES])
def test_composites_match_autograd(fn, args, wrt):
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    twin = types.FunctionType(fn.__code__, dict(fn.__globals__, np=anp), fn.__name__)
    gradients = srcad.grad(fn, wrt=wrt)(*args)
    for position, gradient in zip(_as_tuple(wrt), _as_tuple(gradients, wrt)):
        expected = autograd.grad(twin, position)(*args)
        np.testing.assert_allclose(gradient, expected, rtol=1e-10, atol=1e-12)


# ---- coverage of the registry -----------------------------------------------------------------
def shipped_rules():
    """Callables whose rules srcad itself registers (tests elsewhere register their own)."""
    return {op.primal for op in registry.records() if op.owner != "user" and op.vjp is not None}


def assert_jvp_matches_finite_differences(fn, args, wrt, rtol, atol, seed=0):
    """srcad's JVP of `fn` along a random tangent of the `wrt` arguments (complex for
    complex ones) against central finite differences along the same direction, evaluated
    in double precision."""
    rng = np.random.default_rng(seed)
    positions = _as_tuple(wrt)
    tangents = [None] * len(args)
    for p in positions:
        tangent = rng.standard_normal(np.shape(args[p]))
        if np.iscomplexobj(args[p]):
            tangent = tangent + 1j * rng.standard_normal(np.shape(args[p]))
        tangents[p] = np.asarray(tangent, np.result_type(args[p]))[()]
        if isinstance(args[p], (float, complex)):
            tangents[p] = tangents[p].item()
    value, tangent = srcad.jvp(fn, args, tuple(tangents))
    np.testing.assert_allclose(value, fn(*args), rtol=1e-6)
    assert np.shape(tangent) == np.shape(value)
    wide = list(map(_widened, args))
    h = 1e-6

    def moved(step):
        return [x if t is None else x + step * _widened(t) for x, t in zip(wide, tangents)]

    expected = (_widened(np.asarray(fn(*moved(h))))
                - _widened(np.asarray(fn(*moved(-h))))) / (2 * h)
    np.testing.assert_allclose(tangent, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("case, dtype", _params(CASES))
def test_jvp_rule_matches_finite_differences(case, dtype):
    args = make_args(case.args, dtype)
    assert_jvp_matches_finite_differences(case.fn, args, case.wrt, **TOLERANCES[dtype])


def test_every_shipped_vjp_rule_has_a_jvp_rule():
    missing = sorted(map(_label, {fn for fn in shipped_rules() if registry.jvp_rules(fn) is None}))
    assert not missing, f"rules with a VJP but no JVP: {missing}"


def test_every_shipped_rule_has_a_case():
    covered = {case.primal for case in CASES}
    missing = sorted(map(_label, shipped_rules() - covered))
    assert not missing, f"registered rules without a case in tests/ops/test_rules.py: {missing}"


class _RecordingRules(dict):
    """The registry's records, remembering every callable whose VJP rules are read."""

    def __init__(self, records):
        super().__init__(records)
        self.looked_up = []

    def get(self, key, default=None):
        op = super().get(key, default)
        return op if op is None else _Watched(op, key, self.looked_up)


class _Watched:
    def __init__(self, op, key, looked_up):
        self._op, self._key, self._looked_up = op, key, looked_up

    def __getattr__(self, name):
        if name == "vjp":
            self._looked_up.append(self._key)
        return getattr(self._op, name)


_DISTINCT = list({(case.fn, case.wrt): case for case in CASES}.values())


@pytest.mark.parametrize("case", _DISTINCT, ids=map(_case_id, _DISTINCT))
def test_case_reaches_its_rule(case, monkeypatch):
    recording = _RecordingRules(registry._OPS)
    monkeypatch.setattr(registry, "_OPS", recording)
    monkeypatch.setattr(srcad_cache, "_entries", {})  # transform afresh, restored afterwards
    monkeypatch.setattr(api_derivative, "_SHARED", OrderedDict())  # (derivatives asked before)
    value, pullback = srcad.vjp(case.fn, *make_args(case.args, np.float64), wrt=case.wrt)
    pullback(np.ones(np.shape(value))[()])  # methods find their rule when they run
    assert any(key is case.primal for key in recording.looked_up), recording.looked_up
