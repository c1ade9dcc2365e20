"""Rules for contractions: matmul, dot, tensordot, inner, outer, vdot, kron, cross, einsum,
convolve.

The VJPs need a few statements each, so they are `def`s the adjoint calls by name. A
contraction is linear in each operand, so each JVP is the contraction itself with the
tangent in that operand's place (one expression, inlined), registered right after the VJP.
"""
import operator
import string

import numpy as np

from srcad.errors import UnsupportedDerivativeError
from srcad.kernels import batched
from srcad.kernels.adjoints import dtype_of, inverse_permutation, through_cast, unbroadcast
from srcad.ops.registry import declare, defjvp, defvjp, nondifferentiable, returns_new_array


def _swap_last_axes(a):
    """`np.swapaxes(a, -1, -2)`, written with `np.transpose`, which has a rule."""
    n = np.ndim(a)
    return np.transpose(a, tuple(range(n - 2)) + (n - 1, n - 2))


def _ndim(x) -> int:
    """np.ndim, without NumPy's dispatch on an array (the matmul rules run per product)."""
    return x.ndim if type(x) is np.ndarray else np.ndim(x)


def _transposed(matrix):
    """`np.transpose(matrix)`, which a tape-mode tensor records; an array's `.T` is cheaper."""
    return matrix.T if type(matrix) is np.ndarray else np.transpose(matrix)


def _as_matrices(g, a, b):
    """Treat 1-D operands of `matmul` as a row (`a`) or a column (`b`), as NumPy does.

    Indexing and NumPy calls with rules only (no np.asarray), so that the contractions'
    rules run on tape-mode tensors too and a nested tape records them. A Python number `g`
    (a cotangent a derivative program computed) becomes a 0-d array, to be indexed."""
    if isinstance(g, (int, float, complex)):
        g = np.array(g)
    if np.ndim(b) == 1:  # first: when both are vectors, g is a scalar that becomes (1, 1)
        b, g = b[:, np.newaxis], g[..., np.newaxis]
    if np.ndim(a) == 1:
        a, g = a[np.newaxis, :], g[..., np.newaxis, :]
    return g, a, b


@returns_new_array
def matmul_vjp_a(g, ans, a, b):
    a_ndim, b_ndim = _ndim(a), _ndim(b)
    if a_ndim == 2:  # the common cases first: no batch (a layer, or an RNN's step)
        if b_ndim == 2:
            return g @ _transposed(b)
        if b_ndim == 1:
            return g[:, np.newaxis] * b  # np.outer(g, b), with rules
    elif a_ndim == 1 and type(b) is np.ndarray and (b_ndim == 1 or b_ndim == 2):
        return g * b if b_ndim == 1 else b @ g  # a dot product, a row times a matrix
    g2, a2, b2 = _as_matrices(g, a, b)
    grad = g2 @ _swap_last_axes(b2)
    if np.ndim(a) == 1:
        grad = grad[..., 0, :]
    return unbroadcast(grad, a)


@returns_new_array
def matmul_vjp_b(g, ans, a, b):
    a_ndim, b_ndim = _ndim(a), _ndim(b)
    if a_ndim == 2 and (b_ndim == 1 or b_ndim == 2):
        return _transposed(a) @ g
    if a_ndim == 1 and b_ndim == 2:
        return a[:, np.newaxis] * g  # np.outer(a, g), with rules
    if a_ndim == 1 and b_ndim == 1 and type(a) is np.ndarray:  # a dot product
        return g * a
    g2, a2, b2 = _as_matrices(g, a, b)
    grad = _swap_last_axes(a2) @ g2
    if np.ndim(b) == 1:
        grad = grad[..., :, 0]
    return unbroadcast(grad, b)


