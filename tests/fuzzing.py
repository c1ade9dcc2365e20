"""fuzzing: random valid Python/NumPy programs, and every way srcad differentiates them,
checked against finite differences and against each other.

`programs()` is a hypothesis strategy of `Program`s: the text of a module defining
`f(x, y)` and the helpers it calls, written the way people write numerical code
(straight-line arithmetic, loops and branches on data, early returns, `while`, loops marked
`srcad.checkpointed`, buffers from
`np.zeros` filled element by element or by slices, augmented assignment, lists used as
stacks (pop, insert, del, reverse), dicts updated (`update`, `setdefault`), lists built in a
loop, dicts, objects used as memory (attributes set, updated in place, a method updating
its object, an object called), helper functions), with the arguments to call it at: `x` a
Python float or a float64 vector, `y` a float64 vector or a matrix of two columns; helpers
taking `(a, b)`, `(*args)`, a keyword-only or a defaulted parameter, called as written or
with `*(a, b)` / `**{'b': b}`; nested functions and
lambdas reading the enclosing function's variables. `check(program)` writes the
module to a file (srcad reads source from files), then compares:

    finite differences (central, float64)  ==  srcad.grad (the fused program on Python
    floats, the program specialised on float64 arrays)  ==  value_and_grad  ==  vjp (the
    general reverse program)  ==  grad(backend="numba") (for one program in four)  ==  tape mode  ==  jvp (forward mode)  ==  jacobian in
    forward and in reverse mode;  hvp  ==  finite differences of the gradient

then the same derivatives with one optimisation switched off (`srcad.passes`, drawn with
the program) against those, and, for a vector `x`, float32 arguments: float32 derivatives
equal to float64's at the same point to float32's precision; and that no call changed its
arguments. A typed refusal (`SrcadError`) of such a program is
a failure too: every construct drawn here is one srcad documents as supported.

Run it for as long as you like (the test suite runs a fixed budget):

    python -m tests.fuzzing --minutes 60
"""
from __future__ import annotations

import importlib.util
import itertools
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

import srcad
from srcad.tape.errors import TapeConversionError
from srcad.api.testing import numerical_gradient

VEC, NUM, MAT = "vec", "num", "mat"
UNARY = {  # name → template; every one smooth everywhere, values bounded where it matters
    "sin": "np.sin({0})", "cos": "np.cos({0})", "tanh": "np.tanh({0})",
    "arctan": "np.arctan({0})", "soft_abs": "np.sqrt(1.0 + {0} * {0})",
    "log_square": "np.log(1.0 + {0} * {0})", "exp_sin": "np.exp(np.sin({0}))",
    "square": "({0}) ** 2", "bump": "1.0 / (1.5 + np.cos({0}))",
}
MATH_UNARY = {"sin": "math.sin({0})", "exp_cos": "math.exp(math.cos({0}))",
              "tanh": "math.tanh({0})"}
BINARY = ["({0} + {1})", "({0} - {1})", "({0} * {1})", "({0} / (2.0 + np.cos({1})))"]
REDUCE = ["np.sum({0})", "np.mean({0})", "np.dot({0}, {0})"]
BOUNDED = ["np.tanh({0})", "np.sin({0})"]  # what a loop-carried update passes through
FROM_MATRIX = {VEC: ["np.sum({0}, axis=1)", "{0}[:, 0]", "({0} @ np.cos({0}[0]))",
                     "(np.tanh({0}) @ np.array([0.5, -1.0]))"],
               NUM: ["np.mean(np.sin({0}))", "np.sum({0} * {0})", "{0}[0, 1]"]}


@dataclass(frozen=True)
class Program:
    source: str
    x: object          # a Python float or a float64 vector
    y: np.ndarray      # a float64 vector, or a matrix of two columns
    wrt: tuple         # positions differentiated: (0,) or (0, 1)
    off: str           # an optimisation the program is also differentiated without
    numba: bool = False  # also differentiated with backend="numba"

    def __repr__(self):  # hypothesis prints this for a failing example
        return (f"Program(wrt={self.wrt}, off={self.off!r}, numba={self.numba}, x={self.x!r}, "
                f"y={self.y!r}, "
                f"source=\n{self.source})")


