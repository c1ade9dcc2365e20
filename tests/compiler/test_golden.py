"""Golden tests: the generated adjoint source, byte for byte.

A change that alters generated code shows up here as a readable diff. After checking that
the new source is right (and reads well), regenerate with
`SRCAD_UPDATE_GOLDEN=1 pytest tests/compiler/test_golden.py`.
"""
import os
from pathlib import Path

import pytest

import srcad
from tests import programs as p

GOLDEN = Path(__file__).parent / "golden"

CASES = {
    "logistic_loss": (p.logistic_loss, (0, 1)),
    "mlp": (p.mlp, (0, 1, 2)),
    "reassigned": (p.reassigned, (0, 1)),
    "scalar_math": (p.scalar_math, (0, 1)),
    "indexing": (p.indexing, 0),
    "rnn_loop": (p.rnn_loop, (0, 1)),
    "newton_while": (p.newton_while, 0),
    "huber_if": (p.huber_if, (0, 1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_source_matches_golden(name):
    fn, wrt = CASES[name]
    srcad.clear_cache()
    source = srcad.grad(fn, wrt=wrt).source
    path = GOLDEN / f"{name}.py"
    if os.environ.get("SRCAD_UPDATE_GOLDEN"):
        path.write_text(source)
    assert source == path.read_text()


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_source_compiles_as_plain_python(name):
    compile((GOLDEN / f"{name}.py").read_text(), name, "exec")
