"""autograd's gradient checks, on srcad: a VJP against a numerical JVP, a JVP against it,
and (order 2) the same checks of the VJP and JVP maps themselves."""
from itertools import product

import numpy as np

import srcad
from autograd.vspaces import vspace

TOL = 1e-6
RTOL = 1e-6
EPS = 1e-6


def scalar_close(a, b):
    return abs(a - b) < TOL or abs(a - b) / abs(a + b) < RTOL


def _numerical_jvp(f, x):
    y = f(x)
    x_vs, y_vs = vspace(x), vspace(y)

    def jvp(v):
        plus = f(x_vs.add(x, x_vs.scalar_mul(v, EPS / 2)))
        minus = f(x_vs.add(x, x_vs.scalar_mul(v, -EPS / 2)))
        return y_vs.scalar_mul(y_vs.add(plus, y_vs.scalar_mul(minus, -1.0)), 1.0 / EPS)
    return jvp


def check_vjp(f, x):
    y, pullback = srcad.vjp(f, x)
    x_vs, y_vs = vspace(x), vspace(y)
    x_v, y_v = x_vs.randn(), y_vs.randn()
    vjp_y = x_vs.covector(pullback(y_vs.covector(y_v)))
    assert vspace(vjp_y) == x_vs, (vspace(vjp_y), x_vs)
    exact = x_vs.inner_prod(x_v, vjp_y)
    numeric = y_vs.inner_prod(y_v, _numerical_jvp(f, x)(x_v))
    assert scalar_close(numeric, exact), (
        f"Derivative (VJP) check of {getattr(f, '__name__', f)} failed with arg {x}:\n"
        f"analytic: {exact}\nnumeric:  {numeric}")


def check_jvp(f, x):
    x_v = vspace(x).randn()
    check_equivalent(srcad.jvp(f, (x,), (x_v,))[1], _numerical_jvp(f, x)(x_v))


def check_equivalent(x, y):
    x_vs, y_vs = vspace(x), vspace(y)
    assert x_vs == y_vs, f"VSpace mismatch:\nx: {x_vs}\ny: {y_vs}"
    v = x_vs.randn()
    assert scalar_close(x_vs.inner_prod(x, v), x_vs.inner_prod(y, v)), \
        f"Value mismatch:\nx: {x}\ny: {y}"


def _check_unary(f, x, modes, order):
    if "fwd" in modes:
        check_jvp(f, x)
        if order > 1:
            v = vspace(x).randn()
            check_grads(_named(lambda x, v: srcad.jvp(f, (x,), (v,))[1], f"jvp_{f.__name__}"),
                        (0, 1), modes, order=order - 1)(x, v)
    if "rev" in modes:
        check_vjp(f, x)
        if order > 1:
            v = vspace(f(x)).randn()
            check_grads(_named(lambda x, v: srcad.vjp(f, x)[1](v), f"vjp_{f.__name__}"),
                        (0, 1), modes, order=order - 1)(x, v)


def _named(function, name: str):
    function.__name__ = name
    return function


def check_grads(f, argnum=0, modes=None, order=2):
    """autograd's `check_grads(f, argnum, modes, order)(*args, **kwargs)`."""
    modes = ["fwd", "rev"] if modes is None else modes
    assert all(m in ("fwd", "rev") for m in modes)

    def checked(*args, **kwargs):
        positions = argnum if isinstance(argnum, (tuple, list)) else (argnum,)

        def unary(x):
            values = list(args)
            for position, value in zip(positions, x if isinstance(argnum, (tuple, list))
                                       else (x,)):
                values[position] = value
            return f(*values, **kwargs)
        x = tuple(args[i] for i in positions) if isinstance(argnum, (tuple, list)) \
            else args[argnum]
        _check_unary(_named(unary, getattr(f, "__name__", "f")), x, modes, order)
    return checked


def combo_check(fun, *args, **kwargs):
    """Check every combination of the argument values (and keyword values) given."""
    def check(*arg_lists, **kwarg_lists):
        pairs = [[(k, v) for v in values] for k, values in kwarg_lists.items()]
        for chosen_args in product(*arg_lists):
            for chosen_kwargs in product(*pairs):
                check_grads(fun, *args, **kwargs)(*chosen_args, **dict(chosen_kwargs))
    return check
