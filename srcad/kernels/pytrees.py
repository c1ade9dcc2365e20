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
        return ([getattr(value, name) for name in names],
                lambda items: dataclasses.replace(value, **dict(zip(names, items))))
    return None


def child_fields(value) -> list[str]:
    """The names of a dataclass instance's fields that are its children."""
    return [f.name for f in dataclasses.fields(value)
            if f.init and _holds_derivative(getattr(value, f.name))]


def _holds_derivative(value) -> bool:
    """A float, a complex number, a float array (or a tape's tensor of one), a container."""
    if isinstance(value, (float, complex, np.inexact, dict, list, tuple)):
        return True
    dtype = getattr(value, "dtype", None)
    if dtype is not None:
        return getattr(dtype, "kind", None) in ("f", "c")
    return node(value) is not None


def child_index(value, name: str) -> int | None:
    """Where the attribute `name` of the node `value` sits among its children; None if
    `value` is no node or `name` is a constant field. A dataclass's fields are found by
    name; a registered class's attribute by identity with one child."""
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
        if len(places) == 1:
            return places[0]
    raise MissingRuleError(
        f"srcad cannot differentiate through the attribute `.{name}` of a "
        f"{type(value).__name__}: it is " + (
            "several of its children at once" if places else
            "none of its children (a property or an init=False field, computed from them)")
        + ".",
        fix="read the children themselves inside the function (the fields holding floats "
        "or float arrays), or compute the attribute from them there.")


def constructs_node(fn) -> bool:
    """Whether `fn` is a dataclass, whose instances a call builds from its arguments."""
    return isinstance(fn, type) and dataclasses.is_dataclass(fn) and fn not in _REGISTERED


def constructor_places(cls, instance, args: tuple, kwargs: dict) -> dict:
    """`{argument (position or keyword name): index among instance's children}` for an
    instance `cls(*args, **kwargs)` of a dataclass: each init field holds its argument. A
    `__post_init__`, which may change them, is refused."""
    if hasattr(cls, "__post_init__"):
        raise MissingRuleError(
            f"srcad cannot differentiate through {cls.__name__}(...): its __post_init__ may "
            "change the values the fields hold.",
            fix=f"build the {cls.__name__} outside the differentiated function and pass it in, "
            "or move what __post_init__ computes into the function.")
    names = child_fields(instance)
    bound = inspect.signature(cls).bind(*args, **kwargs).arguments
    positions = {name: i for i, name in enumerate(bound) if i < len(args)}
    return {positions.get(name, name): names.index(name) for name in bound if name in names}
