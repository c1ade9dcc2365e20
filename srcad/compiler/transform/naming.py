"""naming: deterministic, collision-free names for generated code.

Same input, same names: there are no uuids or hashes, so the generated source is
byte-identical across runs (golden tests and cache keys rely on it). Conventions follow the
AD literature: `b_x` is the adjoint of `x`, `t_x` its tangent, `x_1` the second version of a
reassigned `x`, `sin_3` the temporary holding an intermediate result.
"""
from __future__ import annotations


class Namer:
    """Hands out names that collide neither with the user's names nor with each other."""

    def __init__(self, reserved=()):
        self.used = set(reserved)
        self._temporaries = 0
        self._suffixes: dict[str, int] = {}  # name → the suffix `claim` last handed out

    def claim(self, name: str) -> str:
        """`name` itself if free, otherwise `name_1`, `name_2`, ... The search starts after
        the suffix handed out last (names are never freed): a variable assigned a thousand
        times is not counted up to each of its versions again."""
        k = self._suffixes.get(name, 0)
        candidate = f"{name}_{k}" if k else name
        while candidate in self.used:
            k += 1
            candidate = f"{name}_{k}"
        self._suffixes[name] = k
        self.used.add(candidate)
        return candidate

    def copy(self) -> Namer:
        """A namer that has handed out what this one has, and goes on apart from it."""
        made = Namer()
        made.used, made._temporaries, made._suffixes = (
            set(self.used), self._temporaries, dict(self._suffixes))
        return made

    def temporary(self, base: str) -> str:
        """A numbered temporary such as `sin_0`: numbered so it never reads as a user name."""
        while True:
            candidate = f"{base}_{self._temporaries}"
            self._temporaries += 1
            if candidate not in self.used:
                self.used.add(candidate)
                return candidate


def adjoint_name(namer: Namer, name: str, prefix: str = "b") -> str:
    """`b_x` (adjoint) or `t_x` (tangent, with prefix "t") for `x`."""
    return namer.claim(f"{prefix}_{name}")
