"""Rule cases for a softmax written out in NumPy (srcad/compiler/transform/softmax.py): the reverse
transforms differentiate the lines by the rules of `softmax` and `invariant_shift`."""
import numpy as np

from srcad.ops.fused_softmax import invariant_shift, softmax
from tests.ops.rule_table import Case


def rows_softmax(x):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    exponentials = np.exp(shifted)
    return exponentials / np.sum(exponentials, axis=-1, keepdims=True)


def whole_softmax(x):
    exponentials = np.exp(x * 2.0)
    return exponentials / np.sum(exponentials)


def columns_softmax(x):
    shifted = x - np.amin(x, axis=0, keepdims=True)
    exponentials = np.exp(shifted)
    probabilities = exponentials / np.sum(exponentials, axis=0, keepdims=True)
    return np.sin(probabilities * 3.0)


CASES = [
    Case(softmax, rows_softmax, (("real", (3, 4)),)),
    Case(invariant_shift, rows_softmax, (("real", (2, 3, 4)),)),
    Case(softmax, whole_softmax, (("real", (5,)),)),
    Case(softmax, columns_softmax, (("real", (4, 3)),)),
    Case(invariant_shift, columns_softmax, (("real", (4, 3)),)),
]
