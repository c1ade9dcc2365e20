"""Straight-line programs the tests differentiate (source must live in a file)."""
import numpy
import numpy as np
from numpy import exp, tanh

import srcad


def logistic_loss(w, b, x, y):
    z = x @ w + b
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def reassigned(x, w):
    x = x * w
    x = np.sin(x) + x
    x += 1.0
    x *= w
    return np.sum(x)


def tuple_targets(x, y):
    a, b = x * 2.0, y + 1.0
    a, b = b, a
    (c, d), e = (a, b), a * b
    return np.sum(c * d - e ** 2)


def imports_three_ways(x):
    return numpy.sum(exp(x) * tanh(x)) + np.sum(x)


def mlp(w1, b1, w2, x):
    hidden = np.tanh(x @ w1 + b1)
    return np.mean((hidden @ w2) ** 2)


def broadcasting(a, b):
    return np.sum(a * b + a / (b + 3.0) - b ** 2)


def reductions(x):
    rows = np.sum(x, axis=1, keepdims=True)
    cols = np.mean(x, axis=0)
    return np.sum(rows * x) + np.sum(cols ** 2) + np.sum(x.T @ x)


def indexing(x):
    first = x[0]
    tail = x[1:, ::2]
    picked = x[:, None, 1]
    return np.sum(first ** 2) + np.sum(tail * 3.0) + np.sum(np.sin(picked))


def shapes(x):
    flat = np.reshape(x, (-1,))
    moved = np.transpose(np.reshape(flat, (2, 3, 2)), (2, 0, 1))
    return np.sum(moved[0] * moved[1])


def elementwise(x):
    y = np.exp(x) + np.log(x) + np.sqrt(x) + np.log1p(x) + np.expm1(x)
    z = np.sin(x) * np.cos(x) + np.tan(x) + np.tanh(x) + np.abs(x - 0.5)
    return np.sum(y * z + np.maximum(x, 0.5) - np.minimum(x, 0.2) + np.where(x > 0.5, x, -x))


def unused_argument(x, y):
    return np.sum(x ** 2)


def constant_output(x):
    return 3.0


def scalar_math(x, y):
    return x * y + x / y - y ** 3 + -x


def powers(x, y):
    return np.sum(x ** y) + np.sum(np.power(x, 2))


def with_aux(x):
    loss = np.sum(x ** 2)
    return loss, {"norm": np.sqrt(loss), "label": "train"}


def keyword_only(x, *, scale=2.0):
    return np.sum(x * scale)


def default_argument(x, shift=1.0):
    return np.sum((x + shift) ** 2)


def vector_output(x):
    return np.sin(x) * 2.0


def scaled_difference(x, w):
    return 1.0 - 2.0 * (x * w)       # the backward sweep scales the cotangent by -2.0


def pair_output(x, y):
    return x * y, x + y


def passthrough(x, output):
    return output


def side_effect(x):
    print("computing", np.sum(x))
    return np.sum(x)


def matmul_shapes(a, b):
    return np.sum(np.matmul(a, b) ** 2) + np.sum(np.dot(a, b))


@srcad.grad
def decorated(x):
    return np.sum(x ** 3)


def calls_a_helper(x):
    return helper(x) * 2.0


def helper(x):
    return np.sum(x)


def calls_registered_helper(x):
    return registered_helper(x) * 2.0


def registered_helper(x):
    return np.sum(x)


def method_call(x):
    return x.sum()


def guarded(x):
    try:
        y = np.log(x)
    except FloatingPointError:
        y = x
    return np.sum(y)


def returns_from_try_in_a_loop(x):
    for k in range(2):
        try:
            y = np.sin(x) * k
            if k > 0:
                return np.sum(y)  # in try
        except ValueError:
            pass
    return np.sum(x)


class Holder:
    value = None


HOLDER = Holder()  # (an object of the module's: what it holds outlives the call)


def stores_a_derivative_in_an_attribute(x):
    y = np.sin(x)
    HOLDER.value = y
    return np.sum(HOLDER.value)


def handler_reads_half_done_body(x):
    try:
        y = np.sin(x)
        z = np.log(y)
    except ValueError:
        z = y
    return np.sum(z)


def exception_groups(x):
    try:  # groups
        y = np.sin(x)
    except* ValueError:
        y = x
    return np.sum(y)


def attribute_assignment(x):
    x.shape = (3,)
    return np.sum(x)


def unknown_name(x):
    return np.sum(undefined_function(x))  # noqa: F821


def extension_callee(x):
    return np.sum(np.nextafter(x, 1.0))


def opaque_callee(x):
    return np.sum(np.vander(x))  # (NumPy writes it in Python, with out=)


def rnn_loop(x, W):
    h = x
    for t in range(3):
        h = np.tanh(W @ h)
    return np.sum(h)


def newton_while(a):
    x = a
    while abs(x * x - a) > 1e-10:
        x = 0.5 * (x + a / x)
    return x


def huber_if(r, delta):
    if abs(r) <= delta:
        loss = 0.5 * r ** 2
    else:
        loss = delta * (abs(r) - 0.5 * delta)
    return loss


def uses_with(x):
    with open("/dev/null") as handle:
        handle.read()
    return np.sum(x)


def generator(x):
    yield np.sum(x)


COUNTER = 0


def writes_global(x):
    global COUNTER
    COUNTER = COUNTER + 1
    return np.sum(x)


TABLE = np.zeros(3)


def writes_into_a_global_element(x):
    y = np.zeros(3)
    y[0] = np.sum(x)  # (into its own array: followed)
    TABLE[1] = y[0]  # into a global's
    return y[0] * 2.0


def loops_into_an_element(x):
    y = np.zeros(3)
    for k, y[0] in enumerate(x):  # a loop variable that is an element, in a tuple
        y[1] = y[1] + y[0] * k
    return y[1]


async def asynchronous(x):
    return np.sum(x)


def zip_kept_in_a_name(x):
    pairs = zip(x, x * 2.0)
    total = 0.0
    for a, b in pairs:
        total = total + a * b
    return total


def enumerate_passed_on(x):
    return sum(i * v for i, v in list(enumerate(x)))


def reversed_kept_in_a_name(x):
    backwards = reversed(x)
    return sum(v * v for v in backwards)


def list_of_keys(x):
    keys = list({"a": x, "b": 2.0 * x})
    return x[0] * len(keys)


def reraises(x):
    if np.sum(x) > 100.0:
        raise  # nothing to re-raise
    return np.sum(x)


def deletes_an_item(x):
    items = {"a": x[0], "b": x[1]}   # (of a list srcad makes itself, `del` is followed)
    del items["a"]
    return items["b"]
