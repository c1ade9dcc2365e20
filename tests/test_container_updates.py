"""A list or dict the function makes, used as memory: a list's `pop`, `insert`, `remove`,
`del`, `clear`, `reverse` and `sort`, a dict's `update` and `setdefault` update it in place
as Python does, in every mode (the programs of tests/in_place_programs.py run through the
corpus checks: reverse, forward, second order, tape). Here: Python's semantics kept
exactly, what stays refused and why, and the program a user reads."""
import numpy as np
import pytest

import srcad
from srcad.errors import UnsoundAliasingError, UnsupportedSyntaxError
from tests.checks import assert_gradient_matches_finite_differences

X = np.array([0.5, -1.3, 2.1, 0.8])


def every_update(x):
    xs = [x[0], x[1] * 2.0, x[2] ** 2, np.sin(x[3]), x[0] * x[1]]
    first = xs.pop(0)
    last = xs.pop()
    xs.insert(1, first * last)
    xs.insert(-1, np.cos(first))
    xs.insert(-100, last)
    xs.insert(100, first + 1.0)
    del xs[2]
    xs.remove(last)
    xs.reverse()
    head = xs[0]
    del xs[1::2]
    xs.sort()
    total = 0.0
    for k, v in enumerate(xs):
        total = total + (k + 1.0) * v
    xs.clear()
    xs.append(total * head)
    return xs[0] + len(xs)


def test_every_update_keeps_pythons_values_and_differentiates():
    value, gradient = srcad.value_and_grad(every_update)(X)
    assert value == every_update(X)
    assert_gradient_matches_finite_differences(every_update, (X,), 0)
    tangent = srcad.jvp(every_update, (X,), (np.ones(4),))[1]
    np.testing.assert_allclose(tangent, gradient.sum())


def test_the_list_is_left_as_the_forward_sweep_left_it_for_each_jacobian_row():
    def shuffled(x):
        xs = [x[0], x[1], x[2] * x[3]]
        xs.insert(0, xs.pop())
        xs.append(xs.pop(1) * 3.0)
        return np.stack(xs)
    expected = srcad.jacobian(shuffled, mode="fwd")(X)
    np.testing.assert_allclose(srcad.jacobian(shuffled, mode="rev")(X), expected)
    pullback = srcad.vjp(shuffled, X)[1]
    for row in np.eye(3):  # (the backward sweep runs again: the list is restored each time)
        np.testing.assert_allclose(pullback(row), row @ expected)


def test_a_list_of_indices_used_as_a_work_list_carries_no_derivative():
    def visits(x):
        todo = [0, 2]
        total = 0.0
        while todo:
            i = todo.pop()
            total = total + x[i] ** 2
            if i == 2:
                todo.insert(0, 1)
        return total
    np.testing.assert_allclose(srcad.grad(visits)(X), [1.0, -2.6, 4.2, 0.0])


def test_a_helper_with_a_list_of_its_own():
    def deepest(values):
        stack = list(values)
        best = stack.pop()
        while stack:
            best = np.maximum(best, stack.pop() * 0.5)
        return best

    def f(x):
        return deepest([x[0], x[1] ** 2, x[2]]) * x[3]
    assert_gradient_matches_finite_differences(f, (X,), 0)


AS_LIST, AS_DICT = list, dict  # (the builtins under names of the module's)


def test_lists_and_dicts_made_by_builtins_under_other_names_are_followed():
    def f(x):  # (no display of a list or dict: only names bound to the builtins make them)
        xs = AS_LIST((x[0], x[1] * 2.0, x[2]))
        first = xs.pop(0)
        xs.insert(1, first * x[3])
        d = AS_DICT(a=xs[0], b=xs[1])
        d.update(b=d["a"] * 3.0)
        return xs.pop() * d["b"] + d["a"]
    value, gradient = srcad.value_and_grad(f)(X)
    assert value == f(X)
    assert_gradient_matches_finite_differences(f, (X,), 0)
    np.testing.assert_allclose(srcad.jvp(f, (X,), (np.ones(4),))[1], gradient.sum())


