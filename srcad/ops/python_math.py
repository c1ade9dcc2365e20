"""Rules for the `math` module, on Python floats. A function of Python numbers has a diagonal
Jacobian, so one rule per argument (`g` times the partial derivative) serves as its VJP and
its JVP (`define_pointwise`). Where a function is defined but its derivative is infinite
or undefined, a rule gives inf or nan, as NumPy's does, where Python's division would raise.
The functions of an iterable (`fsum`, `prod`, `dist`) give each item its own cotangent.
`polygamma` (digamma and its derivatives, which the rules of
`gamma` and `lgamma` need) is computed here, so that no optional dependency is needed."""
import math

from srcad.kernels.tangents import dense
from srcad.ops.numpy_ufuncs import define_pointwise
from srcad.ops.python_builtins import sum_vjp_iterable
from srcad.ops.registry import defjvp, defvjp, nondifferentiable

define_pointwise(math.sin, lambda g, ans, x: g * math.cos(x))
define_pointwise(math.cos, lambda g, ans, x: -g * math.sin(x))
define_pointwise(math.tan, lambda g, ans, x: g / math.cos(x) ** 2)
define_pointwise(math.asin, lambda g, ans, x: g / math.sqrt(1.0 - x * x) if abs(x) != 1.0
                 else g * math.inf)
define_pointwise(math.acos, lambda g, ans, x: -g / math.sqrt(1.0 - x * x) if abs(x) != 1.0
                 else -g * math.inf)
define_pointwise(math.atan, lambda g, ans, x: g / (1.0 + x * x))
define_pointwise(math.sinh, lambda g, ans, x: g * math.cosh(x))
define_pointwise(math.cosh, lambda g, ans, x: g * math.sinh(x))
define_pointwise(math.tanh, lambda g, ans, x: g * (1.0 - ans * ans))
define_pointwise(math.asinh, lambda g, ans, x: g / math.sqrt(x * x + 1.0))
define_pointwise(math.acosh, lambda g, ans, x: g / math.sqrt(x * x - 1.0) if x != 1.0
                 else g * math.inf)
define_pointwise(math.atanh, lambda g, ans, x: g / (1.0 - x * x))
define_pointwise(math.exp, lambda g, ans, x: g * ans)
define_pointwise(math.exp2, lambda g, ans, x: g * ans * math.log(2.0))
define_pointwise(math.expm1, lambda g, ans, x: g * (ans + 1.0))
define_pointwise(math.log,
                 lambda g, ans, x, base=math.e: g / (x * math.log(base)),
                 lambda g, ans, x, base=math.e: -g * ans / (base * math.log(base)))
define_pointwise(math.log1p, lambda g, ans, x: g / (1.0 + x))
define_pointwise(math.log2, lambda g, ans, x: g / (x * math.log(2.0)))
define_pointwise(math.log10, lambda g, ans, x: g / (x * math.log(10.0)))
define_pointwise(math.sqrt, lambda g, ans, x: g * 0.5 / ans if ans else g * math.inf)
define_pointwise(math.cbrt, lambda g, ans, x: g / (3.0 * ans * ans) if ans else g * math.inf)
define_pointwise(math.fabs, lambda g, ans, x: g * math.copysign(1.0, x) if x else 0.0 * g)
define_pointwise(math.copysign,
                 lambda g, ans, x, y: g * math.copysign(1.0, x) * math.copysign(1.0, y),
                 lambda g, ans, x, y: 0.0 * g)
# x - n y, with n = trunc(x / y) (fmod) or the nearest integer (remainder): ∂/∂y = -n
define_pointwise(math.fmod, lambda g, ans, x, y: g, lambda g, ans, x, y: g * (ans - x) / y)
define_pointwise(math.remainder, lambda g, ans, x, y: g, lambda g, ans, x, y: g * (ans - x) / y)
define_pointwise(math.ldexp, lambda g, ans, x, i: g * 2.0 ** i, None)
define_pointwise(math.degrees, lambda g, ans, x: g * (180.0 / math.pi))
define_pointwise(math.radians, lambda g, ans, x: g * (math.pi / 180.0))
# At x == 0 with 0 < y < 1, Python's 0.0 ** (y - 1) raises ZeroDivisionError: the derivative
# there is +inf, as np.power's rule gives for an array x.
define_pointwise(math.pow,
                 lambda g, ans, x, y: (g * y * x ** (y - 1) if x or y >= 1 else g * y * math.inf)
                 if y else 0.0 * g,
                 lambda g, ans, x, y: g * ans * math.log(x) if x > 0 else 0.0 * g)


def _ratio(numerator, distance):
    """`numerator / distance`, nan where the distance is 0 (no derivative there)."""
    return numerator / distance if distance else numerator * math.nan


