"""Data-parallel gradients (srcad/api/data_parallel.py): a loss declared a sum or mean over
the rows of its data, its gradient computed chunk by chunk on a Dask LocalCluster of two
worker processes, a spawned process pool and threads, is bit-identical to the same chunks
computed in this process (`executor=None`, the local reference), within 1e-12 of the
unchunked gradient, and equal to central finite differences; functions of this file, a
closure, a dict of parameters and a user's rule reach the workers."""
import concurrent.futures
import functools
import os
import warnings

import numpy as np
import pytest

import srcad
from srcad.errors import UsageError
from tests.api.test_executors import (assert_identical, closed_executors,  # noqa: F401
                                      crashing_once, dask_client, process_pool)

RNG = np.random.default_rng(33)
X = RNG.standard_normal((103, 4))
Y = (RNG.random(103) < 0.5).astype(float)
W = RNG.standard_normal(4) * 0.3


def logistic(w, X, y):
    """Mean log-loss of a logistic regression: additive over rows, as a mean."""
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def squared_errors(p, X, y):
    """A sum over rows, of a dict of parameters."""
    return np.sum((np.tanh(X @ p["w"]) + p["b"] - y) ** 2)


def softplus(z):
    return np.logaddexp(0.0, z)


# the user's rule, the logistic function (that it is the one workers run: the doubled rule
# of `test_the_user_rule_is_the_one_the_workers_run`)
srcad.defvjp(softplus, lambda g, ans, z: g / (1.0 + np.exp(-z)))


def with_rule(w, X, y):
    z = X @ w
    return np.mean(softplus(z) - y * z)


def penalised(strength):
    """A closure: the log-loss plus a ridge penalty of the strength it closes over (the
    penalty is not a mean over rows, so it is divided among the rows)."""
    return lambda w, X, y: logistic(w, X, y) + strength * np.sum(w ** 2)


@pytest.fixture(params=["dask", "pool", "threads"])
def executor(request):
    if request.param == "threads":
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            yield pool
        return
    yield request.getfixturevalue("dask_client" if request.param == "dask" else "process_pool")


def central_differences(f, w, step=1e-6):
    flat = np.ravel(w)
    out = np.empty_like(flat)
    for i in range(flat.size):
        e = np.zeros_like(flat)
        e[i] = step
        out[i] = (f((flat + e).reshape(np.shape(w))) - f((flat - e).reshape(np.shape(w)))) / (
            2 * step)
    return out.reshape(np.shape(w))


def chunked(make, loss, reduction="mean", **options):
    return make(loss, chunks_of=("X", "y"), reduction=reduction, **options)


@pytest.mark.parametrize("make", [srcad.grad, srcad.value_and_grad])
def test_numpy_chunks_on_an_executor_equal_the_local_chunks(executor, make):
    local = chunked(make, logistic, block_size=10)(W, X, Y)
    assert_identical(chunked(make, logistic, block_size=10, executor=executor)(W, X, Y), local)
    whole = make(logistic)(W, X, Y)
    np.testing.assert_allclose(local[1] if make is srcad.value_and_grad else local,
                               whole[1] if make is srcad.value_and_grad else whole,
                               rtol=1e-12, atol=0)
    if make is srcad.value_and_grad:
        np.testing.assert_allclose(local[0], whole[0], rtol=1e-12)
    default = chunked(make, logistic, executor=executor)(W, X, Y)  # (about 4 per worker)
    np.testing.assert_allclose(default[1] if make is srcad.value_and_grad else default,
                               whole[1] if make is srcad.value_and_grad else whole, rtol=1e-12)


def test_the_chunked_gradient_is_the_derivative():
    gradient = chunked(srcad.grad, logistic, block_size=7)(W, X, Y)
    np.testing.assert_allclose(gradient, central_differences(lambda w: logistic(w, X, Y), W),
                               rtol=1e-7, atol=1e-10)
    one_chunk = chunked(srcad.grad, logistic)(W, X, Y)  # (one chunk: the plain gradient)
    assert_identical(one_chunk, srcad.grad(logistic)(W, X, Y))


def test_a_mean_weights_chunks_by_their_rows():
    """Chunks of 100 and 3 rows: an unweighted mean of the chunks' gradients would be far
    off; the rows' shares give the whole mean."""
    gradient = chunked(srcad.grad, logistic, block_size=100)(W, X, Y)
    np.testing.assert_allclose(gradient, srcad.grad(logistic)(W, X, Y), rtol=1e-12)
    halves = [srcad.grad(logistic)(W, X[s], Y[s]) for s in (slice(0, 100), slice(100, None))]
    assert not np.allclose(gradient, (halves[0] + halves[1]) / 2)


