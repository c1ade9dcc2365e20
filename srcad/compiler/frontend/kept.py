"""kept: a function's simple form made once, copied for each of its programs.

`grad`, `value_and_grad`, `vjp` and `jvp` of one function are different programs
(pipeline.MODES), each made by its own passes; but the frontend (parse, inline, fence,
normalize, resolve) makes the same simple form for each, and it costs a quarter of a long
function's first call. The passes after it write into what it made: the forward sweep is
its statements, rewrites change them in place, the reverse pass sets an operation's
`forward`. So the frontend's result is kept here as a copy no pass sees, and every
program, the first one included, gets a copy of its own: the tree cloned, the operations
made again pointing at the clone's nodes, the namer and the resolver copied, so the names
a program claims and the guards it records stay its own.

An entry serves a function only while the bindings its frontend relied on hold (the
resolver's guards, as for the cache's compiled programs); the key holds what else the
frontend reads: the code, whether helpers may be written out, the containers taken leaf by
leaf (frontend/leaves.py), the passes switched off and the edition of the rules. At most `LIMIT` entries are kept, the least recently used
leaving first; `forget_frontends` empties it (`clear_cache`).
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import gast

from srcad.compiler.frontend.resolve import Branch, Operation
from srcad.compiler.frontend.trees import clone

LIMIT = 64
_kept: OrderedDict = OrderedDict()  # key → (the frontend's result, the guards it recorded)
_lock = threading.Lock()


def frontend_of(fn, key: tuple, make) -> tuple:
    """`fn`'s frontend result, `(parsed, namer, resolver, simple, block, ...)`: a copy
    of the one kept under `key` where its guards hold for `fn`; else `make()`'s, a copy of
    it kept. `key` identifies what the frontend reads besides `fn`'s code."""
    key = (fn.__code__, *key)
    with _lock:
        found = _kept.get(key)
        if found is not None:
            _kept.move_to_end(key)
    if found is not None and all(guard.holds(fn) for guard in found[1]):
        return copied(found[0], fn)
    made = make()
    kept = copied(made, fn)
    kept[2].fn = None  # (a copy gets the function it is for: the kept one holds none alive)
    with _lock:
        _kept[key] = (kept, tuple(kept[2].guards.values()))
        _kept.move_to_end(key)
        while len(_kept) > LIMIT:
            _kept.popitem(last=False)
    return made


def forget_frontends() -> None:
    """Make every simple form again (`clear_cache`)."""
    with _lock:
        _kept.clear()


def copied(result: tuple, fn) -> tuple:
    """`fn`'s frontend result as `result`, which no change to it reaches, nor one to `result`
    it (`fn`: `result`'s function, or another of the same code); what follows the block
    (whether helpers were written out, the leaves' names) is not changed by any pass."""
    parsed, namer, resolver, simple, block, *rest = result
    twins = {}
    twin = clone(simple, twins)
    return parsed, namer.copy(), resolver.copy(fn), twin, _moved(block, twins), *rest


def _moved(block: list, twins: dict) -> list:
    """The operations, branches and loops of `block` again, each node of the simple form
    they hold (`twins`) replaced by its twin in the clone."""
    made = []
    for node in block:
        kind = type(node)
        twin = _NEW(kind)
        twin.__dict__.update(node.__dict__)
        twin.statement = _node(node.statement, twins)
        if kind is Operation:  # (most have no keywords, keys or forward: no loop made)
            twin.args = tuple([_node(arg, twins) for arg in node.args])
            twin.keywords = tuple([(name, _node(value, twins)) for name, value
                                   in node.keywords]) if node.keywords else ()
            twin.keys = tuple([_node(key, twins) for key in node.keys]) if node.keys else ()
            twin.forward = _node(node.forward, twins) if node.forward is not None else None
        else:
            twin.body = _moved(node.body, twins)
            if kind is Branch:
                twin.orelse = _moved(node.orelse, twins)
        made.append(twin)
    return made


def _node(value, twins: dict):
    """A node's twin in the clone; a node outside the simple form copied; a value that is
    no node (None, a key's string) as it is."""
    if not isinstance(value, gast.AST):
        return value
    twin = twins.get(id(value))
    return clone(value) if twin is None else twin


_NEW = object.__new__
