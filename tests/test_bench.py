"""The benchmark runs (a smoke run on two workloads, as CI does) and its pieces report what
they should. No timing is asserted: timings belong to `python -m srcad.bench`."""
import json
import subprocess
import sys

import numpy as np
import pytest

import srcad
from srcad.bench import checkpointing, contenders, first_call, run
from srcad.bench.measure import Result
from srcad.bench.report import tables
from srcad.bench.workloads import WORKLOADS


def test_quick_run_on_two_workloads_writes_agreeing_results(tmp_path):
    path = tmp_path / "bench.json"
    completed = subprocess.run(
        [sys.executable, "-m", "srcad.bench", "--quick", "--only", "scalar,rnn",
         "--contenders", "srcad,tape", "--json", str(path)],
        capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert "Median time per derivative call" in completed.stdout
    rows = json.loads(path.read_text())
    assert {(r["workload"], r["contender"]) for r in rows} == {
        (w, c) for w in ("scalar", "rnn") for c in ("hand", "srcad", "tape")}
    for row in rows:
        assert row["agrees"] is True and row["median"] > 0 and row["first_call"] > 0


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


def test_missing_peers_and_refusals_are_notes_not_failures(monkeypatch):
    monkeypatch.setitem(contenders._MAKERS, "torch", lambda w: (_ for _ in ()).throw(
        contenders._Unavailable("torch is not installed")))
    results = run(only=["while"], contenders=["srcad", "torch"], quick=True, out=lambda s: None)
    torch_row = next(r for r in results if r.contender == "torch")
    assert torch_row.median is None and "not installed" in torch_row.note


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="unknown workload"):
        run(only=["nope"], out=lambda s: None)


def test_tables_show_ratios_and_flag_wrong_results():
    results = [Result("w", "hand", median=2e-6, first_call=1e-5, peak_memory=0, agrees=True),
               Result("w", "srcad", median=5e-6, first_call=2e-2, peak_memory=2048,
                      agrees=False)]
    text = tables(results, ["hand", "srcad"])
    assert "5 us (2.5x) WRONG" in text and "20 ms" in text and "2 kB" in text


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
    assert [label for label, _ in rows] == ["20-line loop", "20 lines", "40 lines"]
    assert all(seconds > 0 for _, seconds in rows) and "x" in printed[0].splitlines()[-1]


def test_checkpoint_curve_agrees_and_keeps_less():
    printed = []
    rows = checkpointing.curve(sizes=(100, 400), repeat=1, out=printed.append)
    assert [row["steps"] for row in rows] == [100, 400] and all(row["agrees"] for row in rows)
    assert rows[-1]["checkpointed_peak"] < rows[-1]["unrolled_peak"] / 2
    assert rows[-1]["marked_peak"] < rows[-1]["unrolled_peak"] / 2
    assert "checkpointed" in printed[0]


def test_benchmark_is_not_imported_by_srcad():
    completed = subprocess.run([sys.executable, "-c", "import srcad, sys; "
                                "print(any(m.startswith('srcad.bench') for m in sys.modules))"],
                               capture_output=True, text=True)
    assert completed.stdout.strip() == "False"
    assert srcad.grad  # the package itself imports