class _Writer:
    """Draws one program, statement by statement, keeping the kind (vector or number) of
    every name in scope, so that every expression it writes is valid."""

    def __init__(self, draw, n: int, x_kind: str, y_kind: str = VEC):
        self.draw = draw
        self.n = n
        self.lines: list[str] = []
        self.helpers: list[str] = []
        self.helper_kinds: dict[str, tuple] = {}
        self.helper_calls: dict[str, str] = {}  # helper → how it is called ("a, b" filled)
        self.names = {"x": x_kind, "y": y_kind}
        self.locals: set[str] = set()   # names the function made (safe to update in place)
        self.once: set[str] = {"x", "y"}  # names bound by one statement (closures read them)
        self.returns = None  # the kind the helper being written returns (None: in `f`)
        self.frozen: set[str] = set()  # names a nested function read: never updated after
        self.attempted: set[str] = set()  # names a `try` bound: never updated in place
        self.updated_in_place: set[str] = set()  # (nor bound by a `try` after, in a loop)
        self.trying = False  # writing a `try` block
        self.counter = itertools.count()

    # ---- expressions ----------------------------------------------------------------------
    def expr(self, kind: str, depth: int) -> str:
        if depth <= 0 or self.draw(st.integers(0, 3)) == 0:
            return self.leaf(kind)
        choices = ["unary", "binary", "binary", "mixed", "call"]
        if self.of_kind(MAT):
            choices += ["matrix"]
        if kind == NUM:
            choices += ["math"] + (["reduce", "index"] if self.of_kind(VEC) else [])
        choice = self.draw(st.sampled_from(choices))
        if choice == "unary":
            return UNARY[self.draw(st.sampled_from(sorted(UNARY)))].format(
                self.expr(kind, depth - 1))
        if choice == "binary":
            return self.draw(st.sampled_from(BINARY)).format(
                self.expr(kind, depth - 1), self.expr(kind, depth - 1))
        if choice == "mixed":  # with a number, broadcast over a vector
            return self.draw(st.sampled_from(BINARY)).format(
                self.expr(kind, depth - 1), self.expr(NUM, depth - 1))
        if choice == "call":
            called = [h for h, (parameters, out) in self.helper_kinds.items()
                      if out == kind and set(parameters) <= set(self.kinds())]
            if not called:
                return self.leaf(kind)
            helper = self.draw(st.sampled_from(called))
            parameters, _ = self.helper_kinds[helper]
            first, second = (self.expr(k, depth - 1) for k in parameters)
            return self.helper_calls[helper].format(helper, first, second)
        if choice == "matrix":  # a vector or a number from the matrix argument
            return self.draw(st.sampled_from(FROM_MATRIX[kind])).format(
                self.draw(st.sampled_from(self.of_kind(MAT))))
        if choice == "reduce":
            return self.draw(st.sampled_from(REDUCE)).format(self.expr(VEC, depth - 1))
        if choice == "index":
            vector = self.draw(st.sampled_from(self.of_kind(VEC)))
            return f"{vector}[{self.draw(st.integers(-self.n, self.n - 1))}]"
        return MATH_UNARY[self.draw(st.sampled_from(sorted(MATH_UNARY)))].format(
            f"float({self.expr(NUM, depth - 1)})")

    def leaf(self, kind: str) -> str:
        options = self.of_kind(kind)
        if kind == NUM and (not options or self.draw(st.integers(0, 3)) == 0):
            return repr(self.draw(st.sampled_from([0.5, 1.5, -0.75, 2.0, 0.3])))
        if not options:  # (a vector from the matrix argument, the only one)
            return FROM_MATRIX[VEC][0].format(self.of_kind(MAT)[0])
        if "x" in options and self.draw(st.booleans()):
            return "x"  # (so that most values depend on what is differentiated)
        return self.draw(st.sampled_from(options))

    def of_kind(self, kind: str) -> list[str]:
        """The names of that kind in scope, oldest first."""
        return [name for name, k in self.names.items() if k == kind]

    def fresh(self, stem: str) -> str:
        return f"{stem}{next(self.counter)}"

    # ---- statements -----------------------------------------------------------------------
    def block(self, indent: str, size: int, depth: int, in_loop: bool = False) -> None:
        for _ in range(size):
            self.statement(indent, depth, in_loop)

    def statement(self, indent: str, depth: int, in_loop: bool) -> None:
        kinds = ["assign", "assign", "update", "augmented", "unpack"]
        if depth > 0:
            kinds += ["for", "while", "if"]
            if self.of_kind(VEC):
                kinds += ["for_elements", "buffer", "slices", "list", "stack", "dict", "record"]
        if in_loop:
            kinds += ["exit"]
        kinds += ["closure", "with", "try"]
        getattr(self, "_" + self.draw(st.sampled_from(kinds)))(indent, depth, in_loop)

    def kinds(self) -> list[str]:
        return [VEC, NUM] if self.of_kind(VEC) or self.of_kind(MAT) else [NUM]

    def _assign(self, indent, depth, in_loop):
        kind = self.draw(st.sampled_from(self.kinds()))
        name = self.fresh("v" if kind == VEC else "s")
        self.lines.append(f"{indent}{name} = {self.composite(kind)}")
        self.names[name] = kind
        self.locals.add(name)
        self.once.add(name)

    def composite(self, kind: str) -> str:
        """An expression that is never a bare name: assigning one would alias an argument."""
        return UNARY[self.draw(st.sampled_from(sorted(UNARY)))].format(self.expr(kind, 2))

    def updatable(self) -> list[str]:
        return sorted(self.locals - self.frozen)

    def _update(self, indent, depth, in_loop):
        if not self.updatable():
            return self._assign(indent, depth, in_loop)
        name = self.draw(st.sampled_from(self.updatable()))
        self.once.discard(name)
        bounded = self.draw(st.sampled_from(BOUNDED))
        self.lines.append(f"{indent}{name} = {bounded.format(self.expr(self.names[name], 2))}")

    def _unpack(self, indent, depth, in_loop):
        """`a, b = e0, e1`, each target a new name or one rebound, the values reading any
        name in scope, the targets too: Python makes both values before it binds either
        (`a, b = b, a + b`), which srcad may bind one by one only where that is the same."""
        targets, values, kinds = [], [], []
        for _ in range(2):
            rebound = [n for n in self.updatable() if n not in targets]
            if rebound and self.draw(st.booleans()):
                name = self.draw(st.sampled_from(rebound))
                kind = self.names[name]
                values.append(self.draw(st.sampled_from(BOUNDED)).format(self.expr(kind, 2)))
            else:  # (in scope only after both values are made)
                kind = self.draw(st.sampled_from(self.kinds()))
                name = self.fresh("v" if kind == VEC else "s")
                values.append(self.composite(kind))
            targets.append(name)
            kinds.append(kind)
        self.lines.append(f"{indent}{', '.join(targets)} = {', '.join(values)}")
        for name, kind in zip(targets, kinds):
            if name in self.locals:
                self.once.discard(name)
            else:
                self.names[name] = kind
                self.locals.add(name)
                self.once.add(name)

    def _augmented(self, indent, depth, in_loop):
        # (not of a name a `try` bound: srcad cannot tell whether the body returned the
        # memory of an array it read, and refuses the in-place update, as it documents)
        candidates = [n for n in self.updatable() if n not in self.attempted]
        if not candidates:
            return self._assign(indent, depth, in_loop)
        name = self.draw(st.sampled_from(candidates))
        self.updated_in_place.add(name)
        self.once.discard(name)
        update = self.draw(st.sampled_from(["+= 0.5 * np.sin({0})", "*= np.cos({0})",
                                            "-= 0.25 * np.tanh({0})"]))
        self.lines.append(f"{indent}{name} {update.format(self.expr(self.names[name], 2))}")

    def _for(self, indent, depth, in_loop):
        index = self.fresh("i")
        self.lines.append(f"{indent}for {index} in range({self.draw(st.integers(1, 3))}):")
        self.scoped(lambda: self.loop_body(indent + "    ", depth, {index: NUM}))

    def _for_elements(self, indent, depth, in_loop):
        element = self.fresh("e")
        vector = self.draw(st.sampled_from(self.of_kind(VEC)))
        self.lines.append(f"{indent}for {element} in {vector}:")

        def body():  # (writing into the array a loop walks is refused: UnsoundAliasingError)
            self.locals.discard(vector)
            self.loop_body(indent + "    ", depth, {element: NUM})

        self.scoped(body)

    def loop_body(self, indent, depth, bound: dict):
        self.names.update(bound)
        if not self.updatable():
            self._assign(indent, 0, True)
        self.block(indent, self.draw(st.integers(1, 3)), depth - 1, in_loop=True)

    def _while(self, indent, depth, in_loop):
        counter, limit = self.fresh("k"), self.draw(st.integers(1, 4))
        condition = f"{counter} < {limit}"
        if self.draw(st.booleans()):
            condition += f" and {self.expr(NUM, 1)} < {self.draw(st.sampled_from([1.0, 3.0]))}"
        self.lines += [f"{indent}{counter} = 0", f"{indent}while {condition}:",
                       f"{indent}    {counter} += 1"]  # (first: a `continue` skips the rest)
        self.scoped(lambda: self.loop_body(indent + "    ", depth, {}))

    def _if(self, indent, depth, in_loop):
        name = self.fresh("b")
        kind = self.draw(st.sampled_from(self.kinds()))
        self.lines.append(f"{indent}if {self.expr(NUM, 2)} > {self.draw(st.sampled_from([0.0, 0.5, -0.5]))}:")
        for branch in (True, False):
            if not branch:
                self.lines.append(f"{indent}else:")
            self.scoped(lambda: self.block(indent + "    ", self.draw(st.integers(0, 2)),
                                           depth - 1, in_loop))
            self.lines.append(f"{indent}    {name} = {self.composite(kind)}")
        self.names[name] = kind
        self.locals.add(name)

    def _buffer(self, indent, depth, in_loop):
        name, index = self.fresh("buf"), self.fresh("j")
        maker = self.draw(st.sampled_from(["np.zeros({0})", "np.empty({0})", "np.ones({0})"]))
        vector = self.draw(st.sampled_from(self.of_kind(VEC)))
        self.lines.append(f"{indent}{name} = {maker.format(self.n)}")
        self.lines.append(f"{indent}for {index} in range({self.n}):")
        self.names[index] = NUM
        element = UNARY[self.draw(st.sampled_from(sorted(UNARY)))].format(f"{vector}[{index}]")
        self.lines.append(f"{indent}    {name}[{index}] = {element} * {self.expr(NUM, 1)}")
        del self.names[index]
        self.names[name] = VEC
        self.locals.add(name)

    def _slices(self, indent, depth, in_loop):
        if self.n < 2:
            return self._buffer(indent, depth, in_loop)
        name = self.fresh("buf")
        a, b = (self.draw(st.sampled_from(self.of_kind(VEC))) for _ in range(2))
        self.lines += [f"{indent}{name} = np.zeros({self.n})",
                       f"{indent}{name}[1:] = {a}[:-1] * {self.expr(NUM, 1)}",
                       f"{indent}{name}[0] = {self.expr(NUM, 1)}",
                       f"{indent}{name}[:-1] += np.sin({b}[1:])"]
        self.names[name] = VEC
        self.locals.add(name)

    def _list(self, indent, depth, in_loop):
        items, index, name = self.fresh("items"), self.fresh("i"), self.fresh("v")
        self.lines += [f"{indent}{items} = []",
                       f"{indent}for {index} in range({self.draw(st.integers(1, 3))}):"]
        self.names[index] = NUM
        self.lines.append(f"{indent}    {items}.append({self.composite(VEC)})")
        del self.names[index]
        total = self.draw(st.sampled_from(["sum({0})", "np.sum(np.stack({0}), axis=0)"]))
        self.lines.append(f"{indent}{name} = {total.format(items)}")
        self.names[name] = VEC
        self.locals.add(name)

    def _stack(self, indent, depth, in_loop):
        """A list used as memory: items popped, inserted, deleted, reversed, drained."""
        items, name, count = self.fresh("items"), self.fresh("v"), 3
        made = ", ".join(self.composite(VEC) for _ in range(count))
        self.lines.append(f"{indent}{items} = [{made}]")
        for _ in range(self.draw(st.integers(1, 4))):
            update = self.draw(st.sampled_from(["insert", "pop", "del", "reverse", "drain"]))
            at = self.draw(st.integers(-count, count - 1))
            if update == "insert":
                at = self.draw(st.integers(-count - 2, count + 2))  # (Python clamps it)
                self.lines.append(f"{indent}{items}.insert({at}, {self.composite(VEC)})")
                count += 1
            elif update == "pop":
                popped = self.fresh("p")
                self.lines += [f"{indent}{popped} = {items}.pop({at})",
                               f"{indent}{items}.append({popped} * {self.expr(NUM, 1)})"]
            elif update == "del" and count > 1:
                self.lines.append(f"{indent}del {items}[{at}]")
                count -= 1
            elif update == "reverse":
                self.lines.append(f"{indent}{items}.reverse()")
            elif update == "drain" and count > 1:
                count = self.draw(st.integers(1, count - 1))
                self.lines += [f"{indent}while len({items}) > {count}:",
                               f"{indent}    {items}[0] = {items}[0] + {items}.pop()"]
        total = self.draw(st.sampled_from(["sum({0})", "np.sum(np.stack({0}), axis=0)"]))
        self.lines.append(f"{indent}{name} = {total.format(items)}")
        self.names[name] = VEC
        self.locals.add(name)

    def _dict(self, indent, depth, in_loop):
        table, name = self.fresh("d"), self.fresh("s")
        self.lines.append(f"{indent}{table} = {{'a': {self.composite(NUM)}, 'b': {self.composite(VEC)}}}")
        update = self.draw(st.sampled_from(["", "update", "swap", "setdefault"]))
        if update == "update":
            self.lines.append(f"{indent}{table}.update({{'a': {self.composite(NUM)}}}, "
                              f"b={table}['b'] * {self.expr(NUM, 1)})")
        elif update == "swap":  # (both values read before either is written)
            self.lines.append(f"{indent}{table}.update(a=np.sum({table}['b']), "
                              f"b={table}['b'] * {table}['a'])")
        elif update == "setdefault":
            self.lines.append(f"{indent}{table}.setdefault('a', {self.composite(NUM)})")
        self.lines.append(f"{indent}{name} = {table}['a'] * np.sum({table}['b'])")
        self.names[name] = NUM
        self.locals.add(name)

    def _record(self, indent, depth, in_loop):
        """An object used as memory (a `Memo`, made from a number): an attribute set after it
        is made, then updated in place, rebound, or through a method of its class."""
        obj, name = self.fresh("memo"), self.fresh("s")
        self.lines += [f"{indent}{obj} = Memo({self.composite(NUM)})",
                       f"{indent}{obj}.v = {self.composite(VEC)}"]
        update = self.draw(st.sampled_from(["", "augmented", "rebound", "method", "called"]))
        if update == "augmented":
            self.lines.append(f"{indent}{obj}.v += {self.expr(VEC, 1)}")
        elif update == "rebound":
            self.lines.append(f"{indent}{obj}.v = {obj}.v * {self.expr(NUM, 1)}")
        elif update == "method":
            self.lines.append(f"{indent}{obj}.add({self.expr(NUM, 1)})")
        elif update == "called":
            self.lines.append(f"{indent}{obj}.total = {obj}({obj}.v) + {obj}.count")
        self.lines.append(f"{indent}{name} = {obj}.total * np.sum({obj}.v)")
        self.names[name] = NUM
        self.locals.add(name)

    def _closure(self, indent, depth, in_loop):
        """A nested function or lambda reading names of the enclosing function, called at
        once (the names it reads may depend on what is differentiated). As srcad documents,
        the names it reads are bound once: those are not updated from here on."""
        name, parameter, result = self.fresh("inner"), self.fresh("a"), self.fresh("c")
        kind = self.draw(st.sampled_from(self.kinds()))
        outer = dict(self.names)
        self.names = {n: k for n, k in outer.items() if n in self.once}
        self.names[parameter] = kind
        body = self.composite(kind)
        self.names = outer
        self.frozen |= self.once
        if self.draw(st.booleans()):
            self.lines += [f"{indent}def {name}({parameter}):", f"{indent}    return {body}"]
        else:
            self.lines.append(f"{indent}{name} = lambda {parameter}: {body}")
        # (through a NumPy function: srcad cannot tell that a call of a nested function
        # made new memory, so an in-place update of what it was passed, or of its result,
        # would be refused, as srcad documents)
        wrapper = UNARY[self.draw(st.sampled_from(sorted(UNARY)))]
        self.lines.append(f"{indent}{result} = {wrapper.format(f'{name}({self.expr(kind, 1)})')}")
        self.names[result] = kind
        self.once.add(result)

    def _with(self, indent, depth, in_loop):
        """A block under context managers that only set state; what it binds is seen after."""
        manager = self.draw(st.sampled_from(['np.errstate(over="ignore")',
                                             "warnings.catch_warnings()",
                                             'np.errstate(all="ignore"), warnings.catch_warnings()']))
        self.lines.append(f"{indent}with {manager}:")
        self.block(indent + "    ", self.draw(st.integers(1, 2)), max(depth - 1, 0), in_loop)

    def _try(self, indent, depth, in_loop):
        """`try` whose body may raise before its last statement binds a name: a fresh one,
        which the handler binds too, or one bound before, which the handler may leave (the
        value from before the `try` goes on). Names the body makes are not used after it."""
        outer_names = sorted(n for n in self.updatable() if n in self.names
                             and n not in self.updated_in_place)
        fresh = not outer_names or self.draw(st.booleans())
        name = self.fresh("t") if fresh else self.draw(st.sampled_from(outer_names))
        kind = self.draw(st.sampled_from(self.kinds())) if fresh else self.names[name]
        self.lines.append(f"{indent}try:")
        frozen = set(self.frozen)
        self.frozen |= self.locals  # (the body rebinds nothing from outside but `name`)
        # (nor reads what is updated in place, and what it reads never will be: srcad cannot
        # tell whether the body returned the memory of an array it read, as it documents)
        outer = self.names
        self.names = {n: k for n, k in outer.items() if n not in self.updated_in_place}
        self.attempted |= set(self.names)
        trying, self.trying = self.trying, True
        self.scoped(lambda: self.block(indent + "    ", self.draw(st.integers(0, 2)),
                                       max(depth - 1, 0)))
        self.trying = trying
        threshold = self.draw(st.sampled_from([0.0, 0.5, 1.0]))
        self.lines += [f"{indent}    if {self.expr(NUM, 1)} > {threshold}:",
                       f"{indent}        raise ValueError('fuzz')",
                       f"{indent}    {name} = {self.composite(kind)}",
                       f"{indent}except ValueError:"]
        if fresh or self.draw(st.booleans()):
            self.lines.append(f"{indent}    {name} = {self.composite(kind)}")
        else:
            self.lines.append(f"{indent}    pass")
        self.names = {**outer, **{n: k for n, k in self.names.items() if n in outer}}
        self.frozen = frozen
        if self.draw(st.booleans()):
            self.lines += [f"{indent}finally:", f"{indent}    pass"]
        self.names[name] = kind
        self.locals.add(name)
        self.once.discard(name)
        self.attempted.add(name)

    def _exit(self, indent, depth, in_loop):
        # (no `return` in a `try` block: srcad refuses it there, as it documents)
        word = self.draw(st.sampled_from(["break", "continue"] + ["return"] * (not self.trying)))
        self.lines.append(f"{indent}if {self.expr(NUM, 1)} > {self.draw(st.sampled_from([0.5, 1.0]))}:")
        if word == "return":  # (the helper being written returns its own kind)
            word = self.output() if self.returns is None else \
                f"return {self.composite(self.returns)}"
        self.lines.append(f"{indent}    {word}")

    def scoped(self, write):
        """Names made inside a block are not used after it (they may be unbound there)."""
        names, local = dict(self.names), set(self.locals)
        write()
        self.names = {k: v for k, v in self.names.items() if k in names}
        self.locals = local

    def output(self) -> str:
        vectors = self.of_kind(VEC)[-3:]
        numbers = self.of_kind(NUM)[-2:]
        terms = [f"np.sum({v} * {v})" for v in vectors] + [f"{s} * {s}" for s in numbers]
        terms += [f"np.sum(np.sin({m}))" for m in self.of_kind(MAT)]
        return "return " + " + ".join(terms)

    # ---- helpers --------------------------------------------------------------------------
    def helper(self) -> None:
        name = f"helper{len(self.helper_kinds)}"
        kinds = tuple(self.draw(st.sampled_from([VEC, NUM])) for _ in range(2))
        out = self.draw(st.sampled_from([VEC, NUM])) if VEC in kinds else NUM
        outer_names, outer_locals, outer_lines, outer_once = (self.names, self.locals,
                                                              self.lines, self.once)
        self.names, self.locals, self.lines = {"a": kinds[0], "b": kinds[1]}, set(), []
        self.once, self.returns = {"a", "b"}, out
        self.block("    ", self.draw(st.integers(0, 2)), 1)
        body = self.lines + [f"    return {self.composite(out)}"]
        self.names, self.locals, self.lines = outer_names, outer_locals, outer_lines
        self.once, self.returns = outer_once, None
        style = self.draw(st.sampled_from(["plain", "star", "keywords", "default"]))
        header = {"plain": "(a, b)", "star": "(*args)", "keywords": "(a, *, b)",
                  "default": "(a, b=0.5)"}[style]
        unpack = ["    a, b = args"] if style == "star" else []
        self.helpers += [f"def {name}{header}:", *unpack, *body, "", ""]
        self.helper_kinds[name] = (kinds, out)
        spread = self.draw(st.booleans())  # called with `*(a, b)` or `**{"b": b}`
        self.helper_calls[name] = ("{0}({1}, **{{'b': {2}}})" if spread else "{0}({1}, b={2})") \
            if style == "keywords" else "{0}(*({1}, {2}))" if spread else "{0}({1}, {2})"


