"""report: the benchmark's tables (time per call with its spread and the ratio to the
hand-written derivative, the ratio to the function itself, first call, peak memory) headed
by where they were measured, their JSON form with that metadata, and an optional bar chart
(matplotlib, imported only to draw it)."""
from __future__ import annotations

import json
from dataclasses import asdict

from srcad.bench.environment import summary

NOT_AVAILABLE = "n/a"  # a cell without a figure (the notes say why)


def tables(results, contenders, metadata=None, not_run=None) -> str:
    """The tables as text: `contenders` are the columns, `metadata` (environment.describe)
    heads them, `not_run` (contender → why) joins the notes, one line per reason."""
    by_cell = {(r.workload, r.contender): r for r in results}
    workloads = list(dict.fromkeys(r.workload for r in results))
    rounds = max((len(r.samples) for r in results), default=0)

    def time_cell(r):
        if r.median is None:
            return NOT_AVAILABLE
        ratio = ratio_text(r, by_cell.get((r.workload, "hand")))
        return f"{spread_text(r)} {ratio}" + ("" if r.agrees in (True, None) else " WRONG")

    sections = [
        (f"Median time per derivative call ± half its interquartile range over {rounds} "
         "samples (ratio to the hand-written NumPy derivative; lower is better)", time_cell),
        ("First call: transformation, compilation and one call",
         lambda r: NOT_AVAILABLE if r.first_call is None else duration(r.first_call)),
        ("Peak memory of one derivative call (tracemalloc; n/a also where the peer's allocator "
         "is not traced)",
         lambda r: NOT_AVAILABLE if r.peak_memory is None else _size(r.peak_memory)),
    ]
    if "primal" in contenders:
        def primal_cell(r):
            primal = by_cell.get((r.workload, "primal"))
            if r.median is None or not (primal and primal.median):
                return NOT_AVAILABLE
            return _multiple(r.median / primal.median)
        sections.insert(1, ("Time per derivative call / time of one call of the function "
                            "itself", primal_cell))
    out = [summary(metadata)] if metadata else []
    for title, cell in sections:
        rows = [[w] + [cell(by_cell[(w, c)]) for c in contenders] for w in workloads]
        out.append(title + "\n" + _grid(["workload", *contenders], rows))
    notes = _notes(results, not_run or {})
    if notes:
        out.append("Notes (n/a: the contender did not run the workload)\n" + "\n".join(notes))
    return "\n\n".join(out) + "\n"


def spread_text(result) -> str:
    """The median and half the interquartile range, in percent of the median: "765 us ±2%"."""
    half_range = (result.upper_quartile - result.lower_quartile) / 2
    return f"{duration(result.median)} ±{100 * half_range / result.median:.0f}%"


def ratio_text(result, hand) -> str:
    """The median as a multiple of the hand-written derivative's: "(1.2x)", or ""."""
    return f"({_multiple(result.median / hand.median)})" if hand and hand.median else ""


def _multiple(ratio: float) -> str:
    """"2.5x", and two figures below 0.1 ("0.036x", not "0.0x")."""
    return f"{ratio:.1f}x" if ratio >= 0.1 else f"{ratio:.2g}x"


def _notes(results, not_run) -> list[str]:
    """One line per contender and reason, naming the workloads it holds for (a peer that is
    not installed is one line, not one per workload)."""
    workloads_of = {}
    for r in results:
        if r.note:
            workloads_of.setdefault((r.contender, r.note), []).append(r.workload)
    return ([f"- {', '.join(names)}: not run, {reason}"
             for reason, names in by_reason(not_run).items()] +
            [f"- {contender} on {', '.join(names)}: {note}"
             for (contender, note), names in sorted(workloads_of.items())])


def by_reason(not_run: dict) -> dict:
    """{name: why} → {why: [names]}, in first-seen order: one line per reason."""
    names_of = {}
    for name, reason in not_run.items():
        names_of.setdefault(reason, []).append(name)
    return names_of


def _grid(header, rows) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    line = lambda cells: "  ".join(  # noqa: E731
        str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def duration(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _size(count: int) -> str:
    for unit, scale in (("MB", 1 << 20), ("kB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count} B"


def write_json(results, metadata, path) -> None:
    """`{"metadata": ..., "results": [...]}`: one result per workload and contender, its
    times in seconds (the samples and their quartiles beside the median)."""
    with open(path, "w") as handle:
        json.dump({"metadata": metadata, "results": [asdict(r) for r in results]}, handle,
                  indent=1)


def plot(results, metadata, path):
    """A bar chart of each contender's median time as a multiple of the hand-written
    derivative's (log scale), the interquartile range as an error bar, only the contenders
    that ran, "n/a" where one did not run a workload; saved to `path` and returned (a
    matplotlib `Figure`). Needs matplotlib (imported here)."""
    from matplotlib.figure import Figure  # (no pyplot: the caller's backend is left alone)
    by_cell = {(r.workload, r.contender): r for r in results}
    workloads = list(dict.fromkeys(r.workload for r in results))
    shown = [c for c in dict.fromkeys(r.contender for r in results if r.median is not None)
             if c != "hand"]
    figure = Figure(figsize=(max(8.0, (0.12 * len(shown) + 0.3) * len(workloads) + 2), 5.5))
    axes = figure.subplots()
    width = 0.8 / max(len(shown), 1)
    missing = []  # the x of each bar that is not there
    for k, contender in enumerate(shown):
        xs, ratios, below, above = [], [], [], []
        for i, w in enumerate(workloads):
            r, hand = by_cell.get((w, contender)), by_cell.get((w, "hand"))
            x = i + (k - (len(shown) - 1) / 2) * width
            if r is None or r.median is None or not (hand and hand.median):
                missing.append(x)
                continue
            xs.append(x)
            ratios.append(r.median / hand.median)
            below.append((r.median - r.lower_quartile) / hand.median)
            above.append((r.upper_quartile - r.median) / hand.median)
        axes.bar(xs, ratios, width, yerr=[below, above], capsize=1.5, label=contender,
                 color=f"C{k}", error_kw={"linewidth": 0.8})
    axes.axhline(1.0, color="black", linewidth=0.8, label="hand-written NumPy (= 1)")
    axes.set_yscale("log")
    bottom = axes.get_ylim()[0]
    for x in missing:
        axes.text(x, bottom * 1.15, NOT_AVAILABLE, rotation=90, ha="center", va="bottom",
                  fontsize=7, color="0.45")
    axes.set_xticks(range(len(workloads)), workloads, rotation=30, ha="right")
    axes.set_xlabel("workload (n/a: the contender did not run it; the tables' notes say why)",
                    fontsize=8)
    axes.set_ylabel("time per call / hand-written NumPy's\n(log scale; lower is better)")
    axes.set_title("srcad.bench: time of one derivative call relative to the hand-written "
                   "NumPy derivative", fontsize=11)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    axes.grid(axis="y", which="major", linewidth=0.3)
    footer = summary(metadata).splitlines() if metadata else []
    if footer:
        figure.text(0.01, 0.01, "\n".join(footer), ha="left", va="bottom", fontsize=7,
                    color="0.35")
    figure.tight_layout(rect=(0, 0.025 * len(footer) + 0.01 if footer else 0, 1, 1))
    figure.savefig(path, dpi=120)
    return figure
