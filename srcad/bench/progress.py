"""progress: what a benchmark run is doing, told on stderr while it runs (the tables go to
stdout at the end).

A line names each workload as it starts (and, when its timing rounds will take more than a
few seconds, about how long); when they end, a line per contender gives its median time,
spread, ratio and first call, and a last line the time taken and an estimate of the time
left: the mean time of the workloads done so far times the number still to run.
"""
from __future__ import annotations

import sys
import time

from srcad.bench.report import NOT_AVAILABLE, by_reason, duration, ratio_text, spread_text


LONG_TIMING_SECONDS = 5.0


class Progress:
    """Prints to `stream` (stderr by default), flushing each line so a pipe sees it then."""

    def __init__(self, workloads: int, stream=None, clock=time.monotonic):
        self.total = workloads
        self.done = 0
        self.stream = sys.stderr if stream is None else stream
        self.clock = clock
        self.started = clock()
        self.workload_started = self.started

    def say(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def run_starts(self, contenders, rounds: str, not_run: dict) -> None:
        """What will run, and one line per reason for what will not (contenders or
        workloads whose packages are not installed)."""
        self.say(f"python -m srcad.bench: {_count(self.total, 'workload')} x "
                 f"{_count(len(contenders), 'contender')} ({', '.join(contenders)}), "
                 f"{rounds}; the tables follow on stdout")
        for reason, names in by_reason(not_run).items():
            self.say(f"not run: {', '.join(names)}: {reason}")

    def workload_starts(self, workload) -> None:
        self.workload_started = self.clock()
        self.say(f"{self._counter(self.done + 1)} {workload.name}: {workload.description}")

    def timing_starts(self, seconds: float) -> None:
        """Announce the timing rounds when they will take long enough to wonder about."""
        if seconds >= LONG_TIMING_SECONDS:
            self.say(f"{self._counter(self.done + 1)} timing the contenders together: about "
                     f"{_seconds(seconds)}")

    def workload_ends(self, results) -> None:
        """A line per contender of the workload just measured, then the time left."""
        self.done += 1
        counter = self._counter(self.done)
        hand = next((r for r in results if r.contender == "hand"), None)
        width = max(len(r.contender) for r in results)
        for result in results:
            if result.median is None:
                figures = f"{NOT_AVAILABLE}: {result.note}"
            else:
                figures = (f"{spread_text(result)} {ratio_text(result, hand)}, "
                           f"first call {duration(result.first_call)}")
                if result.note:
                    figures += f" ({result.note})"
            self.say(f"{counter} {result.workload} {result.contender:<{width}}  {figures}")
        now = self.clock()
        left = (now - self.started) / self.done * (self.total - self.done)
        estimate = f"about {_seconds(left)} left" if self.done < self.total else "all done"
        self.say(f"{counter} {results[0].workload} took {_seconds(now - self.workload_started)}"
                 f"; {estimate}")

    def _counter(self, number: int) -> str:
        return f"[{number:>{len(str(self.total))}}/{self.total}]"


def _seconds(seconds: float) -> str:
    if seconds >= 60:
        return f"{int(seconds // 60)} min {round(seconds % 60):02d} s"
    return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")