@st.composite
def programs(draw) -> Program:
    n = draw(st.integers(1, 4))
    x_kind = draw(st.sampled_from([VEC, NUM]))
    y_kind = draw(st.sampled_from([VEC, VEC, MAT]))
    writer = _Writer(draw, n, x_kind, y_kind)
    for _ in range(draw(st.integers(0, 2))):
        writer.helper()
    writer.block("    ", draw(st.integers(1, 6)), 2)
    body = "\n".join(_marked_for_checkpoints(writer.lines, draw))
    source = ("import math\nimport warnings\n\nimport numpy as np\n\nimport srcad\n\n\n" + MEMO
              + "\n".join(writer.helpers)
              + f"def f(x, y):\n{body}\n    {writer.output()}\n")
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    x = rng.uniform(-1.5, 1.5, n) if x_kind == VEC else float(rng.uniform(-1.5, 1.5))
    y = rng.uniform(-1.5, 1.5, (n, 2) if y_kind == MAT else n)
    return Program(source, x, y, draw(st.sampled_from([(0,), (0, 1)])),
                   draw(st.sampled_from(sorted(srcad.passes.OPTIONAL))),
                   _NUMBA and draw(st.integers(0, 3)) == 0)  # (numba compiles for seconds)


try:
    import numba  # noqa: F401
    _NUMBA = True
