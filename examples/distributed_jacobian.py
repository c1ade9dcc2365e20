"""The Jacobian of a simulator, computed in blocks on a Dask cluster.

A reaction-diffusion model steps a field `u` of n cells forward in time; the sensitivity of
the final field to the initial one is an n x n Jacobian. `srcad.jacobian(simulate,
executor=client)` cuts its columns into blocks, ships the simulator's source (the workers
need not be able to import this file) and gathers the blocks: the result is the local
call's, bit for bit, which this script checks, along with central finite differences for a
few columns.

    python examples/distributed_jacobian.py              # n = 200 on a LocalCluster of 2
    python examples/distributed_jacobian.py 2000         # the 2,000 x 2,000 Jacobian
    python examples/distributed_jacobian.py 2000 tcp://scheduler:8786   # a running cluster

Without Dask (`pip install 'srcad[dask]'`) it runs on a process pool of 2 instead.
"""
import concurrent.futures
import sys
import time

import numpy as np

import srcad


def simulate(u, rate, steps=40, dt=0.1):
    """Explicit Euler steps of u' = u'' + rate * u * (1 - u), with zero flux at both ends."""
    for _ in range(steps):
        laplacian = np.concatenate((u[1:2] - u[:1], u[:-2] - 2.0 * u[1:-1] + u[2:],
                                    u[-2:-1] - u[-1:]))
        u = u + dt * (laplacian + rate * u * (1.0 - u))
    return u


def main(n: int, executor) -> None:
    u0 = 0.5 + 0.4 * np.sin(np.linspace(0.0, 6.0, n))
    start = time.perf_counter()
    local = srcad.jacobian(simulate)(u0, 0.7)
    local_seconds = time.perf_counter() - start
    distributed = srcad.jacobian(simulate, executor=executor)
    distributed(u0, 0.7)  # (the first call also makes each worker compile the programs)
    start = time.perf_counter()
    jacobian = distributed(u0, 0.7)
    seconds = time.perf_counter() - start
    np.testing.assert_array_equal(jacobian, local)  # bit for bit
    for column in (0, n // 2, n - 1):
        step = np.zeros(n)
        step[column] = 1e-6
        central = (simulate(u0 + step, 0.7) - simulate(u0 - step, 0.7)) / 2e-6
        np.testing.assert_allclose(jacobian[:, column], central, rtol=1e-6, atol=1e-9)
    print(f"{n} x {n} Jacobian of {simulate.__name__}: locally {local_seconds:.2f} s, "
          f"on the executor {seconds:.2f} s; equal bit for bit, and to finite differences")


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        with concurrent.futures.ProcessPoolExecutor(2) as pool:
            main(size, pool)
    else:
        if len(sys.argv) > 2:
            with Client(sys.argv[2]) as client:
                main(size, client)
        else:
            with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0",
                              silence_logs=40) as cluster, Client(cluster) as client:
                main(size, client)
