"""The records of srcad/ops/registry.py: every fact a record states holds for its callable,
checked numerically by one test per record over all of its facts (on the rule table's cases,
tests/ops/test_rules.py, or on the samples below), and no case contradicts a fact a record
leaves out (a view srcad did not know of once let an in-place write give wrong gradients).
A fact added to `Op` needs a check in CHECKS: `test_every_fact_has_a_check` fails first."""
import dataclasses
import math
import operator
import threading

import numpy as np
import pytest

import srcad
from srcad.ops import python_builtins, python_statements, registry
from srcad.kernels.tangents import zero_tangent
from srcad.ops.python_builtins import indexable, joined, repeated, sorted_jvp
from tests.ops.test_rules import CASES, make_args


def _arrays(value):
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, dict):
        return _arrays(list(value.values()))
    if isinstance(value, (tuple, list)):
        return [a for part in value for a in _arrays(part)]
    return []


def _shares(value, args) -> bool:
    return any(np.shares_memory(r, a) for r in _arrays(value) for a in _arrays(args))


def _ran(case):
    """`(args, result)` of the case's function in float64, or None where it refuses them."""
    args = make_args(case.args, np.float64)
    with np.errstate(all="ignore"):
        try:
            return args, case.fn(*args)
        except Exception:  # (a case made for a dtype or shape this one is not)
            return None


def _cases_of(op) -> list:
    return [c for c in CASES if c.primal is op.primal]


def _x(*shape, seed=0):
    return np.random.default_rng(seed).uniform(0.2, 0.8, shape)


# Calls of callables whose facts are about their own result (a case's function wraps the
# callable in more code): `(call, args, kwargs, positions with batched tangents)`.
SAMPLES = {
    np.matmul: lambda: (np.matmul, (_x(2, 3), _x(3, seed=1)), {}, (0, 1)),
    **({np.linalg.matmul: lambda: (np.linalg.matmul, (_x(2, 3), _x(3, seed=1)), {}, (0, 1))}
       if hasattr(np.linalg, "matmul") else {}),  # (NumPy 2's Array API name)
    operator.matmul: lambda: (operator.matmul, (_x(4), _x(4, 2, seed=1)), {}, (0, 1)),
    np.dot: lambda: (np.dot, (_x(2, 3), _x(3, 2, seed=1)), {}, (0, 1)),
    np.sum: lambda: (np.sum, (_x(3, 4),), {"axis": 1}, (0,)),
    np.mean: lambda: (np.mean, (_x(3, 4),), {"axis": (0, 1), "keepdims": True}, (0,)),
    operator.getitem: lambda: (operator.getitem, (_x(3, 4), (slice(1, 3), 0)), {}, (0,)),
    np.reshape: lambda: (np.reshape, (_x(3, 4), (2, 6)), {}, (0,)),
    np.transpose: lambda: (np.transpose, (_x(2, 3, 4), (2, 0, 1)), {}, (0,)),
    np.ndarray.T: lambda: (lambda a: a.T, (_x(2, 3),), {}, (0,)),
    np.stack: lambda: (np.stack, ([_x(3), _x(3, seed=1)],), {"axis": 1}, (0,)),
    np.array: lambda: (np.array, ([_x(3), _x(3, seed=1)],), {}, (0,)),
    indexable: lambda: (indexable, (_x(3),), {}, (0,)),
    np.split: lambda: (np.split, (_x(4, 3), 2), {}, ()),
    **({np.unstack: lambda: (np.unstack, (_x(4, 3),), {"axis": 1}, ())}
       if hasattr(np, "unstack") else {}),
    np.array_split: lambda: (np.array_split, (_x(5, 3), 2), {}, ()),
    np.hsplit: lambda: (np.hsplit, (_x(3, 4), 2), {}, ()),
    np.vsplit: lambda: (np.vsplit, (_x(4, 3), 2), {}, ()),
    np.dsplit: lambda: (np.dsplit, (_x(2, 2, 4), 2), {}, ()),
    list: lambda: (list, ([_x(3), _x(2)],), {}, ()),
    tuple: lambda: (tuple, ([_x(3), _x(2)],), {}, ()),
    dict: lambda: (dict, ({"a": _x(3)},), {}, ()),
    joined: lambda: (joined, ([_x(3)], [_x(2)]), {}, ()),
    repeated: lambda: (repeated, ([_x(3), _x(2)], 2), {}, ()),
    zero_tangent: lambda: (zero_tangent, ([_x(3), _x(2)],), {}, ()),
    sorted_jvp: lambda: (sorted_jvp, ([_x(3), _x(2)], [2.0, 1.0], [1.0, 2.0]), {}, ()),
    np.gradient: lambda: (np.gradient, (_x(4, 3),), {}, ()),
    np.linalg.slogdet: lambda: (np.linalg.slogdet, (_x(3, 3) + 3 * np.eye(3),), {}, ()),
    np.linalg.eigh: lambda: (np.linalg.eigh, (_x(3, 3) + _x(3, 3).T,), {}, ()),
    np.linalg.eig: lambda: (np.linalg.eig, (_x(3, 3),), {}, ()),
    np.linalg.svd: lambda: (np.linalg.svd, (_x(3, 2),), {}, ()),
    np.zeros_like: lambda: (np.zeros_like, (_x(3),), {}, ()),
    np.ones_like: lambda: (np.ones_like, (_x(3),), {}, ()),
    np.empty_like: lambda: (np.empty_like, (_x(3),), {}, ()),
}