except ImportError:
    _NUMBA = False


def _marked_for_checkpoints(lines: list[str], draw) -> list[str]:
    """`lines` with some `for ... in range(...)` loops marked `srcad.checkpointed` (every=1,
    2 or the default): those whose body never leaves early, none inside another marked,
    in a function that keeps no objects (srcad refuses the mark on the others)."""
    if any("Memo(" in line for line in lines):
        return lines
    lines, inside_marked = list(lines), None
    for k, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if inside_marked is not None and indent <= inside_marked:
            inside_marked = None
        if inside_marked is not None or not line.lstrip().startswith("for ") \
                or " in range(" not in line:
            continue
        body = itertools.takewhile(lambda b: len(b) - len(b.lstrip()) > indent, lines[k + 1:])
        if any(b.strip() in ("break", "continue") or b.strip().startswith("return")
               for b in body) or not draw(st.booleans()):
            continue
        every = draw(st.sampled_from(["", ", every=1", ", every=2"]))
        head, _, iterable = line.rstrip(":").partition(" in ")
        lines[k] = f"{head} in srcad.checkpointed({iterable}{every}):"
        inside_marked = indent
    return lines


MEMO = """class Memo:
    def __init__(self, total):
        self.total = total
        self.count = 0

    def add(self, value):
        self.total = self.total + value
        self.count += 1
        return self.total

    def __call__(self, v):
        return np.sum(np.tanh(v)) * self.total


"""


