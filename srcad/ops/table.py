"""table: the rule registry as a table, for `python -m srcad rules`.

One row per callable the registry knows: the name users call it by (`np.sin`, `x.T` as
`ndarray.T`, `scipy.stats.norm.pdf`), whether it has a VJP rule and a JVP rule, and notes:
no derivative, SciPy's rules (which load on first use: the table loads them if SciPy is
installed), rules registered outside srcad. srcad's own helpers (the runtime functions its
tangent programs call, the index helpers of its rules) are left out unless asked for.
"""
from __future__ import annotations

import sys
import types
from dataclasses import dataclass

from srcad.ops import registry


@dataclass(frozen=True)
class Row:
    name: str
    vjp: bool
    jvp: bool
    notes: str


def rule_rows(include_internal: bool = False) -> list[Row]:
    """The registry's callables, sorted by name."""
    _load_scipy_rules()
    rows = []
    for op in registry.records():
        if op.vjp is None and op.jvp is None and not op.nondifferentiable:
            continue  # (a record of facts alone: no row of rules)
        fn = op.primal
        name = display_name(fn)
        internal = name.startswith("srcad.") and name.count(".") > 1  # not srcad.stop_gradient
        if internal and not include_internal:
            continue
        vjp, jvp = op.vjp, op.jvp
        rows.append(Row(name, vjp is not None, jvp is not None,
                        _notes(fn, name, vjp, jvp, internal)))
    return sorted(rows, key=lambda row: (row.name.lower(), row.name))


def render(rows: list[Row]) -> str:
    """The rows as an aligned text table, with a count of each kind at the end."""
    header = Row("function", True, True, "notes")
    width = max(len(row.name) for row in [header, *rows])
    lines = [f"{'function':<{width}}  VJP  JVP  notes"]
    for row in rows:
        line = f"{row.name:<{width}}  {_yes(row.vjp):<3}  {_yes(row.jvp):<3}  {row.notes}"
        lines.append(line.rstrip())
    with_rules = sum(row.vjp or row.jvp for row in rows)
    lines.append(f"{len(rows)} callables: {with_rules} with derivative rules, "
                 f"{len(rows) - with_rules} without a derivative")
    return "\n".join(lines)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _notes(fn, name: str, vjp, jvp, internal: bool) -> str:
    notes = []
    if registry.is_nondifferentiable(fn):
        notes.append("no derivative")
    modules = {getattr(rule, "__module__", None) or ""
               for entry in (vjp, jvp) if entry is not None
               for rule in entry.rules if rule is not None}
    if name.startswith("scipy.") or any(m.startswith("srcad.ops.scipy") for m in modules):
        notes.append("SciPy: rules load on first use")
    outside = sorted(m for m in modules if m and not m.startswith("srcad."))
    if outside:
        notes.append(f"registered by {', '.join(outside)}")
    if internal:
        notes.append("srcad internal")
    return "; ".join(notes)


def _load_scipy_rules() -> None:
    """SciPy's rules load on the first lookup of a SciPy callable: look one up (only if SciPy
    is installed; srcad itself never imports it)."""
    try:
        import scipy.special
    except ImportError:
        return
    registry.vjp_rules(scipy.special.erf)


def display_name(fn) -> str:
    """The name users call `fn` by: its public module (`np` for NumPy) and name, the class
    for methods and attributes of arrays, the distribution for a SciPy bound method."""
    if isinstance(fn, types.MethodType):  # scipy.stats.norm.pdf
        owner = fn.__self__
        label = getattr(owner, "name", None) or type(owner).__name__
        return _shortened(f"{_public_parts(type(owner).__module__)[-1]}.{label}.{fn.__name__}")
    objclass = getattr(fn, "__objclass__", None)  # ndarray.T, ndarray.astype
    if objclass is not None:
        return f"{objclass.__name__}.{fn.__name__}"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    module = getattr(fn, "__module__", None)
    if module == "builtins" or (module is None and getattr(sys.modules["builtins"], name,
                                                           None) is fn):
        return name
    if module in ("_operator", "operator"):
        return f"operator.{name}"
    for candidate in [module] if module else ["numpy", "scipy.special"]:  # ufuncs have none
        for public in _public_parts(candidate):
            loaded = sys.modules.get(public)
            if loaded is not None and getattr(loaded, name, None) is fn:
                return _shortened(f"{public}.{name}")
    return _shortened(f"{module}.{name}" if module else f"{type(fn).__name__} {name}")


def _public_parts(module: str) -> list:
    """The prefixes of `module` without private parts, shortest first: `numpy`,
    `numpy.linalg` for `numpy.linalg._linalg`."""
    parts = module.split(".")
    return [".".join(parts[:k]) for k in range(1, len(parts) + 1)
            if not any(part.startswith("_") for part in parts[:k])]


def _shortened(name: str) -> str:
    return "np." + name[len("numpy."):] if name.startswith("numpy.") else name
