"""scopes.scope_names: the names a block reads, binds and deletes in its own scope, where a
function or lambda it defines is a scope of its own (against names read off by hand)."""
import textwrap

import gast
import pytest

from srcad.compiler.frontend.scopes import scope_names

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
