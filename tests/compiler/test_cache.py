"""The cache: transform once, reuse across calls and wrappers, transform again on change."""
import types

import numpy as np
import pytest

import srcad
from srcad.api.testing import numerical_gradient
from tests import programs as p


@pytest.fixture(autouse=True)
def empty_cache():
    srcad.clear_cache()
    yield
    srcad.clear_cache()


def test_second_call_and_second_wrapper_do_not_transform(monkeypatch):
    from srcad.compiler import pipeline
    calls = []
    original = pipeline.transform
    monkeypatch.setattr(pipeline, "transform", lambda *a, **k: calls.append(a) or original(*a, **k))
    x = np.ones(3)
    first = srcad.grad(p.mlp)
    first(np.ones((3, 2)), np.ones(2), np.ones(2), np.ones((4, 3)))
    first(np.ones((3, 2)), np.ones(2), np.ones(2), np.ones((4, 3)))
    srcad.grad(p.mlp)(np.ones((3, 2)), np.ones(2), np.ones(2), np.ones((4, 3)))
    assert len(calls) == 1
    assert srcad.cache_info() == (0, 1, 1) and srcad.grad(p.mlp) is first  # (shared)
    srcad.grad(p.mlp, wrt=1)(np.ones((3, 2)), np.ones(2), np.ones(2), np.ones((4, 3)))
    assert srcad.cache_info().misses == 2 and srcad.cache_info().entries == 2
    del x


def test_redefined_function_is_a_new_entry(tmp_path, monkeypatch):
    import importlib
    import sys
    monkeypatch.syspath_prepend(str(tmp_path))
    module = tmp_path / "redefined_module.py"
    module.write_text("import numpy as np\ndef f(x):\n    return np.sum(x * 2.0)\n")
    first = importlib.import_module("redefined_module")
    assert srcad.grad(first.f)(np.ones(2)).tolist() == [2.0, 2.0]
    module.write_text("import numpy as np\ndef f(x):\n    return np.sum(x * 3.0)\n")
    del sys.modules["redefined_module"]
    import linecache
    linecache.checkcache(str(module))
    second = importlib.import_module("redefined_module")
    assert srcad.grad(second.f)(np.ones(2)).tolist() == [3.0, 3.0]
    assert srcad.cache_info().entries == 2


SCALE = 2.0


def scaled(x):
    return np.sum(x * SCALE)


def test_globals_are_read_at_call_time(monkeypatch):
    gradient = srcad.grad(scaled)
    assert gradient(np.ones(1))[0] == 2.0
    monkeypatch.setitem(globals(), "SCALE", 5.0)
    assert gradient(np.ones(1))[0] == 5.0
    assert srcad.cache_info().misses == 1


activation = np.tanh


def uses_activation(x):
    return np.sum(activation(x))


def test_rebinding_a_called_global_transforms_again(monkeypatch):
    gradient = srcad.grad(uses_activation)
    np.testing.assert_allclose(gradient(np.zeros(2)), [1.0, 1.0])
    monkeypatch.setitem(globals(), "activation", np.sin)
    np.testing.assert_allclose(gradient(np.full(2, np.pi)), [-1.0, -1.0])
    assert srcad.cache_info().misses == 2


def make_closure(scale):
    def closure(x):
        return np.sum(x * scale)
    return closure


def test_closure_cells_are_read_at_call_time():
    closure = make_closure(2.0)
    gradient = srcad.grad(closure)
    assert gradient(np.ones(1))[0] == 2.0
    closure.__closure__[0].cell_contents = 7.0
    assert gradient(np.ones(1))[0] == 7.0
    assert srcad.grad(make_closure(3.0))(np.ones(1))[0] == 3.0
    assert srcad.cache_info().misses == 1


def test_generated_source_is_deterministic_and_in_linecache():
    import linecache
    first = srcad.grad(p.logistic_loss, wrt=(0, 1)).source
    srcad.clear_cache()
    compiled = srcad.compiler.cache.compiled_adjoint(p.logistic_loss, ("w", "b"))
    assert compiled.source == first
    assert "".join(linecache.getlines(compiled.filename)) == first


class Model:
    def __init__(self, scale):
        self.scale = scale

    def loss(self, x):
        return np.sum(np.sin(x) * self.scale)


