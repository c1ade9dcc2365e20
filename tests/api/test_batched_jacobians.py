"""Forward Jacobians from one run of the batched tangent program (srcad/kernels/batched.py,
transform/batched.py), checked against reverse-mode Jacobians, which share no code with them:
every row of the rule table, the program corpora, and the shapes each batched rule handles.
"""
import numpy as np
import pytest
from hypothesis import given, settings

import srcad
from srcad.api import jacobian_batches
from srcad.ops.fused_softmax import invariant_shift
from srcad.ops.registry import is_elementwise
from tests import call_programs, control_programs, in_place_programs
from tests.ops.test_rules import BROADCASTING, CASES, _case_id, broadcasting_case, make_args

def _real(case) -> bool:
    args = make_args(case.args, np.float64)
    with np.errstate(all="ignore"):
        values = [*args, case.fn(*args)]
    return not any(np.iscomplexobj(v) for v in values if not isinstance(v, (list, tuple)))


REAL_CASES = [c for c in CASES if not c.bug and _real(c)]


def batched(fn, wrt=0) -> bool:
    """Whether srcad computes `fn`'s forward Jacobian by the batched program."""
    names = srcad.runtime.arguments.wrt_parameters(fn.__code__, wrt)[0]
    return all(jacobian_batches._program(fn, name) is not None for name in names)


def assert_forward_matches_reverse(fn, args, wrt=0):
    forward = srcad.jacobian(fn, wrt=wrt, mode="fwd")(*args)
    reverse = srcad.jacobian(fn, wrt=wrt, mode="rev")(*args)
    for got, expected in zip(*(j if isinstance(wrt, tuple) else (j,)
                               for j in (forward, reverse))):
        assert np.shape(got) == np.shape(expected)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", REAL_CASES, ids=[_case_id(c) for c in REAL_CASES])
def test_every_rule_table_row(case):
    with np.errstate(all="ignore"):
        assert_forward_matches_reverse(case.fn, make_args(case.args, np.float64), case.wrt)


def test_the_rule_table_is_mostly_batched():
    """Every elementwise rule and most others have a batched program, so the rows above
    test the batched rules rather than the column-by-column fallback."""
    elementwise = [c for c in REAL_CASES if is_elementwise(c.primal)
                   and c.primal is not invariant_shift]  # (its cases take a max: not batched)
    assert len(elementwise) > 300 and all(batched(c.fn, c.wrt) for c in elementwise)
    assert sum(batched(c.fn, c.wrt) for c in REAL_CASES) > 1000


CORPUS = ([(fn, args, wrt) for fn, arg_sets, wrt in control_programs.CORPUS for args in arg_sets]
          + list(in_place_programs.CORPUS) + list(call_programs.CORPUS))


@pytest.mark.parametrize("fn, args, wrt", CORPUS,
                         ids=[f"{fn.__name__}-{i}" for i, (fn, _, _) in enumerate(CORPUS)])
def test_corpus_programs(fn, args, wrt):
    """Loops, branches, lists and calls: batched where every operation has a batched form,
    column by column otherwise; the same Jacobian either way."""
    assert_forward_matches_reverse(fn, tuple(dict(a) if isinstance(a, dict) else np.copy(a)
                                             for a in args), wrt)


def contractions(a, b, v):
    return np.sum(a @ b, axis=0) + a @ v + v @ b + np.dot(v, v) * np.dot(a, v)


def reductions_and_views(x):
    y = x.T[1:, None, :] * 2.0
    return np.mean(y, axis=(0, -1), keepdims=True) + np.sum(x[[0, 2], ::2] ** 2) \
        + np.reshape(x, (-1,))[x.ravel() > 0][:1].sum()


def stacked(x, s):
    parts = [np.sin(x[0]) * s, x[1] * 2.0, 3.0]
    return np.stack([np.array(parts), np.array([s, s ** 2, x[2]])], axis=-1)


