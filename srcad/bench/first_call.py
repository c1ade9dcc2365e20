"""first_call: how the first gradient's time grows with the length of the function.

The first call of `srcad.grad(f)` pays the transformation (parse, analyses, adjoint,
passes, compile); a function twice as long should cost about twice as much. The functions
measured are generated: straight-line NumPy code of a given number of lines, written the
way a person writes a long model (elementwise ufuncs, matrix products, indexing, sums,
names reused and reassigned, tuples packed and unpacked), registered with `linecache` so
srcad reads their source as it reads a module's. A short loop function measures the
constant cost every first call pays. The other modes of a function (`value_and_grad`,
`jvp`) made after its `grad` should cost less: they share its simple form.

`python -m srcad.bench --first-call` prints the curve; `scaling` returns it.
"""
from __future__ import annotations

import linecache
import random
import time

import numpy as np

SIZES = (250, 500, 1000, 2000)


def straight_line_source(lines: int, seed: int = 0) -> str:
    """The source of `def straight_line(x, w)` with about `lines` statements in its body: `x` a
    (4,) vector, `w` a (4, 4) matrix, the result a number. The same `lines` and `seed` give
    the same source."""
    rng = random.Random(seed)
    vectors, numbers = ["x"], []
    body = ["    total = 0.0"]

    def vector():  # (recent names more often, as in real code)
        return vectors[-1 - min(int(rng.expovariate(0.3)), len(vectors) - 1)]

    def fresh(kind):
        return f"{kind}{len(body)}" if rng.random() < 0.85 or len(vectors) < 4 else vector()

    while len(body) < lines - 1:
        choice = rng.random()
        if choice < 0.3:
            name = fresh("a")
            ufunc = rng.choice(("sin", "tanh", "cos"))
            body.append(f"    {name} = np.{ufunc}({vector()}) * {vector()}")
        elif choice < 0.45:
            name = fresh("d")
            body.append(f"    {name} = {vector()} @ w")
        elif choice < 0.6:
            name = fresh("e")
            body.append(f"    {name} = {vector()}[{rng.randrange(4)}] + {vector()}")
        elif choice < 0.72:
            name = f"s{len(body)}"
            body.append(f"    {name} = np.sum({vector()} * {vector()})")
            numbers.append(name)
            body.append(f"    total = total + 0.01 * {name}")
            continue
        elif choice < 0.8 and numbers:
            name = fresh("b")
            body.append(f"    {name} = 0.5 * {vector()} - {rng.choice(numbers)}")
        elif choice < 0.9:
            name, second = fresh("p"), f"q{len(body)}"
            body.append(f"    {name}, {second} = {vector()} * 0.9, {vector()} + 0.1")
            vectors.append(second)
        else:
            pair = f"t{len(body)}"
            body.append(f"    {pair} = ({vector()}, {vector()})")
            name = f"u{len(body)}"
            body.append(f"    {name}, _ = {pair}")
        if name not in vectors:
            vectors.append(name)
    body.append(f"    return total + np.sum({vectors[-1]} * {vectors[-1]})")
    return "def straight_line(x, w):\n" + "\n".join(body) + "\n"


def loop_source() -> str:
    """A 20-line function with a loop and a branch: what every first call pays at least."""
    return '''def short_loop(x, w):
    h = x
    total = 0.0
    for step in range(5):
        z = h @ w
        a = np.tanh(z) * x
        b = np.sin(a) + h
        if step % 2 == 0:
            c = b * 0.5
        else:
            c = b - 0.1
        total = total + np.sum(c * c)
        h = c
    d = h[0] + x
    p, q = d * 0.9, h + 0.1
    e = np.cos(p) * q
    f = e @ w
    g = np.sum(f * f)
    y = np.exp(-g)
    return total + y
'''


def define(source: str, name: str):
    """The function `name` that `source` defines, with its source in `linecache` (as a
    module's is) so srcad can read it."""
    filename = f"<srcad.bench.first_call:{name}:{len(source)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"np": np}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


def arguments():
    rng = np.random.default_rng(0)
    return rng.standard_normal(4) * 0.5, rng.standard_normal((4, 4)) / 4


def first_call_seconds(fn, repeat: int = 1) -> float:
    """Seconds from `srcad.grad(fn)` to its first gradient, with srcad's cache cleared:
    the least of `repeat` measurements (a shared machine only ever adds time)."""
    import srcad
    x, w = arguments()
    times = []
    for _ in range(repeat):
        srcad.clear_cache()
        start = time.perf_counter()
        srcad.grad(fn)(x, w)
        times.append(time.perf_counter() - start)
    return min(times)


def later_modes_seconds(fn, repeat: int = 1) -> dict[str, float]:
    """Seconds to the first `value_and_grad` and the first `jvp` of `fn` made after its
    first `srcad.grad`: programs of other modes, which reuse the simple form made for
    `grad` (srcad/compiler/frontend/kept.py). The least of `repeat` measurements."""
    import srcad
    x, w = arguments()
    later = {"value_and_grad": lambda: srcad.value_and_grad(fn)(x, w),
             "jvp": lambda: srcad.jvp(fn, (x, w), (x, w))}
    times = {name: [] for name in later}
    for _ in range(repeat):
        srcad.clear_cache()
        srcad.grad(fn)(x, w)
        for name, call in later.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return {name: min(seconds) for name, seconds in times.items()}


def scaling(sizes=SIZES, repeat: int = 3, out=print) -> list[tuple[str, float]]:
    """The first call's time for the loop function and for straight-line functions of
    `sizes` lines, printed as a table with the growth per doubling, then the first calls of
    `value_and_grad` and `jvp` of the longest after its `grad`; returns the rows. A first
    transformation runs before, unmeasured: the first in a process also pays for what
    srcad sets up once (rule tables, imports)."""
    first_call_seconds(define(straight_line_source(20, seed=1), "straight_line"))
    rows = [("20-line loop", first_call_seconds(define(loop_source(), "short_loop"), repeat))]
    for lines in sizes:
        fn = define(straight_line_source(lines), "straight_line")
        rows.append((f"{lines} lines", first_call_seconds(fn, repeat)))
    rows += [(f"then {name}", seconds)
             for name, seconds in later_modes_seconds(fn, repeat).items()]
    out(table(rows))
    return rows


def table(rows) -> str:
    lines = ["First call of srcad.grad by the function's length (growth: time / time of the "
             "row before, per doubling of length; then the first calls of other modes of the "
             "longest, after its grad)", f"{'function':<20} {'first call':>10}  growth"]
    previous = None
    for label, seconds in rows:
        growth = f"{seconds / previous:.2f}x" if previous and label.endswith("lines") else ""
        lines.append(f"{label:<20} {seconds * 1e3:>7.0f} ms  {growth}")
        previous = seconds if label.endswith("lines") else None
    return "\n".join(lines)
