"""The parts of autograd's core its tests reach."""
from autograd import make_jvp as _make_jvp
from autograd import make_vjp as _make_vjp
from autograd.extend import primitive  # noqa: F401
from autograd.vspaces import VSpace, vspace  # noqa: F401

primitive_vjps: dict = {}  # (autograd's rule table: srcad keeps its own)


def make_vjp(fun, x):
    return _make_vjp(fun)(x)


def make_jvp(fun, x):
    return _make_jvp(fun)(x)
