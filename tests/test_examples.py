"""Every script in examples/ runs to its end as a user runs it (`python examples/x.py`):
each checks its own numbers (asserts against finite differences or another mode)."""
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))


def test_the_examples_are_found():
    assert len(EXAMPLES) >= 9


@pytest.mark.parametrize("script", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_example_runs(script):
    completed = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                               timeout=600, cwd=script.parent.parent)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.strip()  # (each prints what it shows)
