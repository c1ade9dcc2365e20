"""scopes.scope_names: the names a block reads, binds and deletes in its own scope, where a
function or lambda it defines is a scope of its own (against names read off by hand)."""
import textwrap

import gast
import pytest

from srcad.compiler.frontend.scopes import bound_in, local_names, scope_names, store_counts

BLOCK = gast.parse(textwrap.dedent("""
    t += 1
    y = x * 2
    def inner(a, b=default):
        c = a + captured
        def innermost():
            return c
        return innermost() + b
    f = lambda u: u * free
    del gone
""")).body


@pytest.mark.parametrize("context, names", [
    (gast.Load, {"t", "x", "default", "captured", "free"}),  # (`t += 1` reads `t`)
    (gast.Store, {"t", "y", "inner", "f"}),  # (not `c`, `innermost`: the function's own)
    (gast.Del, {"gone"}),
])
def test_a_block_uses_the_names_of_its_own_scope(context, names):
    assert scope_names(BLOCK, context) == names


def test_a_definition_alone_binds_its_name_and_reads_what_it_captures():
    definition = BLOCK[2]
    assert scope_names(definition, gast.Store) == {"inner"}
    assert scope_names(definition, gast.Load) == {"default", "captured"}


FUNCTION = gast.parse(textwrap.dedent("""
    def f(x, *rest, scale: float = 1.0, **options):
        y = x * 2
        y += 1
        counter.n = y
        state.inner.total += y
        items[0].field = y
        for i, (j, k) in pairs:
            with opened() as handle:
                z: float = i
        if (w := y) > 0:
            squares = [s * s for s in rest]
        def inner(a, b=default):
            c = a + captured
            owner.attribute = c
            def innermost():
                d = c
                return d
            return innermost() + b
        g = lambda u: [v for v in u]
        try:
            pass
        except ValueError as error:
            pass
        return y
""")).body[0]


def test_what_a_function_binds_is_gathered_in_one_walk():
    """bound_in (what normalize asks of a function): every name bound, those of the
    functions it defines too; how often its own scope binds each; whose attributes it sets."""
    bound = bound_in(FUNCTION)
    assert bound.names == local_names(FUNCTION) == {
        "x", "rest", "scale", "options", "y", "i", "j", "k", "handle", "z", "w", "squares",
        "s", "inner", "c", "innermost", "d", "g", "v", "error"}
    assert bound.counts == store_counts(FUNCTION) == {
        "x": 1, "rest": 1, "scale": 1, "options": 1, "y": 2, "i": 1, "j": 1, "k": 1,
        "handle": 1, "z": 1, "w": 1, "squares": 1, "s": 1, "g": 1, "error": 1}
    assert bound.owners == {"counter", "state", "owner"}
