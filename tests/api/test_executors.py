"""Jacobians, Hessians and batch Jacobians on executors (srcad/api/executors.py): on a
Dask LocalCluster of two worker processes and on a spawned process pool, whose workers
have srcad but import nothing of this file, the results equal the local call's bit for
bit, for functions of this file, closures, pytrees and the user's rules."""
import concurrent.futures
import logging
import multiprocessing
import os
import pickle
import types
from collections import OrderedDict

import numpy as np
import pytest

import srcad
from srcad.api import shipping
from srcad.errors import UsageError
from srcad.runtime.arguments import leaves, rebuilt

A = np.arange(12.0).reshape(3, 4) / 7.0


def simulator(x):
    """Three outputs of four inputs: a matrix product, a reduction, elementwise math."""
    return np.tanh(A @ x) * x[:3] + np.sum(x ** 2)


def scaled_sine(scale):
    return lambda x: scale * np.sin(x) ** 2 + x[::-1]


def energy(p):
    return np.sum(p["w"] ** 2 * np.cos(p["b"])) + p["w"][0] * p["b"][1] ** 3


def steep(x):
    return x ** 3


# deliberately three times the true derivative: a worker that transformed `steep`'s source
# instead of receiving this rule would give other numbers
srcad.defvjp(steep, lambda g, ans, x: 9.0 * x ** 2 * g)


def with_rule(x):
    return steep(x) + np.sin(x)


def damped(x):
    return np.exp(-x) * x


def uses_a_helper(x, *, scale=1.0):
    return scale * damped(x[::-1]) + simulator(x)[0]


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def process_pool():
    spawned = multiprocessing.get_context("spawn")  # (a forked worker would inherit this file)
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=spawned) as pool:
        yield pool


@pytest.fixture(params=["dask", "pool"])
def executor(request):
    return request.getfixturevalue("dask_client" if request.param == "dask" else "process_pool")


def assert_identical(got, expected):
    """The same nesting, and at each leaf the same shape, dtype and bits."""
    got_leaves, expected_leaves = leaves(got), leaves(expected)
    numbered = iter(range(len(expected_leaves)))
    assert rebuilt(got, iter(range(len(got_leaves)))) == rebuilt(expected, numbered)
    for g, e in zip(got_leaves, expected_leaves):
        assert np.shape(g) == np.shape(e) and np.asarray(g).dtype == np.asarray(e).dtype
        np.testing.assert_array_equal(g, e)


X = np.linspace(0.1, 1.3, 4)


@pytest.mark.parametrize("mode", ["auto", "rev", "fwd"])
def test_function_of_this_file(executor, mode):
    local = srcad.jacobian(simulator, mode=mode)(X)
    assert_identical(srcad.jacobian(simulator, mode=mode, executor=executor,
                                    block_size=1)(X), local)
    assert_identical(srcad.jacobian(simulator, mode=mode, executor=executor)(X), local)


def test_a_helper_of_this_file_and_a_keyword_argument(executor):
    for mode in ("rev", "fwd"):
        assert_identical(srcad.jacobian(uses_a_helper, mode=mode, executor=executor,
                                        block_size=3)(X, scale=2.5),
                         srcad.jacobian(uses_a_helper, mode=mode)(X, scale=2.5))


def model(x):
    return np.tanh(x) * x[0]


def through_a_helper(x):
    """A helper called as a whole statement: srcad writes it out into the caller."""
    y = model(x)
    return y * 2.0


def test_a_helper_written_out_and_a_lambda_not_reading_numpy(executor):
    """The worker writes out the helper as the local call does (one shipped file for the
    functions of one file), and has this file's `np` that the generated code reads though
    the lambda does not."""
    for fn in (through_a_helper, lambda x: model(x), lambda x: A[:, :4] @ x):
        assert_identical(srcad.jacobian(fn, executor=executor, block_size=2)(X),
                         srcad.jacobian(fn)(X))
    scalar = lambda x: through_a_helper(x)[1]  # noqa: E731
    assert_identical(srcad.hessian(scalar, executor=executor, block_size=2)(X),
                     srcad.hessian(scalar)(X))

