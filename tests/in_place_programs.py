"""Programs with in-place updates and lists built in loops (source must live in a file)."""
import numpy as np


def fill_buffer(x):
    out = np.zeros(4)
    for i in range(4):
        out[i] = np.sin(x[i]) * x[i]
    return np.sum(out ** 2)


def empty_buffer_rows(x, W):
    states = np.empty((3, 2))
    h = x
    for t in range(3):
        h = np.tanh(W @ h)
        states[t] = h
    return np.sum(states ** 2)


def slice_updates(x, w):
    y = x * 1.0
    y[1:] += w[1:] * y[:-1]
    y[0] = 3.0
    y[y > 0.5] = 0.5 * w[y > 0.5]
    x2 = np.copy(x)
    x2 *= 2.0
    return np.sum(y * x2)


def overwrite_in_loop(x):
    y = x * 1.0
    for k in range(3):
        y[k % 2] = y[k % 2] * y[2] + x[k]
    return np.sum(y ** 2)


def augmented_on_parameter(x):
    x[0] *= 3.0
    x[1:] -= 0.5
    return np.sum(x ** 2)


def matrix_elements(a):
    m = np.zeros((2, 2))
    m[0, 0] = a[0] * a[1]
    m[1, :] = a
    m[:, 1] += a ** 2
    return np.sum(m @ m)


def lists_in_loops(x, W):
    hs = []
    h = x
    for i in range(3):
        h = np.tanh(W @ h)
        hs.append(h)
    squares = [np.sum(v ** 2) for v in hs if np.sum(v) > -10]
    return sum(squares) + sum(np.sum(v) for v in hs) + hs[1][0]


def stacked_states(x, W):
    hs = [x]
    for i in range(3):
        hs.append(np.tanh(W @ hs[-1]))
    return np.sum(np.stack(hs) ** 2) + np.sum(np.concatenate(hs[1:]))


def list_elements_replaced(a, b):
    values = [a, b, a * b]
    values[1] = values[0] * 3.0
    return values[1] + values[2]


def nested_comprehension(x):
    pairs = [x[i] * x[j] for i in range(3) for j in range(i, 3)]
    return sum(pairs)


def view_then_write(x):
    y = x * 2.0
    row = y[:2]
    y[0] = 5.0
    return np.sum(row * x)


def alias_then_augment(x):
    y = x * 2.0
    z = y
    y += 1.0
    return np.sum(z)


def copy_into(x, y):
    np.copyto(y, x)
    return np.sum(y)


def sorts_in_place(x):
    y = x * 1.0
    y.sort()
    return np.sum(y)


R = np.random.default_rng(3)
X, W = np.array([0.3, -0.2]), np.array([[0.5, 0.1], [-0.3, 0.8]])
def overlapping_windows(x):
    y = np.zeros(6)
    for i in range(4):           # each window overwrites part of the one before: the
        y[i:i + 3] = x[i:i + 3] * y[i:i + 3] + x[i]  # cotangent of a window is a copy
    return np.sum(y ** 2) + y[2] * y[3]


def buffer_returned_whole(x):
    y = np.zeros((3, 2))
    for i in range(3):
        y[i] = np.sin(x[i] * x[:2])  # the output's own adjoint (the caller's cotangent) is
    return y                      # copied before a region of it is cleared


def chained_element_writes(x):
    y = np.zeros(4)
    y[0] = y[3] = x[0] * x[1]
    z = y[1] = np.sin(x[2])
    y[2] = w = z * x[3]
    return np.sum(y ** 2) + z * w


def list_recurrence(x, w):
    ys = [x[0], x[1], x[2], 0.0, 0.0]
    for i in range(3, 5):
        ys[i] = ys[i - 1] * w + ys[i - 3]     # list elements replaced in a loop
    for i in range(1, 5):
        ys[i] = ys[i] + 0.5 * ys[i - 1] * ys[i]
    return sum(y * y for y in ys) + ys[4]


