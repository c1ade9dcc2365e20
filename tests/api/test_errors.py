"""Every error type: typed, derived from the matching builtin, naming the user's line."""
import types

import numpy as np
import pytest

import srcad
from tests.control_programs import validated_inputs
from srcad.errors import (MissingRuleError, RuleSignatureError, SourceUnavailableError,
                          SrcadError, UnresolvedNameError, UnsupportedSyntaxError)
from tests import programs as p

PROGRAMS = p.__file__


def _line_of(fn, text):
    import inspect
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("fn, construct, text", [
    (p.returns_from_try_in_a_loop, "`return` inside a `try` block", "return np.sum(y)  # in try"),
    (p.attribute_assignment, "an attribute of a differentiated value", "x.shape = (3,)"),
    (p.stores_a_derivative_in_an_attribute, "a differentiated value stored in an attribute",
     "HOLDER.value = y"),
    (p.handler_reads_half_done_body, "the handler may read `y`", "except ValueError:"),
    (p.exception_groups, "`except*`", "try:  # groups"),
    (p.generator, "generators", "yield np.sum(x)"),
    (p.writes_global, "`global` declarations", "global COUNTER"),
    (p.writes_into_a_global_element, "assignment into an element of `TABLE`, a global",
     "TABLE[1] = y[0]"),
    (p.loops_into_an_element, "a loop variable that is an element", "for k, y[0] in"),
    (p.asynchronous, "`async` functions", "async def asynchronous"),
    (p.zip_kept_in_a_name, "`zip(...)` of differentiated values", "pairs = zip("),
    (p.enumerate_passed_on, "`enumerate(...)` of differentiated values", "list(enumerate(x))"),
    (p.reversed_kept_in_a_name, "`reversed(...)`", "backwards = reversed(x)"),
    (p.reraises, "`raise` without an exception", "raise  # nothing"),
    (p.deletes_an_item, "`del` of an element", 'del items["a"]'),
])
def test_unsupported_syntax_names_file_line_and_construct(fn, construct, text):
    with pytest.raises(UnsupportedSyntaxError) as info:
        srcad.grad(fn)(np.ones(3))
    message = str(info.value)
    assert construct in message
    assert f'"{PROGRAMS}", line {_line_of(fn, text)}' in message
    assert text in message and "^" in message and "Fix:" in message
    assert isinstance(info.value, NotImplementedError)


def test_missing_rule_names_the_function_and_how_to_register_one():
    with pytest.raises(MissingRuleError) as info:
        srcad.grad(p.extension_callee)(np.ones(3))
    message = str(info.value)
    assert "np.nextafter" in message and "srcad.defvjp(np.nextafter" in message
    assert f"line {_line_of(p.extension_callee, 'np.nextafter')}" in message


def test_errors_inside_followed_library_code_say_how_they_were_reached():
    with pytest.raises(UnsupportedSyntaxError) as info:
        srcad.grad(p.opaque_callee)(np.ones(3))
    message = str(info.value)
    assert "numpy" in message and "followed it into its source" in message
    assert "srcad.defvjp" in message


def test_registered_rule_makes_the_call_differentiable():
    srcad.defvjp(p.registered_helper, lambda g, ans, x: g * np.ones_like(x))
    np.testing.assert_allclose(srcad.grad(p.calls_registered_helper)(np.ones(3)), np.full(3, 2.0))


def test_unresolved_name_is_a_name_error():
    with pytest.raises(UnresolvedNameError, match="undefined_function") as info:
        srcad.grad(p.unknown_name)(np.ones(3))
    assert isinstance(info.value, NameError)


def test_rule_signature_mismatch_is_a_type_error():
    with pytest.raises(RuleSignatureError) as info:
        srcad.grad(bad_keyword)(np.ones(3))
    assert isinstance(info.value, TypeError) and "np.sum" in str(info.value)


def bad_keyword(x):
    return np.sum(x, where=x > 0)


def test_builtins_have_no_source():
    with pytest.raises(SourceUnavailableError, match="defvjp") as info:
        srcad.grad(len)
    assert isinstance(info.value, TypeError)


