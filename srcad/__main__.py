"""Command line: `python -m srcad demo`, `python -m srcad show FILE.py:FUNC [--wrt 0,1]
[--mode rev|grad|floats|fwd] [--upto PASS]`, `python -m srcad show --passes`,
`python -m srcad rules [--all]` and `python -m srcad --version`.

Exit codes: 0 done, 1 srcad refused the function (its error says why), 2 the command line
was wrong (argparse's convention), including a FILE.py:FUNCTION that names nothing.
"""
from __future__ import annotations

import argparse
import difflib
import importlib.util
import inspect
import os
import sys
from pathlib import Path

from srcad.errors import SrcadError
from srcad.version import __version__


class _BadTarget(Exception):
    """FILE.py:FUNCTION does not name a function: a one-line message that says the fix."""


def _load_function(target: str):
    path, _, name = target.rpartition(":")
    if not path or not name:
        raise _BadTarget(f"expected FILE.py:FUNCTION, got {target!r}; for example "
                         "`python -m srcad show model.py:loss`")
    if not Path(path).is_file():
        raise _BadTarget(f"no file {path!r} (in {os.getcwd()}); give the path of a Python "
                         "file, absolute or relative to this directory")
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    if spec is None:
        raise _BadTarget(f"cannot load {path!r} as Python; give a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    value = module
    for part in name.split("."):
        if not hasattr(value, part):
            raise _BadTarget(f"{path!r} has no {name!r}; {_suggestion(value, part)}")
        value = getattr(value, part)
    return value


def _suggestion(owner, missing: str) -> str:
    """What the user may have meant: the close names, or the functions `owner` defines."""
    close = difflib.get_close_matches(missing, dir(owner), n=3)
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    defined = [n for n, v in vars(owner).items() if inspect.isfunction(v) and not
               n.startswith("_") and getattr(v, "__module__", None) == owner.__name__]
    if not defined:
        return "it defines no public function"
    return "it defines " + ", ".join(defined[:8]) + (", ..." if len(defined) > 8 else "")


def _parse_wrt(text: str):
    items = tuple(int(t) if t.strip().lstrip("-").isdigit() else t.strip()
                  for t in text.split(","))
    return items[0] if len(items) == 1 else items


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m srcad")
    parser.add_argument("--version", action="version", version=f"srcad {__version__}")
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
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run a command; the exit code. Output cut short by a closed pipe (`... | head`) ends
    quietly, as for other command-line tools."""
    try:
        code = _run(_parser(), argv)
        sys.stdout.flush()  # (here, so a closed pipe is met inside the try)
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at nothing so that is quiet too
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return code


def _run(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
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
        function = _load_function(arguments.target)
    except _BadTarget as error:
        print(f"python -m srcad show: error: {error}", file=sys.stderr)
        return 2
    try:
        show_source(function, wrt=_parse_wrt(arguments.wrt), mode=arguments.mode,
                    upto=arguments.upto)
    except SrcadError as error:
        print(f"srcad: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