@pytest.mark.parametrize("fn, args, wrt", [
    (contractions, (np.arange(12.0).reshape(3, 4) / 7, np.ones((4, 3)) / 3,
                    np.linspace(-1, 1, 4)), (0, 1, 2)),
    (reductions_and_views, (np.linspace(-1, 1, 12).reshape(4, 3),), 0),
    (stacked, (np.array([0.3, -0.7, 1.1]), 0.4), (0, 1)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_batched_rules_for_operations_that_move_axes(fn, args, wrt):
    assert_forward_matches_reverse(fn, args, wrt)


def test_the_dense_layer_and_helper_calls_are_batched_and_methods_fall_back():
    from srcad.bench.workloads import dense_layer
    assert batched(dense_layer)
    assert batched(call_programs.calls_helpers)  # the helpers' own batched programs
    assert not batched(call_programs.array_methods)  # `x.sum(axis=0)`: columns


def rowwise(xs, W):
    return np.tanh(xs @ W) * np.sum(xs ** 2, axis=1, keepdims=True)


def test_batch_jacobian_in_one_batched_run():
    """Each unit direction of an example, repeated over the batch, seeds one run."""
    rng = np.random.default_rng(5)
    xs, W = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    assert batched(rowwise)
    got = srcad.batch_jacobian(rowwise)(xs, W)
    for i in range(4):
        expected = srcad.jacobian(lambda x: rowwise(x[None, :], W)[0], mode="rev")(xs[i])
        np.testing.assert_allclose(got[i], expected, rtol=1e-12)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(**BROADCASTING)
def test_broadcasting_operators_under_random_shapes(row, shapes, wrt, python_scalars, seed):
    """Batched tangents are aligned to each output's rank: random broadcasting of both
    operands, Python numbers among them, gives the reverse-mode Jacobian."""
    fn, args = broadcasting_case(row, shapes, python_scalars, seed)
    with np.errstate(all="ignore"):
        assert_forward_matches_reverse(fn, args, wrt)


def writes_rows(v):
    out = np.zeros((2,) + v.shape)
    out[0] = v
    out[1] = v ** 2
    return out


def calls_a_helper_without_a_batched_form(x):
    return np.tanh(writes_rows(x)) * 2.0


def test_a_helper_without_a_batched_form_falls_back_to_columns_when_it_runs():
    x = np.array([0.3, -0.6, 0.9])
    jacobian = srcad.jacobian(calls_a_helper_without_a_batched_form, mode="fwd")
    expected = srcad.jacobian(calls_a_helper_without_a_batched_form, mode="rev")(x)
    np.testing.assert_allclose(jacobian(x), expected, rtol=1e-12)
    assert jacobian.batched.programs is False  # found out once: columns from then on
    np.testing.assert_allclose(jacobian(x), expected, rtol=1e-12)


def rows_unpacked(A):
    r0, r1 = A
    return np.sum(r0 * r1) * A


def _tanh_step(h, x):
    return np.tanh(h * 2.0 + x)


def helper_from_a_zero_state(x):
    h = np.zeros(3)  # no tangent on the first call
    for _ in range(2):
        h = _tanh_step(h, x)
    return h


@pytest.mark.parametrize("fn, x", [(rows_unpacked, np.arange(6.0).reshape(2, 3) / 5.0),
                                   (helper_from_a_zero_state, np.array([0.1, 0.2, 0.3]))])
def test_unpacked_rows_and_a_helper_first_called_without_tangents(fn, x):
    """Both crashed in the batched program: unpacking took the batch axis for the rows, and
    a helper was seeded with the tangent None of its zero state."""
    assert_forward_matches_reverse(fn, (x,), 0)


def doubled_by_rules(x):
    return 2.0 * x


def calls_doubled(x):
    return doubled_by_rules(x) + x


def test_a_batched_rule_given_as_a_lambda_is_called_by_a_valid_name(rule_registry):
    from srcad.ops.registry import declare
    ran = []
    srcad.defvjp(doubled_by_rules, lambda g, ans, x: 2.0 * g)
    srcad.defjvp(doubled_by_rules, lambda g, ans, x: 2.0 * g)
    declare(doubled_by_rules, batched=lambda ans, tangents, x: ran.append(1) or 2.0 * tangents[0])
    np.testing.assert_allclose(srcad.jacobian(calls_doubled, mode="fwd")(np.ones(3)),
                               3.0 * np.eye(3))
    assert ran


def popped_all_differentiated_items(x, y):
    items = [np.tanh(y @ np.array([0.5, -1.0])), np.log(1.0 + x * x), np.arctan(y @ y[0])]
    del items[1]                     # (the one item with a tangent)
    del items[0]
    v = np.sum(np.stack(items), axis=0)
    return np.sum(x * x) + np.sum(v * v)


def test_a_list_left_without_differentiated_items_falls_back_to_columns():
    """Found by the fuzzer: the batched program met a differentiated name whose tangent was
    None when it ran (its list's differentiated items popped) and multiplied None; such a
    form is not batched, and the Jacobian is computed column by column."""
    x = np.array([-1.0, 0.9, -1.1])
    y = np.array([[1.2, 0.6], [-1.4, -0.9], [0.6, 1.1]])
    expected = srcad.grad(popped_all_differentiated_items)(x, y)
    for mode in ("fwd", "rev"):
        np.testing.assert_allclose(
            srcad.jacobian(popped_all_differentiated_items, mode=mode)(x, y), expected)


def dense_layer(x, W, b):
    return np.tanh(W @ x + b)


def summary(x, A):
    return A @ np.sin(x)


def as_pair(x):
    return np.sin(x), np.cos(x)


def test_repeated_jacobians_run_the_batched_program_once_per_call(monkeypatch):
    """The quick path (`BatchedColumns.one_array`) decides per argument dtype and shape: a
    layer's Jacobian by one batched run, and where rows are fewer runs or the output is a
    pair, the general path from the second call on (which tries the batched run itself),
    without another batched run before it. Every call's Jacobian is reverse mode's."""
    runs = []
    original = jacobian_batches.BatchedColumns.run
    monkeypatch.setattr(jacobian_batches.BatchedColumns, "run",
                        lambda self, *a: runs.append(1) or original(self, *a))
    rng = np.random.default_rng(3)
    x, W, b, A = (rng.standard_normal(6), rng.standard_normal((6, 6)), rng.standard_normal(6),
                  rng.standard_normal((2, 6)))
    for fn, args in ((dense_layer, (x, W, b)), (summary, (x, A)), (as_pair, (x,))):
        jacobian = srcad.jacobian(fn)
        jacobian(*args)
        for _ in range(3):
            runs.clear()
            got = jacobian(*args)
            assert len(runs) == 1, fn.__name__
            expected = srcad.jacobian(fn, mode="rev")(*args)
            for g, e in zip(*((j,) if fn is not as_pair else j for j in (got, expected))):
                np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
    gradient = srcad.jacobian(dense_layer)(x, W, b)
    gradient[0, 0] = 5.0  # (the caller's own array, not the program's memory)
    np.testing.assert_allclose(srcad.jacobian(dense_layer)(x, W, b)[0, 0],
                               (1 - np.tanh(W @ x + b)[0] ** 2) * W[0, 0])


def linear_map(x, W):
    return W @ x


def identity(x):
    return x


def scaled_rows(x, W):
    return np.tanh(W @ x)


@pytest.mark.parametrize("fn", [linear_map, identity, scaled_rows])
def test_the_jacobian_is_an_array_of_its_own(fn):
    """The Jacobian of a batched run is the transposed batched tangent: a view of `W` for
    `W @ x`, of the read-only seed for `x`, of a new array for a layer; the caller gets an
    array it may write into without changing `W`, the seed or the next Jacobian."""
    rng = np.random.default_rng(5)
    x, W = rng.standard_normal(4), rng.standard_normal((4, 4))
    args = (x,) if fn is identity else (x, W)
    expected = {linear_map: W, identity: np.eye(4),
                scaled_rows: (1.0 - np.tanh(W @ x) ** 2)[:, None] * W}[fn].copy()
    jacobian = srcad.jacobian(fn, mode="fwd")
    assert batched(fn)
    for _ in range(2):
        J = jacobian(*args)
        np.testing.assert_allclose(J, expected, rtol=1e-12, atol=1e-15)
        assert J.flags.writeable and not np.shares_memory(J, W)
        J[...] = 7.0
    np.testing.assert_allclose(jacobian(*args), expected, rtol=1e-12, atol=1e-15)
    assert not np.any(W == 7.0)