def test_repeated_array_calls_take_the_quick_path_to_the_same_gradients():
    """After the first call, a float array argument skips argument analysis
    (`Derivative.array_call`): kinds met in turn still get their own program and
    conventions (a tuple for `wrt=(0,)`, a receiver, an integer made float)."""
    x = np.linspace(-1.0, 1.0, 5)
    for gradient in (srcad.grad(scaled, wrt=(0,)), srcad.grad(Model(3.0).loss)):
        expected = srcad.value_and_grad(gradient.derivative.fn, wrt=gradient.derivative.wrt)
        for argument in (x, x, 0.5, 2, x.astype(np.float32), x):
            got, want = gradient(argument), expected(argument)[1]
            for g, w in zip(*((v,) if not isinstance(v, tuple) else v for v in (got, want))):
                assert type(g) is type(w) and np.shape(g) == np.shape(w)
                assert np.asarray(g).dtype == np.asarray(w).dtype
                np.testing.assert_allclose(g, w, rtol=1e-6)


def weighted_distance(a, b, w):
    return np.sum(w * (a - b) ** 2)


def test_repeated_calls_with_several_array_wrt_take_the_quick_path():
    """`grad(f, wrt=(0, 1))` on float arrays skips argument analysis from the second call
    on, and gives what value_and_grad gives, for any mix of kinds met in turn (a float in
    place of an array, a float32 array keeps the program its own kinds chose and its dtype)."""
    a, b, w = np.linspace(-1.0, 1.0, 4), np.linspace(0.5, 2.0, 4), np.arange(1.0, 5.0)
    for wrt in ((0, 1), (2, 0, 1), (1,)):
        gradient = srcad.grad(weighted_distance, wrt=wrt)
        expected = srcad.value_and_grad(weighted_distance, wrt=wrt)
        quick = 0
        for args in ((a, b, w), (a, b, w), (a.astype(np.float32), b, w),
                     (a, 0.5, w), (a, b.astype(np.float32), w), (a, b, w)):
            quick += gradient.derivative.array_call(args) is not None
            got, want = gradient(*args), expected(*args)[1]
            assert type(got) is tuple and len(got) == len(wrt)
            for g, x in zip(got, want):
                assert type(g) is type(x) and np.shape(g) == np.shape(x)
                assert np.asarray(g).dtype == np.asarray(x).dtype
                np.testing.assert_allclose(g, x, rtol=1e-6)
        assert quick >= 2



def pulled(x, w, c):
    return np.sum(w * np.tanh(x) ** 2) * c + OFFSET_SCALE * np.sum(x)


OFFSET_SCALE = 1.0


def test_the_quick_call_of_arrays_takes_each_call_of_another_kind_its_own_way(rng):
    """From the second call on, float64 arrays run generated code that checks the arguments
    the way the general path does (fast_paths.structure_call): an array of another length,
    rank or dtype, an integer for a float, a global rebound since, each gets its own numbers,
    and a subclass of ndarray is refused there too."""
    global OFFSET_SCALE
    x, w = rng.standard_normal(4), rng.standard_normal(4)
    gradient = srcad.grad(pulled, wrt=(0, 1))
    calls = [(x, w, 1.5), (x, w, 1.5), (x[:3], w[:3], 1.5), (x, w, 2),
             (x.reshape(2, 2), w.reshape(2, 2), 1.5), (x.astype(np.float32), w, 1.5),
             (x, w, np.float64(0.5)), (x, w, 1.5)]
    quick = 0
    for args in calls:
        quick += gradient.derivative.array_call(args) is not None
        for got, position in zip(gradient(*args), (0, 1)):
            expected = numerical_gradient(pulled, args, position)
            assert got.dtype == args[position].dtype and got.shape == args[position].shape
            np.testing.assert_allclose(got, expected, rtol=1e-3 if got.dtype == np.float32
                                       else 1e-6, atol=1e-6)
    assert quick >= 4
    OFFSET_SCALE = 3.0
    try:
        np.testing.assert_allclose(gradient(x, w, 1.5)[0], numerical_gradient(
            pulled, (x, w, 1.5), 0), rtol=1e-6)
    finally:
        OFFSET_SCALE = 1.0
    with pytest.raises(srcad.errors.NonDifferentiableInputError):
        gradient(x, np.ma.masked_array(w), 1.5)
    with pytest.raises(srcad.errors.NonDifferentiableInputError):
        gradient(x, w, np.ma.masked_array([1.5]))


def summed_column(x):
    return np.sum(x.reshape(-1, 1) * 2.0)


