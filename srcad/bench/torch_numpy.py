"""torch_numpy: the few NumPy names the workloads use, on PyTorch tensors, so PyTorch runs
the workloads' own source (`np` rebound to this namespace)."""
from __future__ import annotations

import math
import types


def namespace(torch) -> types.SimpleNamespace:
    torch.set_default_dtype(torch.float64)

    def tensor(x):
        return x if isinstance(x, torch.Tensor) else torch.as_tensor(x, dtype=torch.float64)

    def unary(name):
        function = getattr(torch, name)
        return lambda x: function(tensor(x))

    def reduction(name):
        function = getattr(torch, name)

        def reduce(x, axis=None, keepdims=False):
            if axis is None:
                return function(x)
            return function(x, dim=axis, keepdim=keepdims)
        return reduce

    names = {n: unary(n) for n in ("sin", "cos", "exp", "log", "tanh", "log1p", "abs")}
    return types.SimpleNamespace(
        **names, sum=reduction("sum"), mean=reduction("mean"), max=reduction("amax"),
        sqrt=lambda x: math.sqrt(x) if isinstance(x, (int, float)) else torch.sqrt(x),
        zeros=lambda shape: torch.zeros(shape, dtype=torch.float64))
