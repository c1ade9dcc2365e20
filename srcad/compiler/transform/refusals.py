"""refusals: operations neither derivative program can handle soundly, refused with the
user's line and a fix. Reverse and forward mode ask the same questions of an operation, so
they refuse the same code with the same words."""
from __future__ import annotations

import gast
import numpy as np

from srcad.compiler.frontend.resolve import Operation
from srcad.errors import UnsupportedSyntaxError
from srcad.ops import is_nondifferentiable, jvp_rules, vjp_rules
from srcad.ops.python_statements import LIST_UPDATES, attribute_set, entered
from srcad.runtime.effects import effect_unchanged
from srcad.runtime.held import HeldCall


def check_operation(op: Operation, varied, parsed, name_for) -> None:
    """Every refusal that depends only on the operation and what is differentiated (and
    the check an effect runs under: `name_for` binds its helper)."""
    check_effect(op, varied, parsed, name_for)
    check_container_update(op, varied, parsed)
    check_captures(op, varied, parsed)
    check_callee(op, varied, parsed, name_for)
    check_positional_out(op, parsed)
    check_iterator(op, varied, parsed)
    check_namespace_reader(op, varied, parsed)


NAMESPACE_READERS = {eval: "eval", exec: "exec", locals: "locals", vars: "vars"}


def check_namespace_reader(op: Operation, varied, parsed) -> None:
    """`eval`, `exec`, `locals()` and `vars()` read the function's variables by name, a path
    no derivative follows: refused where anything is differentiated, rather than taken for
    constants (which gave zero gradients). `vars(obj)` reads an object, not the frame."""
    try:
        name = NAMESPACE_READERS.get(op.callee)
    except TypeError:  # an unhashable callee
        return
    if op.kind in ("call", "effect") and name and varied \
            and not (name == "vars" and _arguments(op)):
        raise UnsupportedSyntaxError(
            f"srcad cannot differentiate through `{name}(...)` (in {parsed.name}): it reads "
            "variables by name, a path the derivative cannot follow.",
            parsed.location(op.statement),
            "write the expression itself instead of a string to evaluate, and read variables "
            "by their names rather than through locals() or vars().")


_ITERATORS = {zip: "zip", enumerate: "enumerate", reversed: "reversed"}


def check_iterator(op: Operation, varied, parsed) -> None:
    """`zip`, `enumerate` and `reversed` of differentiated values are followed where a `for`
    statement or comprehension iterates them directly (frontend/desugar.py turns those into
    loops over indices); an iterator kept in a name or passed on is refused, not taken for
    a constant (which would give zero)."""
    try:
        name = _ITERATORS.get(op.callee)
    except TypeError:  # an unhashable callee
        return
    if op.kind == "call" and name and varied.intersection(op.read_names()):
        raise UnsupportedSyntaxError(
            f"srcad cannot differentiate `{name}(...)` of differentiated values except where "
            f"a `for` statement or comprehension iterates it directly (in {parsed.name}).",
            parsed.location(op.statement),
            f"write `for ... in {name}(...):` (or a comprehension over it) where the values "
            "are used, instead of keeping the iterator in a name or passing it on.")


def check_positional_out(op: Operation, parsed) -> None:
    """A ufunc's argument after its inputs is `out`, written in place, as `out=` is (which
    the fence refuses): neither mode follows that write."""
    if op.kind in ("call", "effect") and isinstance(op.callee, np.ufunc) \
            and len(_arguments(op)) > op.callee.nin:
        raise UnsupportedSyntaxError(
            f"srcad cannot differentiate `{op.label}` with an output array passed by position "
            f"(its argument {op.callee.nin + 1}, `out`, is written in place) in {parsed.name}.",
            parsed.location(op.statement),
            f"assign the result instead: `y = {op.label}(...)` with {op.callee.nin} "
            "argument(s).")


def _arguments(op: Operation) -> list:
    """The call's argument nodes (an effect's argument is the call itself)."""
    if op.kind == "effect" and isinstance(op.args[0], gast.Call):
        return op.args[0].args
    return op.args


def check_callee(op: Operation, varied, parsed, name_for) -> None:
    """A function value computed from differentiated values (the pullback `srcad.vjp`
    returned, a `functools.partial`, a closure a helper returned) depends on them through
    what it holds: its call
    goes through a `HeldCall` site, whose derivatives follow the values a pullback holds
    and which refuses, when it runs, any other such value, rather than taking it for a
    constant (which would give zero) (runtime/held.py)."""
    if op.kind != "call" or not op.dynamic or op.method is not None or op.callee is not None:
        return
    call = op.statement.value
    func = call.func
    if not (isinstance(func, gast.Name) and func.id in varied):
        return
    site = HeldCall(UnsupportedSyntaxError(
        f"srcad cannot differentiate the call of `{func.id}` in {parsed.name}: that "
        "function value depends on differentiated values it holds (a closure made by "
        "another function), a path the derivative cannot follow.",
        parsed.location(op.statement),
        f"pass those values to `{func.id}` as arguments, or define it with `def` in "
        f"{parsed.name} itself (srcad passes what a nested function reads)."))
    name = gast.Name(name_for("call_held", site), gast.Load(), None, None)
    op.statement.value = gast.copy_location(gast.Call(name, [func, *call.args], call.keywords),
                                            call)
    op.callee, op.args = site, (func, *op.args)


