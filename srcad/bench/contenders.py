"""contenders: how each tool computes a workload's derivative, as a zero-argument callable.

`missing(contender)` says, before anything runs, why a contender whose package is not
installed cannot run at all; `make(contender, workload)` returns `(call, None)` or
`(None, reason)` when the contender cannot run this workload (refuses the program, cannot
compile it). Peers get the workload's own source with `np` rebound to their array module, so
every contender runs the same program. Imports of peers happen here, lazily.
"""
from __future__ import annotations

import importlib
import importlib.util
import types

CONTENDERS = ("hand", "hand.numba", "primal", "srcad", "srcad.numba", "tape", "autograd", "jax",
              "jax.jit", "torch")

# The package each peer needs (the others need srcad and NumPy alone), and how to get it.
PACKAGES = {"hand.numba": "numba", "srcad.numba": "numba", "autograd": "autograd", "jax": "jax",
            "jax.jit": "jax", "torch": "torch"}
_INSTALL = {"numba": "pip install 'srcad[numba]'"}


def missing(contender: str) -> str | None:
    """Why `contender` cannot run here (its package is not installed), or None."""
    return not_installed(PACKAGES[contender]) if contender in PACKAGES else None


def not_installed(package: str) -> str | None:
    """"numba is not installed (pip install ...)" when it is not, else None. Looks the
    package up without importing it (importing JAX or PyTorch takes seconds)."""
    if importlib.util.find_spec(package) is not None:
        return None
    return f"{package} is not installed ({_INSTALL.get(package, f'pip install {package}')})"


def make(contender: str, workload):
    """`(call, reason)`: exactly one is None. The call may still fail when it runs (a peer
    refusing in-place writes, Python control flow on traced values): the caller reports it."""
    note = workload.notes.get(contender)
    if note:
        return None, note
    try:
        return _MAKERS[contender](workload), None
    except _Unavailable as missing:
        return None, str(missing)


class _Unavailable(Exception):
    """The contender cannot run this workload here."""


def _bound(workload, derivative):
    args = workload.make_args()
    return lambda: derivative(*args)


def _hand(workload):
    return _bound(workload, workload.hand)


def _hand_numba(workload):
    """The hand-written derivative in numba's subset (`Workload.hand_compiled`) compiled by
    numba: the compiled-code reference. A new compilation each time, so the first call pays
    numba's compiling, as a user's would."""
    numba = _module("numba")
    if workload.hand_compiled is None:
        raise _Unavailable("no hand-written derivative in numba's subset for this workload "
                           "(those of the loops of numbers and small arrays have one)")
    return _bound(workload, numba.njit(workload.hand_compiled))


def _primal(workload):
    """The function itself, no derivative: what a gradient's cost is measured against
    (reverse mode's cheap-gradient principle: a small multiple of it)."""
    args = workload.make_args()
    if workload.kind == "hvp":
        args = args[:-1]
    return lambda: workload.fn(*args)


def _srcad(workload):
    import srcad
    maker = {"grad": srcad.grad, "jacobian": srcad.jacobian, "hessian": srcad.hessian,
             "hvp": srcad.hvp}[workload.kind]
    return _bound(workload, maker(workload.fn, wrt=workload.wrt))


def _srcad_numba(workload):
    """`srcad.grad(f, backend="numba")`, where numba compiles the program: one call made
    here tells (the Python program it falls back to is contender "srcad")."""
    import srcad
    from srcad.compiler import numba_backend
    _module("numba")
    if workload.kind != "grad":
        raise _Unavailable("the numba backend compiles grad's programs")
    call = _bound(workload, srcad.grad(workload.fn, wrt=workload.wrt, backend="numba"))
    call()
    if not any(code.co_name.startswith(workload.fn.__name__ + "_")  # (its programs' names)
               for code in numba_backend.compiled_codes()):
        raise _Unavailable("numba does not compile this program (no loop, or a call it cannot "
                           "type): srcad runs it in Python")
    return call


