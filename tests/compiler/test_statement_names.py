"""The passes after settling share the names in each statement of a sweep
(statement_names.py): what they make with the names shared is what they make searching each
statement again, the rewrites of signs and reuse in place included."""
import gast
import numpy as np
import pytest

import srcad
from srcad.compiler.emit import python_source
from srcad.compiler.transform.optimize import drop_dead_zero_stores
from srcad.compiler.transform.release import release
from srcad.compiler.transform.reuse import accumulate_in_source
from srcad.compiler.transform.signs import fold_negations
from srcad.compiler.transform.statement_names import StatementNames
from srcad.kernels import adjoints as helpers
from tests.checks import assert_gradient_matches_finite_differences

_HELPERS = {f.__name__: f for f in (helpers.negative_into, helpers.multiply_into,
                                    helpers.add_into, helpers.add_at, helpers.index_adjoint)}


def _helper_of(call):
    return isinstance(call, gast.Call) and _HELPERS.get(getattr(call.func, "id", None))


def _passes(source: str, known) -> str:
    statements = gast.parse(source).body
    statements = drop_dead_zero_stores(statements, {"b_x"}, known)
    statements = fold_negations(statements, _helper_of, {"b_x"}, known)
    statements = accumulate_in_source(statements, _helper_of, lambda name, obj: name, known)
    return python_source(gast.Module(release(statements, {"b_x"}, known=known), []))


SWEEPS = [
    # a negation takes its reader's number (both statements change in place)
    "b_t = -e\nb_s = b_t * 2.0\nb_x = b_s + q\nb_q = None\nb_x = b_x * b_q",
    # a negation folds into its product (a new statement)
    "b_s = b_t * 2 * s\nb_z = g\nb_x = negative_into(b_s)\nb_x = b_x + b_z",
    # a copy's adjoint gathered in the original's (the scatter now reads the total)
    "b_u = g * 2.0\nb_un = index_adjoint(g, un, s)\nb_un = add_at(b_un, h, un, t)\n"
    "b_u = add_into(b_u, b_un)\nb_x = b_u * x",
    # a reset read after a branch, and one assigned again first (dropped)
    "b_y = None\nif c:\n    b_y = g * 2.0\nb_w = None\nb_w = g\nb_x = b_w\nb_x = b_x * b_y",
]


@pytest.mark.parametrize("source", SWEEPS)
def test_the_passes_make_with_shared_names_what_they_make_searching_again(source):
    searched_again = _passes(source, None)
    assert _passes(source, StatementNames()) == searched_again
    known = StatementNames()  # (asked before: as settle hands them over)
    known.among(gast.parse(source).body)
    assert _passes(source, known) == searched_again


def test_a_statement_forgotten_is_searched_again():
    statement = gast.parse("a = b + c").body[0]
    known = StatementNames()
    assert [n.id for n in known.of(statement)] == ["a", "b", "c"]
    statement.value = gast.Name("d", gast.Load(), None, None)
    assert [n.id for n in known.of(statement)] == ["a", "b", "c"]  # (as it was asked)
    known.forget(statement)
    assert [n.id for n in known.of(statement)] == ["a", "d"]


def unpacked_and_negated(x, w):
    p, q = x * 0.9, x @ w + 0.1
    u = x - np.sin(q) * 2.0          # (a negated product)
    v = x.copy()
    s = v[1:] - 0.5 * v[:-1]         # (a copy's adjoint gathered in the original's)
    return np.sum(p * u) + np.sum(s * s) + np.sum(x ** 2)


def test_a_sweep_the_shared_names_serve_gives_the_gradient():
    rng = np.random.default_rng(3)
    args = (rng.standard_normal(4), rng.standard_normal((4, 4)) / 4)
    assert_gradient_matches_finite_differences(unpacked_and_negated, args, (0, 1))
    for source_mode, tape_mode in zip(srcad.grad(unpacked_and_negated, (0, 1))(*args),
                                      srcad.tape.grad(unpacked_and_negated, (0, 1))(*args)):
        np.testing.assert_allclose(source_mode, tape_mode, rtol=1e-12)
