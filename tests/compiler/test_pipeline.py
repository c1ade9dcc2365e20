"""The pipeline's passes: each mode's list, the program after any of them (`srcad.show(f,
upto=...)`), and switching the optional ones off."""
from pathlib import Path

import numpy as np
import pytest

import srcad
from srcad.__main__ import main
from srcad.compiler import passes
from srcad.compiler.pipeline import INNER, PASSES, describe_passes, source_after
from srcad.errors import UsageError


def tanh_layer(w, x):
    z = np.tanh(x @ w)
    return np.sum(-z * 2.0)


def chain(x):
    y = np.sin(x) * 3.0
    z = y * x
    return np.sum(np.exp(z))


def test_upto_frontend_shows_the_function_in_simple_form(capsys):
    srcad.show(tanh_layer, upto="frontend")
    out = capsys.readouterr().out
    assert "matmul_0 = x @ w" in out and "neg_1 = -z" in out and "backward" not in out


def test_upto_reverse_without_its_rewrites_shows_the_plain_adjoint(capsys):
    with passes.off("signs", "release"):
        srcad.show(tanh_layer, upto="reverse")
    plain = capsys.readouterr().out
    srcad.show(tanh_layer)
    shown = capsys.readouterr().out
    assert "b_neg_1" not in shown and "del " in shown  # signs folded, values let go
    assert "del " not in plain and "b_z = -b_neg_1" in plain


def test_upto_differentiate_is_the_plain_derivative_of_each_mode(capsys):
    for mode, rewritten, plain in [("rev", "multiply_into(b_z, y)", "b_x = b_z * y"),
                                   ("grad", "multiply_into(b_z, y)", "b_x = b_z * y"),
                                   ("floats", None, "b_x = b_z * y"),  # (on numbers)
                                   ("fwd", None, "t_z = ")]:
        srcad.show(chain, mode=mode, upto="differentiate")
        shown = capsys.readouterr().out
        assert plain in shown and "del " not in shown and "outline" not in shown, mode
        if rewritten is not None:
            srcad.show(chain, mode=mode, upto="reverse")
            assert rewritten in capsys.readouterr().out and rewritten not in shown
    with passes.off("signs"):  # (a switch the user set stays set)
        srcad.show(chain, upto="differentiate")
        assert passes.switched_off() == {"signs"}
    assert "b_sin_0 = b_y * 3.0" in capsys.readouterr().out


def softmax_rows(x):
    shifted = x - np.max(x, axis=1, keepdims=True)
    e = np.exp(shifted)
    return np.sum(e / np.sum(e, axis=1, keepdims=True) * x)


def test_upto_differentiate_leaves_the_softmax_written_out(capsys):
    srcad.show(softmax_rows, upto="differentiate")
    assert "softmax_vjp" not in capsys.readouterr().out
    srcad.show(softmax_rows)
    assert "softmax_vjp" in capsys.readouterr().out


