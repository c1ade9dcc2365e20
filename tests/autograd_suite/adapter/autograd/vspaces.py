"""The vector spaces autograd's test helpers draw directions in: a value (a number, an
array, or tuples, lists and dicts of them) as a flat vector and back."""
import numpy as np


class VSpace:
    def __init__(self, value):
        self.example = value
        self.leaves = _leaves(value)
        self.iscomplex = any(np.iscomplexobj(leaf) for leaf in self.leaves)
        self.size = sum(np.size(leaf) for leaf in self.leaves)
        self.shape = np.shape(value) if len(self.leaves) == 1 and self.leaves[0] is value \
            else ()

    def __eq__(self, other):
        return isinstance(other, VSpace) and self._signature() == other._signature()

    def _signature(self):
        return _structure(self.example), [(np.shape(leaf), bool(np.iscomplexobj(leaf)))
                                          for leaf in self.leaves]

    def __repr__(self):
        return f"VSpace({_structure(self.example)}, {self._signature()[1]})"

    def flat(self, value) -> np.ndarray:
        parts = [np.ravel(np.asarray(leaf, dtype=complex if self.iscomplex else float))
                 for leaf in _leaves(value)]
        return np.concatenate(parts) if parts else np.zeros(0)

    def unflat(self, vector):
        values, start = [], 0
        for leaf in self.leaves:
            size = np.size(leaf)
            part = vector[start:start + size]
            start += size
            if not np.iscomplexobj(leaf):
                part = np.real(part)
            values.append(np.reshape(part, np.shape(leaf)) if np.ndim(leaf) or isinstance(
                leaf, np.ndarray) else part[0].item() if isinstance(leaf, (float, int, complex))
                else part.reshape(()))
        return _rebuild(self.example, iter(values))

    def zeros(self):
        return self.unflat(np.zeros(self.size, complex if self.iscomplex else float))

    def ones(self):
        return self.unflat(np.ones(self.size, complex if self.iscomplex else float))

    def randn(self):
        vector = np.random.randn(self.size)
        if self.iscomplex:
            vector = vector + 1j * np.random.randn(self.size)
        return self.unflat(vector)

    def standard_basis(self):
        for k in range(self.size):
            vector = np.zeros(self.size, complex if self.iscomplex else float)
            vector[k] = 1.0
            yield self.unflat(vector)

    def covector(self, value):
        return self.unflat(np.conj(self.flat(value)))

    def inner_prod(self, a, b):
        return np.real(np.dot(np.conj(self.flat(a)), self.flat(b)))

    def add(self, a, b):
        return self.unflat(self.flat(a) + self.flat(b))

    def scalar_mul(self, a, scale):
        return self.unflat(self.flat(a) * scale)


def vspace(value) -> VSpace:
    return VSpace(value)


def _leaves(value) -> list:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    if isinstance(value, dict):
        return [leaf for key in sorted(value, key=repr) for leaf in _leaves(value[key])]
    return [value]


def _structure(value):
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_structure(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _structure(value[k])) for k in sorted(value, key=repr)))
    return "leaf"


def _rebuild(example, values):
    if isinstance(example, (tuple, list)):
        return type(example)(_rebuild(item, values) for item in example)
    if isinstance(example, dict):
        rebuilt = {key: _rebuild(example[key], values) for key in sorted(example, key=repr)}
        return {key: rebuilt[key] for key in example}
    return next(values)