def test_gradients_of_quick_calls_are_arrays_of_their_own():
    """A gradient the program makes as a view (here of the column's gradient, reshaped) is
    copied by the quick call as by the general one: it owns its memory, which the caller
    may write into."""
    gradient, x = srcad.grad(summed_column), np.arange(3.0)
    calls = [gradient(x) for _ in range(3)]  # (the second makes the quick call, the third runs it)
    for got in calls:
        assert got.flags.writeable and not isinstance(got.base, np.ndarray)
    calls[2] += 1.0
    np.testing.assert_array_equal(calls[1], np.full(3, 2.0))
    np.testing.assert_array_equal(gradient(x), np.full(3, 2.0))


def cube_roots(x):
    return np.sum(np.cbrt(x) * 2.0 + x)


def test_a_rule_registered_after_the_first_gradient_is_used_from_then_on(rule_registry):
    """Every path to a compiled program (float fast path, forward mode, array path,
    value_and_grad, vjp, jvp) sees a rule registered after it compiled: a stale program
    would silently give the derivative of the replaced rule, which it inlined."""
    x, number = np.array([0.3, 0.7]), 0.4
    gradient, both = srcad.grad(cube_roots), srcad.value_and_grad(cube_roots)
    for _ in range(2):  # (twice: the second call takes the quick paths)
        np.testing.assert_allclose(gradient(x), 2.0 / 3.0 * x ** (-2 / 3) + 1.0)
        np.testing.assert_allclose(gradient(number), 2.0 / 3.0 * number ** (-2 / 3) + 1.0)
    srcad.defvjp(np.cbrt, lambda g, ans, x: g * 3.0)
    srcad.defjvp(np.cbrt, lambda g, ans, x: g * 5.0)
    for _ in range(2):
        np.testing.assert_allclose(gradient(x), [7.0, 7.0])
        np.testing.assert_allclose(gradient(number), 7.0)
        np.testing.assert_allclose(both(x)[1], [7.0, 7.0])
        np.testing.assert_allclose(srcad.vjp(cube_roots, x)[1](1.0), [7.0, 7.0])
        np.testing.assert_allclose(srcad.jvp(cube_roots, (x,), (np.ones(2),))[1], 22.0)


def _scaled_square(x, a=2.0):
    return np.sum(a * x ** 2)


def _scaled_square_keyword(x, *, a=2.0):
    return np.sum(a * x ** 2)


def _scaled_cube(x, a=2.0):
    return np.sum(a * x ** 3)


def _copy(fn):
    import types
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    return copy


DERIVATIVES = {  # what each makes of a function and an argument → comparable numbers
    "grad": lambda f, x: srcad.grad(f),
    "value_and_grad": lambda f, x: lambda x: srcad.value_and_grad(f)(x)[1],
    "hvp": lambda f, x: (lambda h: lambda x: h(x, np.ones_like(x)))(srcad.hvp(f)),
    "jacobian fwd": lambda f, x: srcad.jacobian(f, mode="fwd"),
    "jacobian rev": lambda f, x: srcad.jacobian(f, mode="rev"),
}


@pytest.mark.parametrize("x", [1.5, np.array([1.0, 2.0])], ids=["float", "array"])
@pytest.mark.parametrize("kind", sorted(DERIVATIVES))
@pytest.mark.parametrize("change", ["defaults", "kwdefaults", "code"])
def test_a_function_changed_after_its_derivative_was_made_is_differentiated_anew(
        change, kind, x):
    """The same derivative object kept the old program (issue 29, case 5)."""
    fn = _copy(_scaled_square_keyword if change == "kwdefaults" else _scaled_square)
    derivative = DERIVATIVES[kind](fn, x)
    derivative(x)
    if change == "defaults":
        fn.__defaults__ = (5.0,)
    elif change == "kwdefaults":
        fn.__kwdefaults__ = {"a": 5.0}
    else:
        fn.__code__ = _scaled_cube.__code__
    np.testing.assert_allclose(derivative(x), DERIVATIVES[kind](_copy(fn), x)(x))
    expected = {"defaults": 10.0 * x, "kwdefaults": 10.0 * x, "code": 6.0 * x ** 2}[change]
    if kind == "hvp":
        expected = {"defaults": 10.0, "kwdefaults": 10.0, "code": 12.0 * x}[change] \
            * np.ones_like(x)
    np.testing.assert_allclose(derivative(x), expected)


def _sum_of_sines(x):
    return np.sum(np.sin(x))


def _sum_of_cosines(x):
    return np.sum(np.cos(x))


def _cube_instead_of_sine(z):
    return z ** 3