def test_upto_differentiate_switches_nothing_off_for_other_threads():
    import contextlib
    import io
    import threading
    errors = []

    def show_many():
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                for _ in range(20):
                    srcad.show(chain, upto="differentiate")
        except Exception as error:  # (reported below)
            errors.append(error)
    threads = [threading.Thread(target=show_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and passes.switched_off() == frozenset()


def test_the_program_after_each_pass_of_each_shown_mode(capsys):
    for mode, pipeline_mode in [("rev", "rev"), ("grad", "gradient"), ("floats", "fused"),
                                ("fwd", "fwd")]:
        for step in PASSES[pipeline_mode]:
            srcad.show(tanh_layer, mode=mode, upto=step.name)
            out = capsys.readouterr().out
            if step.name in ("frontend", "softmax", "analyze"):  # the function, simple form
                assert out.startswith("def tanh_layer(w, x):"), (mode, step.name)
            else:  # a derivative program
                assert out.startswith("def srcad_scope("), (mode, step.name)
        srcad.show(tanh_layer, mode=mode, upto="emit")  # what runs
        assert "def srcad_scope(" in capsys.readouterr().out


def test_upto_emit_is_the_program_that_runs(capsys):
    srcad.show(tanh_layer, upto="emit")
    emitted = capsys.readouterr().out
    srcad.show(tanh_layer)
    assert emitted == capsys.readouterr().out


def test_upto_a_pass_the_mode_lacks_is_refused_with_the_list():
    with pytest.raises(UsageError, match="has no pass 'fuse'; its passes are frontend, "
                                         "softmax, analyze, reverse"):
        srcad.show(tanh_layer, upto="fuse")


def test_every_optional_pass_can_be_switched_off_by_its_name():
    optional = {step.name for steps in PASSES.values() for step in steps if step.optional}
    inner = {name for names in INNER.values() for name in names}
    assert optional | inner <= set(passes.OPTIONAL)
    with passes.off(*optional, *inner):  # and the gradient is the same without them
        plain = srcad.grad(tanh_layer)(np.ones(3), np.eye(3))
    np.testing.assert_allclose(plain, srcad.grad(tanh_layer)(np.ones(3), np.eye(3)))


def energy(k, c):
    d = k - c
    return d * d * 0.5 + np.sin(k)


def _halved(x):
    return 0.5 * x


def with_a_helper(x):
    y = _halved(x)
    return np.sum(y * y)


def recurrent(W, h):
    for _ in range(3):
        h = np.tanh(W @ h)
    return np.sum(h)


# an inner rewrite, a program it changes, what the rewrite writes and what it leaves plain
INNER_REWRITES = [
    ("first-trip", recurrent, "rev", {}, "if remaining:", "for _ in range(trips)"),
    ("inline", with_a_helper, "rev", {}, "y = 0.5 * x", "call_vjp(_halved"),
    ("reuse", chain, "rev", {}, "multiply_into(b_z, y)", "b_x = b_z * y"),
    ("outline", tanh_layer, "gradient", {}, "reduction_outline(np.sum", "sum_3 = np.sum("),
    ("copies", energy, "fused", {"scalars": frozenset({"k", "c"})}, "return (add_", "value = "),
    ("dead-code", tanh_layer, "slope", {}, None, "        neg_1 = -z"),  # (it only drops)
]


@pytest.mark.parametrize("name, fn, mode, options, made, plain", INNER_REWRITES,
                         ids=[r[0] for r in INNER_REWRITES])
def test_an_inner_rewrite_switched_off_leaves_its_program_plain(name, fn, mode, options, made,
                                                                plain):
    assert {name for names in INNER.values() for name in names} == {r[0] for r in
                                                                    INNER_REWRITES} | {
        "signs", "release"}
    wrt = (fn.__code__.co_varnames[0],)
    shown = source_after(fn, wrt, mode, "emit", **options)
    with passes.off(name):
        without = source_after(fn, wrt, mode, "emit", **options)
    assert made is None or made in shown and made not in without
    assert plain not in shown and plain in without


def test_the_command_line_prints_every_modes_passes(capsys):
    assert main(["show", "--passes"]) == 0
    out = capsys.readouterr().out
    for mode in PASSES:
        assert out.count(f"\n{mode} ") + out.startswith(f"{mode} ") >= 1
    assert "reverse [signs*, reuse*, outline*, release*, first-trip*]" in out and "softmax*" in out


def test_the_command_line_shows_the_program_after_a_pass(capsys):
    assert main(["show", f"{__file__}:tanh_layer", "--upto", "frontend"]) == 0
    assert "matmul_0 = x @ w" in capsys.readouterr().out
    assert main(["show", f"{__file__}:tanh_layer", "--upto", "nowhere"]) == 1
    assert "no pass 'nowhere'" in capsys.readouterr().err


def test_the_architecture_document_shows_the_passes_as_they_are():
    document = Path(__file__).parent.parent.parent / "docs" / "architecture.md"
    assert describe_passes() in document.read_text()