def comprehension_over_a_tuple(x, w):
    rows = tuple(x * k for k in range(4))
    scores = [np.tanh(np.sum(w * r)) for r in rows]
    picked = [scores[i] * scores[i - 1] for i in range(1, len(scores))]
    return sum(picked) + max(scores)


def list_output(x):
    parts = []
    for k in range(3):
        parts.append(np.sin(x * k))
    return parts


def buffer_rewritten_after_its_loop(x):
    y = np.zeros(4)
    for i in range(4):
        y[i] = x[i] ** 2
    y[1] = y[0] * 3.0           # the backward sweep puts y[1]'s old value back into y
    return y, {"rows": [y[1:]]}


def laplacian_energy(u):
    lap = np.empty(u.shape[0])
    lap[0] = lap[-1] = 0.0
    for i in range(1, u.shape[0] - 1):
        lap[i] = u[i - 1] - 2 * u[i] + u[i + 1]
    return np.sum(lap ** 2)


def copy_method_then_writes(x):
    y = x.copy()                  # x is differentiated, so an array: y is a new one
    z = (x * 2.0).copy()
    for i in range(2):
        y[i] = y[i] * z[i + 1]
        z[i] = y[i] - x[i]
    return np.sum(y * x) + np.sum(z)


def copy_of_a_list_then_write_into_an_item(x, rows):
    copied = rows.copy()          # a list's copy holds the same arrays: still refused
    first = copied[0]
    first[0] = x[0]
    return np.sum(rows[0]) * x[1]


def appended_recurrence(x):
    states = [x[0]]               # a new list: appending writes the list, not x (this
    for i in range(1, x.shape[0]):  # was refused as a write into x)
        states.append(states[-1] * x[i] + 1.0)
    return states[-1] ** 2 + sum(states)


def view_kept_in_a_list_then_written(x):
    y = x * 1.0
    windows = []
    windows.append(y[0:2])        # the list holds a view of y
    first = windows[0]
    first[0] = 5.0                # writes y: refused (it was a silently wrong gradient)
    return np.sum(y * y)


def list_of_a_list_then_written(x):
    y = x * 1.0
    rows = list([y])              # a new list holding y itself
    first = rows[0]
    first[0] = 5.0
    return np.sum(y * y)


def _fill_first(buffer, x):
    buffer[0] = x[0] * 2.0        # writes into the caller's array
    return np.sum(buffer)


def reads_a_buffer_a_helper_filled(x):
    b = np.zeros(2)
    s = _fill_first(b, x)
    return s + np.sum(b * x)      # b changed under the caller (was a wrong gradient)


def _accumulate(state, x):
    state += x                    # in place on the caller's array (a wrong value, too)
    return np.sum(state)


def accumulates_through_a_helper(x):
    state = np.zeros(3)
    return _accumulate(state, x) * _accumulate(state, x)


def _zero_first(u):
    u[0] = 0.0
    return u                      # the array it wrote: the caller's, not a copy


def returns_the_array_it_wrote(x):
    b = x * 2.0
    c = _zero_first(b)
    return np.sum(c * b)


def _apply_boundary(u):
    u[0] = 0.0
    u[-1] = u[-2] * 0.5


def _diffuse(u, dt):
    flux = u[1:] - u[:-1]
    u[1:-1] += dt * (flux[1:] - flux[:-1])
    _apply_boundary(u)            # a helper's helper writes into the same array
    return np.sum(flux ** 2)


def simulates_with_helpers_that_write(u0, dt):
    """A simulator whose steps update the state in place in helpers."""
    u = u0 * 1.0
    energy = 0.0
    for _ in range(3):
        energy = energy + _diffuse(u, dt)
    _apply_boundary(u)
    return np.sum(u ** 2) + energy


def _advance(t, dt):
    t += dt                       # on a number, `+=` only rebinds the name
    return t * t


def advances_a_number_in_a_helper(x):
    return _advance(x[0], x[1]) + _advance(1.5, x[1])