def _sample(op):
    if op.primal not in SAMPLES:
        pytest.fail(f"{op.primal!r} states a fact checked on its own result: add a sample")
    return SAMPLES[op.primal]()


# ---- one check per fact ---------------------------------------------------------------------
def check_view(op):
    """A view "may" share memory; one said to be read-only never lets a write through."""
    if op.view != "read-only":
        return
    for case in _cases_of(op):
        if (ran := _ran(case)) is not None:
            args, result = ran
            assert not any(r.flags.writeable for r in _arrays(result)
                           if any(np.shares_memory(r, a) for a in _arrays(args)))


def check_new_array(op):
    checked = 0
    for case in _cases_of(op):
        if (ran := _ran(case)) is not None:
            assert not _shares(ran[1], ran[0]), case
            checked += 1
    if not checked:  # a maker of arrays, nondifferentiable: no case
        call, args, kwargs, _ = SAMPLES.get(op.primal, lambda: (op.primal, (3,), {}, ()))()
        result = call(*args, **kwargs)
        assert type(result) is np.ndarray and not _shares(result, args)


def _elementwise(case) -> None:
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


def check_elementwise(op):
    cases = [c for c in _cases_of(op) if all(shape is not None for _, shape in c.args)]
    assert cases, f"{op.primal!r} is declared elementwise but has no case on arrays"
    for case in cases[:3]:
        _elementwise(case)


def check_math_twin(op):
    rng = np.random.default_rng(0)
    domain = {"acos": (-0.9, 0.9), "asin": (-0.9, 0.9), "atanh": (-0.9, 0.9),
              "acosh": (1.1, 3.0), "log": (0.1, 3.0), "log2": (0.1, 3.0), "log10": (0.1, 3.0),
              "log1p": (-0.5, 3.0), "sqrt": (0.0, 3.0)}.get(op.math_twin, (-3.0, 3.0))
    twin = getattr(math, op.math_twin)
    for _ in range(20):
        args = rng.uniform(*domain, op.primal.nin)
        expected = float(op.primal(*args))  # (to two ulps: libm and NumPy's loops differ)
        assert abs(twin(*args) - expected) <= 2 * math.ulp(expected)


def check_promotes(op):
    """The result's dtype is the operands' promoted one, for operands of mixed dtypes and
    Python numbers, wherever one of them is inexact."""
    combinations = [(np.float32,), (np.float16, np.float32), (np.float32, np.int64),
                    (np.int32, np.float32), (np.complex64, np.float64), (np.float32, 2.0),
                    (3, np.float16)]
    checked = 0
    for dtypes in combinations:
        operands = [kind if isinstance(kind, (int, float)) else np.full(3, 0.5, kind)
                    for kind in (dtypes * op.primal.nin)[:op.primal.nin]]
        if not any(np.issubdtype(np.result_type(o), np.inexact) for o in operands
                   if isinstance(o, np.ndarray)):
            continue
        with np.errstate(all="ignore"):
            try:
                result = op.primal(*operands)
            except TypeError:  # (no loop for these dtypes: complex for np.logaddexp)
                continue
        assert result.dtype == np.result_type(*operands), dtypes
        checked += 1
    assert checked >= 4


def check_reduction(op):
    x = np.random.default_rng(0).standard_normal((3, 4))
    fn, by = op.primal, op.reduction
    if isinstance(by, np.ufunc):
        np.testing.assert_allclose(fn(x, axis=1), by.reduce(x, axis=1))
        np.testing.assert_allclose(fn(x), by.reduce(x, axis=None))
    else:
        assert fn.__name__ == by
    assert np.shape(fn(x, axis=1)) == (3,) and np.shape(fn(x, axis=0, keepdims=True)) == (1, 4)
    assert np.ndim(fn(x)) == 0