def test_dict_parameters_and_a_sum(executor):
    p = {"w": W, "b": 0.25}
    local = chunked(srcad.value_and_grad, squared_errors, "sum", block_size=16)(p, X, Y)
    assert_identical(chunked(srcad.value_and_grad, squared_errors, "sum", block_size=16,
                             executor=executor)(p, X, Y), local)
    value, gradient = srcad.value_and_grad(squared_errors)(p, X, Y)
    np.testing.assert_allclose(local[0], value, rtol=1e-12)
    np.testing.assert_allclose(local[1]["w"], gradient["w"], rtol=1e-12)
    np.testing.assert_allclose(local[1]["b"], gradient["b"], rtol=1e-12)
    assert type(local[1]["b"]) is float
    np.testing.assert_allclose(local[1]["w"], central_differences(
        lambda w: squared_errors({"w": w, "b": 0.25}, X, Y), W), rtol=1e-6)


def test_a_closure_and_a_user_rule(executor):
    closure = penalised(0.1)
    for loss in (closure, with_rule):
        local = chunked(srcad.grad, loss, block_size=20)(W, X, Y)
        assert_identical(chunked(srcad.grad, loss, block_size=20, executor=executor)(W, X, Y),
                         local)
        np.testing.assert_allclose(local, srcad.grad(loss)(W, X, Y), rtol=1e-12)
    np.testing.assert_allclose(chunked(srcad.grad, closure, block_size=20)(W, X, Y),
                               central_differences(lambda w: closure(w, X, Y), W), rtol=1e-7)


def logits(w, X):
    return X @ w


def through_a_helper(w, X, y):
    """The log-loss with its logits from a helper called as a whole statement (written out)."""
    z = logits(w, X)
    return np.mean(np.logaddexp(0.0, z) - y * z)


def test_a_helper_written_out(executor):
    local = chunked(srcad.grad, through_a_helper, block_size=20)(W, X, Y)
    assert_identical(chunked(srcad.grad, through_a_helper, block_size=20,
                             executor=executor)(W, X, Y), local)
    np.testing.assert_allclose(local, srcad.grad(logistic)(W, X, Y), rtol=1e-12)


def test_a_helper_written_out_on_dask_data(dask_client):
    dask_array = pytest.importorskip("dask.array")
    on_dask = chunked(srcad.grad, through_a_helper)(W, dask_array.from_array(X, chunks=(20, 4)),
                                                    dask_array.from_array(Y, chunks=20))
    assert_identical(on_dask, chunked(srcad.grad, through_a_helper, block_size=20)(W, X, Y))

def test_the_user_rule_is_the_one_the_workers_run(executor):
    def doubled_softplus(z):
        return np.logaddexp(0.0, z)
    # twice the true derivative: only a worker that received the rule gives these numbers
    srcad.defvjp(doubled_softplus, lambda g, ans, z: 2.0 * g / (1.0 + np.exp(-z)))

    def loss(w, X):
        return np.sum(doubled_softplus(X @ w))
    remote = srcad.grad(loss, chunks_of="X", reduction="sum", executor=executor,
                        block_size=30)(W, X)
    np.testing.assert_allclose(remote, 2.0 * X.T @ (1.0 / (1.0 + np.exp(-X @ W))), rtol=1e-12)


def squares_with_a_rule(w, X, y):
    return np.sum((X @ w - y) ** 2)


srcad.defvjp(squares_with_a_rule, lambda g, ans, w, X, y: g * 2.0 * X.T @ (X @ w - y),
             None, None)


def test_a_loss_with_its_own_rule_whatever_ran_first(executor):
    """Its program is made per count of arguments: computed here first or not, the worker
    makes the one the client compares it with."""
    local = chunked(srcad.grad, squares_with_a_rule, "sum", block_size=20)(W, X, Y)
    assert_identical(chunked(srcad.grad, squares_with_a_rule, "sum", block_size=20,
                             executor=executor)(W, X, Y), local)
    np.testing.assert_allclose(local, 2.0 * X.T @ (X @ W - Y), rtol=1e-12)

def test_float32_parameters_keep_their_dtype():
    gradient = chunked(srcad.grad, logistic, block_size=10)(W.astype(np.float32), X.astype(
        np.float32), Y.astype(np.float32))
    assert gradient.dtype == np.float32


def test_keyword_data_and_positions():
    by_name = srcad.grad(logistic, chunks_of=("X", "y"), reduction="mean", block_size=9)
    by_position = srcad.grad(logistic, chunks_of=(1, 2), reduction="mean", block_size=9)
    assert_identical(by_name(W, X=X, y=Y), by_position(W, X, Y))

    @srcad.value_and_grad(chunks_of="X", reduction="sum", block_size=9)
    def decorated(w, X):
        return np.sum(np.sin(X @ w))
    value, gradient = decorated(W, X)
    np.testing.assert_allclose(value, np.sum(np.sin(X @ W)), rtol=1e-12)
    np.testing.assert_allclose(gradient, X.T @ np.cos(X @ W), rtol=1e-12)
    assert "np.cos" in decorated.source  # (the program each chunk runs)


