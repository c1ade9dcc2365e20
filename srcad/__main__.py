"""Command line: `python -m srcad demo`, `python -m srcad show FILE.py:FUNC [--wrt 0,1]
[--mode rev|grad|floats|fwd] [--upto PASS]`, `python -m srcad show --passes` and
`python -m srcad rules [--all]`."""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from srcad.errors import SrcadError


def _load_function(target: str):
    path, _, name = target.rpartition(":")
    if not path or not name:
        raise SystemExit(f"srcad show: expected FILE.py:FUNCTION, got {target!r}")
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    if spec is None:
        raise SystemExit(f"srcad show: cannot load {path!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    value = module
    for part in name.split("."):
        value = getattr(value, part)
    return value


def _parse_wrt(text: str):
    items = tuple(int(t) if t.strip().lstrip("-").isdigit() else t.strip()
                  for t in text.split(","))
    return items[0] if len(items) == 1 else items


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m srcad")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="differentiate an example and time it")
    show = commands.add_parser("show", help="print the adjoint of FILE.py:FUNCTION")
    show.add_argument("target", nargs="?", help="path/to/file.py:function")
    show.add_argument("--wrt", default="0", help="parameter indices or names, e.g. 0,1 or w")
    show.add_argument("--mode", default="rev", choices=("rev", "grad", "floats", "fwd"),
                      help="the adjoint (rev, the default), the gradient-only program grad "
                      "runs on arrays (grad) or on Python floats (floats), or the tangent "
                      "program (fwd)")
    show.add_argument("--upto", metavar="PASS", help="the program after this pass (see --passes)")
    show.add_argument("--passes", action="store_true",
                      help="print each mode's passes, in order, and which can be switched off")
    rules = commands.add_parser("rules", help="list the functions srcad has derivative rules "
                                "for, and those it knows have no derivative")
    rules.add_argument("--all", action="store_true", help="include srcad's internal helpers")
    arguments = parser.parse_args(argv)
    if arguments.command == "demo":
        from srcad.api.demo import run
        run()
        return 0
    if arguments.command == "rules":
        from srcad.ops.table import render, rule_rows
        print(render(rule_rows(include_internal=arguments.all)))
        return 0
    if arguments.passes:
        from srcad.compiler.pipeline import describe_passes
        print(describe_passes())
        return 0
    if arguments.target is None:
        parser.error("show needs FILE.py:FUNCTION (or --passes)")
    from srcad.api.derivative import show as show_source
    try:
        show_source(_load_function(arguments.target), wrt=_parse_wrt(arguments.wrt),
                    mode=arguments.mode, upto=arguments.upto)
    except SrcadError as error:
        print(f"srcad: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
