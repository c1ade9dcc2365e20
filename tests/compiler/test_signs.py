"""signs.py folds a negation into the product it negates only where that gives the same
numbers: the product is read once, by the negation, the negation's target is mentioned
nowhere between them, and the product has a numeric factor to negate."""
import gast
import numpy as np

import srcad
from srcad.compiler.emit import python_source
from srcad.compiler.transform.signs import fold_negations
from srcad.kernels import adjoints as helpers
from tests.checks import assert_gradient_matches_finite_differences


def folded(source: str, read_after=frozenset({"b_x", "b_z"})) -> str:
    statements = gast.parse(source).body

    def helper_of(call):
        name = getattr(getattr(call, "func", None), "id", None)
        return {"negative_into": helpers.negative_into,
                "multiply_into": helpers.multiply_into}.get(name)
    return python_source(gast.Module(fold_negations(statements, helper_of, set(read_after)),
                                     []))


def test_a_negated_product_with_a_factor_is_made_negated():
    assert folded("b_s = b_t * 2 * s\nb_z = g\nb_x = negative_into(b_s)") \
        == "b_x = b_t * -2 * s\nb_z = g"


def test_a_product_whose_negation_target_is_mentioned_between_stays():
    source = "b_s = b_t * 2 * s\nb_z = b_x\nb_x = negative_into(b_s)"
    assert folded(source) == source


def test_a_product_without_a_numeric_factor_stays():
    source = "b_s = b_t * s\nb_z = g\nb_x = -b_s"
    assert folded(source) == source


def test_a_product_read_twice_stays():
    source = "b_s = b_t * 2 * s\nb_z = b_s\nb_x = -b_s"
    assert folded(source) == source


def residuals(x, y):
    r = y - x ** 2 * 3.0
    u = 1.0 - np.sin(x) * 0.5
    return np.sum(r * r) + np.sum(u * u)


def test_folded_negations_give_the_gradient():
    x, y = np.linspace(-1.0, 1.0, 5), np.linspace(0.5, 2.0, 5)
    assert "negative_into" not in srcad.grad(residuals, wrt=(0, 1)).source
    assert_gradient_matches_finite_differences(residuals, (x, y), wrt=(0, 1))
