"""rule_calls: how a call in the simple form meets its derivative rules, for both
transforms: which rule applies to which argument (`rule_applications`), which differentiated
arguments no rule covers (refused when they carry floats, as tape mode does), and which
arguments surely have the output's shape (their `unbroadcast` is left out).
"""
from __future__ import annotations

import gast
import numpy as np

from srcad.compiler.frontend.resolve import Operation, follow
from srcad.compiler.transform.adjoints import load
from srcad.compiler.transform.bindings import Bindings
from srcad.compiler.transform.refusals import qualified_name
from srcad.compiler.transform.templates import rebound_chain, template_of
from srcad.errors import MissingRuleError, RuleSignatureError, UnsupportedDerivativeError
from srcad.ops.registry import rule_slot
from srcad.runtime import calls
def rule_applications(entry, op: Operation, parsed, maker: str, bindings: Bindings):
    """`(template, bound arguments, argument node)` for each rule of `entry` applied to the
    call `op`; a rule whose signature does not fit the call is a RuleSignatureError. The
    program relies on what the rule calls (`np.sin`, in the rule of `np.cos`): guarded."""
    for position, rule in enumerate(entry.rules):
        if rule is None:
            continue
        template = template_of(rule)
        rebound = rebound_chain(template)
        if rebound is not None:
            raise UnsupportedDerivativeError(
                f"srcad's derivative rule for `{op.label}` calls `{rebound.name}`, which is "
                f"now bound to {follow(rebound.root, rebound.attributes)!r}, not the function "
                "of that name the rule was written for.", parsed.location(op.statement),
                f"restore `{rebound.name}` (wrap the function you want under a name of your "
                f"own instead), or register a rule with `srcad.{maker}`.")
        for guard in template.chains:
            bindings.resolver.rely_on(guard)
        try:
            bound = template.bind(op.args, op.keywords)
        except TypeError as error:
            raise RuleSignatureError(
                f"srcad's derivative rule for `{op.label}` does not accept these "
                f"arguments: {error}.", parsed.location(op.statement),
                "pass the arguments the rule's signature names, or register a rule "
                f"that accepts them with `srcad.{maker}`.") from None
        yield template, bound, argument_at(op, entry.rules, position)


def unruled_arguments(entry, op: Operation):
    """`(name, argument node)` for each argument of the call `op` that no rule slot of
    `entry` answers for: positions past the rules, and keywords that are not among the
    rules' parameters (caught by `**kwargs`) or lie past them. A differentiated value
    there would get no derivative, so the transforms refuse it, as tape mode does."""
    count = len(entry.rules)
    for position, argument in enumerate(op.args[count:], count):
        yield f"positional argument {position}", argument
    for keyword, argument in op.keywords:
        if rule_slot(entry.rules, keyword) is None:
            yield f"`{keyword}=`", argument


def unruled_check(op: Operation, name: str, argument, tangent, parsed, bindings: Bindings,
                  maker: str) -> gast.stmt:
    """`refuse_unruled(error, argument, tangent)`: the value of an argument without a rule
    is known only when the program runs; an integer (an index, an axis) carries no
    derivative, a float with a nonzero tangent (or any float, in the backward sweep) must
    not lose its derivative silently."""
    error = MissingRuleError(
        f"a differentiated value is passed as {name} of `{op.label}` "
        f"({qualified_name(op.callee)}) in {parsed.name}, and srcad has no derivative rule "
        "for that argument: its derivative would be silently lost.",
        parsed.location(op.statement),
        f"register a rule for that parameter with `srcad.{maker}` (one per positional "
        "parameter) and pass the value there, or wrap it in `srcad.stop_gradient(...)` if it "
        "should get no derivative.")
    call = gast.Call(load(bindings.name_for("refuse_unruled", calls.refuse_unruled)), [
        load(bindings.name_for("unruled_error", error)), argument, tangent], [])
    return gast.copy_location(gast.Expr(call), op.statement)


def argument_at(op: Operation, rules: tuple, position: int):
    """The argument node of positional parameter `position`, passed by position or by the
    name `rule_slot` gives it (as `unruled_arguments` does: every argument has a rule or
    is refused, whatever the signature of the rule that answers, `*args, **kwargs` too)."""
    if position < len(op.args):
        return op.args[position]
    return next((argument for keyword, argument in op.keywords
                 if rule_slot(rules, keyword) == position), None)


def same_shape_arguments(op: Operation, scalars: frozenset = frozenset(),
                         shapes: dict | None = None) -> frozenset:
    """Arguments known to have the output's shape: of an elementwise call whose other
    arguments are all scalar constants or of the output's shape class (analysis/shapes.py),
    or numbers when the output is a number."""
    if op.targets and op.targets[0] in scalars:
        return frozenset(a.id for a in op.args if isinstance(a, gast.Name) and a.id in scalars)
    if not (isinstance(op.callee, np.ufunc) or op.label in ELEMENTWISE_SYMBOLS):
        return frozenset()
    shape = (shapes or {}).get(op.targets[0]) if op.targets else None
    if shape is not None:
        return frozenset(a.id for a in op.args if isinstance(a, gast.Name)
                         and shapes.get(a.id) == shape)
    names = [a for a in op.args if isinstance(a, gast.Name)]
    scalars = [a for a in op.args if isinstance(a, gast.Constant)
               and isinstance(a.value, (int, float))]
    if len(names) == 1 and len(names) + len(scalars) == len(op.args) and not op.keywords:
        return frozenset({names[0].id})
    return frozenset()


ELEMENTWISE_SYMBOLS = {"+", "-", "*", "/", "**", "%", "unary -", "unary +"}