@returns_new_array
def dot_vjp_a(g, ans, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    if np.ndim(a) <= 2 and np.ndim(b) <= 2:  # np.dot is np.matmul here
        return matmul_vjp_a(g, ans, a, b)
    b_axes = _dot_free_axes_of_b(b)
    g_axes = tuple(range(np.ndim(g) - len(b_axes), np.ndim(g)))
    return np.tensordot(g, b, axes=(g_axes, b_axes))


@returns_new_array
def dot_vjp_b(g, ans, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * a, b)
    if np.ndim(a) <= 2 and np.ndim(b) <= 2:
        return matmul_vjp_b(g, ans, a, b)
    lead = tuple(range(np.ndim(a) - 1))
    grad = np.tensordot(a, g, axes=(lead, lead))
    return np.moveaxis(grad, 0, max(np.ndim(b) - 2, 0))


def _dot_free_axes_of_b(b):
    """`np.dot` contracts `b`'s second-to-last axis (its only axis if 1-D); the rest stay."""
    contracted = max(np.ndim(b) - 2, 0)
    return tuple(i for i in range(np.ndim(b)) if i != contracted)


for _matmul in (operator.matmul, np.matmul):
    defvjp(_matmul, matmul_vjp_a, matmul_vjp_b)
    defjvp(_matmul,
           lambda g, ans, a, b: np.matmul(g, b),
           lambda g, ans, a, b: np.matmul(a, g))
defvjp(np.dot, dot_vjp_a, dot_vjp_b)
defjvp(np.dot,
       lambda g, ans, a, b: np.dot(g, b),
       lambda g, ans, a, b: np.dot(a, g))


def _tensordot_axes(a, b, axes):
    """`np.tensordot`'s `axes` as two lists of non-negative axes of `a` and of `b`."""
    if isinstance(axes, (int, np.integer)):
        return list(range(np.ndim(a) - axes, np.ndim(a))), list(range(axes))
    axes_a, axes_b = ([x] if isinstance(x, (int, np.integer)) else list(x) for x in axes)
    return [i % np.ndim(a) for i in axes_a], [i % np.ndim(b) for i in axes_b]


def tensordot_vjp_a(g, ans, a, b, axes=2):
    axes_a, axes_b = _tensordot_axes(a, b, axes)
    free_a = [i for i in range(np.ndim(a)) if i not in axes_a]
    free_b = [i for i in range(np.ndim(b)) if i not in axes_b]
    grad = np.tensordot(g, b, axes=(list(range(len(free_a), np.ndim(g))), free_b))
    order = free_a + [axes_a[axes_b.index(j)] for j in sorted(axes_b)]
    return np.transpose(grad, inverse_permutation(tuple(order)))


def tensordot_vjp_b(g, ans, a, b, axes=2):
    axes_a, axes_b = _tensordot_axes(a, b, axes)
    free_a = [i for i in range(np.ndim(a)) if i not in axes_a]
    grad = np.tensordot(a, g, axes=(free_a, list(range(len(free_a)))))
    free_b = [i for i in range(np.ndim(b)) if i not in axes_b]
    order = [axes_b[axes_a.index(i)] for i in sorted(axes_a)] + free_b
    return np.transpose(grad, inverse_permutation(tuple(order)))


defvjp(np.tensordot, tensordot_vjp_a, tensordot_vjp_b)
defjvp(np.tensordot,
       lambda g, ans, a, b, axes=2: np.tensordot(g, b, axes),
       lambda g, ans, a, b, axes=2: np.tensordot(a, g, axes))


defvjp(np.outer,
       lambda g, ans, a, b, out=None: np.reshape(g @ np.ravel(b), np.shape(a)),
       lambda g, ans, a, b, out=None: np.reshape(np.ravel(a) @ g, np.shape(b)))
defjvp(np.outer,
       lambda g, ans, a, b, out=None: np.outer(g, b),
       lambda g, ans, a, b, out=None: np.outer(a, g))


# vdot(a, b) = sum(conj(a) * b): a's cotangent is conjugated too (d conj(a) = conj(da)).
defvjp(np.vdot,
       lambda g, ans, a, b: np.conj(g * np.reshape(b, np.shape(a))),
       lambda g, ans, a, b: g * np.conj(np.reshape(a, np.shape(b))))
defjvp(np.vdot,
       lambda g, ans, a, b: np.vdot(g, b),
       lambda g, ans, a, b: np.vdot(a, g))


def _string_form(args: tuple) -> tuple:
    """`(subscripts, operands, operand_of)` of an `np.einsum` call's positional arguments,
    in either form: `einsum("ij,jk->ik", a, b)` or `einsum(a, [0, 1], b, [1, 2], [0, 2])`;
    `operand_of(k)` is the operand at argument position k, None for subscripts."""
    if isinstance(args[0], str):
        return args[0], args[1:], lambda k: k - 1 if k >= 1 else None
    operands, sublists = args[0::2], args[1::2]
    if len(args) % 2:  # an output sublist last
        operands, output = operands[:-1], "->" + _letters(args[-1])
    else:
        output = ""
    subscripts = ",".join(_letters(sublist) for sublist in sublists) + output
    return subscripts, operands, lambda k: k // 2 if k % 2 == 0 and k // 2 < len(
        operands) else None


