"""User objects as memory ("records", kernels/pytrees.py): attributes written and read back,
a plain class built by its `__init__` from differentiated values, methods that update their
object, an object called through `__call__`. The corpus programs of tests/in_place_programs.py
run through reverse, forward and second order; here: Python's values kept, tape mode agreeing,
what stays refused and why, and the program a user reads."""
import dataclasses
import re

import numpy as np
import pytest

import srcad
from srcad.errors import MissingRuleError, UnsoundAliasingError, UnsupportedSyntaxError
from tests import in_place_programs as p
from tests.checks import assert_gradient_matches_finite_differences

X = np.array([0.5, -1.3, 2.1])
RECORD_PROGRAMS = [
    (p.attributes_written_and_read_back, (np.array([0.5, -0.2, 0.4]),), 0),
    (p.augmented_attributes, (X,), 0),
    (p.methods_update_their_object, (X,), 0),
    (p.layers_built_and_called, (np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([0.1, 0.2]),
                                 np.array([[0.3, -0.7], [0.9, 0.2]])), 0),
    (p.integrates_with_an_object, (np.array([0.5, 1.5]), 0.8), 0),
]


@pytest.mark.parametrize("fn, args, wrt", RECORD_PROGRAMS,
                         ids=[fn.__name__ for fn, _, _ in RECORD_PROGRAMS])
def test_values_are_pythons_and_the_tape_agrees(fn, args, wrt):
    value, gradient = srcad.value_and_grad(fn, wrt=wrt)(*args)
    assert value == fn(*args)
    with srcad.GradientTape() as tape:
        watched = srcad.Variable(args[wrt])
        result = fn(*args[:wrt], watched, *args[wrt + 1:])
    np.testing.assert_allclose(tape.gradient(result, watched), gradient, rtol=1e-12)


class Plain:
    """No `__init__`: its attributes are set after it is made."""


def test_attribute_names_of_array_methods_are_the_records():
    def f(x):
        s = Plain()
        s.mean = x * 2.0  # (not `np.ndarray.mean`)
        s.T = np.sin(x)
        s.copy = [x]
        return np.sum(s.mean * s.T) + np.sum(s.copy[0])
    assert_gradient_matches_finite_differences(f, (X,), 0)


class Keywords:
    def __init__(self, first, *rest, scale=2.0, **named):
        self.value = first * scale + sum(rest)
        for extra in named.values():
            self.value = self.value + extra * 1.0


def test_a_constructor_with_every_kind_of_parameter():
    def f(x):
        made = Keywords(x[0], x[1], x[2], scale=3.0, bonus=x[0] * x[1])
        return made.value ** 2
    assert_gradient_matches_finite_differences(f, (X,), 0)
    tangent = srcad.jvp(f, (X,), (np.ones(3),))[1]
    np.testing.assert_allclose(tangent, srcad.grad(f)(X).sum())


class Base:
    def __init__(self, W):
        self.W = W
        self.training = True

    def forward(self, h):
        return self.W @ h


class Affine(Base):
    def __init__(self, W, b):
        super().__init__(W * 2.0)
        self.b = b

    def forward(self, h):
        self.last = super().forward(h) + self.b
        return np.tanh(self.last) if self.training else self.last


def test_a_subclass_calls_its_parents_methods_through_super():
    def f(W, b):
        layer = Affine(W, b)
        out = layer.forward(np.array([0.3, -0.4]))
        return np.sum(out * layer.last)
    W, b = np.array([[1.0, 0.5], [0.2, -0.3]]), np.array([0.1, -0.2])
    assert_gradient_matches_finite_differences(f, (W, b), (0, 1))
    gradient = srcad.grad(f, wrt=(0, 1))(W, b)
    tangent = srcad.jvp(f, (W, b), (np.ones((2, 2)), np.zeros(2)))[1]
    np.testing.assert_allclose(tangent, gradient[0].sum())
    hessian = srcad.hessian(f)(W, b)
    step = 1e-5
    row = (srcad.grad(f)(W + step * np.eye(2)[0][:, None] * np.eye(2)[0], b)
           - srcad.grad(f)(W - step * np.eye(2)[0][:, None] * np.eye(2)[0], b)) / (2 * step)
    np.testing.assert_allclose(hessian[:, :, 0, 0], row, rtol=1e-5, atol=1e-7)