def _hypot_rule(position: int):
    """The rule of coordinate `position` of `math.hypot(*coordinates)`: x_k / |x|; nan at
    the origin, where no derivative exists (np.hypot's rule gives 0/0 there; Python's
    division would raise)."""
    def rule(g, ans, *coordinates):
        return _ratio(g * coordinates[position], ans)
    rule.__name__ = f"hypot_partial_{position}"
    return rule


define_pointwise(math.hypot, *[_hypot_rule(position) for position in range(32)])
define_pointwise(math.atan2,
                 lambda g, ans, y, x: g * x / (x * x + y * y) if x or y else g * math.nan,
                 lambda g, ans, y, x: -g * y / (x * x + y * y) if x or y else g * math.nan)
define_pointwise(math.erf, lambda g, ans, x: g * (2.0 / math.sqrt(math.pi)) * math.exp(-x * x))
define_pointwise(math.erfc, lambda g, ans, x: -g * (2.0 / math.sqrt(math.pi)) * math.exp(-x * x))


# ---- the gamma function ----------------------------------------------------------------------
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)  # B_2 ... B_14


def polygamma(n: int, x: float) -> float:
    """The n-th derivative of the digamma function ψ = Γ'/Γ at a Python float `x` (n = 0:
    ψ itself): ψ⁽ⁿ⁾(x) = ψ⁽ⁿ⁾(x + 1) - (-1)ⁿ n! / xⁿ⁺¹ carries x up to 10, where the
    asymptotic series (with Bernoulli numbers up to B₁₄) is exact to double precision."""
    x = float(x)
    if x <= 0.0 and x == math.floor(x):
        return math.nan  # a pole
    if x < -1e4:  # (too many steps of the recurrence)
        if n:
            raise ValueError(f"srcad computes polygamma({n}, x) for x >= -1e4 only.")
        return polygamma(0, 1.0 - x) - math.pi / math.tan(math.pi * x)  # (reflection)
    factorial, shift = math.factorial(n), 0.0
    while x < 10.0:
        shift -= (-1) ** n * factorial / x ** (n + 1)
        x += 1.0
    if n == 0:
        series = math.log(x) - 0.5 / x - sum(
            b / (2 * k * x ** (2 * k)) for k, b in enumerate(_BERNOULLI, start=1))
    else:
        series = (-1) ** (n + 1) * (
            math.factorial(n - 1) / x ** n + factorial / (2.0 * x ** (n + 1)) + sum(
                b * math.factorial(2 * k + n - 1) / (math.factorial(2 * k) * x ** (2 * k + n))
                for k, b in enumerate(_BERNOULLI, start=1)))
    return series + shift


define_pointwise(polygamma, None, lambda g, ans, n, x: g * polygamma(n + 1, x))
define_pointwise(math.gamma, lambda g, ans, x: g * ans * polygamma(0, x))
define_pointwise(math.lgamma, lambda g, ans, x: g * polygamma(0, x))


# ---- functions of an iterable ------------------------------------------------------------------
def _items_like(iterable, items):
    """`items` as a tuple if `iterable` is one, else as a list."""
    return tuple(items) if isinstance(iterable, tuple) else list(items)


def _products_of_the_others(items: list, start) -> list:
    """Item k: `start` times the product of every item but item k (no division: a zero
    item is allowed)."""
    return [math.prod([item for j, item in enumerate(items) if j != k], start=start)
            for k in range(len(items))]


defvjp(math.fsum, sum_vjp_iterable)
defjvp(math.fsum, lambda g, ans, iterable: math.fsum(dense(g, list(iterable))))
defvjp(math.prod, lambda g, ans, iterable, *, start=1: _items_like(iterable, [
    g * other for other in _products_of_the_others(list(iterable), start)]))
defjvp(math.prod, lambda g, ans, iterable, *, start=1: sum(
    t * other for t, other in zip(dense(g, list(iterable)),
                                  _products_of_the_others(list(iterable), start))))
defvjp(math.dist,
       lambda g, ans, p, q: _items_like(p, [_ratio(g * (a - b), ans) for a, b in zip(p, q)]),
       lambda g, ans, p, q: _items_like(q, [_ratio(g * (b - a), ans) for a, b in zip(p, q)]))
defjvp(math.dist,
       lambda g, ans, p, q: _ratio(sum(t * (a - b) for t, a, b in zip(dense(g, list(p)), p, q)),
                                   ans),
       lambda g, ans, p, q: _ratio(sum(t * (b - a) for t, a, b in zip(dense(g, list(q)), p, q)),
                                   ans))

nondifferentiable(math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite,
                  math.isclose, math.comb, math.perm, math.factorial, math.gcd, math.lcm,
                  math.isqrt, math.nextafter, math.ulp)
