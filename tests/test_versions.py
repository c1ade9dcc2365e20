"""What changes between the supported CPython versions, pinned on each of them.

Python 3.13 loads two local names with one instruction (`LOAD_FAST_LOAD_FAST`), so a
bytecode scan for "does this rule read `ans`" missed reads and handed rules `None`:
`norm` raised TypeError and `norm(x, np.inf)` gave nan gradients. srcad now reads that from
the rule's source; these tests run on every interpreter CI has.
"""
import numpy as np
import pytest

import srcad
from srcad.transform.templates import template_of
from tests.checks import assert_gradient_matches_finite_differences


@pytest.mark.parametrize("norm", [
    lambda x: np.linalg.norm(x),
    lambda x: np.linalg.norm(x, np.inf),
    lambda x: np.linalg.norm(x, 1),
    lambda x: np.linalg.norm(x, -np.inf),
], ids=["2", "inf", "1", "-inf"])
def test_norms_whose_rules_read_their_output(norm):
    x = np.array([3.0, -4.0, 1.0])
    assert_gradient_matches_finite_differences(norm, (x,), 0)
    np.testing.assert_allclose(srcad.tape.grad(norm)(x), srcad.grad(norm)(x))


def test_the_two_known_cases():
    np.testing.assert_allclose(srcad.grad(lambda x: np.linalg.norm(x))(np.array([3., 4.])),
                               [0.6, 0.8])
    np.testing.assert_array_equal(
        srcad.grad(lambda x: np.linalg.norm(x, np.inf))(np.array([1., -3., 2.])), [0, -1, 0])


def _reads_ans_late(g, ans, x):
    scale = 2.0 * x           # two locals loaded together below: LOAD_FAST_LOAD_FAST on 3.13
    return g * scale * ans / ans


def _reads_ans_in_a_comprehension(g, ans, x):
    parts = [a for a in (ans,)]
    return g * parts[0] * np.cos(x) / np.sin(x)


def _ignores_ans(g, ans, x):
    cosine = np.cos(x)
    return g * cosine


@pytest.mark.parametrize("rule, reads", [
    (_reads_ans_late, True), (_reads_ans_in_a_comprehension, True), (_ignores_ans, False)])
def test_a_called_rule_gets_the_output_when_it_reads_it(rule_registry, rule, reads):
    """A rule of several statements is called, not inlined; it is handed `ans` where its
    source reads it and None (so the forward sweep need not keep the output) otherwise."""
    def user_sin(x):
        return np.sin(x)

    srcad.defvjp(user_sin, rule)
    assert template_of(rule).reads_ans is reads
    x = np.array([0.3, 1.1])
    program = srcad.grad(lambda x: np.sum(user_sin(x) * x))
    cotangent = 2 * x if rule is _reads_ans_late else np.cos(x)  # _reads_ans_late is no sine's
    np.testing.assert_allclose(program(x), cotangent * x + np.sin(x))
