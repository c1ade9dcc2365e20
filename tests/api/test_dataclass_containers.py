"""Dataclasses and classes registered with `srcad.register_pytree_node` as parameters: every
mode differentiates their float fields and gives back an instance of the same class,
checked against central differences."""
import dataclasses

import numpy as np
import pytest

import srcad
from srcad.errors import MissingRuleError, TangentError, UsageError


@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: float


@dataclasses.dataclass(frozen=True)
class Frozen:
    w: np.ndarray
    b: float


@dataclasses.dataclass
class Net:
    layers: list
    scales: dict


@dataclasses.dataclass
class Labeled:
    w: np.ndarray
    name: str
    repeats: int

    @property
    def doubled(self):
        return 2 * self.w


class Pair:  # a user's class, registered below
    def __init__(self, a, b):
        self.a, self.b = a, b


srcad.register_pytree_node(Pair, lambda q: ((q.a, q.b), None),
                           lambda aux, children: Pair(*children))


def loss(p, x):
    return np.sum(np.tanh(x @ p.w + p.b) ** 2) + p.b * p.b


def net_loss(net, x):
    h = x
    for w in net.layers:
        h = np.tanh(h @ w)
    return np.sum(h * net.scales["out"])


def pair_loss(q, x):
    return np.sum(np.sin(q.a * x) * q.b)


def cubic(p):
    return np.sum(p.w ** 3) * p.b + p.b ** 2


def labeled_loss(p, x):
    return np.sum(np.sin(p.w * x)) * p.repeats + len(p.name)


def doubled_loss(p):
    return np.sum(p.doubled)


# the tests' own view of the containers (the oracle does not use srcad's walkers)
def _flat(value) -> list:
    if isinstance(value, dict):
        return [leaf for key in value for leaf in _flat(value[key])]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _flat(item)]
    if isinstance(value, Pair):
        return _flat([value.a, value.b])
    if isinstance(value, Labeled):
        return [value.w]
    if dataclasses.is_dataclass(value):
        return _flat([getattr(value, f.name) for f in dataclasses.fields(value)])
    return [value]


def _with(value, leaves):
    """`value` with its leaves taken from the iterator `leaves`."""
    if isinstance(value, dict):
        return {key: _with(value[key], leaves) for key in value}
    if isinstance(value, list):
        return [_with(item, leaves) for item in value]
    if isinstance(value, Pair):
        return Pair(_with(value.a, leaves), _with(value.b, leaves))
    if isinstance(value, Labeled):
        return dataclasses.replace(value, w=next(leaves))
    if dataclasses.is_dataclass(value):
        return dataclasses.replace(value, **{f.name: _with(getattr(value, f.name), leaves)
                                             for f in dataclasses.fields(value)})
    return next(leaves)


def _central(f, p, args, eps=1e-6) -> list:
    """The gradient of `f(p, *args)` by central differences, leaf by leaf as `_flat`."""
    base = [np.array(leaf, dtype=float) for leaf in _flat(p)]
    gradient = [np.zeros_like(leaf) for leaf in base]
    for k, leaf in enumerate(base):
        for index in np.ndindex(leaf.shape):
            values = []
            for step in (eps, -eps):
                moved = [b.copy() for b in base]
                moved[k][index] += step
                values.append(f(_with(p, iter(m if m.ndim else float(m) for m in moved)), *args))
            gradient[k][index] = (values[0] - values[1]) / (2 * eps)
    return gradient


