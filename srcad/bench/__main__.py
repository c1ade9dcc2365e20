"""`python -m srcad.bench`: run the benchmark and print its tables (see srcad/bench)."""
from __future__ import annotations

import argparse
import sys

from srcad.bench import checkpointing, run, steady_heap
from srcad.bench.contenders import CONTENDERS
from srcad.bench.first_call import scaling
from srcad.bench.workloads import WORKLOADS


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m srcad.bench", description=(
        "Time srcad's derivatives against hand-written NumPy gradients, tape mode and the "
        "peers that are installed."))
    parser.add_argument("--only", help="comma-separated workloads: " + ", ".join(
        w.name for w in WORKLOADS))
    parser.add_argument("--contenders", help="comma-separated contenders: " + ", ".join(
        CONTENDERS))
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--plot", metavar="PATH", help="also draw the ratios (needs matplotlib)")
    parser.add_argument("--quick", action="store_true",
                        help="few short samples: a smoke run, not a measurement")
    parser.add_argument("--first-call", action="store_true", help=(
        "print instead how the first gradient's time grows with the function's length"))
    parser.add_argument("--checkpoint", action="store_true", help=(
        "print instead the memory and time of a long RNN's gradient with and without "
        "srcad.checkpoint"))
    options = parser.parse_args(argv)
    if options.first_call:
        scaling()
        return 0
    if options.checkpoint:
        checkpointing.curve()
        return 0
    steady_heap()  # (for the whole process: a measuring one)
    try:
        run(only=_names(options.only), contenders=_names(options.contenders),
            quick=options.quick, json_path=options.json, plot_path=options.plot)
    except ValueError as error:
        parser.error(str(error))
    return 0


def _names(text):
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


if __name__ == "__main__":
    sys.exit(main())