def dict_built_by_key(x):
    d = {}
    d["a"] = x[0] ** 2            # a new key (crashed: the dict had no old value to save)
    d["b"] = {"c": x * 1.0}
    d["a"] += x[1] ** 2
    return d["a"] * x[1] + np.sum(d["b"]["c"] ** 2)


def dict_values_replaced(x):
    d = {"a": x * 1.0, "b": x ** 2, 0: x[0]}
    d["a"] = d["a"] * 2.0         # crashed: the dict's adjoint was copied as an array
    d[0] = d[0] * x[1]
    return np.sum(d["a"] * d["b"]) + d[0]


def dict_filled_in_a_loop(x):
    out = {}
    for name in ["p", "q"]:
        out[name] = x * (2.0 if name == "p" else 3.0)
    return np.sum(out["p"] * out["q"])


def list_of_constants_filled_then_scanned(x):
    partial = [0.0] * 3           # a list of numbers, filled, then read back (crashed: the
    for i in range(3):            # list's adjoint was copied into an array)
        partial[i] = x[i] ** 2
    for i in range(1, 3):
        partial[i] = partial[i] + partial[i - 1]
    return sum(partial)


def nested_comprehension(x):
    """Each trip makes and fills a new inner list, then the outer list holds it."""
    m = [[x[i] * x[j] for j in range(3)] for i in range(3)]
    return m[0][1] + m[1][1] * m[2][0] + np.sum(np.stack(m[2]) ** 2)


def buffer_per_trip(x):
    """A new buffer each trip, written, then kept in a list: its writes are its own."""
    out = []
    for i in range(3):
        buf = np.zeros(2)
        buf[0] = x[i] ** 2
        buf[1] = x[i] * 3.0
        out.append(buf)
    return np.sum(np.stack(out) ** 2)


def one_buffer_kept_each_trip(x):
    """The same buffer is written and kept every trip: the list holds it three times."""
    out = []
    buf = np.zeros(2)
    for i in range(3):
        buf[0] = x[i] ** 2
        out.append(buf)
    return np.sum(np.stack(out) ** 2)


def list_kept_before_filled(x):
    outer = []
    for i in range(2):
        inner = []
        outer.append(inner)
        inner.append(x[i] * 2.0)
    return outer[0][0] * outer[1][0]


def reversed_by_itself(x):
    """`y[::-1] = y`: NumPy reads the right side before writing (it was a zero gradient)."""
    y = x * 1.0
    y[::-1] = y
    y[[2, 0, 1]] = y
    return np.sum(y * np.arange(3.0))


def written_after_a_shifted_copy(x):
    """`z = y - 1.0` shares y's tangent in forward mode: a write into y must not reach it."""
    y = x * 1.0
    z = y - 1.0
    kept = y.copy()
    y[0] = 5.0
    return np.sum(z * x) + np.sum(kept ** 2 * y)


def flipped_then_written(x):
    y = x * 2.0
    r = np.flip(y)  # a view of y
    y[0] = 0.0
    return np.sum(r * np.arange(1.0, 4.0))


def written_after_a_conversion(x):
    """Methods that make new arrays: writing into their results leaves `x` as it was."""
    y = x.astype(float)
    y[0] = 1.0
    c = x.cumsum()
    c[-1] = c[0] * 3.0
    m = (x * x).reshape(1, -1).sum(axis=0)
    m[1] = 0.0
    f = x.flatten()
    f[2] = 0.5
    r = x.reshape(-1).copy()
    r[0] = r[1] * r[2]
    return np.sum(y * x) + np.sum(c * x) + np.sum(m * x) + np.sum(f * x) + np.sum(r * x)


ELEMENTS = np.array([0, 2, 2, 1, 0])


def assembles_with_add_at(x, w):
    """np.add.at and np.subtract.at add into an array in place, repeated indices adding up
    (as a finite-element assembly does)."""
    K = np.zeros(3)
    np.add.at(K, ELEMENTS, x * w)
    np.subtract.at(K, [1, 1], w[:2] ** 2)
    for e in range(2):
        np.add.at(K, [e, e + 1], np.sin(x[e]))
    return np.sum(K ** 2) + K[2] * x[0]


