"""aliasing: names that may share memory, and a refusal where in-place updates meet them.

srcad differentiates `y[i] = v` and `x += v` by restoring overwritten values, which is sound
as long as what is written into is not also visible under another name read later: a view
(`row = y[0]`), a second name (`z = y`), a list element. NumPy keeps no record of views, so
this is decided conservatively over the whole function: names are grouped when one may
refer to the memory of another (copies of names, indexing, view-returning functions, calls
without a known rule, tuples and lists holding arrays, loop elements). `y[i] = v` copies
`v` into an array; storing an array into a list element this way is not tracked. An in-place update
of a name whose group holds another name read after the update is refused with an error
that names both, instead of risking a wrong gradient.
"""
from __future__ import annotations

import operator

import numpy as np

from srcad.errors import UnsoundAliasingError
from srcad.frontend.resolve import Branch, Loop, Operation, walk
from srcad.rules import is_nondifferentiable, vjp_rules

VIEW_FUNCTIONS = {
    operator.getitem, np.reshape, np.ravel, np.transpose, np.ndarray.T, np.squeeze,
    np.expand_dims, np.asarray, np.asanyarray, np.atleast_1d, np.atleast_2d, np.atleast_3d,
    np.swapaxes, np.moveaxis, np.broadcast_to, np.diagonal, np.real, np.imag,
}


class Aliases:
    """Union-find over names: `group(name)` holds every name that may share its memory."""

    def __init__(self):
        self.parent: dict[str, str] = {}

    def find(self, name: str) -> str:
        root = name
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        self.parent[name] = root
        return root

    def union(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)

    def group(self, name: str) -> set[str]:
        root = self.find(name)
        return {n for n in list(self.parent) if self.find(n) == root} | {name}


def may_alias(block: list) -> Aliases:
    aliases = Aliases()
    for node in walk(block):
        if isinstance(node, Loop) and node.element:
            aliases.union(node.element, node.iterable)
        if not isinstance(node, Operation):
            continue
        for target in node.targets:
            for source in _sources(node):
                aliases.union(target, source)
    return aliases


def _sources(op: Operation) -> list[str]:
    """Names whose memory the operation's result may share."""
    names = [a.id for a in op.args if hasattr(a, "id")]
    if op.augmented:  # `x += v`: the result is the object `x` was, not `v`
        return [op.augmented] + (names if op.kind == "copy" else [])
    if op.kind in ("copy", "pack", "unpack"):
        return names
    if op.kind == "call" and _may_return_a_view(op.callee):
        return names
    return []


def _may_return_a_view(callee) -> bool:
    try:
        if callee in VIEW_FUNCTIONS:
            return True
    except TypeError:
        return True
    if isinstance(callee, np.ufunc) or is_nondifferentiable(callee):
        return False
    return vjp_rules(callee) is None


def check_in_place_updates(block: list, output: str, aliases: Aliases, versions: dict,
                           parsed) -> None:
    """Refuse an in-place update of memory that another name, read later, also shows.

    `versions` maps SSA versions to the user's names: `x_1` and `x` are one variable."""
    later = {}
    _live(block, {output}, later)
    for node in walk(block):
        if not isinstance(node, Operation):
            continue
        if node.kind == "setitem":
            written = node.mutates
        elif node.augmented:
            written = node.augmented
        else:
            continue
        variable = versions.get(written, written)
        shared = sorted(n for n in aliases.group(written) & later[id(node)]
                        if versions.get(n, n) != variable)
        if shared:
            raise UnsoundAliasingError(
                f"srcad cannot differentiate this in-place update soundly: `{written}` may "
                f"share memory with `{shared[0]}`, which is read after the update "
                f"(in {parsed.name}).",
                parsed.location(node.statement),
                f"make a new array before writing into it (`{written} = {written}.copy()`), "
                f"or write `{written} = {written} + ...` instead of an in-place update.")


def _live(block, live_out: set, later: dict) -> set:
    """Liveness: record, for each operation, the names that may be read after it before
    being assigned again; return the names live at the start of `block`."""
    live = set(live_out)
    for node in reversed(block):
        if isinstance(node, Branch):
            live = _live(node.body, live, later) | _live(node.orelse, live, later) \
                | {node.condition}
        elif isinstance(node, Loop):
            header = live | ({node.iterable} if node.iterable else set())
            while True:
                inside = _live(node.body, header, later) - {node.element}
                if inside <= header:
                    break
                header |= inside
            live = header
        else:
            later[id(node)] = set(live)
            live = (live - set(node.targets)) | set(node.read_names())
    return live