def check_pure(op):
    cases = _cases_of(op)
    assert cases
    for case in cases:
        args = make_args(case.args, np.float64)
        before = [np.copy(a) for a in _arrays(args)]
        with np.errstate(all="ignore"):
            try:
                case.fn(*args)
            except Exception:
                continue
        for was, now in zip(before, _arrays(args)):
            np.testing.assert_array_equal(was, now)


def check_sequence(op):
    call, args, kwargs, _ = _sample(op)
    result = call(*args, **kwargs)
    assert isinstance(result, (tuple, list, dict))
    items = _arrays(result)
    if op.sequence == "shares":
        assert items and all(_shares(item, args) for item in items)
    else:
        assert op.sequence == "new" and not _shares(result, args)


def check_takes_sequences(op):
    """It takes a list of arrays as their stack, and its VJP gives the list a cotangent of
    its own structure (or of the stack's shape: the callables that make the array)."""
    a, b = _x(2, 2), _x(2, 2, seed=1)
    ans = op.primal([a, b])
    np.testing.assert_array_equal(ans, op.primal(np.stack([a, b])))
    cotangent = op.vjp.rules[0](np.ones_like(ans), ans, [a, b])
    assert [np.shape(c) for c in cotangent] == [(2, 2)] * 2 \
        if isinstance(cotangent, list) else np.shape(cotangent) == (2, 2, 2)


# the arguments of a method beyond its receiver, where it needs some
METHOD_ARGUMENTS = {"reshape": ((4, 3),), "repeat": (2,), "take": ([0, 2],), "clip": (0.3, 0.6),
                    "swapaxes": (0, 1), "astype": (np.float32,), "dot": (np.ones((4, 2)),),
                    "item": (5,), "searchsorted": (0.5,)}


def check_methods(op):
    for name in op.methods:
        receiver = _x(3, 4) if name != "searchsorted" else np.sort(_x(6))
        args = METHOD_ARGUMENTS.get(name, ())
        expected = getattr(receiver, name)(*args)
        np.testing.assert_array_equal(op.primal(receiver, *args), expected)
        assert registry.method_function(name) is op.primal


def _batched_tangent(value, count, rng):
    if isinstance(value, list):
        return [_batched_tangent(v, count, rng) for v in value]
    return rng.standard_normal((count,) + np.shape(value))


def _moved(value, tangent, step):
    if isinstance(value, list):
        return [_moved(v, t, step) for v, t in zip(value, tangent)]
    return value + step * tangent


def _row(tangent, k):
    return [_row(t, k) for t in tangent] if isinstance(tangent, list) else tangent[k]


def check_batched(op):
    """Row k of the batched rule's result is the tangent along the k-th direction (by
    central differences: the batched callables are linear in what carries tangents)."""
    call, args, kwargs, active = _sample(op)
    rng, count, step = np.random.default_rng(2), 3, 1e-3
    tangents = tuple(_batched_tangent(a, count, rng) if i in active else None
                     for i, a in enumerate(args))
    ans = call(*args, **kwargs)
    batched = op.batched(ans, tangents, *args, **kwargs)
    assert np.shape(batched) == (count,) + np.shape(ans)
    for k in range(count):
        def along(sign):
            return call(*(_moved(a, _row(t, k), sign * step) if t is not None else a
                          for a, t in zip(args, tangents)), **kwargs)
        np.testing.assert_allclose(batched[k], (along(1) - along(-1)) / (2 * step), atol=1e-9)


class Manager:
    """A context manager that counts how often it was entered and left."""

    def __init__(self):
        self.entries = self.exits = 0

    def __enter__(self):
        self.entries += 1
        return self

    def __exit__(self, *exception):
        self.exits += 1


# statements the frontend writes as calls of srcad's helpers (frontend/desugar.py,
# try_blocks.py), as functions of a context manager and an exception: `with`, `except`,
# `finally`, `raise` and `assert`
STATEMENTS = {
    python_statements.entered: lambda manager, error: (python_statements.entered(manager),
                                                       python_statements.exited(manager)),
    python_statements.exited: lambda manager, error: (python_statements.entered(manager),
                                                      python_statements.exited(manager)),
    python_statements.handles: lambda manager, error: (
        python_statements.handles(error, ValueError), python_statements.handles(None, ValueError)),
    python_statements.reraised: lambda manager, error: (python_statements.reraised(None),
                                                        python_statements.reraised(error)),
    python_builtins.raised: lambda manager, error: python_builtins.raised(error),
    python_builtins.assertion_failed: lambda manager, error: python_builtins.assertion_failed(
        *error.args),
}