class Scaled:
    def __init__(self, w, scale):
        self._w = w
        self.scale = scale

    @property
    def weight(self):
        return self._w * self.scale


def _scaled_sum(config, x):
    return np.sum(x * config.scale)


def test_a_property_of_an_object_the_function_builds_is_followed():
    def f(w):
        model = Scaled(w, 2.0)
        return np.sum(model.weight ** 2) + _scaled_sum(model, w) * 3.0
    assert_gradient_matches_finite_differences(f, (X,), 0)
    tangent = srcad.jvp(f, (X,), (np.ones(3),))[1]
    np.testing.assert_allclose(tangent, srcad.grad(f)(X).sum())
    np.testing.assert_allclose(srcad.hessian(f)(X), 8.0 * np.eye(3))


def test_what_a_helper_returns_from_an_object_is_no_object_to_the_operators():
    def f(x):
        config = Plain()
        config.scale = 3.0
        return _scaled_sum(config, x) * 2.0 + np.sum(_scaled_sum(config, x) - x)
    assert_gradient_matches_finite_differences(f, (X,), 0)


def test_the_program_shows_the_writes_and_undoes_them(capsys):
    def f(x):
        s = Plain()
        s.total = x * 1.0
        s.total = s.total * x
        return np.sum(s.total)
    srcad.show(f)
    program = capsys.readouterr().out
    assert "attribute_written(s, 'total'" in program
    assert "restore_attribute(s, 'total', stack.pop())" in program


# ---- what stays refused, and why --------------------------------------------------------------
def two_names_one_object(x):
    s = Plain()
    t = s
    t.a = x
    s.a = s.a * 2.0
    return np.sum(t.a)


def held_twice_then_updated(x):
    s = Plain()
    s.a = x * 1.0
    s.b = s.a
    s.a += x  # (in place: `s.b` changes too)
    return np.sum(s.b)


def updates_the_argument_it_holds(x):
    s = Plain()
    s.t = x
    s.t += x * 2.0  # (Python writes into the caller's array, read again below)
    return np.sum(s.t * x)


def list_seen_under_another_name(x):
    s = Plain()
    s.items = []
    other = s.items
    s.items.append(x)
    return np.sum(other[0])


class History:
    def __init__(self):
        self.values = []

    def add(self, v):
        self.values.append(v)


def list_kept_before_a_method_appends(x):
    h = History()
    kept = h.values
    h.add(x * 2.0)
    return np.sum(kept[0])


class Slotted:
    __slots__ = ("value",)


def writes_a_slot(x):
    s = Slotted()
    s.value = x * 2.0
    return np.sum(s.value)


class WithProperty:
    def __init__(self):
        self._value = 0.0

    @property
    def value(self):
        return self._value

    @value.setter
    def value(self, v):
        self._value = v * 2.0


def writes_a_property(x):
    s = WithProperty()
    s.value = x
    return np.sum(s.value)


@dataclasses.dataclass
class Pair:
    a: np.ndarray
    b: np.ndarray


def writes_a_dataclass_field(x):
    pair = Pair(x, x * 2.0)
    pair.a = pair.a * 3.0
    return np.sum(pair.a + pair.b)


class Holder:
    """A class whose methods keep what they are given, hand out what they hold, or write
    elsewhere: each a case where Python changes a value in place that srcad's copy would not
    (found by a review; each gave a wrong number before it was refused)."""

    def __init__(self, v):
        self.v = v
        self.items = []

    def scaled(self, k):
        self.v = self.v * k
        return self

    def held(self):
        return self.items

    def push(self, v):
        self.items.append(v)

    def keep(self, h):
        self.h = h

    def register(self, registry):
        registry.append(self)

    def write_into(self, out):
        out[0] = self.v * 3.0


class Registered:
    def __init__(self, v, registry):
        self.v = v
        registry.append(self)


class Odd:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def __add__(self, other):
        return Odd(self.a * other.a, self.b + other.b)


def returns_itself_then_updated(x):
    a = Holder(x[0])
    b = a.scaled(x[1])
    a.scaled(x[2])
    return b.v


