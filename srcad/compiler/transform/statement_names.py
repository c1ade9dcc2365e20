"""statement_names: the names in each statement of a sweep, searched once for the passes that
ask in turn.

After settling, reverse.py runs several passes over the backward sweep (dead resets, signs,
reuse, release), and outline and release over the forward sweep, and each asked every
statement for its names again: a walk of the whole sweep each, the larger part of those
passes' time in a long function's first call. They share one `StatementNames` instead. A
pass that changes a statement in place, or a statement inside it, forgets it (`forget`),
and its names are searched again when next asked; a statement made new is searched when
first asked.
"""
from __future__ import annotations

from srcad.compiler.frontend.trees import name_nodes


class StatementNames:
    """The `Name` nodes of statements, by statement, searched when first asked."""

    def __init__(self):
        self._found: dict[int, tuple] = {}  # id(statement) → (the statement, its names)
        # (the statement kept too: its id is no other's while it is here)

    def of(self, statement) -> list:
        """The `Name` nodes under `statement`, depth first (`name_nodes`)."""
        found = self._found.get(id(statement))
        if found is None:
            found = self._found[id(statement)] = (statement, name_nodes(statement))
        return found[1]

    def among(self, statements: list) -> list:
        """The `Name` nodes under each of `statements`, in order."""
        return [name for statement in statements for name in self.of(statement)]

    def forget(self, statement) -> None:
        """`statement` was changed in place (or a statement inside it was)."""
        self._found.pop(id(statement), None)