def converted_without_a_copy_then_written(x):
    y = x * 2.0
    z = y.astype(float, copy=False)  # y itself: it already holds floats
    z[0] = 0.0
    return np.sum(y * x)


CORPUS = [
    (reads_a_buffer_a_helper_filled, (np.array([0.5, 1.5]),), 0),
    (accumulates_through_a_helper, (np.array([0.5, 1.5, 2.0]),), 0),
    (simulates_with_helpers_that_write, (np.array([0.3, 1.0, -0.5, 0.8, 0.2]), 0.1), 0),
    (assembles_with_add_at, (np.array([0.3, -1.2, 0.5, 2.0, 0.7]),
                             np.array([1.0, 0.5, -0.3, 0.8, 1.1])), (0, 1)),
    (written_after_a_conversion, (np.array([0.5, -1.0, 2.0]),), 0),
    (fill_buffer, (np.array([0.1, 0.2, 0.3, 0.4]),), 0),
    (empty_buffer_rows, (X, W), (0, 1)),
    (slice_updates, (np.array([0.1, 0.9, 0.3, 0.7]), np.array([1.0, 2.0, 3.0, 4.0])), (0, 1)),
    (overwrite_in_loop, (np.array([0.5, -0.3, 0.8]),), 0),
    (augmented_on_parameter, (np.array([0.5, -0.3, 0.8]),), 0),
    (matrix_elements, (np.array([0.7, -1.2]),), 0),
    (lists_in_loops, (X, W), (0, 1)),
    (stacked_states, (X, W), (0, 1)),
    (list_elements_replaced, (1.5, -0.5), (0, 1)),
    (nested_comprehension, (np.array([0.5, -1.0, 2.0]),), 0),
    (overlapping_windows, (np.linspace(0.3, 1.1, 6),), 0),
    (laplacian_energy, (np.linspace(0.0, 1.0, 9) ** 2,), 0),
    (chained_element_writes, (np.array([0.5, -1.0, 2.0, 0.7]),), 0),
    (copy_method_then_writes, (np.array([0.5, -1.0, 2.0]),), 0),
    (list_recurrence, (np.array([0.5, -1.0, 2.0]), 0.7), (0, 1)),
    (appended_recurrence, (np.array([0.5, 1.2, -0.3, 2.0]),), 0),
    (advances_a_number_in_a_helper, (np.array([0.5, 1.2]),), 0),
    (dict_built_by_key, (np.array([0.7, 1.3]),), 0),
    (dict_values_replaced, (np.array([0.7, 1.3]),), 0),
    (dict_filled_in_a_loop, (np.array([0.7, 1.3]),), 0),
    (list_of_constants_filled_then_scanned, (np.array([0.79, 0.93, 0.85]),), 0),
    (comprehension_over_a_tuple, (np.array([0.5, -1.0, 2.0]), np.array([0.3, 0.1, -0.2])),
     (0, 1)),
    (nested_comprehension, (np.array([0.5, -1.0, 2.0]),), 0),
    (buffer_per_trip, (np.array([0.5, -1.0, 2.0]),), 0),
    (reversed_by_itself, (np.array([0.5, -1.0, 2.0]),), 0),
    (written_after_a_shifted_copy, (np.array([0.5, -1.0, 2.0]),), 0),
]



def _set_first(u, v):
    u[0] = v


def sets_with_an_expression(x):
    u = x ** 2
    _set_first(u, 2.0 * x[0])     # (its argument computed in the statement of the call)
    return np.sum(u ** 3)


def _set_both(a, b):
    a[0] = 1.0
    b[1] = 2.0


def passes_one_array_twice(x):
    u = x * 1.0
    _set_both(u, u)
    return np.sum(u * x)


def _zero_and_pair(u):
    u[0] = 0.0
    return u, 1.0                 # the array it wrote, inside a tuple


