"""Shared assertions (a gradient checked against central finite differences) and the
program corpora as test cases."""
import tracemalloc

import numpy as np
import pytest

import srcad
from srcad.api.testing import numerical_gradient


def positions(wrt) -> tuple:
    return wrt if isinstance(wrt, tuple) else (wrt,)


def assert_gradient_matches_finite_differences(fn, args, wrt, rtol=1e-5, atol=1e-6,
                                               numeric_fn=None):
    """srcad.grad(fn, wrt)(*args) against central differences of `numeric_fn` (default
    `fn`), argument by argument, values and shapes."""
    gradients = srcad.grad(fn, wrt=wrt)(*args)
    gradients = gradients if isinstance(wrt, tuple) else (gradients,)
    for position, gradient in zip(positions(wrt), gradients):
        expected = numerical_gradient(numeric_fn or fn, args, position)
        np.testing.assert_allclose(gradient, expected, rtol=rtol, atol=atol)
        assert np.shape(gradient) == np.shape(args[position])


def corpus_cases():
    """Every program of the control-flow, in-place and call corpora, as pytest params
    `(fn, args, wrt)`."""
    from tests import call_programs, control_programs, in_place_programs
    for fn, arg_sets, wrt in control_programs.CORPUS:
        for k, args in enumerate(arg_sets):
            yield pytest.param(fn, args, wrt, id=f"{fn.__name__}-{k}")
    for module in (in_place_programs, call_programs):
        for k, (fn, args, wrt) in enumerate(module.CORPUS):
            yield pytest.param(fn, args, wrt, id=f"{fn.__name__}-{k}")


def second_order_cases():
    """The corpus programs whose first `wrt` argument is an array or a float."""
    for case in corpus_cases():
        fn, args, wrt = case.values
        if not isinstance(args[positions(wrt)[0]], (dict, list, tuple)):
            yield case


def random_direction(args, wrt, seed):
    """The first `wrt` argument's position and a random direction of its shape."""
    position = positions(wrt)[0]
    x = args[position]
    rng = np.random.default_rng(seed)
    return position, rng.standard_normal(np.shape(x)) if np.ndim(x) else float(
        rng.standard_normal())


def passes_through(fn):
    """A decorator from another module (its globals are not the decorated function's)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


def peak_memory(fn, *args) -> int:
    """Peak bytes traced during `fn(*args)`, after a first call (transformation, caches)."""
    fn(*args)
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def load_function(source: str, directory, stem: str, name: str = "f"):
    """`name` from `source` (NumPy imported as np) written to a new module file in
    `directory`: srcad reads a function's source from its file."""
    import importlib.util
    number = len(list(directory.glob(f"{stem}_*.py")))
    path = directory / f"{stem}_{number}.py"
    path.write_text("import numpy as np\n\n\n" + source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)