def test_an_unread_module_the_worker_lacks_is_left_out(monkeypatch):
    """The modules of the function's globals travel (generated code may read `np`); one the
    worker cannot import, and the function does not read, is left out there."""
    monkeypatch.setitem(globals(), "absent", types.ModuleType("srcad_test_absent_module"))
    rebuilt = shipping.unpacked(pickle.loads(shipping.dumped(shipping.packed(simulator))))
    assert_identical(rebuilt(X), simulator(X))
    assert "absent" not in rebuilt.__globals__ and rebuilt.__globals__["np"] is np

def test_the_current_dask_client_by_name(dask_client):
    assert_identical(srcad.hessian(energy, executor="dask")({"w": X, "b": X + 1.0}),
                     srcad.hessian(energy)({"w": X, "b": X + 1.0}))


def test_float32_and_a_closure(executor):
    closure = scaled_sine(np.float32(3.0))
    x = X.astype(np.float32)
    assert_identical(srcad.jacobian(closure, executor=executor, block_size=3)(x),
                     srcad.jacobian(closure)(x))


def test_pytree_argument_jacobian_and_hessian(executor):
    p = {"w": X, "b": X[::-1] + 0.5}
    assert_identical(srcad.hessian(energy, executor=executor, block_size=3)(p),
                     srcad.hessian(energy)(p))
    assert_identical(srcad.jacobian(energy, mode="fwd", executor=executor, block_size=2)(p),
                     srcad.jacobian(energy, mode="fwd")(p))


def test_several_wrt_arguments(executor):
    def mix(a, b, c):
        return np.outer(a, b).ravel() * c
    args = (X, X[:2] + 1.0, 2.5)
    for mode in ("auto", "rev"):
        assert_identical(srcad.jacobian(mix, wrt=(0, 1, 2), mode=mode, executor=executor,
                                        block_size=3)(*args),
                         srcad.jacobian(mix, wrt=(0, 1, 2), mode=mode)(*args))


def test_user_rule_reaches_the_workers(executor):
    distributed = srcad.jacobian(with_rule, mode="rev", executor=executor, block_size=2)(X)
    assert_identical(distributed, srcad.jacobian(with_rule, mode="rev")(X))
    np.testing.assert_allclose(np.diag(distributed), 9.0 * X ** 2 + np.cos(X))  # the rule's


def with_aux(x):
    y = simulator(x)
    return y, {"total": np.sum(y), "label": "simulated"}


def energy_with_aux(p):
    return energy(p), p["w"] * 2.0


def test_has_aux(executor):
    for mode in ("rev", "fwd"):
        local = srcad.jacobian(with_aux, mode=mode, has_aux=True)(X)
        assert_identical(srcad.jacobian(with_aux, mode=mode, has_aux=True, executor=executor,
                                        block_size=2)(X), local)
        assert local[1]["label"] == "simulated"
    p = {"w": X, "b": X[::-1] + 0.5}
    hessian, aux = srcad.hessian(energy_with_aux, has_aux=True, executor=executor,
                                 block_size=3)(p)
    assert_identical(hessian, srcad.hessian(energy)(p))
    np.testing.assert_array_equal(aux, X * 2.0)


def gathered(*xs):
    return xs[0] * np.sin(xs[1]) + steep(xs[1])


def test_a_function_with_its_own_rule_or_gathering_args_directly(executor):
    on_executor, local = (srcad.jacobian(steep, mode="rev", executor=executor, block_size=1),
                          srcad.jacobian(steep, mode="rev"))
    with pytest.raises(UsageError, match="not been called yet"):
        on_executor.source  # (made for the arguments of a call)
    distributed = on_executor(X)
    assert_identical(distributed, local(X))
    assert on_executor.source == local.source
    np.testing.assert_allclose(np.diag(distributed), 9.0 * X ** 2)  # the rule's, not 3 x**2
    assert_identical(srcad.jacobian(gathered, wrt=1, executor=executor, block_size=3)(X, X + 1),
                     srcad.jacobian(gathered, wrt=1)(X, X + 1))


def test_batch_jacobian(executor):
    batch = np.random.default_rng(0).standard_normal((5, 3))

    def per_row(x):
        return np.sin(x) * x + (x[:, ::-1] ** 2) @ A[:, :3]
    assert_identical(srcad.batch_jacobian(per_row, executor=executor, block_size=2)(batch),
                     srcad.batch_jacobian(per_row)(batch))


