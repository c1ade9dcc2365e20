"""adjoints: the adjoint variables of the backward sweep, and what is known of each.

Every primal name has one adjoint name (`b_x`). At each point of the backward sweep an
adjoint is UNSET (it is zero and no variable may exist), NONE (its variable holds None,
meaning zero), SET (its variable holds a value) or MAYBE (its variable holds a value or
None): MAYBE arises after a branch or loop that set it on some paths only. Straight-line code knows every state, so it gets the
plain forms a person writes (`b_x = ...`, `b_x = b_x + ...`); only MAYBE costs an
`is None` test. None, never a zero array, is the runtime zero: it needs no shape, so values
may change shape from one loop iteration to the next.

Reverse mode also knows which adjoints it owns: OWNED is SET, and MAYBE_OWNED is MAYBE,
where the value (if not None) is an array the backward sweep made for this adjoint alone
(a sum, a scatter of an index's cotangent) and handed to no other name. Only such an
adjoint is added into in place (`add_into`, `add_at`, `add_spread` in kernels/adjoints.py): a rule's
cotangent may be its input `g` itself (the VJP of `+` or `reshape`), the user's seed or
another adjoint, and writing into one of those would change another value. An adjoint is
read only once it is complete, when the backward sweep reaches its primal's definition, and
then reset, so ownership never outlives the adjoint's last write.

UNIFORM is SET with a number that stands for itself at every element of the primal: the
cotangent of a full reduction, kept a number while elementwise rules allow (uniform.py), and
made an array (`materialise`) before anything else reads it. It arises outside loops and
branches only, so control flow never meets it.
"""
from __future__ import annotations

from contextlib import contextmanager

import gast

from srcad.compiler.frontend.trees import new_name
from srcad.compiler.transform.naming import Namer, adjoint_name
from srcad.compiler.transform.reuse import HELPERS
from srcad.kernels import outlines, regions, adjoints as helpers

UNSET, NONE, SET, MAYBE = "unset", "none", "set", "maybe"
OWNED, MAYBE_OWNED = "owned", "maybe owned"
UNIFORM = "uniform"
_UNOWNED = {OWNED: SET, MAYBE_OWNED: MAYBE}
_ABSENT = object()  # (a name without a state yet)


def load(identifier):
    return new_name(identifier, gast.Load)


def store(identifier):
    return new_name(identifier, gast.Store)


def assign(name, value):
    """`name = value`, made as `new_name` makes a name, without gast's constructor (a setattr
    per field): the sweeps make one for nearly every statement."""
    made = _NEW(gast.Assign)
    made.__dict__.update(targets=[store(name)], value=value, type_comment=None)
    return made


_NEW = gast.AST.__new__


def is_none(name, negate=False):
    op = gast.IsNot() if negate else gast.Is()
    return gast.Compare(load(name), [op], [gast.Constant(None, None)])


def join(*snapshots) -> dict:
    """The states where control paths that ended in `snapshots` meet.

    Blocks that may not run first make variables of what they touch (`make_variables`), so
    a state is UNSET on one path and not on another only if the block left it alone.
    A state the same on every path stays as it is: only those that differ are joined (a
    guarded rule in straight-line code joins after each operation)."""
    first, *others = snapshots
    joined = dict(first)
    differing = {primal for other in others for primal, _ in first.items() ^ other.items()}
    for primal in differing:
        states = {s.get(primal, UNSET) for s in snapshots}
        owned = states <= {UNSET, NONE, OWNED, MAYBE_OWNED}  # every value it may hold
        states = {_UNOWNED.get(state, state) for state in states} if len(states) > 1 else states
        if len(states) == 1:
            state = states.pop()
        elif states <= {UNSET, NONE}:
            state = UNSET
        else:
            state = MAYBE
        joined[primal] = {SET: OWNED, MAYBE: MAYBE_OWNED}.get(state, state) if owned else state
    return joined


