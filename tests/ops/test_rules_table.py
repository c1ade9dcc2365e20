"""`python -m srcad rules`: the registry as a table (srcad/ops/table.py)."""
import importlib.util
import re
import subprocess
import sys

import numpy as np
import pytest

from srcad.__main__ import main
from srcad.ops import registry
from srcad.ops.table import Row, display_name, render, rule_rows


def by_name(rows):
    return {row.name: row for row in rows}


def test_rows_say_which_rules_each_callable_has():
    rows = by_name(rule_rows())
    assert rows["np.sin"] == Row("np.sin", True, True, "")
    assert rows["np.sort"] == Row("np.sort", True, True, "")
    assert rows["np.floor"] == Row("np.floor", False, False, "no derivative")
    assert rows["ndarray.T"].vjp and rows["operator.getitem"].jvp and rows["max"].vjp
    assert rows["srcad.stop_gradient"].notes == "no derivative"


def test_every_callable_of_the_registry_has_one_row():
    rows = rule_rows(include_internal=True)
    known = [op for op in registry.records() if op.vjp or op.jvp or op.nondifferentiable]
    assert len(rows) == len(known)
    # (two callables of the user's may share a name: the `softplus` of defvjp's and of
    # defjvp's docstring examples, both registered when their doctests run in one process)
    users = {display_name(op.primal) for op in known if op.owner == "user"}
    names = [row.name for row in rows if row.name not in users]
    assert len(names) == len(set(names))


def test_srcad_internal_helpers_are_listed_only_when_asked():
    assert "srcad.kernels.tangents.broadcast_like" not in by_name(rule_rows())
    row = by_name(rule_rows(include_internal=True))["srcad.kernels.tangents.broadcast_like"]
    assert row.vjp and row.notes == "srcad internal"


def registered_elsewhere(x):
    return 2.0 * x


def test_rules_registered_outside_srcad_and_scipy_rules_are_noted(monkeypatch):
    op = registry.Op(registered_elsewhere, "user",
                     vjp=registry.VJPRules(registered_elsewhere, (lambda g, ans, x: 2.0 * g,)))
    monkeypatch.setitem(registry._OPS, registered_elsewhere, op)
    row = by_name(rule_rows())["tests.ops.test_rules_table.registered_elsewhere"]
    assert (row.vjp, row.jvp, row.notes) == (True, False, "registered by tests.ops.test_rules_table")

    def scipy_rule(g, ans, x):
        return g
    scipy_rule.__module__ = "srcad.ops.scipy_special"
    monkeypatch.setattr(op, "jvp", registry.JVPRules(registered_elsewhere, (scipy_rule,)))
    assert "SciPy: rules load on first use" in by_name(rule_rows())[
        "tests.ops.test_rules_table.registered_elsewhere"].notes


def test_scipy_rules_are_loaded_for_the_table():
    """In a fresh process, where nothing has looked up a SciPy function yet."""
    pytest.importorskip("scipy.special")
    if importlib.util.find_spec("srcad.ops.scipy_special") is None:
        pytest.skip("srcad has no SciPy rules")
    listed = subprocess.run(
        [sys.executable, "-c", "from srcad.ops.table import rule_rows; "
         "print([row.notes for row in rule_rows() if row.name == 'scipy.special.erf'])"],
        capture_output=True, text=True, check=True).stdout
    assert listed.strip() == "['SciPy: rules load on first use']"


@pytest.mark.parametrize("fn, name", [
    (np.linalg.inv, "np.linalg.inv"), (np.ndarray.astype, "ndarray.astype"), (len, "len"),
    (np.add, "np.add"), (np.sort, "np.sort"), (max, "max"), (np.fft.fft, "np.fft.fft"),
])
def test_names_are_the_ones_users_call(fn, name):
    assert display_name(fn) == name


def test_render_aligns_the_columns_and_counts():
    text = render([Row("np.sin", True, True, ""), Row("np.floor", False, False, "no derivative")])
    assert text.splitlines() == ["function  VJP  JVP  notes",
                                 "np.sin    yes  yes",
                                 "np.floor  no   no   no derivative",
                                 "2 callables: 1 with derivative rules, 1 without a derivative"]


def test_command_line_prints_the_table():
    result = subprocess.run([sys.executable, "-m", "srcad", "rules"], capture_output=True,
                            text=True, check=True)
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["function", "VJP", "JVP", "notes"]
    assert any(line.split()[:3] == ["np.sort", "yes", "yes"] for line in lines)
    assert re.fullmatch(r"\d+ callables: \d+ with derivative rules, \d+ without a derivative",
                        lines[-1])
    assert "srcad.kernels.tangents.broadcast_like" not in result.stdout


def test_command_line_lists_srcad_helpers_when_asked(capsys):
    assert main(["rules", "--all"]) == 0
    assert "srcad.kernels.tangents.broadcast_like" in capsys.readouterr().out