def _close(gradient, expected):
    for got, want in zip(_flat(gradient), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


CASES = {
    "plain": (loss, lambda r: Params(r.standard_normal((3, 2)), 0.5),
              lambda r: (r.standard_normal((4, 3)),)),
    "frozen": (loss, lambda r: Frozen(r.standard_normal((3, 2)), -0.3),
               lambda r: (r.standard_normal((4, 3)),)),
    "nested": (net_loss, lambda r: Net([r.standard_normal((3, 3)), r.standard_normal((3, 2))],
                                       {"out": r.standard_normal(2)}),
               lambda r: (r.standard_normal((4, 3)),)),
    "registered": (pair_loss, lambda r: Pair(r.standard_normal(3), 1.5),
                   lambda r: (r.standard_normal(3),)),
    "constant fields": (labeled_loss, lambda r: Labeled(r.standard_normal(3), "abc", 2),
                        lambda r: (r.standard_normal(3),)),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("mode", ["source", "value_and_grad", "vjp", "tape"])
def test_reverse_modes_give_the_class_back_with_the_right_numbers(case, mode, rng):
    f, make, more = CASES[case]
    p, args = make(rng), more(rng)
    if mode == "source":
        gradient = srcad.grad(f)(p, *args)
    elif mode == "value_and_grad":
        value, gradient = srcad.value_and_grad(f)(p, *args)
        assert np.isclose(value, f(p, *args))
    elif mode == "vjp":
        _, pullback = srcad.vjp(f, p, *args)
        gradient = pullback(1.0)
    else:
        gradient = srcad.tape.grad(f)(p, *args)
    assert type(gradient) is type(p)
    _close(gradient, _central(f, p, args))


@pytest.mark.parametrize("case", CASES)
def test_jvp_takes_a_tangent_of_the_class(case, rng):
    f, make, more = CASES[case]
    p, args = make(rng), more(rng)
    direction = [rng.standard_normal(np.shape(leaf)) for leaf in _flat(p)]
    tangent = _with(p, iter(d if d.ndim else float(d) for d in direction))
    value, derivative = srcad.jvp(f, (p, *args), (tangent, *[np.zeros_like(a) for a in args]))
    expected = sum(np.sum(g * d) for g, d in zip(_central(f, p, args), direction))
    assert np.isclose(value, f(p, *args))
    np.testing.assert_allclose(derivative, expected, rtol=1e-6, atol=1e-8)


def test_constant_fields_ride_along_unchanged(rng):
    p = Labeled(rng.standard_normal(3), "abc", 2)
    gradient = srcad.grad(labeled_loss)(p, np.ones(3))
    assert gradient.name == "abc" and gradient.repeats == 2


def test_hessian_of_a_dataclass_nests_the_class(rng):
    p = Params(rng.standard_normal(2), 0.7)
    h = srcad.hessian(cubic)(p)
    assert type(h) is Params and type(h.w) is Params and type(h.b) is Params
    np.testing.assert_allclose(h.w.w, np.diag(6 * p.w * p.b), rtol=1e-12)
    np.testing.assert_allclose(h.w.b, 3 * p.w ** 2, rtol=1e-12)
    np.testing.assert_allclose(h.b.w, 3 * p.w ** 2, rtol=1e-12)
    np.testing.assert_allclose(h.b.b, 2.0, rtol=1e-12)


def test_clip_by_global_norm_keeps_the_class():
    clipped, norm = srcad.clip_by_global_norm(Params(np.array([3.0]), 4.0), 1.0)
    assert type(clipped) is Params and norm == 5.0
    np.testing.assert_allclose(clipped.w, [0.6])
    assert np.isclose(clipped.b, 0.8)


def test_a_property_read_is_refused_in_source_mode(rng):
    with pytest.raises(MissingRuleError, match="doubled"):
        srcad.grad(doubled_loss)(Labeled(rng.standard_normal(3), "abc", 2))


def test_a_tangent_of_another_shape_is_refused(rng):
    p = Params(rng.standard_normal(3), 0.5)
    with pytest.raises(TangentError, match="1.0"):
        srcad.jvp(cubic, (p,), (Params(np.ones(3), 1),))


@pytest.mark.parametrize("arguments", [(Pair, None, None), ("Pair", len, len), (dict, len, len)])
def test_register_pytree_node_refuses_what_it_cannot_use(arguments):
    with pytest.raises(UsageError):
        srcad.register_pytree_node(*arguments)


def test_gradient_tape_packs_a_dataclass_of_variables():
    p = Params(srcad.Variable(np.array([0.3, 1.0])), srcad.Variable(0.5))
    with srcad.GradientTape() as tape:
        y = np.sum(np.sin(p.w) * p.b)
    gradient = tape.gradient(y, p)
    assert type(gradient) is Params
    np.testing.assert_allclose(np.asarray(gradient.w), 0.5 * np.cos([0.3, 1.0]))
    np.testing.assert_allclose(np.asarray(gradient.b), np.sum(np.sin([0.3, 1.0])))


# ---- dataclasses built inside the differentiated function ------------------------------------
@dataclasses.dataclass
class Checked:
    w: np.ndarray

    def __post_init__(self):  # (checks, and keeps what it was given: differentiated)
        if np.ndim(self.w) != 1:
            raise ValueError("w must be a vector")
        self.w = np.asarray(self.w)


@dataclasses.dataclass
class Scaled:
    w: float

    def __init__(self, w):  # (its own: the field holds a value computed from the argument)
        self.w = 2.0 * w


def built_then_read(w, b, x):
    p = Params(w * 2.0, b=np.sin(b))
    q = Frozen(p.w + 1.0, p.b * b)
    tagged = Labeled(q.w, "tag", 3)
    return loss(q, x) + np.sum(tagged.w) * tagged.repeats


def built_with_post_init(w):
    return np.sum(Checked(w * 2.0).w)


def built_with_own_init(w):
    return Scaled(w).w ** 2


def scaled_loss(p):
    return p.w ** 2


def _built_central(w, b, x, eps=1e-6):
    gw = np.zeros_like(w)
    for index in np.ndindex(w.shape):
        step = np.zeros_like(w)
        step[index] = eps
        gw[index] = (built_then_read(w + step, b, x) - built_then_read(w - step, b, x)) / (2 * eps)
    gb = (built_then_read(w, b + eps, x) - built_then_read(w, b - eps, x)) / (2 * eps)
    return gw, gb


@pytest.mark.parametrize("mode", ["source", "tape", "jvp", "hessian"])
def test_a_dataclass_built_in_the_function_carries_its_fields_derivatives(mode, rng):
    """`Params(w * 2, b=np.sin(b))`, read back by attribute: each argument gets its field's
    derivative (positional, keyword, frozen, with a constant field)."""
    w, b, x = rng.standard_normal((3, 2)), 0.4, rng.standard_normal((4, 3))
    gw, gb = _built_central(w, b, x)
    if mode in ("source", "tape"):
        grad = srcad.grad if mode == "source" else srcad.tape.grad
        got_w, got_b = grad(built_then_read, wrt=(0, 1))(w, b, x)
        np.testing.assert_allclose(got_w, gw, rtol=1e-6, atol=1e-8)
        assert got_b == pytest.approx(gb, rel=1e-6)
    elif mode == "jvp":
        dw = rng.standard_normal(w.shape)
        _, slope = srcad.jvp(built_then_read, (w, b, x), (dw, 0.5, np.zeros_like(x)))
        assert slope == pytest.approx(np.sum(gw * dw) + 0.5 * gb, rel=1e-6)
    else:
        def of_b(b):
            return built_then_read(w, b, x)
        eps = 1e-4
        curvature = (srcad.grad(of_b)(b + eps) - srcad.grad(of_b)(b - eps)) / (2 * eps)
        assert srcad.hessian(of_b)(b) == pytest.approx(curvature, rel=1e-5)


def test_a_dataclass_whose_init_computes_its_fields_is_refused_where_it_is_built(rng):
    """A field that holds what it was passed carries its derivative (a __post_init__ that
    checks), one that an own __init__ computes is refused (it held 2 w: a wrong factor)."""
    np.testing.assert_allclose(srcad.grad(built_with_post_init)(np.ones(3)), np.full(3, 2.0))
    with pytest.raises(MissingRuleError, match="does not hold the argument"):
        srcad.grad(built_with_own_init)(1.5)


def test_a_gradient_is_built_without_running_the_classes_own_init():
    """The gradient of a parameter of a class with its own __init__ holds the derivatives
    as they are (rebuilding it with __init__ doubled them)."""
    gradient = srcad.grad(scaled_loss)(Scaled(1.5))
    assert type(gradient) is Scaled and gradient.w == pytest.approx(6.0)
    assert srcad.tape.grad(scaled_loss)(Scaled(1.5)).w == pytest.approx(6.0)


class Model:  # registered: `w_init` is kept beside the children, in flatten's aux
    def __init__(self, w, w_init):
        self.w, self.w_init = w, w_init


srcad.register_pytree_node(Model, lambda m: ((m.w,), m.w_init),
                           lambda aux, children: Model(children[0], aux))


def model_loss(m):
    return np.sum(m.w * m.w_init)


def test_a_registered_attribute_that_is_also_aux_data_is_refused():
    """`w_init` is the same array as the child `w`: reading it is ambiguous (it was taken
    for the child: twice the gradient)."""
    w = np.array([1.0, 2.0])
    with pytest.raises(MissingRuleError, match="data kept beside them"):
        srcad.grad(model_loss)(Model(w, w))
    np.testing.assert_allclose(srcad.grad(model_loss)(Model(w, w.copy() + 1.0)).w, w + 1.0)
