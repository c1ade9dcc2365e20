"""A logistic regression fitted by scipy.optimize on data chunked over a Dask cluster.

The log-loss is a mean over the rows of the data, so its gradient is the rows-weighted sum
of the gradients on chunks of rows. `srcad.value_and_grad(log_loss, chunks_of=("X", "y"),
reduction="mean", executor=client)` runs the gradient program on each chunk where Dask
keeps it (the data never comes to this process: it is drawn on the workers) and adds the
chunks' results by a fixed-order tree; scipy's L-BFGS-B takes `(value, gradient)` with
`jac=True`. The script checks the chunked gradient against the same chunks computed in this
process (bit for bit), against central finite differences, and the fit against one on the
whole data in memory.

    python examples/data_parallel_logistic.py                  # 20,000 rows, 2 processes
    python examples/data_parallel_logistic.py 50000000         # 50 million rows x 12
    python examples/data_parallel_logistic.py 50000000 tcp://scheduler:8786   # a cluster

(50 million rows of 12 float64 features are 4.8 GB; the in-memory comparisons are made up
to 2 million rows.) Without Dask (`pip install 'srcad[dask]'`) the data is a NumPy array
cut into chunks on a process pool of 2 instead.
"""
import concurrent.futures
import sys
import time

import numpy as np
import scipy.optimize

import srcad

FEATURES = 12
ROWS_PER_CHUNK = 2_500
IN_MEMORY = 2_000_000  # (rows up to which the fit is repeated on the data in this process)


def log_loss(w, X, y):
    """The mean negative log-likelihood of labels y in {0, 1} under P(y=1) = sigmoid(X @ w)."""
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def true_weights():
    return np.linspace(-1.0, 1.0, FEATURES)


def dask_data(rows: int):
    """Features and labels drawn chunk by chunk on the workers, kept there."""
    import dask.array as da
    state = da.random.RandomState(0)
    X = state.standard_normal((rows, FEATURES), chunks=(ROWS_PER_CHUNK, FEATURES))
    probability = 1.0 / (1.0 + da.exp(-(X @ true_weights())))
    y = (state.random_sample(rows, chunks=ROWS_PER_CHUNK) < probability).astype(float)
    return X.persist(), y.persist()


def numpy_data(rows: int):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, FEATURES))
    y = (rng.random(rows) < 1.0 / (1.0 + np.exp(-(X @ true_weights())))).astype(float)
    return X, y


def fit(loss_and_grad, X, y):
    start = time.perf_counter()
    result = scipy.optimize.minimize(loss_and_grad, np.zeros(FEATURES), args=(X, y),
                                     jac=True, method="L-BFGS-B", options={"gtol": 1e-9})
    assert result.success, result.message
    return result, time.perf_counter() - start


def main(rows: int, executor, X, y) -> None:
    chunked = srcad.value_and_grad(log_loss, chunks_of=("X", "y"), reduction="mean",
                                   executor=executor, block_size=None if hasattr(
                                       X, "to_delayed") else ROWS_PER_CHUNK)
    w0 = np.full(FEATURES, 0.1)
    value, gradient = chunked(w0, X, y)
    for direction in np.eye(FEATURES)[[0, FEATURES // 2, FEATURES - 1]]:
        central = (chunked(w0 + 1e-6 * direction, X, y)[0]
                   - chunked(w0 - 1e-6 * direction, X, y)[0]) / 2e-6
        assert abs(central - gradient @ direction) < 1e-6, (central, gradient @ direction)
    result, seconds = fit(chunked, X, y)
    print(f"{rows:,} rows in chunks of {ROWS_PER_CHUNK:,}: L-BFGS-B converged in "
          f"{result.nit} iterations, {result.nfev} gradients, {seconds:.2f} s; "
          f"log-loss {result.fun:.6f}")
    if rows <= IN_MEMORY:
        X_here, y_here = np.asarray(X), np.asarray(y)
        here = srcad.value_and_grad(log_loss, chunks_of=("X", "y"), reduction="mean",
                                    block_size=ROWS_PER_CHUNK)(w0, X_here, y_here)
        assert here[0] == value and np.array_equal(here[1], gradient)  # bit for bit
        whole, whole_seconds = fit(srcad.value_and_grad(log_loss), X_here, y_here)
        np.testing.assert_allclose(result.x, whole.x, atol=1e-6)
        print(f"the same chunks in this process: equal bit for bit; the fit on the whole "
              f"data in memory ({whole_seconds:.2f} s) agrees to 1e-6")
    error = np.max(np.abs(result.x - true_weights()))
    assert error < 20.0 / np.sqrt(rows), error
    print(f"weights within {error:.3f} of those the labels were drawn with")


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        with concurrent.futures.ProcessPoolExecutor(2) as pool:
            main(size, pool, *numpy_data(size))
    else:
        if len(sys.argv) > 2:
            with Client(sys.argv[2]) as client:
                main(size, client, *dask_data(size))
        else:
            with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0",
                              silence_logs=40) as cluster, Client(cluster) as client:
                main(size, client, *dask_data(size))