def _letters(sublist) -> str:
    """A sublist of `np.einsum`'s second form (integers 0-51 and Ellipsis) as letters, as
    NumPy names them (0-25 upper case, 26-51 lower: the implicit output sorts them)."""
    return "".join("..." if item is Ellipsis else _SUBLIST_LETTERS[item] for item in sublist)


_SUBLIST_LETTERS = string.ascii_uppercase + string.ascii_lowercase


def _einsum_operand_subscripts(subscripts, operands):
    """The subscripts of each operand and of the output, with letters for `...`."""
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    inputs = inputs.split(",")
    unused = [c for c in string.ascii_letters if c not in subscripts]
    ellipsis = max((np.ndim(op) - len(s) + 3 for s, op in zip(inputs, operands) if "..." in s),
                   default=0)
    letters, unused = "".join(unused[:ellipsis]), unused[ellipsis:]
    inputs = [s.replace("...", letters[ellipsis - (np.ndim(op) - len(s) + 3):])
              for s, op in zip(inputs, operands)]
    if not arrow:  # implicit output: the letters used once, in order (`...` first)
        joined = "".join(inputs)
        output = letters + "".join(sorted(c for c in set(joined) if joined.count(c) == 1
                                          and c not in letters))
    return inputs, output.replace("...", letters), unused


def einsum_vjp(argument):
    def rule(g, ans, *args, **kwargs):
        """`np.einsum`: another einsum of the output's cotangent with the other operands;
        ones for letters only this operand has, identities for its repeated letters. A
        real `dtype=` (casting="unsafe") casts the operands to their real parts, and the
        cotangent that reaches them is real."""
        subscripts, operands, operand_of = _string_form(args)
        position = operand_of(argument)
        if position is None:  # the subscripts, a sublist
            return None
        if kwargs.get("dtype") is not None:
            _refuse_rounding(kwargs["dtype"])
            g = through_cast(g, kwargs["dtype"])
            operands = [through_cast(op, kwargs["dtype"]) for op in operands]
        inputs, output, unused = _einsum_operand_subscripts(subscripts, operands)
        target, shape = inputs[position], np.shape(operands[position])
        sources = [output] + inputs[:position] + inputs[position + 1:]
        arrays = [g, *operands[:position], *operands[position + 1:]]
        dtype = dtype_of(g)
        renamed = ""
        for letter, size in zip(target, shape):
            if letter in renamed:  # a repeated letter: a diagonal, through an identity
                fresh = unused.pop(0)
                sources.append(letter + fresh)
                arrays.append(np.eye(size, dtype=dtype))
                letter = fresh
            elif not any(letter in s for s in sources):  # summed in this operand only
                sources.append(letter)
                arrays.append(np.ones(size, dtype=dtype))
            renamed += letter
        grad = np.einsum(",".join(sources) + "->" + renamed, *arrays)
        return unbroadcast(grad, operands[position])
    rule.__name__ = rule.__qualname__ = f"einsum_vjp_{argument}"
    return rule