class Model:
    """A loss as a method and as the object's call: `self` is no argument a call passes."""

    def __init__(self, strength):
        self.strength = strength

    def loss(self, w, X, y):
        return logistic(w, X, y) + self.strength * np.mean(y) * np.sum(w ** 2)

    __call__ = loss


def test_methods_callable_objects_and_partials_count_the_arguments_passed():
    model = Model(0.1)
    for loss in (model.loss, model, functools.partial(Model.loss, model)):
        expected = srcad.grad(loss)(W, X, Y)
        for data in (("X", "y"), (1, 2)):
            gradient = srcad.grad(loss, chunks_of=data, reduction="mean", block_size=9)(W, X, Y)
            np.testing.assert_allclose(gradient, expected, rtol=1e-12)
        with pytest.raises(UsageError, match="wrt=1 selects X, a data argument"):
            srcad.grad(loss, wrt=1, chunks_of=("X", "y"), reduction="mean")

# ---- Dask arrays ------------------------------------------------------------------------------
def test_dask_arrays_are_cut_by_their_chunks(dask_client):
    da = pytest.importorskip("dask.array")
    import dask
    x, y = da.from_array(X, chunks=(25, 2)), da.from_array(Y, chunks=25)  # (columns: one piece)
    local = chunked(srcad.value_and_grad, logistic, block_size=25)(W, X, Y)
    on_cluster = chunked(srcad.value_and_grad, logistic, executor=dask_client)(W, x, y)
    assert_identical(on_cluster, local)
    assert_identical(chunked(srcad.value_and_grad, logistic)(W, x, y), local)  # (the default
    with dask.config.set(scheduler="sync"):                                  # client)
        assert_identical(chunked(srcad.value_and_grad, logistic, executor=None)(W, x.persist(),
                                                                               y), local)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        assert_identical(chunked(srcad.value_and_grad, logistic, executor=pool)(W, x, Y),
                         local)  # (NumPy y cut as the Dask x is)


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_empty_dask_chunks_are_skipped(reduction):
    """Chunks of 30, 0 and 73 rows (as filtering rows leaves them): the sum of the two chunks
    with rows, with no NaN from the empty one and no warning."""
    da = pytest.importorskip("dask.array")
    import dask
    x = da.from_array(X, chunks=((30, 0, 73), (4,)))
    y = da.from_array(Y, chunks=((30, 0, 73),))
    with dask.config.set(scheduler="sync"), warnings.catch_warnings():
        warnings.simplefilter("error")
        value, gradient = chunked(srcad.value_and_grad, logistic, reduction)(W, x, y)
    (first, d_first), (second, d_second) = (srcad.value_and_grad(logistic)(W, X[s], Y[s])
                                            for s in (slice(0, 30), slice(30, None)))
    if reduction == "mean":
        first, d_first, second, d_second = (first * (30 / 103), d_first * (30 / 103),
                                            second * (73 / 103), d_second * (73 / 103))
    assert_identical((value, gradient), (first + second, d_first + d_second))
    if reduction == "mean":
        whole = srcad.value_and_grad(logistic)(W, X, Y)
        np.testing.assert_allclose(value, whole[0], rtol=1e-12)
        np.testing.assert_allclose(gradient, whole[1], rtol=1e-12)

def test_dask_chunks_persisted_on_the_workers(dask_client):
    da = pytest.importorskip("dask.array")
    x = dask_client.persist(da.from_array(X, chunks=(40, 4)))
    y = dask_client.persist(da.from_array(Y, chunks=40))
    p = {"w": W, "b": -0.5}
    assert_identical(chunked(srcad.grad, squared_errors, "sum", executor=dask_client)(p, x, y),
                     chunked(srcad.grad, squared_errors, "sum", block_size=40)(p, X, Y))


def test_a_killed_dask_worker_is_survived_by_a_data_parallel_gradient(dask_client, tmp_path):
    da = pytest.importorskip("dask.array")
    flag = str(tmp_path / "killed")
    crash_once = crashing_once(flag)

    def fragile(w, X, y):
        z = crash_once(X @ w)
        return np.mean(np.logaddexp(0.0, z) - y * z)
    x, y = da.from_array(X, chunks=(10, 4)), da.from_array(Y, chunks=10)
    result = chunked(srcad.grad, fragile, executor=dask_client)(W, x, y)
    assert os.path.exists(flag)  # a worker did die
    assert_identical(result, chunked(srcad.grad, logistic, block_size=10)(W, X, Y))


