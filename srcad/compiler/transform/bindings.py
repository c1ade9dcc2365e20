"""bindings: how generated code reaches objects that are not the user's own names.

Inlined rules read names from their module (`np`, `unbroadcast`, `expand_reduced`). If the
user's function already sees that very object under that name (its module imported numpy
as `np`), the generated code uses the user's name, so it reads as the user would write it;
the resolver guards that binding like any other. Otherwise the object is passed to the
generated code as a closure cell under a name that collides with nothing of the user's; so
is a builtin the user's code does not read (`range` and `len` of a loop's replay): a guard
on it would cost every call a lookup, a cell costs nothing.
"""
from __future__ import annotations

import gast

from srcad.compiler.frontend.resolve import Resolver, chain_guard, follow
from srcad.compiler.transform.naming import Namer


class Bindings:
    def __init__(self, namer: Namer, resolver: Resolver):
        self.namer = namer
        self.resolver = resolver
        self.cells: dict[str, object] = {}   # name → object, passed as closure cells
        self._names: dict[int, str] = {}
        self._objects: dict[str, object] = {}  # name → object, for every name handed out
        for name, obj in resolver.helpers.items():  # (the frontend's, named already)
            self.cells[name], self._names[id(obj)], self._objects[name] = obj, name, obj

    def name_for(self, preferred: str, obj) -> str:
        if id(obj) in self._names:
            return self._names[id(obj)]
        if preferred not in self.resolver.local_names and self.resolver.peek(preferred) is obj \
                and (preferred in self.resolver.guards or preferred in self.resolver.fn.__globals__):
            self.resolver.lookup(preferred)  # records the guard
            name = preferred
        else:
            name = self.namer.claim(preferred)
            self.cells[name] = obj
        self._names[id(obj)] = name
        self._objects[name] = obj
        return name

    def named_already(self, obj) -> bool:
        """Whether `name_for` handed out a name for `obj` (generated code can read it only
        then)."""
        return id(obj) in self._names

    def named(self, name: str):
        """The object `name_for` handed out `name` for (None if it did not)."""
        return self._objects.get(name)

    def callee(self, node):
        """The object a called name or attribute chain of generated code denotes now: a name
        handed out here, or one of the user's globals, closure values or builtins (guarded,
        as the resolver guards what it relies on); None for a local or an unknown name."""
        attributes = []
        while isinstance(node, gast.Attribute):
            attributes.append(node.attr)
            node = node.value
        if not isinstance(node, gast.Name) or node.id in self.resolver.local_names:
            return None
        if node.id in self._objects:
            return follow(self._objects[node.id], reversed(attributes))
        root = self.resolver.chain_value(node)
        if root is None:  # (a name of the generated code's own, such as its stack)
            return None
        guard = chain_guard(root, node.id, reversed(attributes))
        if guard is not None:
            self.resolver.rely_on(guard)
        return follow(root, reversed(attributes))