def _refuse_rounding(dtype):
    """An integer `dtype=` rounds the operands: einsum's rules (and their own, for higher
    orders) are for the floating products."""
    if np.dtype(dtype).kind not in "fc":
        raise UnsupportedDerivativeError(
            f"srcad does not differentiate np.einsum(..., dtype={np.dtype(dtype).name}): it "
            "rounds its operands, which has no derivative.",
            fix="round explicitly and wrap the result in srcad.stop_gradient(...), or drop "
            "dtype=.")


nondifferentiable(_refuse_rounding)


def einsum_jvp(argument):
    def rule(g, ans, *args, **kwargs):
        """`np.einsum` is linear in each operand: the same call, `g` in this one's place
        (statements, not one expression: the inliner cannot splice `*args`)."""
        if _string_form(args)[2](argument) is None:  # the subscripts, a sublist
            return None
        if kwargs.get("dtype") is not None:
            _refuse_rounding(kwargs["dtype"])
            g = through_cast(g, kwargs["dtype"])
        args = args[:argument] + (g,) + args[argument + 1:]
        return np.einsum(*args, **{key: value for key, value in kwargs.items() if key != "out"})
    rule.__name__ = rule.__qualname__ = f"einsum_jvp_{argument}"
    return rule


def _sublist_only(argument):
    def rule(g, ans, *args, **kwargs):
        """A sublist's place; after a subscripts string, a ninth operand's or more."""
        if _string_form(args)[2](argument) is None:
            return None
        raise UnsupportedDerivativeError(
            "srcad differentiates np.einsum of up to eight operands.",
            fix="contract in two steps, each of eight operands or fewer.")
    rule.__name__ = rule.__qualname__ = f"einsum_sublist_{argument}"
    return rule


# a rule per argument position: up to eight operands after a subscripts string (1-8), or
# with their sublists (operands at 0, 2, .., 14)
_ARGUMENTS = 16
_OPERAND_PLACES = (*range(9), 10, 12, 14)
EINSUM_VJPS = tuple(einsum_vjp(k) if k in _OPERAND_PLACES else _sublist_only(k)
                    for k in range(_ARGUMENTS))
EINSUM_JVPS = tuple(einsum_jvp(k) if k in _OPERAND_PLACES else _sublist_only(k)
                    for k in range(_ARGUMENTS))
defvjp(np.einsum, *EINSUM_VJPS)
defjvp(np.einsum, *EINSUM_JVPS)
declare(np.einsum, view=lambda arguments, keywords: "out" in keywords or not (
    arguments and isinstance(arguments[0], str) and len(arguments) > 2))  # (of one operand,
#                                                       "ij->ji" is a view; of two, new)


def _rules_of_einsum_tangent(argument, rules):
    """Rules for `einsum_jvp_<argument>(g, ans, *args)`, the einsum of the arguments with g
    in place `argument`, which tangent programs call (second derivatives differentiate
    them): for g, einsum's own rule at `argument`; for another argument, its rule at that
    place (`rules[j]`); none for `ans` and the argument g replaced."""
    def at(j):
        rule = rules[j]

        def applied(d, ans, g, primal, *args, **kwargs):
            args = args[:argument] + (g,) + args[argument + 1:]
            return rule(d, None, *args, **kwargs)
        applied.__name__ = applied.__qualname__ = f"{rule.__name__}_of_tangent_{argument}"
        return applied
    return (at(argument), None, *(None if j == argument else at(j) for j in range(_ARGUMENTS)))