def check_container_update(op: Operation, varied, parsed) -> None:
    """`v = xs.pop()` (or `insert`, `remove`, `clear`, `reverse`, `sort`) of a differentiated
    list or dict srcad does not follow as an update (one the function was passed, or a
    nested function reads): the list would change under the derivative, which reads it."""
    if op.kind == "call" and op.method in LIST_UPDATES:
        receiver, method = op.args[0], op.method
    elif op.kind == "opaque":  # (`xs.pop() > 0`, kept whole: the call inside runs too)
        receiver, method = next(((n.func.value, n.func.attr) for n in gast.walk(
            op.statement.value) if isinstance(n, gast.Call) and isinstance(
            n.func, gast.Attribute) and n.func.attr in LIST_UPDATES), (None, None))
    else:
        return
    if isinstance(receiver, gast.Name) and receiver.id in varied:
        raise UnsupportedSyntaxError(
            f"srcad cannot differentiate `{receiver.id}.{method}(...)`, which may update a "
            f"differentiated value in place (in {parsed.name}): srcad follows a list's "
            "updates where the function made the list itself (a display, `list(...)`, a "
            "comprehension), not those of a list it was passed or a nested function reads.",
            parsed.location(op.statement),
            f"make a list of your own first (`items = list({receiver.id})`) and update "
            "that, or build a new dict without the key.")


def check_captures(op: Operation, varied, parsed) -> None:
    """A nested function must not read a differentiated value from its enclosing function."""
    captured = sorted(op.captures & varied)
    if captured:
        raise UnsupportedSyntaxError(
            f"srcad cannot differentiate through `{captured[0]}`, which a nested function "
            f"reads from {parsed.name}: the derivative would miss that path.",
            parsed.location(op.statement),
            f"pass `{captured[0]}` to the nested function as an argument.")


def check_effect(op: Operation, varied, parsed, name_for) -> None:
    """A call made for its effect that is passed a differentiated value must not modify it:
    unless the callee surely leaves its arguments alone, it runs through
    `effect_unchanged`, which follows or checks it when it runs (runtime/effects.py)."""
    if op.kind == "effect" and op.callee is attribute_set \
            and varied.intersection(op.read_names()):
        target = op.statement.value.args[0]
        what = "assignment to an attribute of a differentiated value" if isinstance(
            target, gast.Name) and target.id in varied else \
            "a differentiated value stored in an attribute"
        raise UnsupportedSyntaxError(
            f"srcad cannot differentiate {what} (`{_attribute_text(op)} = ...`, in "
            f"{parsed.name}): read back, it would be a constant to the derivative.",
            parsed.location(op.statement),
            "keep the value in a local variable, a dict or an object the function makes "
            "itself, and pass it on or return it.")
    if op.callee is entered and varied.intersection(_call_reads(op)):
        raise UnsupportedSyntaxError(
            f"srcad cannot differentiate a `with` block whose context manager holds "
            f"differentiated values (in {parsed.name}): what it gives (`as v`) and does "
            "would be constants to the derivative.", parsed.location(op.statement),
            "compute the value before the `with` and use it in the block.")
    if op.kind != "effect" or not varied.intersection(op.read_names()) \
            or _harmless_effect(op.callee) or getattr(op.statement, "checked", False):
        return
    call = op.statement.value
    location = parsed.location(op.statement)
    where = (op.label, parsed.filename, location.lineno if location else 0,
             location.col if location else 0, parsed.name)
    checked = gast.Expr(gast.Call(
        gast.Name(name_for("effect_unchanged", effect_unchanged), gast.Load(), None, None),
        [call.func, gast.Constant(where, None), *call.args], call.keywords))
    checked.checked = True
    op.statement = gast.copy_location(checked, op.statement)


def _call_reads(op: Operation) -> set:
    """The names a call statement reads, whether it assigns its result or not."""
    call = op.statement.value
    return {n.id for a in [*call.args, *(k.value for k in call.keywords)] for n in gast.walk(a)
            if isinstance(n, gast.Name)}


def _attribute_text(op: Operation) -> str:
    owner, name = op.statement.value.args[0], op.statement.value.args[1].value
    return f"{owner.id if isinstance(owner, gast.Name) else '...'}.{name}"


def _harmless_effect(callee) -> bool:
    """Calls made for their effect that surely leave their arguments alone."""
    return callee is print or vjp_rules(callee) is not None \
        or jvp_rules(callee) is not None or is_nondifferentiable(callee)


def qualified_name(obj) -> str:
    module = getattr(obj, "__module__", None) or type(obj).__module__
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or repr(obj)
    return f"{module}.{name}"
