"""gradient_tape: `GradientTape`, TensorFlow's contract over NumPy → gradients, Jacobians.

Inside `with GradientTape() as tape:`, operations on tensors the tape tracks are recorded as
nodes (`dispatch`); a tensor is tracked once watched (`tape.watch(x)`, or a trainable
Variable read while `watch_accessed_variables`) and every result computed from a tracked
tensor is tracked in turn. A watched tensor is the independent variable as it was watched:
an in-place write into it later (NumPy aliasing) makes a new version that the derivative is
not taken with respect to. `gradient`, `jacobian` and `batch_jacobian` run the reverse sweep
(`backward`) over those nodes. A non-persistent tape serves one such call and frees its
nodes during it; a persistent one serves any number until it is reset or deleted.
"""
from __future__ import annotations

import contextlib
import enum
import math
import warnings
import weakref
from typing import Any, ContextManager, TypeVar

import numpy as np

from srcad.errors import UsageError
import srcad.tape.backward as backward
import srcad.tape.buffers as buffers
import srcad.tape.nest as nest
from srcad.tape.dispatch import new_tensor, value_of
from srcad.tape.errors import (BatchDependenceError, TapeStateError, TapeTypeError,
                               caller_location)
from srcad.tape.state import RECORDING
from srcad.tape.tensor import Tensor
from srcad.tracebacks import api_boundary


T = TypeVar("T")


class UnconnectedGradients(str, enum.Enum):
    """What `gradient` returns for a source the target does not depend on."""
    NONE = "none"
    ZERO = "zero"


