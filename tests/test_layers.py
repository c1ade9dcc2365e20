"""srcad's layers (docs/architecture.md): every import, those inside functions included,
goes down the list of layers, and the modules import one another without a cycle."""
import ast
import pathlib

import srcad

PACKAGE = pathlib.Path(srcad.__file__).parent

# Highest first. A module may import its own layer and the layers below it; the compiler and
# the tape stand side by side and import neither each other. The base is imported by all.
LAYERS = [("cli", "bench"), ("package",), ("api",), ("compiler", "tape"), ("runtime",),
          ("ops",), ("kernels",), ("tracebacks",), ("errors", "version")]
LEVEL = {name: level for level, names in enumerate(LAYERS) for name in names}


def _modules() -> dict:
    """Dotted module name → file, for every module in the package."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imported(module: str, path: pathlib.Path, modules: dict) -> set:
    """The srcad modules `module` imports anywhere in its text; `from package import name`
    imports the package too (its `__init__` runs, and may import `module` back)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target not in modules and "." in target:
                target = target.rpartition(".")[0]
            if target in modules and target != module:
                found.add(target)
    return found


def _graph() -> dict:
    modules = _modules()
    return {module: _imported(module, path, modules) for module, path in modules.items()}


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "package"  # srcad/__init__.py, the public names
    return "cli" if parts[1] == "__main__" else parts[1]


def test_every_module_belongs_to_a_layer():
    assert {_layer(m) for m in _graph()} <= set(LEVEL)


def test_imports_go_down_the_layers():
    upward = sorted(f"{module} imports {target}"
                    for module, targets in _graph().items() for target in targets
                    if LEVEL[_layer(target)] < LEVEL[_layer(module)]
                    or (LEVEL[_layer(target)] == LEVEL[_layer(module)]
                        and _layer(target) != _layer(module)))
    assert upward == []


def test_no_import_cycle():
    graph = _graph()
    cycles, state = [], {}

    def visit(module, path):  # depth first; iterative depth is small (tens of modules)
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                cycles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_the_check_sees_imports_inside_functions_and_relative_ones(tmp_path):
    """The test is only as good as its walk: an import inside a function counts, and a
    relative import names the module it reaches."""
    module = tmp_path / "calls.py"
    module.write_text("from . import hooks\n"
                      "def late():\n"
                      "    from srcad.api.derivative import grad\n"
                      "    import srcad.compiler.cache\n")
    found = _imported("srcad.runtime.calls", module, _modules())
    assert found == {"srcad.runtime", "srcad.runtime.hooks", "srcad.api.derivative",
                     "srcad.compiler.cache"}
