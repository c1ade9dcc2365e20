"""report: the benchmark's three tables (time per call with the ratio to the hand-written
derivative, first call, peak memory), its JSON form and an optional bar chart."""
from __future__ import annotations

import json
from dataclasses import asdict


def tables(results, contenders) -> str:
    by_cell = {(r.workload, r.contender): r for r in results}
    workloads = list(dict.fromkeys(r.workload for r in results))

    def time_cell(r):
        if r.median is None:
            return "-"
        hand = by_cell.get((r.workload, "hand"))
        ratio = f" ({r.median / hand.median:.1f}x)" if hand and hand.median else ""
        return _duration(r.median) + ratio + ("" if r.agrees in (True, None) else " WRONG")

    sections = [
        ("Median time per derivative call (ratio to the hand-written NumPy derivative)",
         time_cell),
        ("First call: transformation, compilation and one call",
         lambda r: "-" if r.first_call is None else _duration(r.first_call)),
        ("Peak memory of one derivative call (tracemalloc; '-' where the peer's allocator is "
         "not traced)", lambda r: "-" if r.peak_memory is None else _size(r.peak_memory)),
    ]
    if "primal" in contenders:
        def primal_cell(r):
            primal = by_cell.get((r.workload, "primal"))
            if r.median is None or not (primal and primal.median):
                return "-"
            return f"{r.median / primal.median:.1f}x"
        sections.insert(1, ("Time per derivative call / time of one call of the function "
                            "itself", primal_cell))
    out = []
    for title, cell in sections:
        rows = [[w] + [cell(by_cell[(w, c)]) for c in contenders] for w in workloads]
        out.append(title + "\n" + _grid(["workload", *contenders], rows))
    notes = sorted({f"- {r.contender} on {r.workload}: {r.note}" for r in results if r.note})
    if notes:
        out.append("Notes\n" + "\n".join(notes))
    return "\n\n".join(out) + "\n"


def _grid(header, rows) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    line = lambda cells: "  ".join(  # noqa: E731
        str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _duration(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _size(count: int) -> str:
    for unit, scale in (("MB", 1 << 20), ("kB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count} B"


def write_json(results, path) -> None:
    with open(path, "w") as handle:
        json.dump([asdict(r) for r in results], handle, indent=1)


def plot(results, contenders, path) -> None:
    """A bar chart of each contender's ratio to the hand-written derivative (log scale)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("--plot needs matplotlib: pip install matplotlib") from None
    by_cell = {(r.workload, r.contender): r for r in results}
    workloads = list(dict.fromkeys(r.workload for r in results))
    shown = [c for c in contenders if c != "hand"]
    figure, axes = plt.subplots(figsize=(1.2 * len(workloads) + 3, 4.5))
    width = 0.8 / max(len(shown), 1)
    for k, contender in enumerate(shown):
        ratios = []
        for w in workloads:
            r, hand = by_cell[(w, contender)], by_cell[(w, "hand")]
            ratios.append(r.median / hand.median if r.median and hand.median else 0.0)
        axes.bar([i + k * width for i in range(len(workloads))], ratios, width, label=contender)
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set_yscale("log")
    axes.set_xticks([i + 0.4 - width / 2 for i in range(len(workloads))], workloads,
                    rotation=30)
    axes.set_ylabel("time / hand-written NumPy")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path)