class GradientTape:
    """Records the operations on watched tensors, for their derivatives (TensorFlow's API).

    Plain NumPy calls on tensors are recorded through NumPy's dispatch protocols, so code
    source mode differentiates also runs under a tape.

    Parameters
    ----------
    persistent : bool
        Allow several `gradient` and `jacobian` calls (by default, one).
    watch_accessed_variables : bool
        Watch the trainable Variables read while recording.

    Examples
    --------
    >>> x = srcad.Variable(np.array([0.0, 1.0]))
    >>> with srcad.GradientTape(persistent=True) as tape:
    ...     y = np.sin(x) * 2.0
    ...     total = np.sum(y)
    >>> tape.gradient(total, x).numpy().round(4)
    array([2.    , 1.0806])
    >>> tape.jacobian(y, x).numpy().round(4)
    array([[2.    , 0.    ],
           [0.    , 1.0806]])
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self._persistent = bool(persistent)
        self._watch_accessed_variables = bool(watch_accessed_variables)
        self._nodes = []        # the recorded operations, oldest first (see `dispatch`)
        self._tracked = set()   # ids of the watched tensors and of everything computed from them
        self._variables = {}    # id -> watched Variable
        self._watched = {}      # id(tensor) -> (weak reference, the version it was watched at)
        self._recording = False
        self._consumed = False  # a non-persistent tape after its one gradient

    # ---- recording ----------------------------------------------------------------------------
    def __enter__(self) -> GradientTape:
        if self._recording:
            raise UsageError("this tape is already recording; a tape cannot be entered again "
                             "while it is active.", caller_location(),
                             fix="use a second GradientTape.")
        if self._consumed:  # as in TensorFlow: entering a used tape starts a new recording
            self.reset()
        self._start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._recording:
            self._stop()

    def _start(self):
        RECORDING.tapes.append(self)
        self._recording = True
        buffers.tape_started()

    def _stop(self):
        tapes = RECORDING.tapes
        for position in range(len(tapes) - 1, -1, -1):
            if tapes[position] is self:
                del tapes[position]
                break
        self._recording = False
        buffers.tape_stopped()

    def watch(self, tensor: T) -> T:
        """Track `tensor` (a tensor, a Variable, or a list/tuple/dict of them); returns it.

        As in TensorFlow, a tensor of integers or booleans is not tracked (its gradient is
        None) and a RuntimeWarning says so: it has no derivative to give."""
        if self._consumed:
            raise TapeStateError("watch() on a non-persistent GradientTape whose gradient was "
                                 "already computed.", caller_location(),
                                 fix="use a new tape (or enter this one again, which starts "
                                 "a new recording).")
        for leaf in nest.flatten(tensor):
            if not isinstance(leaf, Tensor):
                raise UsageError(f"Passed in object of type {type(leaf)}, not srcad.Tensor: "
                                 "a tape watches tensors.", caller_location(),
                                 fix="wrap the value first: `x = srcad.constant(x)`.")
            differentiable = _differentiable_dtype(leaf)
            if not differentiable:
                warnings.warn(f"The dtype of the watched tensor must be floating (e.g. "
                              f"float64), got {leaf.dtype}: its gradient will be None. Make "
                              "it with a float value, e.g. `srcad.constant(x, dtype=float)`.",
                              RuntimeWarning, stacklevel=2)
            if hasattr(leaf, "_trainable"):
                self._watch_variable(leaf)
            elif differentiable:
                self._tracked.add(leaf._id)
                self._watched[id(leaf)] = (weakref.ref(leaf), leaf._id)
        return tensor

    def _watch_variable(self, variable):
        """Listed by `watched_variables`; tracked if its dtype has a derivative."""
        self._variables.setdefault(variable._id, variable)
        if _differentiable_dtype(variable):
            self._tracked.add(variable._id)

    def watched_variables(self) -> tuple:
        """The Variables this tape watches, in the order they were created."""
        return tuple(self._variables[i] for i in sorted(self._variables))

    def stop_recording(self) -> ContextManager[None]:
        """A block whose operations this tape does not record (RuntimeError if the tape is
        not recording, checked here rather than on entering, so the error names the call)."""
        if not self._recording:
            raise TapeStateError("Trying to stop recording a tape which is not recording.",
                                 caller_location(),
                                 fix="call stop_recording() inside the tape's `with` block.")
        return self._paused()

    @contextlib.contextmanager
    def _paused(self):
        self._stop()
        try:
            yield
        finally:
            self._start()

    def reset(self) -> None:
        """Forget everything recorded and watched, as exiting and entering a new tape would."""
        self._nodes.clear()
        self._tracked.clear()
        self._variables.clear()
        self._watched.clear()
        self._consumed = False

    # ---- derivatives ------------------------------------------------------------------------
    @api_boundary
    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: UnconnectedGradients | str = UnconnectedGradients.NONE
                 ) -> Any:
        """Gradients of `target` (a tensor or nest of tensors, summed; a non-scalar target
        means its sum, weighted by `output_gradients` if given: a nest like `target`, each
        of its target's shape) with respect to each tensor in the nest `sources`, in the
        same structure. Unconnected sources give None, or
        zeros with `unconnected_gradients="zero"`."""
        zeros_if_unconnected = _unconnected_mode(unconnected_gradients)
        if target is None:
            raise TapeTypeError("Argument `target` should be a tensor or a nest of tensors to "
                                "differentiate, but received None.", caller_location(),
                                fix="pass the value computed under the tape.")
        self._begin_derivative()
        flat_targets, flat_sources = nest.flatten(target), _sources(sources)
        seeds = {}
        for leaf, weight in zip(flat_targets, _weights(output_gradients, flat_targets)):
            if isinstance(leaf, Tensor):
                seed = _ones_like(leaf._value) if weight is None else _seed_value(weight)
                previous = seeds.get(leaf._id)
                seeds[leaf._id] = seed if previous is None else previous + seed
        ids = self._versions(flat_sources)
        cotangents = self._sweep(seeds, ids)
        results = [_finish(cotangents.get(i), s, zeros_if_unconnected)
                   for i, s in zip(ids, flat_sources)]
        self._end_derivative()
        return nest.pack_as(sources, results)

    @api_boundary
    def jacobian(self, target: Any, sources: Any,
                 unconnected_gradients: UnconnectedGradients | str = UnconnectedGradients.NONE,
                 parallel_iterations: int | None = None, experimental_use_pfor: bool = True
                 ) -> Any:
        """For each source, the Jacobian of the tensor `target` (one tensor, not a nest):
        shape `target.shape + source.shape`. (The last two arguments are accepted for
        TensorFlow compatibility and ignored: the rows come from one sweep each.)"""
        zeros_if_unconnected = _unconnected_mode(unconnected_gradients)
        _single_target("jacobian", target)
        self._begin_derivative()
        flat_sources = _sources(sources)
        target_shape = np.shape(value_of(target))
        columns = self._cotangent_columns(target, flat_sources, _unit_seeds(target))
        results = []
        for source, rows in zip(flat_sources, columns):
            shape = target_shape + np.shape(source._value)
            if isinstance(target, Tensor) and not rows:  # an empty target: an empty Jacobian
                results.append(new_tensor(np.zeros(shape, _float_dtype(source._value))))
                continue
            if all(row is None for row in rows):
                results.append(_finish(None, source, zeros_if_unconnected, shape))
                continue
            zeros = np.zeros(np.shape(source._value), _float_dtype(source._value))
            stacked = np.stack([zeros if row is None else row for row in rows])
            results.append(_as_tensor(np.reshape(stacked, shape)))
        self._end_derivative()
        return nest.pack_as(sources, results)

    @api_boundary
    def batch_jacobian(self, target: Any, source: Any,
                       unconnected_gradients: UnconnectedGradients | str =
                       UnconnectedGradients.NONE, parallel_iterations: int | None = None,
                       experimental_use_pfor: bool = True) -> Any:
        """Per-example Jacobians, shape `[b, *target.shape[1:], *source.shape[1:]]`, for a
        target whose row i depends only on row i of `source`. That assumption is checked
        (a second, randomly weighted sweep per output element) and a violation raises
        `BatchDependenceError`."""
        zeros_if_unconnected = _unconnected_mode(unconnected_gradients)
        _single_target("batch_jacobian", target)
        if not isinstance(source, Tensor) or not isinstance(target, Tensor):
            raise UsageError("batch_jacobian takes a target tensor and a source tensor.",
                             caller_location(), fix="use `jacobian` for nests of sources.")
        t_shape, s_shape = np.shape(target._value), np.shape(source._value)
        if len(t_shape) < 2 or len(s_shape) < 2:
            raise UsageError(f"batch_jacobian needs target and source of rank 2 or more "
                             f"([batch, ...]); got shapes {t_shape} and {s_shape}.",
                             caller_location(), fix="use `jacobian` for other shapes.")
        if t_shape[0] != s_shape[0]:
            raise UsageError(f"Need first dimension of target shape {t_shape} and source "
                             f"shape {s_shape} to match.", caller_location(),
                             fix="batch_jacobian pairs row i of the target with row i of the "
                             "source; use `jacobian` otherwise.")
        self._begin_derivative()
        batch, width = t_shape[0], math.prod(t_shape[1:])
        weights = 1.0 + (np.arange(batch) * 0.6180339887498949) % 1.0
        seeds = []
        for k in range(width):
            for scale in (np.ones(batch), weights):
                seed = np.zeros((batch, width), _float_dtype(target._value))
                seed[:, k] = scale
                seeds.append(seed.reshape(t_shape))
        (rows,) = self._cotangent_columns(target, [source], seeds)
        self._end_derivative()
        shape = (batch,) + t_shape[1:] + s_shape[1:]
        if all(row is None for row in rows):
            return _finish(None, source, zeros_if_unconnected, shape)
        zeros = np.zeros(s_shape, _float_dtype(source._value))
        plain, weighted = rows[0::2], rows[1::2]
        for k, (g, h) in enumerate(zip(plain, weighted)):
            _check_independent(k, value_of(zeros if g is None else g),
                               value_of(zeros if h is None else h), weights)
        stacked = np.stack([zeros if g is None else g for g in plain], axis=1)
        return _as_tensor(np.reshape(stacked, shape))

    # ---- the sweeps -----------------------------------------------------------------------
    def _begin_derivative(self):
        if self._consumed:
            raise TapeStateError(
                "A non-persistent GradientTape can only be used to compute one set of "
                "gradients (or jacobians); this one was used already.", caller_location(),
                fix="create the tape with `GradientTape(persistent=True)` to compute several "
                "gradients or Jacobians from one recording.")
        if self._recording and not self._persistent:
            self._stop()  # TensorFlow's behaviour: a non-persistent tape stops recording here

    def _end_derivative(self):
        if not self._persistent:
            self._nodes.clear()
            self._tracked.clear()
            self._watched.clear()
            self._consumed = True

    def _versions(self, flat_sources) -> list:
        """The id each source is differentiated at: a watched tensor is the independent
        variable as it was watched, even if written in place since (`y = x; y += 2 * x`
        writes into `x`, and the gradient is d(3x)/dx, TensorFlow's answer); any other
        tensor is its current version."""
        ids = []
        for source in flat_sources:
            ref, version = self._watched.get(id(source), (None, None))
            ids.append(version if ref is not None and ref() is source else source._id)
        return ids

    def _sweep(self, seeds, source_ids):
        """Cotangents of the sources this tape tracks (others are unconnected, as in TF)."""
        source_ids = [i for i in source_ids if i in self._tracked]
        nodes, count = self._nodes, len(self._nodes)
        reach = backward.reachable(nodes, count, source_ids)
        return backward.sweep(nodes, count, seeds, source_ids, reach,
                              record=bool(RECORDING.tapes), consume=not self._persistent)

    def _cotangent_columns(self, target, flat_sources, seeds):
        """For each source, the cotangents from each seed of `target` (None: unreached)."""
        ids = self._versions(flat_sources)
        columns = [[] for _ in ids]
        if not isinstance(target, Tensor):
            return [[None] * len(seeds) for _ in ids]
        ids = [i if i in self._tracked else None for i in ids]
        nodes, count = self._nodes, len(self._nodes)
        reach = backward.reachable(nodes, count, [i for i in ids if i is not None])
        record = bool(RECORDING.tapes)
        for seed in seeds:
            cotangents = backward.sweep(nodes, count, {target._id: seed}, reach.intersection(
                ids), reach, record=record, consume=False)
            for column, source_id in zip(columns, ids):
                column.append(cotangents.get(source_id))
        return columns


def _sources(sources) -> list:
    flat = nest.flatten(sources)
    for leaf in flat:
        if not isinstance(leaf, Tensor):
            raise UsageError(f"a source of type {type(leaf).__name__} is not a tensor; "
                             "gradients are taken with respect to tensors and Variables.",
                             caller_location(), fix="wrap it with `srcad.constant(...)` and "
                             "`tape.watch` it before computing with it.")
    return flat


def _single_target(method, target):
    """`jacobian` differentiates one tensor: a nest (or None) is refused, not flattened."""
    if target is None or isinstance(target, (list, tuple, dict)):
        raise TapeTypeError(f"{method} differentiates one target tensor; got "
                            f"{type(target).__name__}.", caller_location(),
                            fix="call it once per target, or `np.stack` the targets into "
                            "one tensor.")


def _weights(output_gradients, flat_targets) -> list:
    """One output gradient (or None) per target, each of its target's shape."""
    if output_gradients is None:
        return [None] * len(flat_targets)
    flat_weights = nest.flatten(output_gradients)
    if len(flat_weights) != len(flat_targets):
        raise UsageError(f"output_gradients has {len(flat_weights)} value(s) for "
                         f"{len(flat_targets)} target(s).", caller_location(),
                         fix="give one output gradient (or None) per target, in the "
                         "target's structure.")
    for weight, leaf in zip(flat_weights, flat_targets):
        if weight is not None and np.shape(value_of(weight)) != np.shape(value_of(leaf)):
            raise UsageError(f"an output gradient of shape {np.shape(value_of(weight))} "
                             f"weights a target of shape {np.shape(value_of(leaf))}.",
                             caller_location(),
                             fix="give each output gradient its target's shape.")
    return flat_weights


def _differentiable_dtype(tensor) -> bool:
    """Whether a tape tracks `tensor`: floating or complex values only, as TensorFlow."""
    return np.result_type(tensor._value).kind in "fc"


def _unconnected_mode(value) -> bool:
    """True for "zero", False for "none"; anything else is an error."""
    try:
        return UnconnectedGradients(value) is UnconnectedGradients.ZERO
    except ValueError:
        raise UsageError(f"Unknown value for unconnected_gradients: {value!r}",
                         caller_location(),
                         fix='use "none" or "zero" (or srcad.tape.UnconnectedGradients).') \
            from None


def _float_dtype(value):
    return np.promote_types(np.result_type(value), np.float16)


def _ones_like(value):
    return np.ones(np.shape(value), _float_dtype(value))


def _seed_value(weight):
    """An output gradient: a tensor stays one when a tape records the sweep."""
    if isinstance(weight, Tensor) and RECORDING.tapes:
        return weight
    return value_of(weight)


def _unit_seeds(target):
    """One seed per element of `target`: 1 there, 0 elsewhere."""
    if not isinstance(target, Tensor):
        return []
    shape, dtype = np.shape(target._value), _float_dtype(target._value)
    seeds = []
    for k in range(math.prod(shape)):
        seed = np.zeros(math.prod(shape), dtype)
        seed[k] = 1
        seeds.append(seed.reshape(shape))
    return seeds


def _as_tensor(value):
    return value if isinstance(value, Tensor) else new_tensor(value)


def _finish(cotangent, source, zeros_if_unconnected, shape=None):
    """What `gradient` returns for one source: a tensor, or None/zeros if unreached."""
    if cotangent is None:
        if not zeros_if_unconnected:
            return None
        shape = np.shape(source._value) if shape is None else shape
        return new_tensor(np.zeros(shape, _float_dtype(source._value)))
    return _as_tensor(cotangent)


def _check_independent(k, plain, weighted, weights):
    """Row i of a batch Jacobian must not depend on row j != i of the source: then
    weighting target row i by w_i weights the cotangent of source row i by w_i."""
    expected = weights.reshape((-1,) + (1,) * (np.ndim(plain) - 1)) * plain
    scale = max(1.0, float(np.max(np.abs(plain), initial=0.0)))
    if not np.allclose(weighted, expected, rtol=1e-9, atol=1e-12 * scale):
        raise BatchDependenceError(
            f"batch_jacobian: element {k} of a target row depends on other rows of the "
            "source, so the per-example Jacobians would be wrong.",
            fix="use `tape.jacobian(target, source)` for the full Jacobian.")
