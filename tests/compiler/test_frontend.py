"""Locating source (lambdas included), the command line, and tracebacks into generated code."""
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np
import pytest

import srcad
from srcad.__main__ import main
from tests import programs as p

SQUARE, CUBE = (lambda x: x ** 2), (lambda x: x ** 3)  # two lambdas on one line


def test_lambdas_on_one_line_are_told_apart():
    assert srcad.grad(SQUARE)(3.0) == 6.0
    assert srcad.grad(CUBE)(3.0) == 27.0


def test_nested_lambda_picks_the_inner_one():
    outer = (lambda: (lambda y: y * 5.0))  # noqa: E731
    assert srcad.grad(outer())(1.0) == 5.0


def test_show_command_prints_the_adjoint(capsys):
    assert main(["show", f"{p.__file__}:scalar_math", "--wrt", "0,1"]) == 0
    assert main(["show", f"{p.__file__}:scalar_math", "--wrt", "0,1", "--mode", "grad"]) == 0
    out = capsys.readouterr().out
    assert "def scalar_math_backward(b_add_6):" in out and "return (b_x, b_y)" in out


def test_show_command_reports_errors(capsys):
    assert main(["show", f"{p.__file__}:generator"]) == 1
    assert "generators" in capsys.readouterr().err


def test_demo_runs_as_a_module():
    result = subprocess.run([sys.executable, "-m", "srcad", "demo"], capture_output=True,
                            text=True, check=True)
    assert "def loss_backward" in result.stdout and "cached call" in result.stdout


def test_example_runs():
    root = Path(__file__).parent.parent.parent
    result = subprocess.run([sys.executable, str(root / "examples" / "logistic_regression.py")],
                            capture_output=True, text=True, check=True)
    assert "fitted w" in result.stdout


def test_in_place_example_runs():
    root = Path(__file__).parent.parent.parent
    result = subprocess.run([sys.executable, str(root / "examples" / "heat_inverse_problem.py")],
                            capture_output=True, text=True, check=True)
    difference = float(result.stdout.split("max difference ")[1].split()[0])
    assert difference < 1e-6 and "misfit after" in result.stdout


def failing_rule(g, ans, x):
    raise FloatingPointError("rule failed")


def uses_failing_rule(x):
    return np.sum(np.spacing(x))


def test_tracebacks_show_generated_lines():
    srcad.defvjp(np.spacing, failing_rule)
    with pytest.raises(FloatingPointError) as info:
        srcad.grad(uses_failing_rule)(np.ones(2))
    frames = traceback.extract_tb(info.value.__traceback__)
    generated = [f for f in frames if f.filename.startswith("<srcad-")]
    assert generated and "failing_rule(" in generated[-1].line