def keeps_the_array_a_tuple_returned(x):
    u = x * 1.0
    a, c = _zero_and_pair(u)
    u[1] = 5.0
    return np.sum(a * x) * c


CORPUS += [(sets_with_an_expression, (np.array([0.3, -0.2, 0.5, 0.9]),), 0)]


# ---- a list or dict made in the function used as memory: a list's pop, insert, remove, del,
# clear, reverse, sort; a dict's update and setdefault
def explores_with_a_stack(x):
    stack = [x * 1.0]
    total = 0.0
    while stack:
        v = stack.pop()
        total = total + np.sum(np.sin(v))
        if np.sum(v * v) > 0.3:
            stack.append(v * 0.5)
            stack.append(v[::-1] * 0.25)
    return total


def queue_in_order(x, w):
    queue = [x, w * x, np.tanh(w)]
    out = 0.0
    step = 1.0
    while queue:
        head = queue.pop(0)
        out = out + step * np.sum(head ** 2)
        step = step + 1.0
        if step < 4.0:
            queue.insert(1, head * w)
    return out


def inserted_where_python_puts_it(x):
    items = [x[0], x[1]]
    items.insert(-1, x[2] ** 2)     # before the last
    items.insert(10, x[0] * x[1])   # past the end: appended
    items.insert(-10, np.sin(x[2]))  # before the start: first
    return items[0] * 1.0 + items[1] * 2.0 + items[2] * 3.0 + items[3] * 4.0 \
        + items[4] * 5.0


def removed_and_deleted(x):
    xs = [x[0] * 2.0, x[1], x[2] ** 2, x[0] + x[1], np.exp(x[2])]
    del xs[1]
    first = xs[0]
    xs.remove(first)
    del xs[::2]
    return xs[0] * first + np.sum(x) * len(xs)


def reversed_sorted_cleared(x):
    values = [x[0] * 3.0, x[1] ** 2, x[2] - 1.0]
    values.reverse()
    values.sort(key=lambda v: -v)
    top = values[0] * 10.0 + values[1] * 2.0 + values[2]
    values.clear()
    values.append(top * x[1])
    return values[0] + top


def popped_then_written(x):
    rows = [x * 1.0, x * 2.0, x ** 2]
    last = rows.pop()
    rows.insert(1, last * x)
    last = last * 1.0
    last[0] = 0.0                   # (a copy of the popped array, written in place)
    return np.sum(rows[0] * rows[1]) + np.sum(rows[2]) + np.sum(last)


def dict_updated_in_a_loop(x):
    state = {"h": x * 0.5, "total": 0.0}
    for k in range(3):
        state.update(h=np.tanh(state["h"] * 1.5), step=float(k))
        state.setdefault("first", state["h"] * 1.0)
        state.update({"total": state["total"] + np.sum(state["h"] ** 2)})
    return state["total"] + np.sum(state["first"]) * state["step"]


CORPUS += [
    (dict_updated_in_a_loop, (np.array([0.5, -1.0, 2.0]),), 0),
    (explores_with_a_stack, (np.array([0.7, -0.4]),), 0),
    (queue_in_order, (np.array([0.5, -1.0, 2.0]), np.array([0.3, 0.1, -0.2])), (0, 1)),
    (inserted_where_python_puts_it, (np.array([0.5, -1.0, 2.0]),), 0),
    (removed_and_deleted, (np.array([0.5, -1.0, 2.0]),), 0),
    (reversed_sorted_cleared, (np.array([0.5, -1.3, 2.1]),), 0),
    (popped_then_written, (np.array([0.5, -1.0, 2.0]),), 0),
]


# ---- user objects as memory (records: kernels/pytrees.py) -----------------------------------
class Scratch:
    """A plain class without `__init__`: attributes set after it is made."""


class Accumulator:
    calls = 0  # (a class attribute: `self.calls += 1` reads it, then sets the instance's)

    def __init__(self, start, scale=1.0):
        self.total = start * scale
        self.history = []

    def add(self, value):
        self.total = self.total + value
        self.history.append(value)
        self.calls += 1
        return self.total