def test_a_dicts_update_and_setdefault():
    def f(x):
        d = {"a": x[0], "b": x[1] * 2.0}
        d.update(a=d["b"], b=d["a"])                # (values read before any write)
        d.update({"c": np.sin(x[2])}, e=x[3] * 3.0)
        d.update({k: v * 2.0 for k, v in [("f", x[0])]})
        first = d.setdefault("a", x[1] * 100.0)     # (present: kept)
        d.setdefault("g", x[2] ** 2)
        table = dict(d)
        table.update(d)
        return first * d["c"] + d["b"] * d["e"] + d["f"] + d["g"] * table["a"]
    value, gradient = srcad.value_and_grad(f)(X)
    assert value == f(X)
    assert_gradient_matches_finite_differences(f, (X,), 0)
    np.testing.assert_allclose(srcad.jvp(f, (X,), (np.ones(4),))[1], gradient.sum())


def test_a_dicts_update_from_pairs_stays_refused():
    def f(x):
        d = {"a": x[0]}
        d.update([("a", x[1])])
        return d["a"]
    with pytest.raises(UnsupportedSyntaxError, match=r"d\.update"):
        srcad.grad(f)(X)


def test_a_dict_pop_keeps_its_meaning():
    def f(x):
        options = {"scale": 2.0, "shift": 1.0}
        scale = options.pop("scale")
        return np.sum(x * scale + options.pop("shift", 0.0))
    np.testing.assert_allclose(srcad.grad(f)(X), np.full(4, 2.0))


def test_a_list_passed_in_is_refused_with_the_fix():
    def pops_its_argument(xs):
        xs.pop()
        return xs[0] * 2.0

    with pytest.raises(UnsupportedSyntaxError, match=r"items = list\(xs\)"):
        srcad.grad(lambda x: pops_its_argument([x, x]))(1.0)

    def takes_from_its_argument(xs):
        return xs.pop() * 2.0
    with pytest.raises(UnsupportedSyntaxError, match=r"items = list\(xs\)"):
        srcad.grad(lambda x: takes_from_its_argument([x, x]))(1.0)


def test_a_second_name_for_the_list_read_after_an_update_is_refused():
    def f(x):
        xs = [x[0], x[1]]
        same = xs
        xs.pop()
        return same[0] * 2.0
    with pytest.raises(UnsoundAliasingError, match="`xs` may share memory with `same`"):
        srcad.grad(f)(X)


def test_del_of_a_dict_key_stays_refused():
    def f(x):
        d = {"a": x[0], "b": x[1]}
        del d["a"]
        return d["b"]
    with pytest.raises(UnsupportedSyntaxError, match="`del` of an element"):
        srcad.grad(f)(X)


def test_the_program_shows_the_updates_and_their_undoing():
    def f(x):
        xs = [x[0], x[1]]
        first = xs[0] * xs[1]  # (its adjoint reads `xs` as the updates undone leave it)
        v = xs.pop(0)
        xs.insert(0, v * 2.0)
        return xs[0] * xs[1] + first
    assert_gradient_matches_finite_differences(f, (X,), 0)
    source = srcad.grad(f).source
    for text in ("popped(xs, 0)", "list_insert(xs, 0,", "restore_inserted(xs, 0)",
                 "restore_popped(xs, 0,", "popped_adjoint("):
        assert text in source


def test_pops_in_tests_and_comparisons_are_operations_too():
    def f(x):
        xs = [x, x ** 2, 2.0 * x, 3.0 * x, 4.0 * x]
        total = 0.0
        while xs.pop() > 2.5 * x:
            total = total + xs[-1] * x
        if xs.pop() > 0.0 and len(f"{xs.pop(0) * 1.0:.2f}") > 1:
            total = total + np.sin(x)
        return total + len(xs)
    value, gradient = srcad.value_and_grad(f)(1.5)
    assert value == f(1.5)
    assert_gradient_matches_finite_differences(f, (1.5,), 0)
    np.testing.assert_allclose(srcad.jvp(f, (1.5,), (1.0,))[1], gradient)


def test_a_pop_python_might_skip_in_a_chained_comparison_is_refused():
    def f(x):
        xs = [x, 2.0 * x]
        return 1.0 < xs[0] < xs.pop()
    with pytest.raises(UnsupportedSyntaxError, match="chained comparison"):
        srcad.grad(f)(1.5)


def test_a_loop_over_the_list_it_pops_follows_pythons_iteration():
    def f(x):
        xs = [x, 2.0 * x, 3.0 * x, 4.0 * x, 5.0 * x]
        total = 0.0
        for v in xs:                   # (Python's iterator sees the list shrink)
            total = total + v * xs.pop()
        return total + xs[-1] * 7.0
    assert srcad.value_and_grad(f)(1.5)[0] == f(1.5)
    assert_gradient_matches_finite_differences(f, (1.5,), 0)