def _outcome(statement, *parts):
    try:
        return statement(*parts)
    except Exception as error:
        return type(error), error.args


def check_control(op):
    """srcad's own, with no derivative, and its statement run again does what it did: gives
    or raises the same, a manager left as often as it was entered, the exception as it was."""
    assert op.owner == "srcad" and op.nondifferentiable
    assert op.primal.__module__.startswith("srcad.")
    manager, error = Manager(), ValueError("a statement's")
    first, again = [_outcome(STATEMENTS[op.primal], manager, error) for _ in range(2)]
    assert first == again
    assert manager.entries == manager.exits and error.args == ("a statement's",)


CHECKS = {"view": check_view, "new_array": check_new_array, "elementwise": check_elementwise,
          "math_twin": check_math_twin, "promotes": check_promotes,
          "reduction": check_reduction, "pure": check_pure, "sequence": check_sequence,
          "takes_sequences": check_takes_sequences, "methods": check_methods,
          "batched": check_batched, "control": check_control}


def _stated(op) -> list:
    return [fact for fact in CHECKS if getattr(op, fact) not in (None, False, ())]


def test_every_fact_has_a_check():
    facts = {f.name for f in dataclasses.fields(registry.Op)} - {
        "primal", "owner", "vjp", "jvp", "nondifferentiable"}
    assert facts == set(CHECKS) == set(registry._FACTS)


@pytest.mark.parametrize("op", [op for op in registry.records() if _stated(op)],
                         ids=lambda op: getattr(op.primal, "__qualname__", repr(op.primal)))
def test_every_fact_a_record_states_holds(op):
    for fact in _stated(op):
        CHECKS[fact](op)


def test_np_fmod_states_every_fact_of_an_elementwise_function():
    """The example of docs/architecture.md: a function added in one record."""
    op = registry.op_of(np.fmod)
    assert (op.vjp, op.jvp) != (None, None) and registry.is_elementwise(np.fmod)
    assert _stated(op) == ["math_twin", "promotes"]


# ---- no case contradicts a fact a record leaves out -------------------------------------------
def test_a_call_that_returns_its_arguments_memory_is_a_declared_view():
    undeclared = set()
    for case in CASES:
        ran = _ran(case)
        if ran is None:
            continue
        args, result = ran
        if _shares(result, args) and not registry.is_view(case.primal) \
                and not isinstance(result, list):
            undeclared.add(getattr(case.primal, "__qualname__", repr(case.primal)))
    assert not undeclared, f"views without `declare(fn, view=True)`: {sorted(undeclared)}"


def test_the_new_arrays_checked_include_the_makers_of_the_rule_table():
    made = {op.primal for op in registry.records() if op.new_array}
    assert {np.stack, np.concatenate, np.array, np.zeros} <= made


def _elementwise_cases():
    return [c for c in CASES if registry.is_elementwise(c.primal)
            and all(shape is not None for _, shape in c.args)]


@pytest.mark.parametrize("case", _elementwise_cases()[::7],
                         ids=lambda c: f"{getattr(c.primal, '__name__', c.primal)}")
def test_an_elementwise_callable_maps_each_element_alone(case):
    """Ufuncs are elementwise by their signature, without a stated fact: checked here."""
    _elementwise(case)


def test_operators_are_elementwise_as_their_ufuncs_are():
    assert all(registry.is_elementwise(f) for f in (operator.add, operator.mod, operator.neg))
    assert not registry.is_elementwise(np.matmul)  # (a core signature: it contracts)
    assert not registry.is_elementwise(operator.matmul)


def test_declare_refuses_an_unknown_fact():
    with pytest.raises(TypeError, match="no such fact"):
        registry.declare(np.sin, smooth=True)


# ---- who a record is -----------------------------------------------------------------------
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


def test_a_rule_registered_while_another_thread_loads_scipys_is_the_users(rule_registry,
                                                                          monkeypatch):
    def doubled(x):
        return 2 * x
    loader = threading.Thread(target=lambda: None)
    loader.start()
    loader.join()
    monkeypatch.setattr(registry._SCIPY, "loader", loader.ident)  # (SciPy's, meanwhile)
    srcad.defvjp(doubled, lambda g, ans, x: 2 * g)
    assert registry.op_of(doubled).owner == "user" and registry.has_user_rules(doubled)