class Dense:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def __call__(self, h):
        return np.tanh(self.W @ h + self.b)


class Stack:
    def __init__(self, widths, params):
        self.layers = []
        for k in range(len(widths) - 1):
            self.layers.append(Dense(params[2 * k], params[2 * k + 1]))

    def forward(self, h):
        for layer in self.layers:
            h = layer(h)
        return h


class Integrator:
    def __init__(self, y, dt):
        self.y = y
        self.t = 0.0
        self.dt = dt
        self.steps = 0

    def step(self, rate):
        self.y = self.y + self.dt * rate * np.sin(self.y)
        self.t += self.dt
        self.steps += 1


def attributes_written_and_read_back(x):
    s = Scratch()
    s.total = 0.0
    s.previous = x
    for k in range(4):
        s.total = s.total + np.sin(s.previous) * k
        s.previous = s.previous * 1.1
    if np.sum(x) > 0:
        s.extra = s.total ** 2
    else:
        s.extra = s.total * 3.0
    return np.sum(s.extra + s.total)


def augmented_attributes(x):
    s = Scratch()
    s.count = 0
    s.value = np.zeros(3)
    while s.count < 3:
        s.value += x * (s.count + 1)
        s.value *= x
        s.count += 1
    return np.sum(s.value)


def methods_update_their_object(x):
    acc = Accumulator(x[0], scale=2.0)
    for v in x[1:]:
        acc.add(v * v)
    last = acc.add(np.cos(x[0]))
    return acc.total * last + sum(acc.history) + acc.calls


def layers_built_and_called(W1, b1, W2):
    net = Stack([2, 2, 2], [W1, b1, W2, b1 * 0.5])
    return np.sum(net.forward(np.array([0.3, -0.4])) ** 2)


def integrates_with_an_object(y0, rate):
    ode = Integrator(y0, 0.1)
    while ode.t < 0.45:
        ode.step(rate)
    return np.sum(ode.y) * ode.steps


def objects_made_in_a_loop(x):
    made = []
    for i in range(3):
        o = Scratch()
        o.v = x[i] * (i + 1)
        o.v = o.v * x[0]
        made.append(o)
    return sum(o.v for o in made)


CORPUS += [
    (objects_made_in_a_loop, (np.array([0.7, -0.4, 1.3]),), 0),
    (attributes_written_and_read_back, (np.array([0.5, -0.2, 0.4]),), 0),
    (augmented_attributes, (np.array([0.5, -1.0, 2.0]),), 0),
    (methods_update_their_object, (np.array([0.5, -1.0, 2.0]),), 0),
    (layers_built_and_called, (np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([0.1, 0.2]),
                               np.array([[0.3, -0.7], [0.9, 0.2]])), (0, 1, 2)),
    (integrates_with_an_object, (np.array([0.5, 1.5]), 0.8), (0, 1)),
]


def float_parameter_multiplied_in_place_in_a_branch(x, y):
    # `x` is rebound only to products of itself: no fixpoint may call it a list (it was one
    # of `sequences_as_arrays`, then `x *= ...` was refused as sharing memory with `a`)
    a = x + 0.3 * y
    if x > 0.5:
        y = 1.0 * x
        x *= np.tanh(1.0 * a)
    a = 1.0 * a
    return x * a + y


CORPUS += [(float_parameter_multiplied_in_place_in_a_branch, (0.7, -0.2), (0, 1)),
           (float_parameter_multiplied_in_place_in_a_branch, (0.2, -0.2), (0, 1))]


def stencil_read_each_step(k, start):
    """A stencil in place whose steps read `u` before writing it: its adjoint needs `u` back
    (where the benchmark's `heat_equation` needs nothing of `u` as it was)."""
    u = start.copy()
    total = 0.0
    for _ in range(6):
        total = total + np.sum(u * u)
        u[1:-1] = k * u[1:-1] + 0.5 * u[2:]
    return total + np.sum(u)
