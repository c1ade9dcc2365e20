"""The differential fuzzer (tests/fuzzing.py) on a fixed budget: SRCAD_FUZZ_PROGRAMS random
programs (300 unless set), in parts that pytest-xdist runs side by side. Each part has its
own fixed seed, so a CI run checks the same programs every time; `python -m tests.fuzzing
--minutes N` explores new ones."""
import os

import pytest
from hypothesis import HealthCheck, given, seed, settings

from tests.fuzzing import check, programs

BUDGET = int(os.environ.get("SRCAD_FUZZ_PROGRAMS", "300"))
PARTS = 4


@pytest.mark.parametrize("part", range(PARTS))
def test_every_way_to_differentiate_agrees_on_random_programs(part):
    @seed(part)
    @settings(max_examples=max(1, BUDGET // PARTS), deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(programs())
    def random_programs(program):
        check(program)

    random_programs()


ILL_CONDITIONED = """import numpy as np


def f(x, y):
    return np.sum(np.sin(3e6 * np.dot(x, x) + y))
"""


def test_a_program_ill_conditioned_in_float32_is_no_disagreement():
    """`np.sin` of about 1e7: its float32 argument is off by about 0.5, so any float32
    derivative is far from float64's. The oracle once called that srcad's error (a
    12-minute fuzz run found such a program); it now allows what the chain rule run in
    float32 by tape mode gets."""
    import numpy as np
    from tests.fuzzing import Program
    x = np.array([0.9, -1.1, 0.7])
    check(Program(ILL_CONDITIONED, x, np.array([0.1, 0.2, 0.3]), (0,), "signs"))