@pytest.mark.parametrize("x", [1.5, np.array([1.0, 2.0])], ids=["float", "array"])
@pytest.mark.parametrize("kind", sorted(DERIVATIVES))
def test_a_module_attribute_rebound_after_the_derivative_was_made_is_followed(
        kind, x, monkeypatch):
    """`np.sin = ...` after the first call: the same derivative object kept the program
    made for NumPy's sine (issue 29, case 5); the attribute chain is guarded now."""
    derivative = DERIVATIVES[kind](_sum_of_sines, x)
    np.testing.assert_allclose(derivative(x), np.cos(x) * (np.ones_like(x) if kind != "hvp"
                                                            else -np.tan(x)))
    monkeypatch.setattr(np, "sin", _cube_instead_of_sine)
    expected = 6.0 * x if kind == "hvp" else 3.0 * x ** 2
    np.testing.assert_allclose(derivative(x), expected)


@pytest.mark.parametrize("kind", sorted(DERIVATIVES))
def test_a_rule_whose_module_attribute_was_rebound_is_refused(kind, monkeypatch):
    """The rule of np.cos calls np.sin: rebound, it gave a wrong derivative of a function
    that calls only np.cos, even after clear_cache (issue 29, case 5)."""
    x = np.array([1.0, 2.0])
    derivative = DERIVATIVES[kind](_sum_of_cosines, x)
    derivative(x)
    monkeypatch.setattr(np, "sin", _cube_instead_of_sine)
    for attempt in (derivative, DERIVATIVES[kind](_sum_of_cosines, x)):
        with pytest.raises(srcad.errors.UnsupportedDerivativeError, match="calls `np.sin`"):
            attempt(x)
        srcad.clear_cache()
    monkeypatch.undo()
    np.testing.assert_allclose(derivative(x), -np.sin(x) if kind != "hvp" else -np.cos(x))


class _Quadratic:
    def __init__(self, a):
        self.a = a

    def __call__(self, x):
        return np.sum(self.a * x ** 2)


def _cubic_call(self, x):
    return np.sum(self.a * x ** 3)


@pytest.mark.parametrize("x", [1.5, np.array([1.0, 2.0])], ids=["float", "array"])
@pytest.mark.parametrize("kind", sorted(DERIVATIVES))
def test_a_callable_object_follows_its_class_call_being_replaced(kind, x, monkeypatch):
    """`Model.__call__ = ...` after the first call: calling the object runs the new
    method, and so does its derivative (issue 29, case 5)."""
    model = _Quadratic(2.0)
    derivative = DERIVATIVES[kind](model, x)
    for _ in range(2):  # (the second call takes the quick path)
        np.testing.assert_allclose(derivative(x), 4.0 * x if kind != "hvp"
                                   else 4.0 * np.ones_like(x))
    monkeypatch.setattr(_Quadratic, "__call__", _cubic_call)
    for _ in range(2):
        np.testing.assert_allclose(derivative(x), 6.0 * x ** 2 if kind != "hvp" else 12.0 * x)


def _corpus():
    from tests import call_programs, control_programs, in_place_programs
    cases = [(fn, arg_sets[0], wrt) for fn, arg_sets, wrt in control_programs.CORPUS]
    cases += [(fn, args, wrt) for fn, args, wrt in call_programs.CORPUS + in_place_programs.CORPUS]
    return cases


@pytest.mark.parametrize("fn, args, wrt", _corpus(), ids=lambda value: getattr(
    value, "__name__", ""))
def test_a_program_serves_its_next_calls_without_transforming_again(fn, args, wrt):
    """Every program's guards hold on the call after the one that made it: a guard on a
    name of the generated code (its stack's `append`) never held, and every call of a
    loop transformed the function again (10 ms instead of 60 us)."""
    derivatives = [srcad.grad(fn, wrt=wrt), srcad.value_and_grad(fn, wrt=wrt),
                   srcad.jacobian(fn, wrt=wrt if isinstance(wrt, int) else wrt[0])]
    for derivative in derivatives:
        try:
            derivative(*args)
        except srcad.errors.SrcadError:
            continue  # (a program this derivative refuses: nothing to serve)
    made = srcad.cache_info().misses
    for derivative in derivatives:
        try:
            derivative(*args)
        except srcad.errors.SrcadError:
            continue
    assert srcad.cache_info().misses == made


_DATA = types.SimpleNamespace(scale=np.ones(3))


def _reads_a_data_attribute(w):
    return np.sum(w * _DATA.scale.sum())


