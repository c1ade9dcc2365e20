"""adjoints: the adjoint variables of the backward sweep, and what is known of each.

Every primal name has one adjoint name (`b_x`). At each point of the backward sweep an
adjoint is UNSET (it is zero and no variable may exist), NONE (its variable holds None,
meaning zero), SET (its variable holds a value) or MAYBE (its variable holds a value or
None): MAYBE arises after a branch or loop that set it on some paths only. Straight-line code knows every state, so it gets the
plain forms a person writes (`b_x = ...`, `b_x = b_x + ...`); only MAYBE costs an
`is None` test. None, never a zero array, is the runtime zero: it needs no shape, so values
may change shape from one loop iteration to the next.
"""
from __future__ import annotations

import gast

from srcad import runtime
from srcad.transform.naming import Namer, adjoint_name

UNSET, NONE, SET, MAYBE = "unset", "none", "set", "maybe"


def load(name):
    return gast.Name(name, gast.Load(), None, None)


def store(name):
    return gast.Name(name, gast.Store(), None, None)


def assign(name, value):
    return gast.Assign([store(name)], value, None)


def is_none(name, negate=False):
    op = gast.IsNot() if negate else gast.Is()
    return gast.Compare(load(name), [op], [gast.Constant(None, None)])


def join(*snapshots) -> dict:
    """The states where control paths that ended in `snapshots` meet.

    Blocks that may not run first make variables of what they touch (`make_variables`), so
    a state is UNSET on one path and not on another only if the block left it alone."""
    joined = {}
    for primal in set().union(*snapshots):
        states = {s.get(primal, UNSET) for s in snapshots}
        if len(states) == 1:
            joined[primal] = states.pop()
        elif states <= {UNSET, NONE}:
            joined[primal] = UNSET
        else:
            joined[primal] = MAYBE
    return joined


class Adjoints:
    def __init__(self, namer: Namer, bindings, sequences: set[str], prefix: str = "b"):
        self.namer = namer
        self.prefix = prefix  # "b" for adjoints; forward mode keeps tangents (`t_x`) here too
        self.bindings = bindings
        self.sequences = sequences  # names holding tuples, lists or dicts
        self.names: dict[str, str] = {}
        self.states: dict[str, str] = {}

    def name(self, primal: str) -> str:
        if primal not in self.names:
            self.names[primal] = adjoint_name(self.namer, primal, self.prefix)
        return self.names[primal]

    def state(self, primal: str) -> str:
        return self.states.get(primal, UNSET)

    def seed(self, primal: str) -> str:
        self.states[primal] = SET
        return self.name(primal)

    # ---- control flow ----------------------------------------------------------------------
    def snapshot(self) -> dict:
        return dict(self.states)

    def merge(self, *snapshots) -> None:
        """The states after control joins from paths that ended in `snapshots`."""
        self.states = join(*snapshots)

    def make_variables(self, primals) -> list:
        """`b_x = None` for each UNSET adjoint in `primals` (which become NONE): a block that
        may or may not run is about to touch them."""
        statements = []
        for primal in sorted(primals):
            if self.state(primal) == UNSET:
                statements.append(assign(self.name(primal), gast.Constant(None, None)))
                self.states[primal] = NONE
        return statements

    # ---- accumulation ------------------------------------------------------------------------
    def accumulate(self, primal: str, contribution, may_be_none=False) -> list:
        """Statements adding `contribution` to the adjoint of `primal`."""
        name, state = self.name(primal), self.state(primal)
        self.states[primal] = MAYBE if may_be_none and state != SET else SET
        if state in (UNSET, NONE):
            return [assign(name, contribution)]
        if may_be_none or primal in self.sequences:
            add = self.bindings.name_for("accumulate", runtime.accumulate)
            return [assign(name, gast.Call(load(add), [load(name), contribution], []))]
        total = gast.BinOp(load(name), gast.Add(), contribution)
        if state == SET:
            return [assign(name, total)]
        return [assign(name, gast.IfExp(is_none(name), contribution, total))]

    def reset(self, primal: str, in_block: bool) -> list:
        """The adjoint of a value about to be overwritten (going backward) becomes zero."""
        if self.state(primal) in (UNSET, NONE):
            return []
        if not in_block:
            self.states[primal] = UNSET
            return []
        self.states[primal] = NONE
        return [assign(self.name(primal), gast.Constant(None, None))]

    def returned(self, primal: str):
        """The adjoint as a returned gradient: None (zero) when UNSET."""
        if self.state(primal) in (UNSET, NONE):
            return gast.Constant(None, None)
        return load(self.name(primal))
