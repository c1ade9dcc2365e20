"""Every fenced block of README.md and docs/*.md runs as written, and what it shows is checked.

A fence names its language, which says what the test does with the block:

- ```python: run. The blocks of one file run in order in one namespace, so a block may use
  what an earlier block of the same file defined; the first block imports what it uses.
  Each block is written to a file of its own and run from there, because srcad reads a
  function's source with `inspect` (a string passed to `exec` has none).
- ```pycon: a doctest, run in the same namespace, its output compared (ELLIPSIS on). Doctest
  serves the source of the functions an example defines (as tests/api/test_docstrings.py
  relies on) while its block runs, so a function srcad transforms in a later block is
  defined in a ```python block.
- ```text output: what the ```python blocks since the previous such block printed,
  compared line by line (trailing spaces aside): generated listings shown in the docs.
- ```python excerpt: lines quoted from srcad's source, not run; its first line is a comment
  naming the file (`# srcad/ops/numpy_ufuncs.py`), and the rest must appear there verbatim.
- ```text, ```console: not run (a diagram, a table, an error message, a shell session).

Any other fence, or one without a language, fails: say which of these it is.
"""
import contextlib
import doctest
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
DOCUMENTS = ["README.md"] + sorted(f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md"))
LANGUAGES = ("python", "pycon", "text", "console")
FENCE = re.compile(r"^```(.*)$")


def fenced_blocks(text: str) -> list[tuple[int, str, str]]:
    """`(line of the opening fence, info string, body)` of each fenced block of `text`."""
    blocks, opened, info, body = [], None, "", []
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if opened is None and fence:
            opened, info, body = number, fence.group(1).strip(), []
        elif opened is not None and line == "```":
            blocks.append((opened, info, "\n".join(body) + "\n"))
            opened = None
        elif opened is not None:
            body.append(line)
    assert opened is None, f"the fence opened on line {opened} is never closed"
    return blocks


def run_python(body: str, path: Path, namespace: dict, printed: io.StringIO) -> None:
    path.write_text(body)
    with contextlib.redirect_stdout(printed):
        exec(compile(body, str(path), "exec"), namespace)


def run_doctest(body: str, name: str, line: int, namespace: dict) -> None:
    test = doctest.DocTestParser().get_doctest(body, namespace, name, name, line)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = []
    runner.run(test, out=report.append, clear_globs=False)
    assert runner.failures == 0, "".join(report)
    assert runner.tries > 0, f"{name}: a ```pycon block without a >>> example"
    namespace.update(test.globs)


def run_blocks(document: str, text: str, directory: Path) -> None:
    """Run the blocks of `text` (the file `document`) in order, as the module docstring says."""
    stem = re.sub(r"\W", "_", Path(document).stem)
    namespace = {"__name__": f"doc_{stem}"}
    printed = io.StringIO()
    for line, info, body in fenced_blocks(text):
        where = f"{document}:{line}"
        language = info.split()[0] if info else ""
        assert language in LANGUAGES, (
            f"{where}: fence it as one of {', '.join(LANGUAGES)} (```{info}```)")
        if info == "python excerpt":
            quoted_from, _, excerpt = body.partition("\n")
            source = (ROOT / quoted_from.removeprefix("# ")).read_text()
            assert excerpt in source, f"{where}: {quoted_from[2:]} no longer reads so"
        elif language == "python":
            run_python(body, directory / f"{stem}_{line}.py", namespace, printed)
        elif language == "pycon":
            run_doctest(body, where, line, namespace)
        elif info == "text output":
            shown = [row.rstrip() for row in body.rstrip("\n").splitlines()]
            assert [row.rstrip() for row in printed.getvalue().rstrip("\n").splitlines()
                    ] == shown, f"{where}: the blocks before it print something else"
            printed = io.StringIO()


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_code_block_runs_as_written(document, tmp_path):
    run_blocks(document, (ROOT / document).read_text(), tmp_path)


@pytest.mark.parametrize("text, complaint", [
    ("```python\nprint('a')\n```\n\n```text output\nb\n```\n", "print something else"),
    ("```pycon\n>>> 1 + 1\n3\n```\n", "Expected"),
    ("```\nx = 1\n```\n", "fence it as one of"),
    ("```python excerpt\n# srcad/version.py\n__version__ = 'x'\n```\n", "no longer reads so"),
    ("```python\nimport numpy as np\n```\n\n```python\nnp.undefined\n```\n", "undefined"),
])
def test_a_block_that_is_wrong_fails(text, complaint, tmp_path):
    with pytest.raises((AssertionError, AttributeError), match=complaint):
        run_blocks("example.md", text, tmp_path)


def test_the_readme_is_what_a_newcomer_reads_first():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) < 10_000
    # CI runs the README's test command verbatim (.ci/run)
    command = "pip install -e '.[test]' && pytest"
    assert command in readme and command in (ROOT / ".ci" / "run").read_text()


LINK = re.compile(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)")


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings of `text`."""
    headings = re.findall(r"^#+ (.*)$", text, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in headings}


@pytest.mark.parametrize("document", ["README.md"] + sorted(
    f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md")))
def test_links_between_the_documents_lead_somewhere(document):
    source = ROOT / document
    for target, anchor in LINK.findall(source.read_text()):
        if target.startswith(("http://", "https://")):
            continue
        linked = (source.parent / target) if target else source
        assert linked.exists(), f"{document}: the link to {target} leads nowhere"
        if anchor and linked.suffix == ".md":
            assert anchor in anchors(linked.read_text()), (
                f"{document}: {target}#{anchor} names no heading of {linked.name}")
