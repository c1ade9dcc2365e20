"""`with`, `try`, `obj.attr = v` and a list's `pop` and `insert` as the forward sweep runs
them: calls the frontend writes (frontend/desugar.py, try_blocks.py, container_writes.py,
normalize.py), since a derivative program is made of operations, branches and loops.

`with m as v: body` becomes `v = entered(m)`, the body, `exited(m)`. A program whose source
holds a `with` runs inside `ContextsUnwound()`, which exits the managers still open, with
the exception, when one leaves it: `np.errstate`, `warnings.catch_warnings` or a lock are
put back as Python would.

`try: body except E as e: handler else: ... finally: ...` becomes a nested function holding
the body, called through `attempt`, which returns `(None, *values the body bound)` or, when
the body raised an exception the handlers take, `(exception, *their values before)`; `if` statements
choose the handler by `handles`. The body's derivative is its function's, so a body that
raised leaves nothing recorded: the frontend refuses a `try` whose handlers could see a
value the body bound before it raised (frontend/try_blocks.py), and `attempt` one that
wrote into a value made before it.
"""
from __future__ import annotations

import linecache
import threading

from srcad.errors import Location, SrcadError, UnsoundAliasingError, UnsupportedDerivativeError
from srcad.kernels.pytrees import record_attribute_check
from srcad.kernels.snapshots import snapshot
from srcad.ops.registry import declare, nondifferentiable


class _OpenContexts(threading.local):
    def __init__(self):
        self.managers = []


_OPEN = _OpenContexts()


def entered(manager):
    """`manager.__enter__()`, the manager kept open for `exited` or `ContextsUnwound`."""
    value = type(manager).__enter__(manager)
    _OPEN.managers.append(manager)
    return value


def exited(manager) -> None:
    """The end of the `with` block of `manager`, reached without an exception."""
    _OPEN.managers.pop()
    type(manager).__exit__(manager, None, None, None)


class ContextsUnwound:
    """Around a generated program: an exception leaving it exits the managers its `with`
    blocks left open, innermost first, as Python's `with` would. A manager that suppresses
    the exception cannot be honoured (the program cannot resume after its block): that is
    refused, the exception chained."""

    def __enter__(self):
        self.depth = len(_OPEN.managers)

    def __exit__(self, kind, exception, traceback):
        managers = _OPEN.managers
        while len(managers) > self.depth:
            manager = managers.pop()
            if type(manager).__exit__(manager, kind, exception, traceback):
                raise UnsupportedDerivativeError(
                    f"the context manager {type(manager).__name__} suppressed an exception "
                    "raised in its `with` block; srcad cannot resume the function after the "
                    "block.", fix="catch the exception with `try`/`except` in the block"
                    ) from exception
        return False


def attempt(body, handled, names: tuple, **captured):
    """`(None, *body(**captured))`, or when the body raised an exception of the types
    `handled`, `(exception, ...)` with the values the variables `names` (those it returns)
    had before, where they were passed (None elsewhere). The derivative follows `body`
    (runtime/calls.py)."""
    unchanged = untouched(captured)
    try:
        values = body(**captured)
    except handled as exception:
        if isinstance(exception, SrcadError):  # (srcad's refusal, not the user's exception)
            raise
        unchanged()
        return (exception, *kept(names, captured))
    unchanged()
    return (None, *values)


def untouched(captured: dict):
    """A check to run after the body: it wrote into none of the float arrays, lists, dicts
    and objects it was passed (made before the `try`), which the body's derivative, a
    call's, would not see. (A write through a method of what srcad cannot look into meets
    `effect_unchanged` in the body itself.)"""
    snapshots = {name: snapshot(value) for name, value in captured.items()}

    def check():
        written = [name for name, unchanged in snapshots.items() if not unchanged()]
        if written:
            raise UnsoundAliasingError(
                f"srcad cannot differentiate a `try` block that writes into `{written[0]}`, "
                "made before it: the block's derivative is a call's, which would not see "
                "the write.", fix="build the value in the block and bind it, or move the "
                "write out of the `try`")
    return check


def kept(names: tuple, captured: dict) -> tuple:
    """What `names` held before the `try`, where its body was passed them (else None)."""
    return tuple(captured.get(name) for name in names)


class Unbound:
    """What a variable holds after a `try` whose body may not have bound it, when nothing
    bound it before (Python would leave it unbound)."""


def handles(exception, kinds) -> bool:
    """Whether `except kinds:` takes `exception` (None: the body did not raise)."""
    return exception is not None and isinstance(exception, kinds)


def reraised(exception) -> None:
    """After `finally:`, an exception no handler took goes on."""
    if exception is not None:
        raise exception


def attribute_set(obj, name: str, value) -> None:
    """`obj.name = value` into an object the caller passed in or a global, which the frontend
    writes as this call. A value that carries a derivative is refused where the program is
    made (transform/refusals.py): read back later, it would be a constant to the derivative."""
    setattr(obj, name, value)


def new_record(cls):
    """An instance of `cls` before its `__init__` runs (compiler/frontend/functional.py's
    record constructors run its variant on it)."""
    return object.__new__(cls)


def attribute_written(obj, name: str, value, where: tuple) -> None:
    """`obj.name = value` into an object the function holds itself: an element write of a
    record (kernels/pytrees.py), undone by the backward sweep like `d[name] = value` ("setitem"
    operations), once `obj` proves to be one (`where`: the write's text, file, line, column
    and function, for the refusal)."""
    try:
        record_attribute_check(obj, name)
    except SrcadError as error:
        text, filename, lineno, col, function = where
        raise type(error)(f"{error.message} (`{text}`, in {function})", Location(
            filename, lineno, col, None, function, linecache.getline(filename, lineno)),
            error.fix) from None
    setattr(obj, name, value)


# a list's updates besides `append` that srcad follows (frontend/container_writes.py)
LIST_UPDATES = ("pop", "insert", "remove", "clear", "reverse", "sort")


def popped(items: list, index):
    """`items.pop(index)`: an in-place update of a list, which the backward sweep undoes by
    putting the item back (`restore_popped` in kernels/regions.py); its derivative is the
    operation's ("pop", frontend/resolve.py), as for `items.append(v)`."""
    return items.pop(index)


def list_insert(items: list, index, value) -> None:
    """`items.insert(index, value)`, undone by `restore_inserted` ("insert" operations)."""
    items.insert(index, value)


def position_of(items: list, value) -> int:
    """Where `items.remove(value)` removes from: `items.index(value)` (ValueError if it
    holds no such item, as `remove` raises)."""
    return items.index(value)


def deleted_positions(items: list, index: slice) -> list:
    """The positions `del items[index]` removes, last first, so that popping each in turn
    leaves the others where they were."""
    return sorted(range(len(items))[index], reverse=True)


nondifferentiable(entered, exited, handles, reraised, attribute_set, new_record, position_of,
                  deleted_positions)
declare(entered, control=True)  # (stand-ins for `with` and `try`: their effect is the statement's)
declare(exited, control=True)
declare(handles, control=True)
declare(reraised, control=True)