def _tape(workload):
    from srcad import tape
    import numpy as np
    positions = workload.wrt if isinstance(workload.wrt, tuple) else (workload.wrt,)
    if workload.kind == "grad":
        return _bound(workload, tape.grad(workload.fn, wrt=workload.wrt))
    if workload.kind == "hvp":  # nested tapes: the gradient of <gradient, v>
        inner = tape.grad(workload.fn, wrt=workload.wrt)

        def product(*args):
            *primal, v = args

            def directional(w, *rest):
                return np.sum(inner(w, *rest) * v)
            return tape.grad(directional)(*primal)
        return _bound(workload, product)
    if workload.kind == "hessian":  # nested tapes: the Jacobian of the gradient
        def hessian(x, *rest):
            with tape.GradientTape() as outer:
                watched = tape.constant(x)
                outer.watch(watched)
                with tape.GradientTape() as inner:
                    inner.watch(watched)
                    value = workload.fn(watched, *rest)
                gradient = inner.gradient(value, watched)
            return outer.jacobian(gradient, watched)
        return _bound(workload, hessian)

    def jacobian(*args):
        with tape.GradientTape() as recorder:
            watched = [tape.constant(a) if i in positions else a for i, a in enumerate(args)]
            for i in positions:
                recorder.watch(watched[i])
            output = workload.fn(*watched)
        return recorder.jacobian(output, watched[positions[0]])
    return _bound(workload, jacobian)


def _rebound(fn, module, **others):
    """`fn` running with `np` (and the names in `others`) bound to another array module."""
    return types.FunctionType(fn.__code__, {**fn.__globals__, "np": module, **others},
                              fn.__name__, fn.__defaults__, fn.__closure__)


def _module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        raise _Unavailable(f"{name.split('.')[0]} is not installed") from None


def _argnums(workload):
    return workload.wrt


def _autograd(workload):
    autograd = _module("autograd")
    fn = _rebound(workload.fn, _module("autograd.numpy"), stats=_module("autograd.scipy.stats"))
    if workload.kind == "grad":
        derivative = autograd.grad(fn, _argnums(workload))
    elif workload.kind == "jacobian":
        derivative = autograd.jacobian(fn, _argnums(workload))
    elif workload.kind == "hessian":
        derivative = autograd.hessian(fn, _argnums(workload))
    else:
        product = autograd.hessian_vector_product(fn, _argnums(workload))
        derivative = lambda *args: product(*args[:-1], args[-1])  # noqa: E731
    return _bound(workload, derivative)


def _jax_derivative(workload):
    jax = _module("jax")
    jax.config.update("jax_enable_x64", True)
    fn = _rebound(workload.fn, _module("jax.numpy"))
    if workload.kind == "grad":
        return jax.grad(fn, _argnums(workload))
    if workload.kind == "jacobian":
        return jax.jacfwd(fn, _argnums(workload))
    if workload.kind == "hessian":
        return jax.hessian(fn, _argnums(workload))
    gradient = jax.grad(fn, _argnums(workload))
    return lambda *args: jax.jvp(lambda w: gradient(w, *args[1:-1]), (args[0],),
                                 (args[-1],))[1]


def _jax(workload):
    return _bound(workload, _blocking(_jax_derivative(workload)))


def _jax_jit(workload):
    return _bound(workload, _blocking(_module("jax").jit(_jax_derivative(workload))))


def _blocking(derivative):
    """JAX returns before its arrays are computed: wait for them, or nothing is timed."""
    import jax
    return lambda *args: jax.block_until_ready(derivative(*args))


def _torch(workload):
    torch = _module("torch")
    from srcad.bench.torch_numpy import namespace
    fn = _rebound(workload.fn, namespace(torch))
    positions = workload.wrt if isinstance(workload.wrt, tuple) else (workload.wrt,)

    def derivative(*args):
        tensors = [torch.tensor(a, dtype=torch.float64, requires_grad=i in positions)
                   if not isinstance(a, float) or i in positions else a
                   for i, a in enumerate(args)]
        if workload.kind == "jacobian":
            return torch.autograd.functional.jacobian(
                lambda x: fn(x, *tensors[1:]), tensors[0]).numpy()
        if workload.kind == "hessian":
            return torch.autograd.functional.hessian(
                lambda x: fn(x, *tensors[1:]), tensors[0]).numpy()
        if workload.kind == "hvp":
            return torch.autograd.functional.hvp(
                lambda w: fn(w, *tensors[1:-1]), tensors[0], tensors[-1])[1].numpy()
        grads = torch.autograd.grad(fn(*tensors), [tensors[i] for i in positions])
        grads = tuple(g.numpy() for g in grads)
        return grads if isinstance(workload.wrt, tuple) else grads[0]
    return _bound(workload, derivative)


_MAKERS = {"hand": _hand, "hand.numba": _hand_numba, "primal": _primal, "srcad": _srcad,
           "srcad.numba": _srcad_numba, "tape": _tape, "autograd": _autograd, "jax": _jax,
           "jax.jit": _jax_jit, "torch": _torch}
