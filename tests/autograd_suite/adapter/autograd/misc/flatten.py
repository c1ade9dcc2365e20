"""autograd's `flatten`: a value (nests of tuples, lists and dicts of arrays) as one
vector, and the function that rebuilds it."""
import numpy as np

from autograd.vspaces import vspace


def flatten(value):
    space = vspace(value)
    return space.flat(value), space.unflat


def flatten_func(func, example):
    _, unflatten = flatten(example)
    return lambda flat, *args: flatten(func(unflatten(flat), *args))[0], unflatten, \
        flatten(example)[0]


__all__ = ["flatten", "flatten_func", "np"]
