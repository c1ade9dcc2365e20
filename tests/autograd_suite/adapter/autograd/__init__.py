"""autograd's differential operators, each written with srcad's (grad, vjp, jvp, jacobian,
hessian); `autograd.numpy` is NumPy with the few functions autograd adds (numpy_api.py) and
`autograd.scipy` is SciPy itself, since srcad differentiates plain NumPy code."""
import builtins
import inspect
import sys

import numpy as np

import srcad
from autograd import numpy_api

numpy = numpy_api  # (`import autograd.numpy as np` reads this attribute of the package)
sys.modules.update({"autograd.numpy": numpy_api, "autograd.numpy.random": np.random,
                    "autograd.numpy.linalg": numpy_api.linalg, "autograd.numpy.fft": np.fft})
try:
    import scipy
    import scipy.integrate
    import scipy.linalg
    import scipy.signal
    import scipy.special
    import scipy.stats
except ImportError:  # (autograd's SciPy tests skip themselves)
    pass
else:
    from autograd import scipy as _scipy_adapter  # noqa: F401  (registers autograd.scipy.*)

from autograd.extend import primitive  # noqa: E402,F401
from autograd.vspaces import vspace  # noqa: E402

dict, list, tuple, isinstance, type = (builtins.dict, builtins.list, builtins.tuple,
                                       builtins.isinstance, builtins.type)


def _wrt(argnum):
    return builtins.tuple(argnum) if builtins.isinstance(argnum, builtins.list) else argnum


def grad(fun, argnum=0):
    """
    Returns a function which computes the gradient of `fun` with respect to
    positional argument number `argnum` (srcad.grad)."""
    gradient = srcad.grad(fun, wrt=_wrt(argnum))
    name = getattr(fun, "__name__", "[unknown name]")
    gradient.__name__ = f"grad_of_{name}_wrt_argnum_{argnum}"
    gradient.__doc__ = (f"    grad of function {name} with respect to argument number "
                        f"{argnum}. Takes the\n    same arguments as {name} but returns the "
                        "grad.\n    ")
    return gradient


def value_and_grad(fun, argnum=0):
    return srcad.value_and_grad(fun, wrt=_wrt(argnum))


def grad_and_aux(fun, argnum=0):
    derivative = srcad.value_and_grad(fun, wrt=_wrt(argnum), has_aux=True)

    def both(*args, **kwargs):
        (_, aux), gradient = derivative(*args, **kwargs)
        return gradient, aux
    return both


def make_vjp(fun, argnum=0):
    def made(*args, **kwargs):
        output, pullback = srcad.vjp(fun, *args, wrt=_wrt(argnum), **kwargs)
        return pullback, output
    return made


def make_jvp(fun, argnum=0):
    def made(*args, **kwargs):
        def jvp(v):
            positions = argnum if builtins.isinstance(argnum, (builtins.tuple, builtins.list)) \
                else (argnum,)
            given = v if builtins.isinstance(argnum, (builtins.tuple, builtins.list)) else (v,)
            tangents = [vspace(a).zeros() for a in args]
            for position, tangent in zip(positions, given):
                tangents[position] = tangent
            return srcad.jvp(lambda *a: fun(*a, **kwargs), args, builtins.tuple(tangents))
        return jvp
    return made


def elementwise_grad(fun, argnum=0):
    def gradient(*args, **kwargs):
        output, pullback = srcad.vjp(fun, *args, wrt=_wrt(argnum), **kwargs)
        if vspace(output).iscomplex:
            raise TypeError("Elementwise_grad only applies to real-output functions.")
        return pullback(vspace(output).ones())
    return gradient


def deriv(fun, argnum=0):
    def derivative(*args, **kwargs):
        return make_jvp(fun, argnum)(*args, **kwargs)(vspace(args[argnum]).ones())[1]
    return derivative


def jacobian(fun, argnum=0):
    return srcad.jacobian(fun, wrt=_wrt(argnum))


def hessian(fun, argnum=0):
    return srcad.hessian(fun, wrt=_wrt(argnum))


def holomorphic_grad(fun, argnum=0):
    return grad(lambda *args: np.real(fun(*args)), argnum)


def grad_named(fun, argname):
    return srcad.grad(fun, wrt=argname)


def make_hvp(fun, argnum=0):
    return make_vjp(grad(fun, argnum), argnum)


def hessian_tensor_product(fun, argnum=0):
    fun_grad = grad(fun, argnum)

    def vector_dot_grad(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return np.tensordot(fun_grad(*args, **kwargs), vector, np.ndim(vector))
    return grad(vector_dot_grad, argnum)


hessian_vector_product = hessian_tensor_product


def tensor_jacobian_product(fun, argnum=0):
    def vector_dot_fun(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return np.tensordot(vector, fun(*args, **kwargs), axes=np.ndim(vector))
    return jacobian(vector_dot_fun, argnum)


vector_jacobian_product = tensor_jacobian_product


def make_ggnvp(f, g=lambda x: 1.0 / 2 * np.sum(x ** 2, axis=-1), f_argnum=0):
    def made(*args, **kwargs):
        f_x, f_vjp = srcad.vjp(f, *args, wrt=f_argnum, **kwargs)
        _, g_hvp = srcad.vjp(srcad.grad(g), f_x)

        def ggnvp(v):
            tangents = [vspace(a).zeros() for a in args]
            tangents[f_argnum] = v
            _, f_jv = srcad.jvp(lambda *a: f(*a, **kwargs), args, builtins.tuple(tangents))
            return f_vjp(g_hvp(f_jv))
        return ggnvp
    return made


def multigrad_dict(fun):
    names = builtins.list(inspect.signature(fun).parameters)

    def gradients(*args, **kwargs):
        bound = inspect.signature(fun).bind(*args, **kwargs).arguments
        wrt = builtins.tuple(name for name in names if name in bound)
        values = srcad.grad(fun, wrt=wrt)(*args, **kwargs)
        return builtins.dict(zip(wrt, values if builtins.len(wrt) > 1 else (values,)))
    return gradients


def checkpoint(fun):
    return fun
