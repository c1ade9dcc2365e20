"""The command line as a user runs it: `python -m srcad ...` in a subprocess."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import srcad

PROGRAMS = Path(__file__).parent.parent / "programs.py"


def run(*arguments, **options):
    return subprocess.run([sys.executable, "-m", "srcad", *arguments], capture_output=True,
                          text=True, **options)


def test_version_is_the_packages():
    result = run("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"srcad {srcad.__version__}"


@pytest.mark.parametrize("target, says", [
    ("nofile.py:f", "no file 'nofile.py'"),
    (f"{PROGRAMS}:missing", "has no 'missing'; it defines logistic_loss"),
    (f"{PROGRAMS}:scalar_mat", "did you mean 'scalar_math'?"),
    (str(PROGRAMS), "expected FILE.py:FUNCTION"),
])
def test_a_target_that_names_no_function_is_one_line_with_the_fix(target, says):
    result = run("show", target)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and says in result.stderr
    assert "Traceback" not in result.stderr


def test_output_cut_short_by_a_closed_pipe_ends_quietly():
    reader, writer = os.pipe()
    os.close(reader)  # as `| head` does once it has its lines (here before any is written)
    try:
        result = subprocess.run([sys.executable, "-m", "srcad", "rules"], stdout=writer,
                                stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(writer)
    assert result.returncode == 1 and result.stderr == ""