# ---- the oracle ---------------------------------------------------------------------------
_DIRECTORY = Path(tempfile.mkdtemp(prefix="srcad-fuzz-"))
_LOADED = itertools.count()


def load(program: Program):
    """`f` from the program's module, written to a file of its own."""
    path = _DIRECTORY / f"program_{next(_LOADED)}.py"
    path.write_text(program.source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


def check(program: Program) -> None:
    """Every mode against finite differences and each other; AssertionError on a mismatch."""
    f = load(program)
    args = (program.x, program.y)
    copies = [np.copy(a) for a in args]
    wrt = program.wrt
    expected_value = f(*args)
    if not np.isfinite(expected_value) or abs(expected_value) > 1e6:
        return  # (values this large make finite differences meaningless)
    numeric = [numerical_gradient(f, args, i) for i in wrt]
    coarse = [numerical_gradient(f, args, i, eps=1e-4) for i in wrt]
    smooth = all(np.allclose(a, b, rtol=1e-3, atol=1e-3) for a, b in zip(numeric, coarse))
    scale = 1.0 + max(np.max(np.abs(g)) for g in numeric)

    gradients = _as_tuple(srcad.grad(f, wrt=wrt if len(wrt) > 1 else wrt[0])(*args))
    if program.numba:  # (compiled where numba types the program, else its Python program)
        _agree("grad(backend='numba') vs grad", _as_tuple(srcad.grad(
            f, wrt=wrt if len(wrt) > 1 else wrt[0], backend="numba")(*args)), gradients,
            1e-8 * scale)
    if smooth:  # a branch flipped within the finite-difference step: compare modes only
        _agree("grad vs finite differences", gradients, numeric, 1e-4 * scale)
    _unchanged(args, copies, "grad")

    value, again = srcad.value_and_grad(f, wrt=wrt if len(wrt) > 1 else wrt[0])(*args)
    _agree("value_and_grad's value vs f", [value], [expected_value], 1e-9 * (1 + abs(value)))
    _agree("value_and_grad vs grad", _as_tuple(again), gradients, 1e-8 * scale)

    _, vjp_fn = srcad.vjp(f, *args, wrt=wrt if len(wrt) > 1 else wrt[0])
    _agree("vjp vs grad", _as_tuple(vjp_fn(1.0)), gradients, 1e-8 * scale)

    try:
        taped = _as_tuple(srcad.tape.grad(f, wrt=wrt if len(wrt) > 1 else wrt[0])(*args))
    except TapeConversionError:
        pass  # tape mode refuses writes into np.zeros buffers and float() of a tensor
    else:
        _agree("tape mode vs grad", taped, gradients, 1e-8 * scale)
    _unchanged(args, copies, "vjp and tape mode")

    rng = np.random.default_rng(0)
    tangents = [rng.standard_normal(np.shape(a)) if i in wrt else np.zeros(np.shape(a))
                for i, a in enumerate(args)]
    tangents = [t if np.ndim(a) else float(t) for t, a in zip(tangents, args)]
    _, tangent_out = srcad.jvp(f, args, tuple(tangents))
    along = sum(np.sum(g * tangents[i]) for g, i in zip(gradients, wrt))
    _agree("jvp vs grad", [tangent_out], [along], 1e-8 * scale * (1 + np.abs(along)))

    for mode in ("fwd", "rev"):
        jacobian = srcad.jacobian(f, wrt=0, mode=mode)(*args)
        _agree(f"jacobian(mode={mode!r}) vs grad", [jacobian], [gradients[0]], 1e-8 * scale)

    direction = tangents[0]
    hessian_along = srcad.hvp(f, wrt=0)(*args, direction)
    if smooth:
        step = 1e-5
        grad_x = srcad.grad(f, wrt=0)
        shifted = [(program.x + s * direction) for s in (step, -step)]
        numeric_h = (grad_x(shifted[0], program.y) - grad_x(shifted[1], program.y)) / (2 * step)
        _agree("hvp vs differences of grad", [hessian_along], [numeric_h],
               1e-4 * (1.0 + np.max(np.abs(numeric_h))))
    _unchanged(args, copies, "jvp, jacobian and hvp")

    with srcad.passes.off(program.off):  # the same derivatives without one optimisation
        _agree_without(program.off, f, args, wrt, gradients, hessian_along, direction, scale)
    _unchanged(args, copies, f"the derivatives without {program.off!r}")
    if np.ndim(program.x):
        _check_float32(f, args, wrt, scale)


def _agree_without(off: str, f, args, wrt, gradients, hessian_along, direction, scale):
    what = f"without {off!r}: "
    spec = wrt if len(wrt) > 1 else wrt[0]
    _agree(what + "grad vs grad", _as_tuple(srcad.grad(f, wrt=spec)(*args)), gradients,
           1e-8 * scale)
    _agree(what + "value_and_grad vs grad",
           _as_tuple(srcad.value_and_grad(f, wrt=spec)(*args)[1]), gradients, 1e-8 * scale)
    _, vjp_fn = srcad.vjp(f, *args, wrt=spec)
    _agree(what + "vjp vs grad", _as_tuple(vjp_fn(1.0)), gradients, 1e-8 * scale)
    for mode in ("fwd", "rev"):
        _agree(what + f"jacobian(mode={mode!r}) vs grad",
               [srcad.jacobian(f, wrt=0, mode=mode)(*args)], [gradients[0]], 1e-8 * scale)
    _agree(what + "hvp vs hvp", [srcad.hvp(f, wrt=0)(*args, direction)], [hessian_along],
           1e-8 * (1.0 + np.max(np.abs(hessian_along))))


def _check_float32(f, args, wrt, scale):
    """float32 arguments give float32 derivatives, which agree with float64's at the same
    (rounded) point to float32's precision, or at least as well as the chain rule run
    operation by operation in float32 does (tape mode): a program that is ill-conditioned in
    float32 (`np.sin` of 1e5, whose float32 argument is off by 0.01) is no srcad error."""
    narrow = tuple(np.asarray(a, np.float32) for a in args)
    wide = tuple(a.astype(np.float64) for a in narrow)
    spec = wrt if len(wrt) > 1 else wrt[0]
    expected = _as_tuple(srcad.grad(f, wrt=spec)(*wide))
    try:
        plain = _as_tuple(srcad.tape.grad(f, wrt=spec)(*narrow))  # (float32, as written)
    except TapeConversionError:  # (writes into np.zeros buffers, float() of a tensor)
        plain = expected
    tolerance = max([2e-3 * scale] + [2.0 * float(np.max(np.abs(np.asarray(p, np.float64)
                                                                 - e)))
                                      for p, e in zip(plain, expected)])
    _, vjp_fn = srcad.vjp(f, *narrow, wrt=spec)
    for what, got in [("grad", _as_tuple(srcad.grad(f, wrt=spec)(*narrow))),
                      ("value_and_grad", _as_tuple(srcad.value_and_grad(f, wrt=spec)(
                          *narrow)[1])),
                      ("vjp", _as_tuple(vjp_fn(np.float32(1.0)))),
                      ("jacobian", (srcad.jacobian(f, wrt=0, mode="rev")(*narrow),))]:
        for gradient in got:
            if np.asarray(gradient).dtype != np.float32:
                raise AssertionError(f"float32 {what}: a {np.asarray(gradient).dtype} "
                                     "derivative of a float32 argument")
        _agree(f"float32 {what} vs float64 grad", got, expected[:len(got)], tolerance)


def _as_tuple(gradients) -> tuple:
    return gradients if isinstance(gradients, tuple) else (gradients,)


def _agree(what: str, got, expected, atol: float) -> None:
    for a, b in zip(got, expected):
        if np.shape(a) != np.shape(b) or not np.allclose(a, b, rtol=1e-5, atol=atol):
            raise AssertionError(f"{what}: {a!r} != {b!r}")


def _unchanged(args, copies, what: str) -> None:
    for a, c in zip(args, copies):
        if not np.array_equal(a, c):
            raise AssertionError(f"{what} changed an argument: {c!r} became {a!r}")


def main(argv=None) -> int:
    """Check random programs, a hundred at a time, until the time is up; a mismatch ends
    the run with hypothesis's smallest failing program."""
    import argparse
    import time

    from hypothesis import HealthCheck, given, settings

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    options = parser.parse_args(argv)
    deadline = time.monotonic() + 60 * options.minutes

    @settings(max_examples=100, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(programs())
    def hundred(program):
        check(program)

    rounds = 0
    while time.monotonic() < deadline:
        hundred()
        rounds += 1
        print(f"{100 * rounds} programs checked", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
