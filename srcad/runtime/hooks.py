"""hooks: what the runtime calls in the layers above it, installed there.

Imports go down the layers (docs/architecture.md), yet some of what generated code asks of
the runtime is done above it:

- compiling a function first met in a call, a helper reached through a variable or the
  callee of a tangent program (`compiled_adjoint`, the compiler's cache), the function
  that builds a user's plain class through its `__init__` (`record_constructor`), a
  method's variant that updates a copy of its receiver (`method_variant`) and what a
  method writes into (`arguments_written`);
- differentiating a derivative called inside differentiated code: `srcad.grad(h)` or
  `srcad.tape.grad(h)` called in f, `srcad.jvp`, `srcad.vjp` and its pullback (as a held
  function value, runtime/held.py), the second derivative of a
  `@custom_gradient` function (the API's derivative calls, api/derivative_calls.py);
- running the markers (`stop_gradient`, `stop_recording`, a `@custom_gradient` or
  `@checkpoint` function) under a tape (`tape_*`, tape/control.py).

`srcad/__init__.py` and `srcad/tape/__init__.py` install them when srcad is imported; a
hook called before that raises and says so.
"""
from __future__ import annotations

from types import SimpleNamespace

_NAMES = ("compiled_adjoint", "grad", "value_and_grad", "jvp", "vjp", "vjp_of_derivative",
          "jvp_of_derivative", "vjp_of_jvp", "jvp_of_jvp", "vjp_of_vjp", "jvp_of_vjp",
          "pullback_form", "vjp_tangent_program", "held_tangent_program",
          "jvp_tangent_program", "derivative_tangent_program", "custom_tangent_program",
          "record_constructor", "method_variant", "arguments_written", "tape_stop_gradient",
          "tape_paused", "tape_custom_gradient", "tape_checkpoint")


def _not_installed(name: str):
    def missing(*args, **kwargs):
        raise RuntimeError(f"srcad's `{name}` hook is not installed: srcad/__init__.py "
                           "and srcad/tape/__init__.py install them as `import srcad` runs; "
                           "a hook called while srcad is still being imported finds none.")
    return missing


ABOVE = SimpleNamespace(**{name: _not_installed(name) for name in _NAMES})


def install(**functions) -> None:
    """Fill the hooks named; a name the runtime does not call is a mistake."""
    unknown = set(functions) - set(_NAMES)
    if unknown:
        raise TypeError(f"no such runtime hook: {', '.join(sorted(unknown))}")
    vars(ABOVE).update(functions)


class DerivativeFunction:
    """Base of the callables derivatives return (`srcad.grad(h)`, `value_and_grad`, `vjp`'s
    pullback; `srcad.tape.grad(h)`). A call of one inside differentiated code is
    differentiated as a primitive through the hooks above (runtime/calls.py). `kind`, of
    the class, is "vjp" for a pullback (a function value holding what it was made from:
    runtime/held.py)."""

    kind = ""

    def in_source_mode(self) -> DerivativeFunction:
        """The source-mode derivative computing the same function: its derivatives are this
        one's (tape mode's answers `srcad.grad` of the same function)."""
        return self