class Adjoints:
    def __init__(self, namer: Namer, bindings, sequences: set[str], prefix: str = "b",
                 numbers: frozenset | None = None):
        self.namer = namer
        self.prefix = prefix  # "b" for adjoints; forward mode keeps tangents (`t_x`) here too
        self.bindings = bindings
        self.sequences = sequences  # names holding tuples, lists or dicts
        # names surely holding numbers; None: never add in place (forward mode, whose
        # tangent programs are differentiated again)
        self.numbers = numbers
        self.names: dict[str, str] = {}
        self.states: dict[str, str] = {}
        self._single: dict[str, gast.Assign] = {}  # UNIFORM adjoints set once: the assignment
        self._before: dict | None = None  # in `joined_after`: each state changed, as it was

    def name(self, primal: str) -> str:
        if primal not in self.names:
            self.names[primal] = adjoint_name(self.namer, primal, self.prefix)
        return self.names[primal]

    def state(self, primal: str) -> str:
        return self.states.get(primal, UNSET)

    def seed(self, primal: str) -> str:
        self.set_state(primal, SET)
        return self.name(primal)

    def set_state(self, primal: str, state: str) -> None:
        if self._before is not None and primal not in self._before:
            self._before[primal] = self.states.get(primal, _ABSENT)
        self.states[primal] = state

    # ---- control flow ----------------------------------------------------------------------
    @contextmanager
    def joined_after(self):
        """Around a block that may not run (a rule guarded by its adjoint not being None):
        after it, the states it changed are joined with those before, as `merge(before,
        after)` joins every state, but looking at those alone. (A copy and a join of every
        state around each guarded rule made long functions quadratic.) The states change
        only through `set_state` inside."""
        outer, self._before = self._before, {}
        try:
            yield
        finally:
            before, self._before = self._before, outer
            if outer is not None:  # (the enclosing block changed them too)
                for primal, state in before.items():
                    outer.setdefault(primal, state)
            self.states.update(join({p: s for p, s in before.items() if s is not _ABSENT},
                                    {p: self.states[p] for p in before}))

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
                self.set_state(primal, NONE)
        return statements

    # ---- accumulation ------------------------------------------------------------------------
    def accumulate(self, primal: str, contribution, may_be_none=False) -> list:
        """Statements adding `contribution` to the adjoint of `primal`."""
        spread = self.materialise([primal])  # an array joins a UNIFORM number: spread it
        return spread + self._accumulate(primal, contribution, may_be_none)

    def _accumulate(self, primal: str, contribution, may_be_none) -> list:
        name, state = self.name(primal), self.state(primal)
        if may_be_none or primal in self.sequences:
            self.set_state(primal, MAYBE if may_be_none and _UNOWNED.get(state, state) != SET
                           else SET)
            if primal in self.sequences and self.helper_of(contribution) is helpers.index_adjoint:
                total = gast.Constant(None, None) if state in (UNSET, NONE) else load(name)
                add = self.bindings.name_for("accumulate_at", helpers.accumulate_at)
                return [assign(name, gast.Call(load(add), [total, *contribution.args], []))]
            if state in (UNSET, NONE):
                return [assign(name, contribution)]
            add = self.bindings.name_for("accumulate", helpers.accumulate)
            return [assign(name, gast.Call(load(add), [load(name), contribution], []))]
        owning = self.numbers is not None and primal not in self.numbers
        fresh = owning and self._fresh(contribution)
        if state in (UNSET, NONE):
            self.set_state(primal, OWNED if fresh else SET)
            return [assign(name, contribution)]
        if state in (OWNED, MAYBE_OWNED):
            total = self._added_in_place(name, contribution)
        elif isinstance(contribution, gast.UnaryOp) and isinstance(contribution.op, gast.USub):
            total = gast.BinOp(load(name), gast.Sub(), contribution.operand)  # not `+ -g`
        else:
            total = gast.BinOp(load(name), gast.Add(), contribution)
        if state in (SET, OWNED):
            self.set_state(primal, OWNED if owning else SET)  # a sum is a new array
            return [assign(name, total)]
        self.set_state(primal, OWNED if fresh else SET)  # it may be `contribution` itself
        return [assign(name, gast.IfExp(is_none(name), contribution, total))]

    def uniform(self, primal: str, number) -> list:
        """Statements adding `number`, standing for itself at every element of `primal`, to
        the adjoint of `primal` (an array, not a sequence)."""
        name, state = self.name(primal), self.state(primal)
        if state == UNSET:
            self.set_state(primal, UNIFORM)
            self._single[primal] = assign(name, number)
            return [self._single[primal]]
        if state == UNIFORM:
            self._single.pop(primal, None)
            return [assign(name, gast.BinOp(load(name), gast.Add(), number))]
        if state in (SET, OWNED):  # an array of the primal's shape: the number broadcasts
            return self.accumulate(primal, number)
        return self.accumulate(primal, self._spread(number, primal))

    def materialise(self, primals) -> list:
        """`b_x = expand_reduced(b_x, x)` for each UNIFORM adjoint among `primals`: a rule, a
        branch, a loop or the caller is about to read it as an array."""
        statements = []
        for primal in sorted(p for p in primals if self.state(p) == UNIFORM):
            self.set_state(primal, OWNED)
            single = self._single.pop(primal, None)
            if single is not None:  # spread where it was set: `b_x = expand_reduced(b_s, x)`
                number = single.value
                if self.helper_of(number) is outlines.cotangent_number:
                    number = number.args[0]  # expand_reduced gives the array that precision
                single.value = self._spread(number, primal)
                continue
            name = self.name(primal)
            statements.append(assign(name, self._spread(load(name), primal)))
        return statements

    def _spread(self, number, primal: str):
        like = load(primal)
        like.shape_only = True  # expand_reduced reads only its shape
        spread = self.bindings.name_for("expand_reduced", helpers.expand_reduced)
        return gast.Call(load(spread), [number, like], [])

    def _fresh(self, expression) -> bool:
        """Whether `expression` surely makes a new value no other name refers to: arithmetic,
        the runtime's scatter and spread of a cotangent, a rule marked `returns_new_array`,
        unbroadcasting a fresh value (which returns it or a new sum), and the last read of
        an owned adjoint or arithmetic written into its array (`consumed`, see reuse.py)."""
        if isinstance(expression, gast.BinOp):
            return True
        if isinstance(expression, gast.UnaryOp):
            return isinstance(expression.op, (gast.USub, gast.UAdd))
        if isinstance(expression, gast.Name):
            return getattr(expression, "consumed", False)
        helper = self.helper_of(expression)
        if helper in (helpers.index_adjoint, helpers.expand_reduced) or helper in HELPERS \
                or getattr(helper, "returns_new_array", False):
            return True
        return helper in (helpers.unbroadcast, outlines.unbroadcast_from) \
            and bool(expression.args) and self._fresh(expression.args[0])

    def helper_of(self, expression):
        """The runtime helper `expression` calls, if it calls one by name."""
        if isinstance(expression, gast.Call) and isinstance(expression.func, gast.Name):
            return self.bindings.named(expression.func.id)
        return None

    def _added_in_place(self, name: str, contribution):
        """`total + contribution` for an owned total, written into it: a scatter or spread
        adds its cotangent into the region it covers, without an array of its own."""
        helper = self.helper_of(contribution)
        if helper is helpers.index_adjoint:
            add, args, keywords = ("add_at", helpers.add_at), contribution.args, \
                contribution.keywords
        elif helper is helpers.expand_reduced:
            add, args, keywords = ("add_spread", helpers.add_spread), contribution.args, \
                contribution.keywords
        else:
            add, args, keywords = ("add_into", helpers.add_into), [contribution], []
        return gast.Call(load(self.bindings.name_for(*add)), [load(name), *args], keywords)

    def owned(self, primals) -> list:
        """`b_y = owned_copy(b_y)` for each adjoint among `primals` that holds a value it
        does not own: before a loop that writes elements of `y`, so that every iteration
        clears its region in place (`cleared`) instead of copying the adjoint again."""
        statements = []
        for primal in sorted(set(primals) - self.sequences):
            state = self.state(primal)
            if state in (SET, MAYBE):
                copy = self.bindings.name_for("owned_copy", regions.owned_copy)
                statements.append(assign(self.name(primal), gast.Call(
                    load(copy), [load(self.name(primal))], [])))
                self.set_state(primal, OWNED if state == SET else MAYBE_OWNED)
        return statements

    def cleared(self, primal: str, index) -> gast.Assign:
        """`b_y = <b_y with y[index] zero>` for `y[index] = v`: written into an owned adjoint
        (a loop of such writes would copy `y`'s whole adjoint per iteration), else a copy,
        which is owned from then on."""
        state = self.state(primal)
        clear = regions.cleared_region if state in (OWNED, MAYBE_OWNED) else regions.without_region
        if state == SET and primal not in self.sequences:
            self.set_state(primal, OWNED)
        call = gast.Call(load(self.bindings.name_for(clear.__name__, clear)),
                         [load(self.name(primal)), index], [])
        return assign(self.name(primal), call)

    def reset(self, primal: str, in_block: bool) -> list:
        """The adjoint of a value about to be overwritten (going backward) becomes zero."""
        if self.state(primal) in (UNSET, NONE):
            return []
        if not in_block:
            self.set_state(primal, UNSET)
            return []
        self.set_state(primal, NONE)
        return [assign(self.name(primal), gast.Constant(None, None))]

    def returned(self, primal: str):
        """The adjoint as a returned gradient: None (zero) when UNSET."""
        if self.state(primal) in (UNSET, NONE):
            return gast.Constant(None, None)
        return load(self.name(primal))
