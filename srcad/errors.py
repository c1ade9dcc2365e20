"""Typed errors: every error srcad raises on purpose derives from `SrcadError`.

Each class also derives from the builtin a JAX or autograd user would catch for the same
mistake (`TypeError` for a wrong kind of value, `ValueError` for a bad value,
`NotImplementedError` for a construct srcad does not handle), so existing `except` clauses
keep working. Errors about the user's code carry a `Location` and print the offending line
with a caret under the construct, followed by the fix.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """A place in the user's source: file, 1-based line, 0-based column, function name."""

    filename: str
    lineno: int
    col: int
    end_col: int | None
    function: str
    line: str

    def render(self) -> str:
        text = self.line.rstrip("\n")
        stripped = text.lstrip()
        indent = len(text) - len(stripped)
        width = max(1, (self.end_col or self.col + 1) - self.col)
        caret = " " * (4 + self.col - indent) + "^" * width
        return (
            f'  File "{self.filename}", line {self.lineno}, col {self.col + 1}, '
            f"in {self.function}\n    {stripped}\n{caret}"
        )


class SrcadError(Exception):
    """Base of every error srcad raises on purpose."""

    def __init__(self, message: str, location: Location | None = None, fix: str | None = None):
        self.message = message
        self.location = location
        self.fix = fix
        parts = [message]
        if location is not None:
            parts.append(location.render())
        if fix:
            parts.append(f"Fix: {fix}")
        super().__init__("\n".join(parts))


class UnsupportedSyntaxError(SrcadError, NotImplementedError):
    """The function uses a construct srcad cannot differentiate."""


class UnresolvedNameError(SrcadError, NameError):
    """A called name cannot be resolved to an object when the function is transformed."""


class UnsoundAliasingError(SrcadError, NotImplementedError):
    """An in-place update writes memory that another name, read later, also shows."""


class MissingRuleError(SrcadError, NotImplementedError):
    """A differentiated value flows into a callable that has no derivative rule."""


class MissingJVPRuleError(MissingRuleError):
    """Forward mode meets a callable with no JVP rule (reverse mode may have one:
    `jacobian(mode="auto")` then computes by reverse mode)."""


class UnsupportedDerivativeError(SrcadError, NotImplementedError):
    """A derivative of an order or kind srcad does not compute (it never guesses one)."""


class RuleSignatureError(SrcadError, TypeError):
    """A call passes arguments that the callable's derivative rule does not accept."""


class SourceUnavailableError(SrcadError, TypeError):
    """The callable has no Python source to transform (builtin, C extension, REPL)."""


class NonScalarOutputError(SrcadError, TypeError):
    """`grad` was asked for a function whose output is not a real one-element value."""


class NonDifferentiableInputError(SrcadError, TypeError):
    """An argument in `wrt` has no float gradient (integer array, string, ...)."""


class NotCallableError(SrcadError, TypeError):
    """A srcad wrapper of functions (`checkpoint`) was given something that cannot be called."""


class AuxOutputError(SrcadError, TypeError):
    """A function differentiated with `has_aux=True` did not return a pair `(output, aux)`."""


class UsageError(SrcadError, ValueError):
    """An option of a srcad function has a bad value."""


class WrtError(UsageError):
    """`wrt` names an argument that does not exist."""


class CotangentError(SrcadError, ValueError):
    """A cotangent passed to a vjp function does not match the output."""


class TangentError(SrcadError, ValueError):
    """A tangent passed to `jvp` does not match its primal."""