for _argument in _OPERAND_PLACES:
    defvjp(EINSUM_JVPS[_argument], *_rules_of_einsum_tangent(_argument, EINSUM_VJPS))
    defjvp(EINSUM_JVPS[_argument], *_rules_of_einsum_tangent(_argument, EINSUM_JVPS))


def inner_vjp_a(g, ans, a, b):
    if np.ndim(a) == 0:
        return np.sum(g * b)
    if np.ndim(b) == 0:
        return g * b
    n = np.ndim(b) - 1  # g's last n axes are b's leading ones
    return np.tensordot(g, b, axes=(list(range(np.ndim(g) - n, np.ndim(g))), list(range(n))))


def inner_vjp_b(g, ans, a, b):
    if np.ndim(b) == 0:
        return np.sum(g * a)
    if np.ndim(a) == 0:
        return g * a
    n = np.ndim(a) - 1  # g's first n axes are a's leading ones
    return np.tensordot(g, a, axes=(list(range(n)), list(range(n))))


def _kron_blocks(g, a, b):
    """`g` with the axes of `np.kron(a, b)` split in pairs (a's axis, b's axis)."""
    d = max(np.ndim(a), np.ndim(b))
    sa = (1,) * (d - np.ndim(a)) + np.shape(a)
    sb = (1,) * (d - np.ndim(b)) + np.shape(b)
    pairs = lambda x, y: tuple(n for pair in zip(x, y) for n in pair)  # noqa: E731
    return np.reshape(g, pairs(sa, sb)), pairs(sa, (1,) * d), pairs((1,) * d, sb), d


def kron_vjp_a(g, ans, a, b):
    blocks, a_shape, b_shape, d = _kron_blocks(g, a, b)
    summed = np.sum(blocks * np.reshape(b, b_shape), axis=tuple(range(1, 2 * d, 2)))
    return np.reshape(summed, np.shape(a))


def kron_vjp_b(g, ans, a, b):
    blocks, a_shape, b_shape, d = _kron_blocks(g, a, b)
    summed = np.sum(blocks * np.reshape(a, a_shape), axis=tuple(range(0, 2 * d, 2)))
    return np.reshape(summed, np.shape(b))