def crashing_once(flag: str):
    """The identity, with a rule, that kills the first worker process that runs it (and
    leaves the file `flag` to say so)."""
    client_process = os.getpid()

    def crash_once(x):
        if os.getpid() != client_process and not os.path.exists(flag):
            open(flag, "w").close()
            os._exit(1)
        return x
    srcad.defvjp(crash_once, lambda g, ans, x: g)
    return crash_once


def test_a_killed_dask_worker_is_replaced_and_the_result_complete(dask_client, tmp_path):
    flag = str(tmp_path / "killed")
    crash_once = crashing_once(flag)

    def fragile(x):
        return np.sin(crash_once(x)) * x
    result = srcad.jacobian(fragile, mode="rev", executor=dask_client, block_size=1)(X)
    assert os.path.exists(flag)  # a worker did die
    assert_identical(result, srcad.jacobian(fragile, mode="rev")(X))


def test_a_killed_pool_worker_raises_rather_than_returning_part(tmp_path):
    client_process = os.getpid()

    def crash(x):
        if os.getpid() != client_process:
            os._exit(1)
        return x
    srcad.defvjp(crash, lambda g, ans, x: g)

    def fragile(x):
        return np.sin(crash(x)) * x
    spawned = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawned) as pool:
        with pytest.raises(concurrent.futures.process.BrokenProcessPool):
            srcad.jacobian(fragile, mode="rev", executor=pool, block_size=1)(X)


def test_a_thread_pool_and_a_changed_global():
    global A
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        jacobian = srcad.jacobian(simulator, executor=pool)
        first = jacobian(X)
        assert_identical(first, srcad.jacobian(simulator)(X))
        misses = srcad.cache_info().misses
        assert_identical(jacobian(X), first)
        assert srcad.cache_info().misses == misses  # (compiled once, here and on the worker)
        saved, A = A, A * 2.0  # globals are read at each call, as locally
        try:
            assert_identical(jacobian(X), srcad.jacobian(simulator)(X))
            assert not np.array_equal(jacobian(X), first)
        finally:
            A = saved


def test_a_worker_generating_another_program_refuses(monkeypatch):
    monkeypatch.setattr(srcad.api.executors, "_REBUILT", OrderedDict())  # (none rebuilt yet)
    monkeypatch.setattr(srcad.api.executors, "_source", lambda derivative: str(id(derivative)))
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        with pytest.raises(UsageError, match="same srcad version"):
            srcad.jacobian(simulator, executor=pool)(X)


def test_errors_say_what_to_pass(monkeypatch):
    with pytest.raises(UsageError, match="concurrent.futures.Executor"):
        srcad.jacobian(simulator, executor=multiprocessing)
    with pytest.raises(UsageError, match="no executor"):
        srcad.hessian(energy, block_size=4)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        with pytest.raises(UsageError, match="positive int"):
            srcad.batch_jacobian(simulator, executor=pool, block_size=0)
        with pytest.raises(UsageError, match="defined in the user's code"):
            srcad.jacobian(np.sin, executor=pool)
    monkeypatch.setitem(__import__("sys").modules, "distributed", None)  # not installed
    with pytest.raises(UsageError, match=r"pip install 'srcad\[dask\]'"):
        srcad.jacobian(simulator, executor="dask")


@pytest.fixture
def closed_executors():
    """A Dask client closed and a thread pool shut down."""
    distributed = pytest.importorskip("distributed")
    with distributed.Client(processes=False, dashboard_address=":0") as client:
        pass
    pool = concurrent.futures.ThreadPoolExecutor(1)
    pool.shutdown()
    return client, pool


def test_a_closed_pool_or_client_is_refused(closed_executors):
    client, pool = closed_executors
    with pytest.raises(UsageError, match="(?s)client passed as executor= is closed.*is open"):
        srcad.jacobian(simulator, executor=client)(X)
    with pytest.raises(UsageError, match="(?s)takes no more tasks.*is open"):
        srcad.hessian(energy, executor=pool)({"w": X, "b": X + 1.0})