@pytest.mark.parametrize("other_snippet", [None, "import numpy\nprint(numpy.pi)\n"])
def test_function_without_a_source_file(monkeypatch, other_snippet):
    """exec'd code has no source, also where linecache holds another `<string>`'s text
    (Python 3.13 keeps the text of `python -c` so)."""
    import linecache
    monkeypatch.delitem(linecache.cache, "<string>", raising=False)
    if other_snippet is not None:
        monkeypatch.setitem(linecache.cache, "<string>", (
            len(other_snippet), None, other_snippet.splitlines(True), "<string>"))
    namespace = {}
    exec("def f(x):\n    return x * 2.0\n", namespace)
    with pytest.raises(SourceUnavailableError, match="interactive prompt") as error:
        srcad.grad(namespace["f"])(1.0)
    assert "IPython or Jupyter" in str(error.value)


@pytest.mark.parametrize("how", ["-c", "stdin"])
def test_code_from_the_command_line_or_stdin(how):
    """Python 3.13 keeps the text of `python -c` (srcad differentiates it); code piped on
    stdin has none, and the error says where source is kept."""
    import subprocess
    import sys
    program = ("import srcad\nf = lambda x: x * 3.0\n"
               "try:\n    print(srcad.grad(f)(1.0))\n"
               "except srcad.errors.SourceUnavailableError as error:\n    print(error)\n")
    run = subprocess.run([sys.executable, "-c", program] if how == "-c" else [sys.executable],
                         input=None if how == "-c" else program, capture_output=True,
                         text=True, timeout=120, check=True)
    kept = how == "-c" and sys.version_info >= (3, 13)
    assert run.stdout.strip() == "3.0" if kept else "Jupyter" in run.stdout, \
        run.stdout + run.stderr


def test_every_error_derives_from_srcad_error():
    import inspect
    import srcad.errors as errors
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass)
               if c.__module__ == errors.__name__ and c is not errors.Location]
    assert all(issubclass(c, SrcadError) for c in classes)


def test_iterators_of_differentiated_values_are_refused_not_taken_for_constants():
    with pytest.raises(UnsupportedSyntaxError, match="iterates it directly"):
        srcad.jvp(p.zip_kept_in_a_name, (np.ones(3),), (np.ones(3),))
    assert srcad.tape.grad(p.zip_kept_in_a_name)(np.ones(3)) == pytest.approx([4.0] * 3)


def test_a_list_of_a_dicts_keys_has_no_derivative():
    np.testing.assert_array_equal(srcad.grad(p.list_of_keys)(np.ones(3)), [2.0, 0.0, 0.0])


def test_a_failed_check_of_the_users_raises_their_error():
    """`assert` and `raise` run in the forward sweep (they were refused)."""
    with pytest.raises(ValueError, match="must not be negative"):
        srcad.grad(validated_inputs)(np.ones(3), -1.0)
    with pytest.raises(AssertionError, match="expected a vector"):
        srcad.grad(validated_inputs)(np.ones((2, 2)), 1.0)


def _evaluates(x):
    return np.sum(eval("x ** 2"))


def _reads_locals(x):
    return np.sum(locals()["x"] ** 2)


def _reads_vars(x):
    return np.sum(vars()["x"] ** 2)


def _executes(x):
    exec("print(x)")
    return np.sum(x ** 2)


@pytest.mark.parametrize("fn, name", [(_evaluates, "eval"), (_reads_locals, "locals"),
                                      (_reads_vars, "vars"), (_executes, "exec")])
def test_reading_variables_by_name_is_refused_not_differentiated_as_a_constant(fn, name):
    """These gave zero gradients; tape mode, which sees the values, differentiates them."""
    with pytest.raises(UnsupportedSyntaxError, match=f"`{name}"):
        srcad.grad(fn)(np.ones(2))
    with pytest.raises(UnsupportedSyntaxError, match=f"`{name}"):
        srcad.jvp(fn, (np.ones(2),), (np.ones(2),))
    np.testing.assert_allclose(srcad.tape.grad(fn)(np.ones(2)), [2.0, 2.0])


SETTINGS = types.SimpleNamespace(scale=3.0)


def _reads_an_objects_vars(x):
    return x * vars(SETTINGS)["scale"]


def test_vars_of_an_object_reads_the_object_not_the_frame():
    assert srcad.grad(_reads_an_objects_vars)(1.0) == 3.0
