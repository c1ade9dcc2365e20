"""Property: random chains of 2 to 4 rules (elementwise functions, binary operations that
broadcast, reductions along an axis, shape operations, contractions) on random shapes,
differentiated in reverse and forward mode, agree with central finite differences.

The table of rules checks each rule alone; chains check that they compose: each rule's
output shape, dtype and broadcasting are what the next one's rule expects. A chain is the
global STEPS that `chain` runs through dynamic calls, so srcad transforms each step once.
"""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.ops.test_rules import (assert_jvp_matches_finite_differences,
                              assert_vjp_matches_finite_differences)

W = np.random.default_rng(5).standard_normal((6, 3))
STEPS = ()  # the chain under test: (step, parameter) pairs


def chain(x, y):
    for step, parameter in STEPS:
        x = step(x, y, parameter)
    return x


def fit(y, x):
    """`y` (shaped like the starting x's last axis) where it broadcasts along x's last axis,
    else its mean."""
    if np.shape(x)[-1:] == np.shape(y):
        return y
    return np.mean(y)


# ---- the steps: step(x, y, parameter) -------------------------------------------------------
def sine(x, y, p):
    return np.sin(x)


def tanh(x, y, p):
    return np.tanh(x)


def softplus(x, y, p):
    return np.logaddexp(x, 0.0)


def log1p_square(x, y, p):
    return np.log1p(x * x)


def times(x, y, p):
    return x * fit(y, x)


def plus(x, y, p):
    return x + fit(y, x)


def over(x, y, p):
    return x / (1.0 + fit(y, x) ** 2)


def hypot(x, y, p):
    return np.hypot(x, fit(y, x))


def larger(x, y, p):
    return np.maximum(x, fit(y, x))


def total(x, y, p):
    return np.sum(x, axis=p[0], keepdims=p[1])


def mean(x, y, p):
    return np.mean(x, axis=p[0], keepdims=p[1])


def largest(x, y, p):
    return np.max(x, axis=p[0], keepdims=p[1])


def product(x, y, p):
    return np.prod(x, axis=p[0], keepdims=p[1])


def variance(x, y, p):
    return np.var(x, axis=p[0], keepdims=p[1])


def running_total(x, y, p):
    return np.cumsum(x, axis=p)


def ordered(x, y, p):
    return np.sort(x, axis=p)


def flipped(x, y, p):
    return np.flip(x, p)


def rolled(x, y, p):
    return np.roll(x, 1, axis=p)


def doubled(x, y, p):
    return np.concatenate([x, 2.0 * x], axis=p)


def taken(x, y, p):
    return np.take(x, [0, -1, 0], axis=p)


def transposed(x, y, p):
    return np.transpose(x, p)


def flattened(x, y, p):
    return np.reshape(x, (-1,))


def expanded(x, y, p):
    return np.expand_dims(x, p)


def projected(x, y, p):
    return x @ W[:np.shape(x)[-1], :p]


def self_inner(x, y, p):
    return np.einsum("...i,...i->...", x, x)


def outer_with_y(x, y, p):
    return np.einsum("...i,j->...ij", x, y)


def contracted(x, y, p):
    return np.tensordot(x, np.tanh(x), axes=np.ndim(x))


def _axes(ndim):
    return st.integers(-ndim, ndim - 1)


def _reduction(ndim):
    return st.tuples(st.one_of(st.none(), _axes(ndim)), st.booleans())


# (step, fewest axes, most axes, strategy of its parameter given the number of axes)
STEP_KINDS = [
    *[(f, 0, 4, lambda n: st.none()) for f in (sine, tanh, softplus, log1p_square, times,
                                              plus, over, hypot, larger)],
    *[(f, 1, 4, _reduction) for f in (total, mean, largest, product, variance)],
    *[(f, 1, 4, _axes) for f in (running_total, ordered, flipped, rolled, doubled, taken)],
    (transposed, 2, 4, lambda n: st.permutations(range(n))),
    (flattened, 2, 4, lambda n: st.none()),
    (expanded, 0, 3, lambda n: st.integers(-n - 1, n)),
    (projected, 1, 4, lambda n: st.integers(1, 3)),
    (self_inner, 1, 4, lambda n: st.none()),
    (outer_with_y, 1, 2, lambda n: st.none()),
    (contracted, 1, 4, lambda n: st.none()),
]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data(),
       shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
       length=st.integers(2, 4),
       seed=st.integers(0, 2 ** 16))
def test_chains_of_rules_match_finite_differences(data, shape, length, seed):
    global STEPS
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(shape), rng.standard_normal(shape[-1:])
    steps, value = [], x
    while len(steps) < length:
        kinds = [k for k in STEP_KINDS if k[1] <= np.ndim(value) <= k[2]]
        step, _, _, parameters = data.draw(st.sampled_from(kinds))
        parameter = data.draw(parameters(np.ndim(value)))
        result = step(value, y, parameter)
        if np.size(result) <= 200:  # keep products of axes small
            steps.append((step, parameter))
            value = result
    STEPS = tuple(steps)
    for wrt in (0, 1, (0, 1)):
        assert_vjp_matches_finite_differences(chain, (x, y), wrt, rtol=1e-5, atol=1e-7)
    for wrt in (0, 1, (0, 1)):
        assert_jvp_matches_finite_differences(chain, (x, y), wrt, rtol=1e-5, atol=1e-7)


def test_forward_mode_where_a_loop_makes_x_depend_on_y():
    """x has no tangent in the loop's first trip: the callee's tangent program is made for
    the arguments that have one."""
    global STEPS
    STEPS = ((times, None), (sine, None))
    x, y = np.array([0.5, -1.0]), np.array([2.0, 0.3])
    assert_jvp_matches_finite_differences(chain, (x, y), 1, rtol=1e-5, atol=1e-7)
