import dataclasses

import numpy as np
import pytest

# the adapter that stands in for autograd (its `test_util.py` is autograd's module, not a
# test): imported here it would shadow the real autograd, the suite's oracle
collect_ignore = ["autograd_suite"]


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def rule_registry():
    """Let a test register rules for NumPy's own functions: the registry is restored after
    it, and programs compiled meanwhile go stale as after any registration."""
    from srcad.ops import registry
    saved = {fn: dataclasses.replace(op) for fn, op in registry._OPS.items()}
    yield registry
    registry._OPS.clear()
    registry._OPS.update(saved)
    registry.RULES_EDITION[0] += 1
