"""pytrees: the classes srcad looks inside besides dicts, lists and tuples.

A dataclass instance, or an instance of a class registered with `register_pytree_node`
(JAX's signature), is a node: `node(value)` gives its children and a function that builds
an instance of the same class from new ones. Every walker (the API's argument conventions,
the tape's nest, the adjoints of attribute reads, clip_by_global_norm) asks this one
function, so a node is differentiated like a tuple and its derivative is an instance of its
class holding its children's derivatives.

A dataclass's children are its init fields holding floats, complex numbers, float arrays or
containers; its other fields (None, a name, a flag, an integer count, an integer index
array, a function) are constants that ride along unchanged. (So a derivative is never
packed with None in a child's place: the walkers put zeros there.)
"""
from __future__ import annotations

import copy
import dataclasses
import inspect
from typing import Callable

import numpy as np

from srcad.errors import MissingRuleError, UsageError

_REGISTERED: dict[type, tuple[Callable, Callable]] = {}


def register_pytree_node(cls: type, flatten: Callable, unflatten: Callable) -> None:
    """Let srcad look inside instances of `cls`, as `jax.tree_util.register_pytree_node`:
    `flatten(obj)` returns `(children, aux)`, `unflatten(aux, children)` rebuilds one."""
    if not isinstance(cls, type) or not callable(flatten) or not callable(unflatten):
        raise UsageError(f"register_pytree_node takes a class and two functions, got "
                         f"{cls!r}, {flatten!r}, {unflatten!r}.",
                         fix="register_pytree_node(MyClass, lambda o: ((o.a, o.b), None), "
                         "lambda aux, children: MyClass(*children))")
    if cls in (dict, list, tuple):
        raise UsageError(f"{cls.__name__} is a container srcad already looks inside.")
    _REGISTERED[cls] = (flatten, unflatten)


def node(value) -> tuple[list, Callable[[list], object]] | None:
    """`(children, rebuild)` of a dataclass instance or a registered class's, else None."""
    registered = _REGISTERED.get(type(value))
    if registered is not None:
        flatten, unflatten = registered
        children, aux = flatten(value)
        return list(children), lambda items: unflatten(aux, tuple(items))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = child_fields(value)
        return [getattr(value, name) for name in names], lambda items: _with(value, names, items)
    return None


def _with(value, names, items):
    """A copy of the dataclass instance `value` whose fields `names` hold `items`, made
    without running its `__init__` or `__post_init__` (which may compute or check what a
    gradient does not hold), frozen or not."""
    made = copy.copy(value)
    for name, item in zip(names, items):
        object.__setattr__(made, name, item)
    return made


def child_fields(value) -> list[str]:
    """The names of a dataclass instance's fields that are its children."""
    return [f.name for f in dataclasses.fields(value)
            if f.init and _holds_derivative(getattr(value, f.name))]


def _holds_derivative(value) -> bool:
    """A float, a complex number, a float array (or a tape's tensor of one), a container of
    one (a tuple of integers, a shape, is a constant)."""
    if isinstance(value, (float, complex, np.inexact)):
        return True
    if isinstance(value, (dict, list, tuple)):
        items = value.values() if isinstance(value, dict) else value
        return any(_holds_derivative(item) for item in items)
    dtype = getattr(value, "dtype", None)
    if dtype is not None:
        return getattr(dtype, "kind", None) in ("f", "c")
    return node(value) is not None


def child_index(value, name: str) -> int | None:
    """Where the attribute `name` of the node `value` sits among its children; None if
    `value` is no node or `name` is a constant (a dataclass's field that is no child, a
    registered class's data its flatten keeps aside). A dataclass's fields are found by
    name; a registered class's attribute by identity with one child or with its aux data."""
    parts = node(value)
    if parts is None:
        return None
    if dataclasses.is_dataclass(value) and type(value) not in _REGISTERED:
        fields = {f.name: f for f in dataclasses.fields(value)}
        names = child_fields(value)
        if name in names:
            return names.index(name)
        if name in fields and fields[name].init:
            return None  # a constant field: no derivative
        places = []
    else:
        attribute = getattr(value, name)
        places = [i for i, child in enumerate(parts[0]) if child is attribute]
        kept_aside = _among(attribute, _REGISTERED[type(value)][0](value)[1])
        if len(places) == 1 and not kept_aside:
            return places[0]
        if not places and kept_aside:
            return None  # data the class's flatten keeps beside its children: a constant
    raise MissingRuleError(
        f"srcad cannot differentiate through the attribute `.{name}` of a "
        f"{type(value).__name__}: it is " + (
            "several of its children at once, or a child and data kept beside them"
            if places else "none of the children its flatten function gives (a property "
            "computed from them, an init=False field, or data kept beside them)") + ".",
        fix="read the children themselves inside the function, or compute the attribute from "
        "them there; for a registered class, pass data kept beside the children as another "
        "argument.")


def _among(value, aux) -> bool:
    """Whether `value` is `aux` or one of the items of `aux` (a tuple, list or dict)."""
    items = aux.values() if isinstance(aux, dict) else aux \
        if isinstance(aux, (tuple, list)) else ()
    return value is aux or any(value is item for item in items)


def constructs_node(fn) -> bool:
    """Whether `fn` is a dataclass, whose instances a call builds from its arguments."""
    return isinstance(fn, type) and dataclasses.is_dataclass(fn) and fn not in _REGISTERED


def constructor_places(cls, instance, args: tuple, kwargs: dict) -> dict:
    """`{argument (position or keyword name): index among instance's children}` for an
    instance `cls(*args, **kwargs)` of a dataclass, whose fields hold their arguments; an
    `__init__` or `__post_init__` that changes what a field holds is refused."""
    names = child_fields(instance)
    bound = inspect.signature(cls).bind(*args, **kwargs).arguments
    positions = {name: i for i, name in enumerate(bound) if i < len(args)}
    places = {}
    for name, argument in bound.items():
        if name not in names:
            continue
        if getattr(instance, name) is not argument:
            raise MissingRuleError(
                f"srcad cannot differentiate through {cls.__name__}(...): its field "
                f"`{name}` does not hold the argument passed for it (its __init__ or "
                "__post_init__ computes it).",
                fix=f"build the {cls.__name__} outside the differentiated function and pass "
                "it in, or compute the field's value in the function before building it.")
        places[positions.get(name, name)] = names.index(name)
    return places
