"""What changes between the supported Python and NumPy versions, pinned on each of them
(CI runs the suite on every supported interpreter and on the oldest NumPy allowed).

Python 3.13 loads two local names with one instruction (`LOAD_FAST_LOAD_FAST`), so a
bytecode scan for "does this rule read `ans`" missed reads and handed rules `None`:
`norm` raised TypeError and `norm(x, np.inf)` gave nan gradients. srcad now reads that from
the rule's source; these tests run on every interpreter CI has.
"""
import numpy as np
import pytest

import srcad
from srcad.compiler.transform.templates import template_of
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


# ---- NumPy behaviour srcad's rules rely on, checked on the NumPy each CI job installs ----
def test_a_python_float_keeps_single_precision():
    """NEP 50 (NumPy 2): a Python float does not promote float32, a NumPy float64 does.
    srcad's rules write their constants as Python floats so float32 gradients stay float32."""
    x = np.ones(3, np.float32)
    assert (x * 2.0).dtype == np.float32 and (np.float32(1) * 2.0).dtype == np.float32
    assert (x * np.float64(2.0)).dtype == np.float64
    assert srcad.grad(lambda x: np.sum(np.sin(x) * 2.0))(x).dtype == np.float32


def test_eig_of_a_real_matrix_with_real_eigenvalues():
    """NumPy 2.5 returns complex eigenvalues for every matrix, older NumPy real ones where
    all are real: the rules take either, and np.real makes the loss real on both."""
    a = np.array([[2.0, 1.0], [0.5, 3.0]])
    assert np.linalg.eig(a).eigenvalues.dtype.kind in "fc"
    squares = lambda a: np.sum(np.real(np.linalg.eig(a)[0]) ** 2)  # noqa: E731  (tr(A²))
    np.testing.assert_allclose(srcad.grad(squares)(a), 2 * a.T, atol=1e-12)
    np.testing.assert_allclose(srcad.tape.grad(squares)(a), 2 * a.T, atol=1e-12)


def test_linalg_results_are_read_by_field_name():
    def fields(a):
        s = a @ a.T + np.eye(2)
        return np.linalg.slogdet(s).logabsdet + np.sum(np.linalg.eigh(s).eigenvalues ** 2)

    a = np.array([[1.0, 0.3], [-0.2, 0.8]])
    assert_gradient_matches_finite_differences(fields, (a,), 0)
    np.testing.assert_allclose(srcad.tape.grad(fields)(a), srcad.grad(fields)(a))
