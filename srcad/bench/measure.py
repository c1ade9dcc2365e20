"""measure: first call, agreement, peak memory and interleaved timing of every contender
on one workload.

Timing is interleaved: each round times every contender once (a batch of calls sized so a
sample lasts a few milliseconds), in an order that rotates between rounds, so drift of a
shared machine reaches all contenders alike; the first rounds warm up and are not kept; the
reported figure is the median sample, with the quartiles, least and greatest beside it as
its spread.
"""
from __future__ import annotations

import statistics
import time
import tracemalloc
from dataclasses import dataclass, field

import numpy as np

from srcad.bench.contenders import make

WARM_UP_ROUNDS = 3  # timed, not kept: see _interleaved

# Peers whose arrays live outside NumPy's allocator: tracemalloc cannot see their memory.
_UNTRACED = {"jax", "jax.jit", "torch"}


@dataclass
class Result:
    workload: str
    contender: str
    median: float | None = None       # seconds per derivative call, the median sample
    lower_quartile: float | None = None
    upper_quartile: float | None = None
    minimum: float | None = None
    maximum: float | None = None
    samples: list[float] = field(default_factory=list)  # seconds per call, one per round
    first_call: float | None = None   # seconds: transformation, compilation and one call
    peak_memory: int | None = None    # bytes allocated at the peak of one call
    agrees: bool | None = None        # with the hand-written derivative
    note: str = ""


    def set_samples(self, samples: list[float]) -> None:
        self.samples = samples
        if len(samples) == 1:
            self.lower_quartile = self.median = self.upper_quartile = samples[0]
        else:
            self.lower_quartile, self.median, self.upper_quartile = statistics.quantiles(
                samples, n=4, method="inclusive")
        self.minimum, self.maximum = min(samples), max(samples)


def measure(workload, contenders, rounds: int, sample_seconds: float,
            timing_starts=lambda seconds: None) -> list[Result]:
    """One result per contender, in the order of `contenders`: the first call of each, then
    all of them timed together (`timing_starts(seconds)` is called before, with an estimate
    of how long that takes), then the peak memory of one more call of each: a call as the
    timed ones are, not one that still makes what later calls reuse (srcad's quick call of
    the arguments' kinds is made by the second)."""
    import srcad
    expected = workload.hand(*workload.make_args())
    primal = workload.fn(*workload.make_args()[:-1 if workload.kind == "hvp" else None])
    results, calls = [], {}
    for contender in contenders:
        result = Result(workload.name, contender)
        results.append(result)
        if contender == "srcad":
            srcad.clear_cache()  # the first call pays the transformation
        call, reason = make(contender, workload)
        if call is None:
            result.note = reason
            continue
        try:
            start = time.perf_counter()
            value = call()
            result.first_call = time.perf_counter() - start
        except Exception as error:  # a peer refusing the program: report, go on
            result.note = f"refuses: {type(error).__name__}: {_first_line(error)}"
            continue
        result.agrees = _agree(value, primal if contender == "primal" else expected)
        if not result.agrees:
            result.note = "disagrees with the hand-written derivative"
        calls[contender] = call
    samples = _interleaved(calls, rounds, sample_seconds, timing_starts)
    for result in results:
        if samples.get(result.contender):
            result.set_samples(samples[result.contender])
        if result.contender in calls and result.contender not in _UNTRACED:
            result.peak_memory = _peak_memory(calls[result.contender])
    return results


def _first_line(error) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:90] if text else ""


def _agree(value, expected) -> bool:
    if isinstance(expected, dict):
        return isinstance(value, dict) and value.keys() == expected.keys() and all(
            _agree(value[k], expected[k]) for k in expected)
    if isinstance(expected, (tuple, list)) or isinstance(value, (tuple, list)):
        values = value if isinstance(value, (tuple, list)) else (value,)
        wanted = expected if isinstance(expected, (tuple, list)) else (expected,)
        return len(values) == len(wanted) and all(map(_agree, values, wanted))
    return np.allclose(np.asarray(value, dtype=float), np.asarray(expected, dtype=float),
                       rtol=1e-6, atol=1e-9)


def _peak_memory(call) -> int:
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        call()
        return tracemalloc.get_traced_memory()[1] - baseline
    finally:
        tracemalloc.stop()


def _batch_size(call, sample_seconds: float) -> tuple[int, float]:
    """How many calls make one sample of about `sample_seconds`, and the seconds one takes."""
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            call()
        elapsed = time.perf_counter() - start
        if elapsed >= sample_seconds / 4 or number >= 1 << 16:
            return max(1, int(number * sample_seconds / max(elapsed, 1e-9))), elapsed / number
        number *= 4


def _interleaved(calls: dict, rounds: int, sample_seconds: float, timing_starts,
                 warm_up: int = WARM_UP_ROUNDS) -> dict:
    """Samples of each call's time, `rounds` of them, after `warm_up` rounds not kept: a
    process's first second or so (its heap growing to its working size, the caches of the
    CPU and of the interpreter filling) runs every contender slower, and not alike.
    `timing_starts` is told first how many seconds the rounds will take, about."""
    batches = {name: _batch_size(call, sample_seconds) for name, call in calls.items()}
    numbers = {name: number for name, (number, _) in batches.items()}
    timing_starts((warm_up + rounds) * sum(n * seconds for n, seconds in batches.values()))
    samples = {name: [] for name in calls}
    names = list(calls)
    for round_index in range(-warm_up, rounds):
        shift = round_index % max(len(names), 1)
        for name in names[shift:] + names[:shift]:
            call, number = calls[name], numbers[name]
            start = time.perf_counter()
            for _ in range(number):
                call()
            if round_index >= 0:
                samples[name].append((time.perf_counter() - start) / number)
    return samples
