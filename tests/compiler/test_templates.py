"""A rule inlined from its prepared body (substituted and simplified once per form of the
substitutes) is the rule inlined for that call alone: the same expression, the same names
bound, the same arguments tagged as read for their shape."""
import itertools

import gast
import pytest

from srcad.compiler.emit import python_source
from srcad.compiler.transform import templates
from srcad.compiler.transform.templates import instantiate, template_of
from srcad.ops.registry import records


def inlined_templates():
    """Every inlinable rule of srcad's records (vjp and jvp), once."""
    found = {}
    for record in records():
        for rules in (record.vjp, record.jvp):
            for rule in getattr(rules, "rules", None) or ():
                if rule is None or id(rule) in found:
                    continue
                try:
                    template = template_of(rule)
                except Exception:
                    continue
                if template.body is not None:
                    found[id(rule)] = template
    return list(found.values())


TEMPLATES = inlined_templates()
SUBSTITUTES = [lambda name: gast.Name(name, gast.Load(), None, None),
               lambda name: gast.Constant(1, None), lambda name: gast.Constant(2.0, None),
               lambda name: gast.Constant(None, None), lambda name: gast.Constant(True, None)]


def made_for_this_call(template, bound, g, ans, bind, same_shape):
    """The rule inlined without a prepared body: substituted, simplified, then bound."""
    substitutes = {template.g: g, template.ans: ans, **{
        name: bound.arguments[name] for name in template.signature.parameters}}
    expression = templates._simplified(
        template, templates._substituted(template.body, substitutes), same_shape)
    templates._bind_free_names(expression, template.free, bind)
    return expression


def described(expression) -> tuple:
    tagged = sorted(node.id for node in gast.walk(expression)
                    if isinstance(node, gast.Name) and getattr(node, "shape_only", False))
    return python_source(expression), tagged


def test_srcad_has_inlinable_rules_to_check():
    assert len(TEMPLATES) > 100


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: getattr(t.rule, "__qualname__", "?"))
def test_a_prepared_rule_inlines_as_the_rule_made_for_the_call(template):
    parameters = [p.name for p in template.signature.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(parameters) != len(template.signature.parameters):
        pytest.skip("a rule with keyword-only parameters")
    template.prepared.clear()
    forms = list(itertools.product(range(len(SUBSTITUTES)), repeat=len(parameters)))[:40]
    for form, same in itertools.product(forms, (False, True)):
        arguments = [SUBSTITUTES[kind](f"a{i}") for i, kind in enumerate(form)]
        same_shape = frozenset(f"a{i}" for i in range(len(form)) if same) | (
            frozenset(template.free) if same else frozenset())
        bound = template.signature.bind(*arguments)
        expected_names, names = [], []
        expected = made_for_this_call(
            template, bound, gast.Name("b_y", gast.Load(), None, None),
            gast.Name("y", gast.Load(), None, None),
            lambda name, obj: expected_names.append(name) or f"bound_{name}", same_shape)
        for _ in range(2):  # (the first call prepares the body, the second reuses it)
            names.clear()
            made = instantiate(template, template.signature.bind(*[
                SUBSTITUTES[kind](f"a{i}") for i, kind in enumerate(form)]),
                gast.Name("b_y", gast.Load(), None, None), gast.Name("y", gast.Load(), None, None),
                lambda name, obj: names.append(name) or f"bound_{name}", same_shape)
            assert described(made) == described(expected)
            assert sorted(names) == sorted(expected_names)
    assert template.prepared  # (the forms were prepared and kept)


def _rule(g, ans, x, y=2.0, *rest, scale=1.0, **options):
    return g


@pytest.mark.parametrize("positional, keywords", [
    (1, ()), (2, ()), (4, ()), (1, ("y",)), (1, ("scale",)), (2, ("scale", "other")),
    (0, ("x", "y")), (3, ("extra",))])
def test_a_call_binds_its_arguments_as_the_signature_binds_them(positional, keywords):
    template = template_of(_rule)
    for _ in range(2):  # (the first call of a form matches it, the second reuses the match)
        args = [gast.Name(f"a{i}", gast.Load(), None, None) for i in range(positional)]
        named = [(k, gast.Name(f"k_{k}", gast.Load(), None, None)) for k in keywords]
        bound, expected = template.bind(args, named), template.signature.bind(
            *args, **dict(named))
        assert (bound.arguments, bound.args, bound.kwargs) == (
            expected.arguments, expected.args, expected.kwargs)


@pytest.mark.parametrize("positional, keywords", [(0, ()), (1, ("x",)), (2, ("y",))])
def test_a_call_its_rule_cannot_take_is_refused_every_time(positional, keywords):
    template = template_of(_rule)
    for _ in range(2):
        with pytest.raises(TypeError):
            template.bind([gast.Constant(i, None) for i in range(positional)],
                          [(k, gast.Constant(0, None)) for k in keywords])
