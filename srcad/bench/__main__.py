"""`python -m srcad.bench`: run the benchmark and print its tables (see srcad/bench)."""
from __future__ import annotations

import argparse
import sys

from srcad.bench import checkpointing, executors, run, steady_heap
from srcad.bench.contenders import CONTENDERS
from srcad.bench.first_call import scaling
from srcad.bench.workloads import WORKLOADS
from srcad.errors import UsageError


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m srcad.bench", description=(
        "Time srcad's derivatives against hand-written NumPy gradients, tape mode and the "
        "peers that are installed."))
    parser.add_argument("--only", help="comma-separated workloads: " + ", ".join(
        w.name for w in WORKLOADS))
    parser.add_argument("--contenders", help="comma-separated contenders: " + ", ".join(
        CONTENDERS))
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--plot", metavar="PATH", help=(
        "also draw the ratios to the hand-written derivative, as PATH.png, .svg or .pdf "
        "(needs matplotlib: pip install 'srcad[plot]')"))
    parser.add_argument("--quick", action="store_true",
                        help="few short samples: a smoke run, not a measurement")
    instead = parser.add_mutually_exclusive_group()
    instead.add_argument("--first-call", action="store_true", help=(
        "print instead how the first gradient's time grows with the function's length"))
    instead.add_argument("--checkpoint", action="store_true", help=(
        "print instead the memory and time of a long RNN's gradient with and without "
        "srcad.checkpoint"))
    instead.add_argument("--scaling", action="store_true", help=(
        "print instead the wall time of a large Jacobian and a data-parallel gradient on 1 "
        "and 2 worker processes, and the cost of one task of each executor"))
    options = parser.parse_args(argv)
    main_options = [f"--{name}" for name in ("only", "contenders", "json", "plot", "quick")
                    if getattr(options, name) not in (None, False)]
    table = next((f"--{name.replace('_', '-')}" for name in ("first_call", "checkpoint",
                                                             "scaling")
                  if getattr(options, name)), None)
    if table and main_options:
        parser.error(f"{table} prints its own table and takes none of the main benchmark's "
                     f"options: leave out {', '.join(main_options)}")
    if options.first_call:
        scaling()
        return 0
    if options.checkpoint:
        checkpointing.curve()
        return 0
    if options.scaling:
        executors.speedups()
        return 0
    steady_heap()  # (for the whole process: a measuring one)
    try:
        run(only=_names(options.only), contenders=_names(options.contenders),
            quick=options.quick, json_path=options.json, plot_path=options.plot)
    except UsageError as error:  # (found before anything is timed: one line, no usage)
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    return 0


def _names(text):
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


if __name__ == "__main__":
    sys.exit(main())
