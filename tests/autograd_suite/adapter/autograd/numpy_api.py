"""`autograd.numpy`: NumPy itself, with what autograd's wrapper adds to it: `where` taking
`x` and `y` by keyword and giving Python values back for Python inputs, `make_diagonal`,
`row_stack` (which NumPy 2.5 removed) and `linalg._dot` and `linalg.T`. Plain NumPy code,
which srcad differentiates as the user's."""
import types

import numpy


def where(condition, *args, **kwargs):
    if not args and not kwargs:
        return numpy.where(condition)
    if len(args) + len(kwargs) != 2:
        raise ValueError("either both or neither of x and y should be given")
    x = args[0] if args else kwargs["x"]
    y = args[1] if len(args) > 1 else kwargs["y"]
    result = numpy.where(condition, x, y)
    if _holds_numpy(condition) or _holds_numpy(x) or _holds_numpy(y):
        return result
    return result.tolist()


def _holds_numpy(value) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_holds_numpy(item) for item in value)
    return isinstance(value, (numpy.ndarray, numpy.generic))


def make_diagonal(D, offset=0, axis1=0, axis2=1):
    """Arrays whose last two axes hold `D`'s last axis on their diagonal."""
    if not (offset == 0 and axis1 == -1 and axis2 == -2):
        raise NotImplementedError("make_diagonal supports offset=0, axis1=-1, axis2=-2 only")
    return numpy.expand_dims(D, -1) * numpy.eye(numpy.shape(D)[-1])


def row_stack(arrays):
    return numpy.vstack(arrays)


def _dot(a, b):
    return numpy.einsum("...ij,...jk->...ik", a, b)


def _transposed(x):
    return numpy.swapaxes(x, -1, -2)


linalg = types.ModuleType("autograd.numpy.linalg")
linalg.__getattr__ = lambda name: getattr(numpy.linalg, name)
linalg._dot, linalg.T = _dot, _transposed


def __getattr__(name):
    return getattr(numpy, name)
