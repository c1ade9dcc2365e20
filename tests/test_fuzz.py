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
