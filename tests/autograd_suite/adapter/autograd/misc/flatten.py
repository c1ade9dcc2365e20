"""autograd's `flatten`: a value (nests of tuples, lists and dicts of arrays) as one
vector, and the function that rebuilds it. The vector is made by plain NumPy code, which
srcad differentiates where `flatten` is called inside a differentiated function; the
structure (a vspace) carries no derivative."""
import numpy as np

import srcad
from autograd.vspaces import vspace

srcad.defvjp(vspace, None)  # (a value's structure: no derivative flows through it)
srcad.defjvp(vspace, None)


def flatten(value):
    return _flat(value), vspace(value).unflat


def _flat(value):
    if type(value) in (list, tuple):
        return _joined([_flat(item) for item in value])
    if type(value) is dict:
        return _joined([_flat(value[key]) for key in sorted(value)])
    return np.ravel(value)


def _joined(parts):
    return np.concatenate(parts) if parts else np.array([])


def flatten_func(func, example):
    _, unflatten = flatten(example)
    return lambda flat, *args: flatten(func(unflatten(flat), *args))[0], unflatten, \
        flatten(example)[0]


__all__ = ["flatten", "flatten_func", "np"]