# ---- found by review: each was a wrong number or a crash
def test_an_array_times_a_list_is_no_list():
    def column_sort(x):
        m = x.reshape(4, 1) * [1.0]   # an array: its `sort` sorts each row
        m.sort()
        return m[0, 0] * 1.0 + m[3, 0] * 4.0
    with pytest.raises(UnsupportedSyntaxError, match=r"np\.sort"):
        srcad.grad(column_sort)(X)

    def buffer(x):
        slots = [0.0] * len(x)        # a list: a list times a count
        slots.insert(0, x[0] * 2.0)
        return slots[0] + slots.pop() + x[1]
    assert_gradient_matches_finite_differences(buffer, (X,), 0)


def test_a_pop_in_the_index_of_a_del():
    def f(x):
        zs = [x[0], x[1]]
        ys = [x[0], x[1], x[2], x[3]]
        del ys[int(zs.pop() > 0)]
        return ys[0] * ys[1] + ys[2] * 3.0 + zs[-1]
    assert srcad.value_and_grad(f)(X)[0] == f(X)
    assert_gradient_matches_finite_differences(f, (X,), 0)
    direction = np.array([0.3, 0.5, 0.8, 1.1])
    np.testing.assert_allclose(srcad.jvp(f, (X,), (direction,))[1],
                               srcad.grad(f)(X) @ direction)


def test_pops_inside_a_statement_made_for_its_effect(capsys):
    def f(x):
        xs = [x[0], x[1], x[2]]
        print(xs.pop() * 2.0)
        xs.pop() * 2.0
        return xs[-1] * 2.0 + len(xs)
    np.testing.assert_allclose(srcad.grad(f)(X), [2.0, 0.0, 0.0, 0.0])
    assert capsys.readouterr().out.strip() == str(X[2] * 2.0)


def test_a_returned_list_is_left_as_the_function_returned_it():
    def loss_and_list(x):
        xs = [x[0], x[1] * 2.0, x[2]]
        v = xs.pop()
        xs.insert(0, v * 3.0)
        return v * xs[1], xs
    expected = loss_and_list(X)[1]
    (_, kept), _ = srcad.value_and_grad(loss_and_list, has_aux=True)(X)
    assert kept == expected
    out, pullback = srcad.vjp(lambda x: loss_and_list(x)[1], X)
    pullback([1.0, 10.0, 100.0])
    assert out == expected


def test_a_pop_inside_a_generator_expression_is_refused():
    def f(x):
        xs = [x, 2.0 * x, 3.0 * x]
        found = any(xs.pop() > 2.5 for _ in range(3))   # (Python stops at the first)
        return x * len(xs) * found
    with pytest.raises(UnsupportedSyntaxError, match="generator expression"):
        srcad.grad(f)(1.0)


# ---- `d[k] += v` updates the item in place, as Python does --------------------------------------
def dict_item_seen_through_a_view(x):
    d = {"t": x * 1.0}
    d["v"] = d["t"][1:]
    d["t"] += 1.0  # (Python writes into the array `d["v"]` views)
    return np.sum(d["v"] * x[1:])


def list_item_seen_under_another_name(x):
    xs = [x * 1.0, x * 2.0]
    first = xs[0]
    xs[0] += x
    return np.sum(first * x)


def test_an_item_updated_in_place_that_is_shown_elsewhere_is_refused():
    with pytest.raises(UnsoundAliasingError, match=r"also holds it elsewhere \(or a view"):
        srcad.grad(dict_item_seen_through_a_view)(X)
    with pytest.raises(UnsoundAliasingError, match="share memory with `first`"):
        srcad.grad(list_item_seen_under_another_name)(X)


def test_items_updated_in_place_are_differentiated_in_every_mode():
    def f(x):
        state = {"h": x * 1.0, "n": 0}
        steps = [x * 0.5, np.sin(x)]
        for k in range(3):
            state["h"] += np.tanh(state["h"]) * x
            state["n"] += 1
            steps[k % 2] *= 1.1
        return np.sum(state["h"] * steps[0] + steps[1]) * state["n"]
    value, gradient = srcad.value_and_grad(f)(X)
    assert value == f(X)
    assert_gradient_matches_finite_differences(f, (X,), 0)
    tangent = srcad.jvp(f, (X,), (np.ones(4),))[1]
    np.testing.assert_allclose(tangent, gradient.sum())
    hessian = srcad.hessian(f)(X)
    np.testing.assert_allclose(hessian, hessian.T, rtol=1e-9, atol=1e-12)
