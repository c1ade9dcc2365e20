"""The benchmark runs (a smoke run on two workloads, as CI does) and its pieces report what
they should: progress while it runs, options checked before it, spread and metadata beside
the figures, a plot of what ran. No timing is asserted: timings belong to
`python -m srcad.bench`."""
import dataclasses
import io
import json
import platform
import re
import subprocess
import sys

import numpy as np
import pytest

import srcad
import srcad.bench as bench
import srcad.bench.__main__ as bench_main
from srcad.bench import checkpointing, contenders, environment, executors, first_call, run
from srcad.bench.measure import Result, measure
from srcad.bench.progress import Progress
from srcad.bench.report import plot, tables
from srcad.bench.workloads import WORKLOADS
from srcad.errors import UsageError


def test_quick_run_on_two_workloads_writes_agreeing_results(tmp_path):
    path = tmp_path / "bench.json"
    completed = subprocess.run(
        [sys.executable, "-m", "srcad.bench", "--quick", "--only", "scalar,rnn",
         "--contenders", "srcad,tape", "--json", str(path)],
        capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert "Median time per derivative call" in completed.stdout
    assert f"numpy {np.__version__}" in completed.stdout  # (the metadata heads the tables)
    report = json.loads(path.read_text())
    rows = report["results"]
    assert {(r["workload"], r["contender"]) for r in rows} == {
        (w, c) for w in ("scalar", "rnn") for c in ("hand", "srcad", "tape")}
    for row in rows:
        assert row["agrees"] is True and row["median"] > 0 and row["first_call"] > 0
        assert len(row["samples"]) == 3 and row["minimum"] == min(row["samples"])
        assert row["minimum"] <= row["lower_quartile"] <= row["median"] \
            <= row["upper_quartile"] <= row["maximum"] == max(row["samples"])
        assert row["median"] == sorted(row["samples"])[1]
    metadata = report["metadata"]
    assert metadata["versions"]["numpy"] == np.__version__
    assert metadata["cores"] >= 1 and metadata["python"].endswith(platform.python_version())
    assert metadata["blas"] and metadata["cpu"] and metadata["timed_rounds"] == 3
    assert "autograd" not in metadata["versions"]  # (only the packages of what ran)
    # progress: the run announced, a line per workload and contender, the time left
    progress = completed.stderr.splitlines()
    assert progress[0].startswith("python -m srcad.bench: 2 workloads x 3 contenders")
    for workload, number in (("scalar", 1), ("rnn", 2)):
        for contender in ("hand", "srcad", "tape"):
            assert any(line.startswith(f"[{number}/2] {workload} {contender} ")
                       and "first call" in line for line in progress), completed.stderr
    assert re.search(r"\[1/2\] scalar took .*; about .* left", completed.stderr)
    assert progress[-1].endswith("all done")


def test_progress_comes_as_each_workload_ends_before_the_tables():
    events = []

    class Recorder:
        def write(self, text):
            if text.strip():
                events.append(("progress", text.strip()))

        def flush(self):
            pass
    run(only=["scalar", "while"], contenders=["srcad"], quick=True,
        out=lambda text: events.append(("tables", text)), progress_to=Recorder())
    kinds = [kind for kind, _ in events]
    assert kinds[-1] == "tables" and kinds.count("tables") == 1
    texts = [text for _, text in events]
    first_done = next(i for i, t in enumerate(texts) if t.startswith("[1/2] scalar took"))
    second_start = next(i for i, t in enumerate(texts) if t.startswith("[2/2] while:"))
    assert first_done < second_start  # (the first workload is told before the second runs)


def test_progress_estimates_the_time_left_from_the_workloads_done():
    now = [100.0]
    stream = io.StringIO()
    progress = Progress(3, stream=stream, clock=lambda: now[0])
    workload = WORKLOADS[0]
    progress.workload_starts(workload)
    progress.timing_starts(1.0)   # (short: not announced)
    progress.timing_starts(42.0)
    now[0] += 12.0
    hand, srcad_row = Result(workload.name, "hand", first_call=1e-6), \
        Result(workload.name, "srcad", first_call=0.03)
    hand.set_samples([1e-6, 1e-6, 1e-6])
    srcad_row.set_samples([2e-6, 3e-6, 4e-6])
    progress.workload_ends([hand, srcad_row, Result(workload.name, "tape", note="refuses")])
    assert stream.getvalue().splitlines() == [
        f"[1/3] scalar: {workload.description}",
        "[1/3] timing the contenders together: about 42 s",
        "[1/3] scalar hand   1 us ±0% (1.0x), first call 1 us",
        "[1/3] scalar srcad  3 us ±17% (3.0x), first call 30 ms",
        "[1/3] scalar tape   n/a: refuses",
        "[1/3] scalar took 12 s; about 24 s left"]


def test_a_missing_peer_is_one_line_and_one_note(monkeypatch):
    """A peer that is not installed is skipped when all contenders run, said once (not once
    per workload), and refused before any timing when asked for by name."""
    monkeypatch.setitem(contenders.PACKAGES, "autograd", "srcad_bench_no_such_package")
    progress, printed = io.StringIO(), []
    results = run(only=["scalar", "while"], quick=True, out=printed.append,
                  progress_to=progress)
    assert "autograd" not in {r.contender for r in results}
    assert progress.getvalue().count("srcad_bench_no_such_package is not installed") == 1
    notes = printed[0].split("Notes")[1]
    assert notes.count("srcad_bench_no_such_package is not installed") == 1
    assert "- autograd: not run, srcad_bench_no_such_package is not installed (pip install" \
        in notes
    monkeypatch.setattr(bench, "measure", _no_timing)
    with pytest.raises(UsageError, match="autograd cannot run: .* leave it out of --contenders"):
        run(only=["scalar"], contenders=["autograd"], quick=True, out=printed.append)


def test_refusals_are_notes_not_failures(monkeypatch):
    monkeypatch.setitem(contenders._MAKERS, "tape", lambda w: (_ for _ in ()).throw(
        contenders._Unavailable("tape refuses this program")))
    printed = []
    results = run(only=["scalar", "while"], contenders=["srcad", "tape"], quick=True,
                  out=printed.append, progress_to=io.StringIO())
    tape_rows = [r for r in results if r.contender == "tape"]
    assert all(r.median is None and r.note == "tape refuses this program" for r in tape_rows)
    assert "- tape on scalar, while: tape refuses this program" in printed[0]


def _no_timing(*args, **kwargs):
    raise AssertionError("an option error must stop the run before anything is timed")


@pytest.mark.parametrize("argv, message", [
    (["--plot", "{tmp}/bench.png"], "--plot needs matplotlib, which is not installed: pip "
                                    "install matplotlib (or pip install 'srcad[plot]')"),
    (["--json", "{tmp}/no/such/folder/bench.json"], "--json .*: cannot write a file there"),
    (["--only", "nope"], "unknown workload(s) nope; choose from scalar, ode"),
    (["--contenders", "srcad,jaxx"], "unknown contender(s) jaxx"),
], ids=["plot-without-matplotlib", "json-folder", "workload", "contender"])
def test_options_are_checked_before_the_run(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # (as if it were not installed)
    monkeypatch.setattr(bench, "measure", _no_timing)
    monkeypatch.setattr(bench_main, "steady_heap", lambda: True)
    code = bench_main.main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    error = capsys.readouterr().err
    assert code == 2 and len(error.splitlines()) == 1, error
    assert error.startswith("python -m srcad.bench: error: ")
    assert re.search(re.escape(message).replace(r"\.\*", ".*"), error), error


def test_plot_format_is_checked_before_the_run(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(bench, "measure", _no_timing)
    with pytest.raises(UsageError, match=r"name the format by the file's suffix, one of .*\.png"):
        run(only=["scalar"], plot_path=tmp_path / "bench.xyz", out=lambda s: None)


@pytest.mark.parametrize("mode", ["--first-call", "--checkpoint", "--scaling"])
def test_options_of_the_main_benchmark_are_refused_with_another_table(mode, capsys):
    with pytest.raises(SystemExit) as stopped:
        bench_main.main([mode, "--json", "x.json"])
    assert stopped.value.code == 2
    assert "leave out --json" in capsys.readouterr().err


def test_plot_shows_the_contenders_that_ran_and_marks_what_did_not(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "bench.png"
    run(only=["scalar", "jacobian"], contenders=["srcad", "srcad.numba", "tape"], quick=True,
        plot_path=path, out=lambda s: None, progress_to=io.StringIO())
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


def test_plot_legend_title_and_not_available_marks():
    matplotlib = pytest.importorskip("matplotlib")
    results = [Result("a", "hand", median=1e-6, lower_quartile=0.9e-6, upper_quartile=1.1e-6),
               Result("a", "srcad", median=3e-6, lower_quartile=2e-6, upper_quartile=4e-6),
               Result("a", "tape", note="refuses"),
               Result("b", "hand", median=1e-6, lower_quartile=1e-6, upper_quartile=1e-6),
               Result("b", "srcad", median=2e-6, lower_quartile=2e-6, upper_quartile=2e-6),
               Result("b", "tape", median=5e-6, lower_quartile=4e-6, upper_quartile=6e-6),
               Result("b", "jax", note="jax is not installed")]
    figure = plot(results, environment.describe(["srcad"]), io.BytesIO())
    axes = figure.axes[0]
    labels = [text.get_text() for text in axes.get_legend().get_texts()]
    assert labels == ["hand-written NumPy (= 1)", "srcad", "tape"]  # (jax never ran)
    assert [t.get_text() for t in axes.texts] == ["n/a"]  # (tape on a)
    assert "lower is better" in axes.get_ylabel() and axes.get_title()
    heights = sorted(round(bar.get_height(), 6) for bar in axes.patches)
    assert heights == [2.0, 3.0, 5.0]  # (the ratios to the hand-written medians)
    assert any(f"numpy {np.__version__}" in t.get_text() for t in figure.texts)
    assert isinstance(figure, matplotlib.figure.Figure)


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.name)
def test_hand_written_derivatives_agree_with_srcad_and_finite_differences(workload):
    """The baseline is checked against numbers, not trusted: srcad's derivative and, for
    gradients, central differences of the objective."""
    srcad_call, _ = contenders.make("srcad", workload)
    hand_call, _ = contenders.make("hand", workload)
    _assert_same_tree(srcad_call(), hand := hand_call())
    if workload.kind == "grad":
        args = workload.make_args()
        position = workload.wrt[0] if isinstance(workload.wrt, tuple) else workload.wrt
        first = hand[0] if isinstance(workload.wrt, tuple) else hand
        key = next(iter(args[position])) if isinstance(args[position], dict) else None
        x = np.asarray(args[position] if key is None else args[position][key], dtype=float)
        if key is not None:
            first = first[key]
        index = (0,) * x.ndim
        # (a step that grows with the objective: a sum of 10^7 terms rounds at 1e-9)
        size = 1e-6 * max(1.0, abs(float(workload.fn(*args)))) ** (1 / 3)
        step = np.zeros_like(x)
        step[index] = size

        def moved(sign):
            shifted = list(args)
            value = x + sign * step if x.ndim else float(x) + sign * size
            shifted[position] = value if key is None else {**args[position], key: value}
            return workload.fn(*shifted)
        numeric = (moved(1) - moved(-1)) / (2 * size)
        assert np.asarray(first)[index] == pytest.approx(numeric, rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("workload", [w for w in WORKLOADS if w.hand_compiled],
                         ids=lambda w: w.name)
def test_compiled_hand_derivatives_agree_with_the_numpy_ones(workload):
    """The compiled-code reference ("hand.numba") is checked against the baseline (itself
    checked against finite differences above): as Python, and as numba compiles it."""
    args = workload.make_args()
    expected = workload.hand(*args)
    _assert_same_tree(workload.hand_compiled(*args), expected)
    pytest.importorskip("numba")
    call, reason = contenders.make("hand.numba", workload)
    assert reason is None
    _assert_same_tree(call(), expected)


def _wrong_lotka_gradient(p, start):
    return np.zeros(4)


def test_hand_numba_is_checked_by_the_bench_and_absent_with_a_reason():
    pytest.importorskip("numba")
    workloads = {w.name: w for w in WORKLOADS}
    wrong = dataclasses.replace(workloads["lotka"], hand_compiled=_wrong_lotka_gradient)
    hand, compiled = measure(wrong, ["hand", "hand.numba"], rounds=1, sample_seconds=1e-4)
    assert hand.agrees is True and compiled.agrees is False
    assert compiled.note == "disagrees with the hand-written derivative"
    call, reason = contenders.make("hand.numba", workloads["rnn"])
    assert call is None and reason.startswith("no hand-written derivative in numba's subset")


def test_numba_is_imported_only_when_its_contenders_run():
    completed = subprocess.run([sys.executable, "-c", "import sys, srcad.bench.__main__; "
                                "from srcad.bench import contenders, workloads; "
                                "contenders.make('hand', workloads.WORKLOADS[0])[0](); "
                                "print('numba' in sys.modules)"],
                               capture_output=True, text=True)
    assert completed.stdout.strip() == "False", completed.stderr


def _assert_same_tree(got, expected):
    if isinstance(expected, dict):
        assert isinstance(got, dict) and got.keys() == expected.keys()
        for key in expected:
            _assert_same_tree(got[key], expected[key])
    elif isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for a, b in zip(got, expected):
            _assert_same_tree(a, b)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-10)


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="unknown workload"):
        run(only=["nope"], out=lambda s: None)


def test_tables_show_spread_ratios_and_flag_wrong_results():
    hand, srcad_row = Result("w", "hand", first_call=1e-5, peak_memory=0, agrees=True), \
        Result("w", "srcad", first_call=2e-2, peak_memory=2048, agrees=False)
    hand.set_samples([2e-6] * 5)
    srcad_row.set_samples([4e-6, 4.5e-6, 5e-6, 5.5e-6, 9e-6])
    assert (srcad_row.lower_quartile, srcad_row.upper_quartile) == pytest.approx((4.5e-6,
                                                                                  5.5e-6))
    compiled = Result("w", "srcad.numba", agrees=True)
    compiled.set_samples([7.2e-8])
    text = tables([hand, srcad_row, Result("w", "tape", note="refuses"), compiled],
                  ["hand", "srcad", "tape", "srcad.numba"])
    assert "5 us ±10% (2.5x) WRONG" in text and "2 us ±0% (1.0x)" in text
    assert "72 ns ±0% (0.036x)" in text
    assert "20 ms" in text and "2 kB" in text and "over 5 samples" in text
    assert text.splitlines()[3].split()[-5] == "n/a"  # (tape's cell in the first table)


@pytest.mark.parametrize("name, source", [
    ("straight_line", first_call.straight_line_source(120, seed=3)),
    ("short_loop", first_call.loop_source())])
def test_first_call_functions_are_differentiated_right(name, source):
    """The generated functions are valid programs whose gradients srcad gets right: the
    curve measures real work."""
    fn = first_call.define(source, name)
    srcad.check_grads(fn, first_call.arguments(), order=1)
    assert first_call.straight_line_source(120, seed=3) == first_call.straight_line_source(
        120, seed=3)


def test_first_call_curve_has_a_row_per_length():
    printed = []
    rows = first_call.scaling(sizes=(20, 40), repeat=1, out=printed.append)
    assert [label for label, _ in rows] == ["20-line loop", "20 lines", "40 lines",
                                            "then value_and_grad", "then jvp"]
    assert all(seconds > 0 for _, seconds in rows) and "x" in printed[0].splitlines()[-3]


def test_checkpoint_curve_agrees_and_keeps_less():
    printed = []
    rows = checkpointing.curve(sizes=(100, 400), repeat=1, out=printed.append)
    assert [row["steps"] for row in rows] == [100, 400] and all(row["agrees"] for row in rows)
    assert rows[-1]["checkpointed_peak"] < rows[-1]["unrolled_peak"] / 2
    assert rows[-1]["marked_peak"] < rows[-1]["unrolled_peak"] / 2
    assert "checkpointed" in printed[0]


def test_scaling_tables_agree_bit_for_bit_and_cost_something_per_task():
    printed = []
    result = executors.speedups(cells=30, rows=800, features=4, repeat=1, out=printed.append)
    setups = ["local", "pool 1", "pool 2"] + (["dask 1", "dask 2"] if "dask 1" in result[
        "wall"][0] else [])
    for row in result["wall"]:
        assert row["differ"] == [] and all(row[name] > 0 for name in setups)
    assert [row["executor"] for row in result["per_task"]][-2:] == ["pool 2", "threads 2"]
    for row in result["per_task"]:  # (a process's task costs more than nothing)
        assert set(row) == {"executor", "jacobian", "chunks"}
    assert all(row["jacobian"] > 0 for row in result["per_task"][:-1])
    assert "Jacobian 30 x 30" in printed[0] and "gradient chunk" in printed[0]


def test_benchmark_is_not_imported_by_srcad():
    completed = subprocess.run([sys.executable, "-c", "import srcad, sys; "
                                "print(any(m.startswith('srcad.bench') for m in sys.modules))"],
                               capture_output=True, text=True)
    assert completed.stdout.strip() == "False"
    assert srcad.grad  # the package itself imports


def test_a_fast_call_is_timed_in_batches_that_fill_a_sample():
    """A call of microseconds is repeated until a sample lasts about `sample_seconds`
    (it was once timed one call at a time until a pause happened to make a sample long)."""
    from srcad.bench.measure import _batch_size
    calls = []

    def call():
        calls.append(1)
        if len(calls) > 200_000:
            raise AssertionError("timed one call at a time")
    number, seconds = _batch_size(call, 0.01)
    assert number >= 1000 and seconds < 1e-4