def hands_out_its_list_then_appends(x):
    a = Holder(x[0])
    items = a.held()
    a.push(x[1])
    return sum(items) + a.v


def keeps_an_array_then_it_is_updated(x):
    a = Holder(x[0])
    h = x * 1.0
    a.keep(h)
    h += x
    return np.sum(a.h * x)


def registers_itself(x):
    registry = []
    a = Holder(x[0])
    a.register(registry)
    a.scaled(x[1])
    return registry[0].v


def writes_into_its_argument(x):
    a = Holder(x[1])
    out = np.zeros(3)
    a.write_into(out)
    return np.sum(out * x)


def constructor_registers_itself(x):
    registry = []
    node = Registered(x[0], registry)
    node.v = node.v * x[1]
    return registry[0].v * x[2]


def adds_with_its_own_operator(x):
    w = Odd(x[0], x[1]) + Odd(x[2], x[0])
    return w.a


def objects_updated_in_the_list_holding_them(x):
    made = []
    for i in range(3):
        o = Plain()
        o.v = x[i] * (i + 1)
        made.append(o)
    for o in made:
        o.v = o.v * x[0]  # (the list shows the update: as for arrays held in a list)
    return sum(o.v for o in made)


def view_of_an_attribute_then_updated(x):
    s = Plain()
    s.t = x * 1.0
    s.v = s.t[1:]
    s.t += 1.0
    return np.sum(s.v * x[1:])


@pytest.mark.parametrize("fn, error, words", [
    (returns_itself_then_updated, UnsoundAliasingError, "share memory with `b`"),
    (hands_out_its_list_then_appends, UnsoundAliasingError, "share memory with `items`"),
    (keeps_an_array_then_it_is_updated, UnsoundAliasingError, "`h` may share memory with `a`"),
    (registers_itself, UnsoundAliasingError, "share memory with `registry`"),
    (writes_into_its_argument, UnsoundAliasingError, "writes into its argument `out`"),
    (constructor_registers_itself, UnsoundAliasingError, "writes into its argument `registry`"),
    (adds_with_its_own_operator, MissingRuleError, "the operator runs its class's method"),
    (view_of_an_attribute_then_updated, UnsoundAliasingError, "(or a view of it)"),
    (objects_updated_in_the_list_holding_them, UnsoundAliasingError, "share memory with `made`"),
])
def test_what_python_changes_in_place_behind_a_copy_is_refused(fn, error, words):
    with pytest.raises(error, match=re.escape(words)):
        srcad.grad(fn)(X)


@pytest.mark.parametrize("fn, error, words", [
    (two_names_one_object, UnsoundAliasingError, "`t` may share memory with `s`"),
    (held_twice_then_updated, UnsoundAliasingError, "`s` also holds it elsewhere"),
    (updates_the_argument_it_holds, UnsoundAliasingError, "`s.t` may share memory with `x`"),
    (list_seen_under_another_name, UnsoundAliasingError, "share memory with `other`"),
    (list_kept_before_a_method_appends, UnsoundAliasingError, "share memory with `kept`"),
    (writes_a_slot, UnsupportedSyntaxError, "no plain object"),
    (writes_a_property, UnsupportedSyntaxError, "a property or slot of WithProperty"),
    (writes_a_dataclass_field, UnsupportedSyntaxError, "dataclasses.replace"),
])
def test_what_stays_refused_names_the_reason_and_the_line(fn, error, words):
    with pytest.raises(error) as info:
        srcad.grad(fn)(X)
    assert words in str(info.value)
    assert __file__ in str(info.value)


class Shifted:
    def __init__(self, W):
        self.W = W

    def shift(self, step):
        self.W -= step  # (in place, into the array the caller passed)


def test_a_method_updating_an_array_the_caller_passed_is_refused_when_called():
    def f(x):
        model = Shifted(x)
        model.shift(0.1)
        return np.sum(model.W * x)
    with pytest.raises(UnsoundAliasingError, match="writes into `self.W`"):
        srcad.grad(f)(X)


def test_a_method_updating_a_number_or_its_own_list_is_not_refused():
    def f(x):
        acc = p.Accumulator(x[0])
        acc.add(x[1])
        acc.add(x[2] ** 2)
        return acc.total * acc.calls + np.sum(np.stack(acc.history))
    assert_gradient_matches_finite_differences(f, (X,), 0)
    acc = p.Accumulator(1.0)
    f(X)  # (the user's objects made outside are left alone)
    assert acc.calls == 0 and acc.history == []


