"""Every public name of srcad has a numpydoc docstring with an example, and the examples run
and print what they say."""
import doctest
import inspect
import types

import numpy as np
import pytest

import srcad

PUBLIC = {name: getattr(srcad, name) for name in srcad.__all__ if name != "__version__"}
DOCUMENTED = {name: value for name, value in PUBLIC.items()
              if not isinstance(value, types.ModuleType)}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_public_name_has_a_docstring(name):
    assert (inspect.getdoc(PUBLIC[name]) or "").strip()


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_every_public_function_and_class_has_an_example(name):
    text = inspect.getdoc(DOCUMENTED[name])
    assert "\nExamples\n--------\n>>> " in text


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_the_examples_run_as_written(name):
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    reports = []
    for test in finder.find(DOCUMENTED[name], f"srcad.{name}",
                            globs={"np": np, "srcad": srcad}):
        runner.run(test, out=reports.append)
    assert runner.failures == 0, "".join(reports)
    assert runner.tries > 0