def cross_vjp_a(g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """(a x b) . g = (b x g) . a, unbroadcast with the vector axes last (where
    broadcasting aligns them), then moved back to `axisa`."""
    if axis is not None:
        axisa = axisb = axisc = axis
    part = np.cross(b, g, axisa=axisb, axisb=axisc, axisc=-1)
    return np.moveaxis(unbroadcast(part, np.moveaxis(a, axisa, -1)), -1, axisa)


def cross_vjp_b(g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """(a x b) . g = (g x a) . b, unbroadcast as in cross_vjp_a."""
    if axis is not None:
        axisa = axisb = axisc = axis
    part = np.cross(g, a, axisa=axisc, axisb=axisa, axisc=-1)
    return np.moveaxis(unbroadcast(part, np.moveaxis(b, axisb, -1)), -1, axisb)


defvjp(np.inner, inner_vjp_a, inner_vjp_b)
defjvp(np.inner,
       lambda g, ans, a, b: np.inner(g, b),
       lambda g, ans, a, b: np.inner(a, g))


defvjp(np.kron, kron_vjp_a, kron_vjp_b)
defjvp(np.kron,
       lambda g, ans, a, b: np.kron(g, b),
       lambda g, ans, a, b: np.kron(a, g))


defvjp(np.cross, cross_vjp_a, cross_vjp_b)
defjvp(np.cross,
       lambda g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None:
       np.cross(g, b, axisa, axisb, axisc, axis),
       lambda g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None:
       np.cross(a, g, axisa, axisb, axisc, axis))


def _full_convolution_cotangent(g, a, v, mode):
    """The cotangent of `np.convolve(a, v, mode)` as one of the full convolution: `g` among
    zeros where `mode` left terms out ("same" keeps the max(M, N) centred ones, "valid" the
    max - min + 1 where the shorter array fits)."""
    m, n = np.size(a), np.size(v)
    if mode == "full":
        return g
    start = (min(m, n) - 1) // 2 if mode == "same" else min(m, n) - 1
    return np.pad(g, (start, m + n - 1 - start - np.size(g)))


def convolve_vjp_a(g, ans, a, v, mode="full"):
    """y[k] = sum_i a[i] v[k - i]: a[i]'s cotangent is sum_k g[k] v[k - i], the valid
    convolution of the full cotangent with v reversed (no conjugate: matmul's convention)."""
    full = _full_convolution_cotangent(g, a, v, mode)
    return np.reshape(np.convolve(full, np.ravel(v)[::-1], "valid"), np.shape(a))


def convolve_vjp_v(g, ans, a, v, mode="full"):
    """As for `a`, the two arrays' roles swapped (the full convolution is symmetric)."""
    full = _full_convolution_cotangent(g, a, v, mode)
    return np.reshape(np.convolve(full, np.ravel(a)[::-1], "valid"), np.shape(v))


defvjp(np.convolve, convolve_vjp_a, convolve_vjp_v)
defjvp(np.convolve,
       lambda g, ans, a, v, mode="full": np.convolve(g, v, mode),
       lambda g, ans, a, v, mode="full": np.convolve(a, g, mode))


# ---- batched tangents (kernels/batched.py) ------------------------------------------------------
def batched_matmul(ans, tangents, a, b):
    """`a @ b`: vectors become a row (`a`) and a column (`b`) as in NumPy, batched tangents
    are aligned to the stacked product's rank (the batch axis leads, which matmul
    broadcasts), and the added axes are taken out again."""
    t_a, t_b = tangents
    if t_a is None and type(a) is np.ndarray and a.ndim == 2 and type(b) is np.ndarray \
            and b.ndim == 1 and batched.is_basis(t_b):  # a layer's Jacobian: `a.T`, in full
        return a.T
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        batched.refused("matmul of a scalar")
    if t_a is None and np.ndim(a) <= 2 and np.ndim(b) == 1:  # one product: (n, k) @ (k, m)
        transposed = np.swapaxes(a, -1, -2) if np.ndim(a) == 2 else a
        product = transposed if batched.is_basis(t_b) else np.matmul(t_b, transposed)
        return batched.full(product, ans)
    rows, columns = np.ndim(a) == 1, np.ndim(b) == 1
    a_matrix = np.reshape(a, (1, -1)) if rows else a
    b_matrix = np.reshape(b, (-1, 1)) if columns else b
    rank = max(np.ndim(a_matrix), np.ndim(b_matrix))  # of the stacked product
    parts = []
    if t_a is not None:
        t_matrix = t_a[:, None, :] if rows else t_a
        parts.append(np.matmul(batched.aligned_to(t_matrix, rank), b_matrix))
    if t_b is not None:
        t_matrix = t_b[..., None] if columns else t_b
        parts.append(np.matmul(a_matrix, batched.aligned_to(t_matrix, rank)))
    total = parts[0] if len(parts) == 1 else parts[0] + parts[1]
    if columns:
        total = total[..., 0]
    if rows:
        total = total[..., 0, :] if not columns else total[..., 0]
    return batched.full(total, ans)


def batched_dot(ans, tangents, a, b):
    """`np.dot`: matmul for arrays of up to two dimensions."""
    if not (1 <= np.ndim(a) <= 2 and 1 <= np.ndim(b) <= 2):
        batched.refused("np.dot of scalars or of arrays above two dimensions")
    return batched_matmul(ans, tangents, a, b)


declare(np.matmul, batched=batched_matmul)
declare(operator.matmul, batched=batched_matmul)
declare(np.dot, batched=batched_dot)


# ---- what the compiler knows of them besides their rules ----------------------------------------
declare(np.dot, pure=True, methods=("dot",))
declare(np.matmul, pure=True)