def test_dask_data_errors(dask_client):
    da = pytest.importorskip("dask.array")
    x = da.from_array(X, chunks=(25, 4))
    with pytest.raises(UsageError, match=r"(?s)different row chunks.*y\.rechunk"):
        chunked(srcad.grad, logistic)(W, x, da.from_array(Y, chunks=20))
    with pytest.raises(UsageError, match="(?s)w is a Dask array.*w.compute"):
        chunked(srcad.grad, logistic)(da.from_array(W), x, Y)
    with pytest.raises(UsageError, match="block_size= cuts NumPy data"):
        chunked(srcad.grad, logistic, block_size=5)(W, x, Y)
    with pytest.raises(UsageError, match=r"(?s)p holds a Dask array.*Dask arrays in p"):
        chunked(srcad.grad, squared_errors)({"w": da.from_array(W), "b": 0.5}, x, Y)
    kept = x[:, 0] > 0  # (rows filtered by a mask: Dask does not count them)
    with pytest.raises(UsageError, match=r"(?s)X \(chunks_of=\) is a Dask array of unknown "
                       r"row count.*X\.compute_chunk_sizes\(\)"):
        chunked(srcad.grad, logistic)(W, x[kept], da.from_array(Y, chunks=25)[kept])


def test_closed_executors_are_refused(closed_executors):
    client, pool = closed_executors
    for closed in (client, pool):
        gradient = chunked(srcad.grad, logistic, "sum", executor=closed)
        with pytest.raises(UsageError, match="(?s)takes no more tasks|is closed.*is open"):
            gradient(W, X, Y)
    dask_array = pytest.importorskip("dask.array")
    with pytest.raises(UsageError, match="is closed"):
        chunked(srcad.grad, logistic, "sum", executor=client)(
            W, dask_array.from_array(X, chunks=(25, 4)), Y)


# ---- what is refused --------------------------------------------------------------------------
def test_a_loss_not_declared_additive_is_refused():
    with pytest.raises(UsageError, match="declare it: reduction=\"sum\""):
        srcad.grad(logistic, chunks_of=("X", "y"))
    with pytest.raises(UsageError, match="reduction='max'"):
        srcad.value_and_grad(logistic, chunks_of=("X", "y"), reduction="max")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        with pytest.raises(UsageError, match="no chunks_of= names the data"):
            srcad.grad(logistic, executor=pool)
    with pytest.raises(UsageError, match="no chunks_of= names the data"):
        srcad.value_and_grad(logistic, reduction="mean")


def test_usage_errors_say_what_to_pass(monkeypatch):
    with pytest.raises(UsageError, match=r"wrt=\(0, 1\) selects X, a data argument"):
        srcad.grad(logistic, wrt=(0, 1), chunks_of=("X", "y"), reduction="mean")
    with pytest.raises(UsageError, match="wrt=0 selects X.*the first argument when not given"):
        srcad.grad(lambda X, y, w: np.sum(X @ w), chunks_of=("X", "y"), reduction="sum")
    for data in (("X", "Z"), (1, 5), (), ("X", "X")):
        with pytest.raises(UsageError, match=r"chunks_of=.* does not name data arguments of "
                           r"the loss, whose parameters are \('w', 'X', 'y'\)"):
            srcad.grad(logistic, chunks_of=data, reduction="mean")
    with pytest.raises(UsageError, match="has_aux= is not taken with chunks_of="):
        srcad.grad(logistic, chunks_of="X", reduction="sum", has_aux=True)
    g = chunked(srcad.grad, logistic)
    with pytest.raises(UsageError, match="do not fit the loss's parameters"):
        g(W, X)
    with pytest.raises(UsageError, match="different numbers of rows: X 103, y 90"):
        g(W, X, Y[:90])
    with pytest.raises(UsageError, match="y \\(chunks_of=\\) is list"):
        g(W, X, list(Y))
    with pytest.raises(UsageError, match="y \\(chunks_of=\\) was not passed"):
        srcad.grad(lambda w, X, y=None: np.sum(X @ w), chunks_of=("X", "y"),
                   reduction="sum")(W, X)
    with pytest.raises(UsageError, match="no rows"):
        g(W, X[:0], Y[:0])
    with pytest.raises(UsageError, match="positive int"):
        chunked(srcad.grad, logistic, block_size=0)
    monkeypatch.setitem(__import__("sys").modules, "distributed", None)  # not installed
    with pytest.raises(UsageError, match=r"pip install 'srcad\[dask\]'"):
        chunked(srcad.grad, logistic, executor="dask")