def test_a_data_attribute_reassigned_at_every_step_is_not_a_guard(monkeypatch):
    """`data.scale.sum()`: the bound method is new at every read, and its owner is data:
    guarding it made every step of a training loop transform again (review of issue 29)."""
    gradient = srcad.grad(_reads_a_data_attribute)
    for step in range(5):
        monkeypatch.setattr(_DATA, "scale", np.full(3, float(step)))
        np.testing.assert_allclose(gradient(np.ones(3)), np.full(3, 3.0 * step))
    assert srcad.cache_info().misses == 1


def _factory(w):
    def helper(y):
        y *= w  # (written into: srcad differentiates a functional variant of it)

    def loss(x):
        y = x * 1.0
        helper(y)
        return np.sum(y ** 2)
    return loss


def test_variants_of_closures_from_one_factory_outlive_each_other():
    """Their variants' code objects are equal: a table keyed by them lost the survivor's
    tree when the other died (SourceUnavailableError)."""
    import gc
    first, second = _factory(2.0), _factory(3.0)
    np.testing.assert_allclose(srcad.grad(first)(np.ones(3)), np.full(3, 8.0))
    np.testing.assert_allclose(srcad.grad(second)(np.ones(3)), np.full(3, 18.0))
    previous = srcad.set_cache_size(1)  # (evicts programs, keeps the variants)
    try:
        del first
        gc.collect()
        np.testing.assert_allclose(srcad.grad(second)(np.ones((2, 2))), np.full((2, 2), 18.0))
    finally:
        srcad.set_cache_size(previous)


def _tilted(a):
    def step(x):
        return np.tanh(a * x + 0.5)  # (forward mode refuses `a`, not known to be a number)
    return step


def test_a_grad_made_anew_at_every_step_transforms_once(monkeypatch):
    """`grad(closure)(x)` inside a loop makes a new grad of a new closure at every step:
    the program, and forward mode's refusal of it, are found again, not remade."""
    from srcad.compiler import pipeline
    calls = []
    original = pipeline.transform
    monkeypatch.setattr(pipeline, "transform",
                        lambda *a, **k: calls.append(a[3:]) or original(*a, **k))
    for a in (0.5, 1.0, 1.5, 2.0):
        slope = srcad.grad(_tilted(a))(0.3)
        assert slope == pytest.approx(a * (1 - np.tanh(a * 0.3 + 0.5) ** 2))
    assert len(calls) <= 2, calls  # (forward mode tried once, then the fused program)


def test_a_users_rule_may_call_what_its_module_imported_from_numpy(rule_registry, tmp_path,
                                                                     monkeypatch):
    """Only srcad's own rules must call their package's functions; a user's module that
    re-exports NumPy's `cos` was refused (review of issue 29)."""
    (tmp_path / "reexports.py").write_text(
        "from numpy import cos\n\n\ndef my_sin(x):\n    import numpy as np\n"
        "    return np.sin(x)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import reexports
    srcad.defvjp(reexports.my_sin, lambda g, ans, x: g * reexports.cos(x))

    def doubled(x):
        return reexports.my_sin(x) * 2.0
    assert srcad.grad(doubled)(np.float64(0.5)) == pytest.approx(2.0 * np.cos(0.5))


def test_the_same_request_gives_the_same_derivative_until_the_cache_is_cleared():
    assert srcad.grad(p.mlp) is srcad.grad(p.mlp)
    assert srcad.grad(p.mlp, wrt=1) is not srcad.grad(p.mlp)
    assert srcad.hessian(p.mlp, wrt=1) is srcad.hessian(p.mlp, wrt=1)
    assert srcad.value_and_grad(p.mlp, has_aux=False) is srcad.value_and_grad(p.mlp)
    kept = srcad.grad(p.mlp)
    srcad.clear_cache()
    assert srcad.grad(p.mlp) is not kept
    with pytest.raises(srcad.errors.WrtError):
        srcad.grad(p.mlp, wrt=[0, 1])(np.ones((3, 2)), np.ones(2), np.ones(2), np.ones((4, 3)))
    assert srcad.grad(lambda x: x * x) is not srcad.grad(lambda x: x * x)  # (two functions)


def test_derivatives_asked_for_in_a_loop_stay_bounded():
    from srcad.api import derivative
    previous = srcad.set_cache_size(20)
    try:
        for k in range(70):
            srcad.grad(lambda x, k=k: x * k)
        assert len(derivative._SHARED) == 20
    finally:
        srcad.set_cache_size(previous)
