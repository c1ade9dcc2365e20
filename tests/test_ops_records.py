"""The records of srcad/ops/registry.py: each fact a record states holds for its callable,
checked numerically on the rule table's cases (tests/test_rules.py), and no case
contradicts a fact a record leaves out (a view srcad did not know of once let an in-place
write give wrong gradients)."""
import math
import operator

import numpy as np
import pytest

import srcad
from srcad.ops import registry
from tests.test_rules import CASES, make_args


def _arrays(value):
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [a for part in value for a in _arrays(part)]
    return []


def _ran(case):
    """`(args, result)` of the case's function in float64, or None where it refuses them."""
    args = make_args(case.args, np.float64)
    with np.errstate(all="ignore"):
        try:
            return args, case.fn(*args)
        except Exception:  # (a case made for a dtype or shape this one is not)
            return None


def test_a_call_that_returns_its_arguments_memory_is_a_declared_view():
    undeclared = set()
    for case in CASES:
        ran = _ran(case)
        if ran is None:
            continue
        args, result = ran
        if any(np.shares_memory(r, a) for r in _arrays(result) for a in _arrays(args)) \
                and not registry.is_view(case.primal) and not isinstance(result, list):
            undeclared.add(getattr(case.primal, "__qualname__", repr(case.primal)))
    assert not undeclared, f"views without `declare(fn, view=True)`: {sorted(undeclared)}"


def test_a_new_array_is_an_ndarray_of_its_own():
    checked = set()
    for case in CASES:
        if registry.makes_new_array(case.primal) and (ran := _ran(case)) is not None:
            args, result = ran
            assert not any(np.shares_memory(r, a) for r in _arrays(result)
                           for a in _arrays(args)), case.primal
            checked.add(case.primal)
    assert {np.stack, np.concatenate, np.array} <= checked


def _elementwise_cases():
    return [c for c in CASES if registry.is_elementwise(c.primal)
            and all(shape is not None for _, shape in c.args)]


@pytest.mark.parametrize("case", _elementwise_cases()[::7],
                         ids=lambda c: f"{getattr(c.primal, '__name__', c.primal)}")
def test_an_elementwise_callable_maps_each_element_alone(case):
    """Element i of the output is the callable of element i of each (broadcast) argument."""
    args = make_args(case.args, np.float64)
    with np.errstate(all="ignore"):
        try:
            result = case.primal(*args)
        except TypeError:  # (the case's function passes more than its arguments)
            pytest.skip("the case calls it with other arguments")
        shape = np.shape(result)
        broadcast = [np.broadcast_to(a, shape) for a in args]
        for index in list(np.ndindex(shape))[:5]:
            alone = case.primal(*(b[index] for b in broadcast))
            np.testing.assert_allclose(result[index], alone, rtol=1e-13, equal_nan=True)


TWINS = [op for op in registry.records() if op.math_twin is not None]


@pytest.mark.parametrize("op", TWINS, ids=lambda op: op.math_twin)
def test_a_math_twin_computes_the_callable_on_floats(op):
    rng = np.random.default_rng(0)
    domain = {"acos": (-0.9, 0.9), "asin": (-0.9, 0.9), "atanh": (-0.9, 0.9),
              "acosh": (1.1, 3.0), "log": (0.1, 3.0), "log2": (0.1, 3.0), "log10": (0.1, 3.0),
              "log1p": (-0.5, 3.0), "sqrt": (0.0, 3.0)}.get(op.math_twin, (-3.0, 3.0))
    twin = getattr(math, op.math_twin)
    for _ in range(20):
        args = rng.uniform(*domain, op.primal.nin)
        expected = float(op.primal(*args))  # (to two ulps: libm and NumPy's loops differ)
        assert abs(twin(*args) - expected) <= 2 * math.ulp(expected)


def test_operators_are_elementwise_as_their_ufuncs_are():
    assert all(registry.is_elementwise(f) for f in (operator.add, operator.mod, operator.neg))
    assert not registry.is_elementwise(np.matmul)  # (a core signature: it contracts)
    assert not registry.is_elementwise(operator.matmul)


def test_declare_refuses_an_unknown_fact():
    with pytest.raises(TypeError, match="no such fact"):
        registry.declare(np.sin, smooth=True)


def test_a_users_rule_makes_the_record_the_users(rule_registry):
    def halved(x):
        return x / 2
    edition = registry.RULES_EDITION[0]
    srcad.defvjp(halved, lambda g, ans, x: g / 2)
    op = registry.op_of(halved)
    assert (op.owner, registry.has_user_rules(halved)) == ("user", True)
    assert registry.op_of(np.sin).owner == "srcad" and not registry.has_user_rules(np.sin)
    srcad.defvjp(np.sin, lambda g, ans, x: g * np.cos(x))  # srcad's record, replaced
    assert registry.op_of(np.sin).owner == "user" and registry.has_user_rules(np.sin)
    assert registry.RULES_EDITION[0] == edition + 2  # (programs compiled before go stale)
