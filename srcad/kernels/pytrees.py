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

An instance of a plain class (attributes in its `__dict__`, set and read the ordinary way)
that the differentiated code itself writes attributes of is a *record*: memory, like a dict
the function makes, whose derivative is a dict of its attributes' derivatives by name
(`obj.a = v` is an element write; compiler/frontend/normalize.py).
"""
from __future__ import annotations

import copy
import dataclasses
import inspect
import types
from typing import Callable

import numpy as np

from srcad.errors import MissingRuleError, UnsupportedSyntaxError, UsageError
from srcad.tracebacks import api_boundary

_REGISTERED: dict[type, tuple[Callable, Callable]] = {}


@api_boundary
def register_pytree_node(cls: type, flatten: Callable, unflatten: Callable) -> None:
    """Let srcad look inside instances of a class, as `jax.tree_util.register_pytree_node`.

    Its instances may then be `wrt` arguments, and their derivatives are instances of it.

    Parameters
    ----------
    cls : type
        The class.
    flatten : callable
        `flatten(obj)` returns `(children, aux)`: the values to differentiate, and what
        else rebuilding needs.
    unflatten : callable
        `unflatten(aux, children)` rebuilds an instance.

    Examples
    --------
    >>> class Pair:
    ...     def __init__(self, a, b):
    ...         self.a, self.b = a, b
    >>> srcad.register_pytree_node(Pair, lambda p: ((p.a, p.b), None),
    ...                            lambda aux, children: Pair(*children))
    >>> def energy(p):
    ...     return p.a * p.b ** 2
    >>> gradient = srcad.grad(energy)(Pair(2.0, 3.0))
    >>> gradient.a, gradient.b
    (9.0, 12.0)
    """
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


# ---- plain containers, unpacked leaf by leaf (api/fast_paths.tree_runner) -------------------
def plain_leaves(value) -> tuple[tuple, list] | None:
    """`(((path, kind), ..), leaves)` of a dict with string keys, a list or a tuple (exactly
    those types, nested) whose leaves are all Python floats or float arrays: each leaf's
    keys from the top, its kind ("float", a float64 array's rank, None for another float
    array), and the leaves in that order; None where it holds anything else or nothing (a
    node, an int, a string, a float32 scalar: the container program takes those)."""
    described, found = [], []
    if not _gathered(value, (), described, found) or not found:
        return None
    return tuple(described), found


def _gathered(value, path: tuple, described: list, found: list) -> bool:
    kind = type(value)
    if kind is float:
        described.append((path, "float"))
    elif kind is np.ndarray:
        if value.dtype.kind not in "fc":
            return False
        described.append((path, value.ndim if value.dtype is _FLOAT64 else None))
    elif kind is dict:
        for key, item in value.items():
            if type(key) is not str or not _gathered(item, path + (key,), described, found):
                return False
        return True
    elif kind is list or kind is tuple:
        for index, item in enumerate(value):
            if not _gathered(item, path + (index,), described, found):
                return False
        return True
    else:
        return False
    found.append(value)
    return True


def plain_rebuilt(container, items):
    """`container`'s nesting (a plain one: `plain_leaves`) holding the next of `items`, an
    iterator, in each leaf's place."""
    kind = type(container)
    if kind is dict:
        return {key: plain_rebuilt(item, items) for key, item in container.items()}
    if kind is list:
        return [plain_rebuilt(item, items) for item in container]
    if kind is tuple:
        return tuple([plain_rebuilt(item, items) for item in container])
    return next(items)


_FLOAT64 = np.dtype(np.float64)


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


def is_record(value) -> bool:
    """Whether `value` is an instance of a plain class whose attributes live in its
    `__dict__` and are set and read as Python does by default: no `__slots__`-only class, no
    `__setattr__`/`__getattribute__` of its own, not a node (whose derivative is its
    class's), a class, a module or a function, nor srcad's, NumPy's or SciPy's own."""
    cls = type(value)
    return hasattr(value, "__dict__") and cls.__setattr__ is object.__setattr__ \
        and (cls.__module__ or "").split(".")[0] not in ("srcad", "numpy", "scipy") \
        and cls.__getattribute__ is object.__getattribute__ \
        and cls.__delattr__ is object.__delattr__ and node(value) is None \
        and not isinstance(value, (type, types.ModuleType, types.FunctionType,
                                   types.MethodType, np.ndarray))


def computed_attribute(record, name: str) -> bool:
    """Whether reading `record.name` runs code of its class (a property), which srcad does
    not follow from a read: not an attribute of its own, a method or a class constant."""
    if name in vars(record):
        return False
    found = inspect.getattr_static(type(record), name, None)
    return hasattr(found, "__get__") and not isinstance(
        found, (types.FunctionType, staticmethod, classmethod))


def record_attribute_check(value, name: str) -> None:
    """Refuse an attribute write `value.name = v` that srcad cannot follow as a record's."""
    if is_record(value) and not hasattr(inspect.getattr_static(type(value), name, None),
                                        "__set__"):
        return
    cls = type(value).__name__
    if node(value) is not None:
        why = (f"a {cls} is a container whose derivative is its class's; an attribute written "
               "after it is made would not be in it")
        fix = (f"build a new {cls} with the value (`dataclasses.replace(obj, {name}=v)`) and "
               "use that")
    elif is_record(value):
        why = f"`{name}` is a property or slot of {cls}, which computes or stores it its own way"
        fix = "store the value in a plain attribute, or keep it in a local variable"
    else:
        why = (f"a {cls} is no plain object (its attributes are not a plain `__dict__` set and "
               "read the default way)")
        fix = "keep the value in a local variable, a dict, or an instance of a plain class"
    raise UnsupportedSyntaxError(
        f"srcad cannot differentiate the attribute write `.{name} = ...` into a {cls}: {why}.",
        fix=fix)


def is_record_class(cls) -> bool:
    """Whether `cls` is a plain class of the user's, whose instances are records."""
    if not isinstance(cls, type) or type(cls) is not type or cls.__new__ is not object.__new__ \
            or dataclasses.is_dataclass(cls) or cls in _REGISTERED \
            or (cls.__module__ or "").split(".")[0] in ("numpy", "scipy", "srcad", "builtins") \
            or cls.__setattr__ is not object.__setattr__ \
            or cls.__getattribute__ is not object.__getattribute__ \
            or cls.__delattr__ is not object.__delattr__:
        return False
    try:
        return hasattr(object.__new__(cls), "__dict__")
    except TypeError:  # (an abstract class)
        return False


def constructs_record(fn) -> bool:
    """Whether `fn` is a plain class of the user's whose `__init__` (Python) sets up a
    record: built of differentiated values, it is differentiated through that `__init__`
    (compiler/frontend/functional.record_constructor)."""
    return is_record_class(fn) and isinstance(fn.__init__, types.FunctionType)


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