def test_the_example_trains_a_model_of_objects_and_recovers_a_rate():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).parent.parent / "examples" / "objects_as_memory.py"
    spec = importlib.util.spec_from_file_location("objects_as_memory", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    final_loss, rate = example.main(steps=60)
    assert final_loss < 0.05
    assert abs(rate - 0.7) < 1e-8
    rng = np.random.default_rng(1)
    params = {"W1": rng.standard_normal((1, 3)), "b1": rng.standard_normal(3),
              "W2": rng.standard_normal((3, 1)), "b2": rng.standard_normal(1)}
    x, y = rng.standard_normal((5, 1)), rng.standard_normal(5)
    gradient = srcad.grad(example.loss)(params, x, y)
    with srcad.GradientTape() as tape:
        watched = {name: srcad.Variable(value) for name, value in params.items()}
        value = example.loss(watched, x, y)
    taped = tape.gradient(value, watched)
    for name in params:
        np.testing.assert_allclose(gradient[name], taped[name], rtol=1e-12)



def dicts_written_into_a_list(x):
    items = [None, None]
    items[0] = {"a": x * 2.0}
    items[1] = {"a": np.sin(x)}
    return np.sum(items[0]["a"] * items[1]["a"])


def test_a_dict_written_into_a_list_is_no_object_to_the_operators():
    """(A dict's derivative is a dict, as a record's is: only a record's reaches the refusal
    of operators on objects; autograd's own test_dict found that.)"""
    hessian = srcad.hessian(dicts_written_into_a_list)(X)
    step = 1e-6
    gradient = srcad.grad(dicts_written_into_a_list)
    numeric = np.array([(gradient(X + step * e) - gradient(X - step * e)) / (2 * step)
                        for e in np.eye(3)])
    np.testing.assert_allclose(hessian, numeric, rtol=1e-5, atol=1e-7)


class Grown:
    def __init__(self, a):
        self.a = a

    def grow(self, k):
        self.a = self.a * k

    def __add__(self, other):
        return Grown(self.a * other.a)


def test_an_operator_on_an_object_a_method_updated_is_refused():
    def f(x):
        v = Grown(x)
        v.grow(2.0)
        return np.sum((v + v).a)
    with pytest.raises(MissingRuleError, match="an object of a class of yours"):
        srcad.grad(f)(X)


class Total:
    def __init__(self, total):
        self.total = total


def built_twice_in_a_tangent_program(x):
    a = Total(np.arctan(x[0]))
    a.v = np.sin(x)
    s = a.total * np.sum(a.v)
    b = Total(x[1])  # (the class is read again after `a` was written: it is no alias of `a`)
    return s + b.total * s


class Called:
    def __init__(self, total):
        self.total = total
        self.count = 0

    def __call__(self, v):
        return np.sum(np.tanh(v)) * self.total


def called_then_written(x):
    memo = Called(np.arctan(1.0))
    memo.v = np.arctan(x + np.arctan(x))
    memo.total = memo(memo.v) + memo.count
    s = memo.total * np.sum(memo.v)
    with np.errstate(over="ignore"):
        again = Called(np.arctan(s + x[0]))  # (the class is called again after `memo`
        again.v = np.arctan(x)               # was written)
        again.total = again(again.v) + again.count
        return again.total * np.sum(again.v)


@pytest.mark.parametrize("fn", [built_twice_in_a_tangent_program, called_then_written])
def test_objects_in_a_tangent_program_have_a_hessian(fn):
    """(The fuzzer found both: in the tangent program the class, or `method_update` (a
    helper of srcad's), is an argument of `call_jvp`, which aliasing took for memory the
    object shares, so the Hessian was refused.)"""
    hessian = srcad.hessian(fn)(X)
    gradient = srcad.grad(fn)
    step = 1e-6
    numeric = np.array([(gradient(X + step * e) - gradient(X - step * e)) / (2 * step)
                        for e in np.eye(3)])
    np.testing.assert_allclose(hessian, numeric, rtol=1e-5, atol=1e-7)
