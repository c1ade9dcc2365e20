"""The adapter that runs autograd's tests and ADBench's autograd programs on srcad
(tests/autograd_suite), checked on programs written here: each operator's numbers against
the derivatives written out. It is imported as `autograd`, so it runs in a process of its
own (the real autograd serves as an oracle elsewhere in the suite)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
SCRIPT = r'''
import numpy as onp
import autograd.numpy as np
import autograd.numpy.random as npr
from autograd import (grad, value_and_grad, make_vjp, make_jvp, elementwise_grad, jacobian,
                      hessian, hessian_tensor_product, grad_and_aux, multigrad_dict, deriv)
from autograd.extend import primitive, defvjp, defjvp
from autograd.test_util import check_grads, combo_check

x = onp.array([0.3, -1.2, 0.8])
f = lambda a, b: np.sum(np.sin(a) * b ** 2)
assert onp.allclose(grad(f)(x, x), onp.cos(x) * x ** 2)
assert onp.allclose(grad(f, argnum=[1, 0])(x, x)[0], 2 * onp.sin(x) * x)
value, gradient = value_and_grad(f, 1)(x, x)
assert onp.isclose(value, f(x, x)) and onp.allclose(gradient, 2 * onp.sin(x) * x)
pullback, ans = make_vjp(np.tanh)(x)
assert onp.allclose(pullback(onp.ones(3)), 1 - onp.tanh(x) ** 2)
assert onp.allclose(make_jvp(np.exp)(x)(onp.ones(3))[1], onp.exp(x))
assert onp.allclose(elementwise_grad(np.sin)(x), onp.cos(x))
assert onp.allclose(jacobian(np.sin)(x), onp.diag(onp.cos(x)))
assert onp.allclose(hessian(lambda a: np.sum(a ** 3))(x), onp.diag(6 * x))
assert onp.allclose(hessian_tensor_product(lambda a: np.sum(a ** 3))(x, onp.ones(3)), 6 * x)
assert onp.allclose(grad_and_aux(lambda a: (np.sum(a * a), "aux"))(x)[0], 2 * x)
assert set(multigrad_dict(f)(x, x)) == {"a", "b"}
assert onp.isclose(deriv(np.sin)(0.5), onp.cos(0.5))

@primitive
def twice(a):
    return 2.0 * a
try:
    grad(lambda a: np.sum(twice(a)))(x)
except NotImplementedError:
    pass
else:
    raise AssertionError("a primitive without a VJP differentiated")
defvjp(twice, lambda ans, a: lambda g: 2.0 * g)
defjvp(twice, lambda g, ans, a: 2.0 * g)
assert onp.allclose(grad(lambda a: np.sum(twice(a)))(x), 2.0)
check_grads(lambda a: np.sum(twice(a) * np.cos(a)), modes=["rev", "fwd"], order=1)(x)
combo_check(lambda a, axis: np.sum(np.exp(a), axis=axis), [0], modes=["rev"], order=1)(
    [npr.randn(2, 3)], axis=[0, 1, None])
try:
    check_grads(lambda a: np.sum(a * a), modes=["rev"], order=1)(x) or grad(
        lambda a: np.sum(twice(a)))(x)
    defvjp(twice, lambda ans, a: lambda g: 2.1 * g)
    check_grads(twice, modes=["rev"], order=1)(1.0)
except AssertionError as error:
    assert "(VJP) check of twice failed" in str(error)
else:
    raise AssertionError("a wrong rule passed the check")
assert np.where(True, 1, 2) == 1 and type(np.where(True, 1, 2)) is int  # autograd's where
assert onp.allclose(np.where(condition=[True, False], x=x[:2], y=x[1:]), [x[0], x[2]])
assert onp.allclose(grad(lambda d: np.sum(np.make_diagonal(d, axis1=-1, axis2=-2) ** 2))(x),
                    2 * x)
from autograd.misc import flatten
flat, unflatten = flatten({"b": x, "a": (1.0, x[:2])})
assert onp.allclose(flat, onp.r_[1.0, x[:2], x]) and onp.allclose(unflatten(flat)["b"], x)
assert onp.allclose(grad(lambda a: np.sum(flatten([a, {"k": 2.0 * a}])[0] ** 2))(x), 10 * x)
check_grads(lambda a: np.r_[a, 1.0, a[::-1]] * 2.0, modes=["rev", "fwd"], order=2)(x)
print("adapter ok")
'''


def test_the_adapter_maps_autograds_operators_onto_srcads(tmp_path):
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "tests" / "autograd_suite" / "adapter"), str(ROOT)])}
    script = tmp_path / "uses_autograd.py"  # (srcad reads the source of what it differentiates)
    script.write_text(SCRIPT)
    result = subprocess.run([sys.executable, str(script)], env=environment,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "adapter ok" in result.stdout


def test_the_scripts_say_what_they_need_without_a_checkout():
    for module in ("tests.autograd_suite", "tests.autograd_suite.adbench"):
        result = subprocess.run([sys.executable, "-m", module], cwd=ROOT, capture_output=True,
                                text=True, check=True)
        assert "none given, nothing run" in result.stdout
