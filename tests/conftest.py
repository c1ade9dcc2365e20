import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def rule_registry():
    """Let a test register rules for NumPy's own functions: the registry is restored after
    it, and programs compiled meanwhile go stale as after any registration."""
    from srcad.ops import registry
    tables = (registry._VJPS, registry._JVPS, registry._NONDIFFERENTIABLE, registry._USER_RULES)
    saved = [table.copy() for table in tables]
    yield registry
    for table, contents in zip(tables, saved):
        table.clear()
        table.update(contents)
    registry.RULES_EDITION[0] += 1
