"""backward: the reverse sweep over a tape's nodes → the cotangents of the source ids.

Iterative, newest node first, so a chain of any length needs no recursion. The cotangent of
a node's output is popped from a dict when the node is reached (it is complete by then:
every reader of a value was recorded after it) and the node's rules add their inputs'
contributions to the dict. Rules are called only for inputs on a path from a source, which
one forward pass over the nodes finds (`reachable`). With `consume`, each node is dropped as
soon as it has been used, so a non-persistent tape frees the values it saved during the
sweep, not after it.

Higher order: when a tape is recording while the sweep runs (an outer tape, or a persistent
tape asked for its gradient inside its own context), each rule is called with tensors
rebuilt from the saved values and their ids (`dispatch.handle`). The rules are plain NumPy,
so on those tensors they dispatch back into tape mode, and the recording tape, which tracks
the same ids, records the sweep itself: its gradient is a second derivative.
"""
from __future__ import annotations

from srcad.kernels.adjoints import Underivable
from srcad.tape.dispatch import NestedIds, any_tracked, handle, same_kind


def reachable(nodes, count: int, source_ids) -> set:
    """Ids of the values among `nodes[:count]` that depend on one of `source_ids`."""
    reach = set(source_ids)
    for index in range(count):
        node = nodes[index]
        ids = node[3]
        if not reach.isdisjoint(ids) or (type(ids) is NestedIds and any_tracked(reach, ids)):
            out_id = node[4]
            if type(out_id) is tuple:
                reach.update(out_id)
            else:
                reach.add(out_id)
    return reach


def sweep(nodes, count: int, seeds: dict, source_ids, reach: set, record: bool,
          consume: bool) -> dict:
    """Cotangents `{id: cotangent}` of `source_ids` (absent: not reached) from `seeds`
    (`{id: cotangent}` of the targets), through `nodes[:count]` in reverse.

    `record`: call rules on tensors so that a recording tape records the sweep. `consume`:
    pop each node off `nodes` when it is done (then `count` must be `len(nodes)`)."""
    grads = dict(seeds)
    keep = set(source_ids)
    for index in range(count - 1, -1, -1):
        node = nodes.pop() if consume else nodes[index]
        out_id = node[4]
        if type(out_id) is tuple:
            g = _multi_output_cotangent(grads, keep, out_id, node[5])
        elif out_id in keep:
            g = grads.get(out_id)
        else:
            g = grads.pop(out_id, None)
        if g is None:
            continue
        rules, args, kwargs, ids, _, ans = node
        if record:
            args = tuple(_as_tensors(a, i) for a, i in zip(args, ids)) + args[len(ids):]
            ans = _as_tensors(ans, out_id)
        position = -1
        for input_id in ids:
            position += 1
            if input_id is None:
                continue
            if type(input_id) is int:
                if input_id not in reach:
                    continue
            elif not any_tracked(reach, input_id):
                continue
            rule = rules[position] if position < len(rules) else None
            if rule is None:
                continue
            cotangent = rule(g, ans, *args) if kwargs is None else \
                rule(g, ans, *args, **kwargs)
            if type(cotangent) is Underivable:  # (the tape reaches differentiated inputs only)
                cotangent.raised()
            if type(input_id) is int and cotangent is not None:
                previous = grads.get(input_id)
                grads[input_id] = cotangent if previous is None else previous + cotangent
            else:
                _accumulate(grads, input_id, cotangent)
    return {source_id: grads[source_id] for source_id in keep if source_id in grads}


def _multi_output_cotangent(grads, keep, out_ids, values):
    """The cotangent of a tuple of results, None for the results nothing read, as source
    mode hands it to the rule (which then skips their terms: `np.linalg.eigh`'s vectors)."""
    parts = [grads.get(i) if i in keep else grads.pop(i, None) for i in out_ids]
    if all(part is None for part in parts):
        return None
    return same_kind(values, parts)


def _accumulate(grads, input_id, cotangent):
    """Add `cotangent` into `grads` at `input_id` (a tuple of ids for a list argument)."""
    if cotangent is None:
        return
    if type(input_id) is tuple:
        for inner_id, inner in zip(input_id, cotangent):
            if inner_id is not None:
                _accumulate(grads, inner_id, inner)
        return
    previous = grads.get(input_id)
    grads[input_id] = cotangent if previous is None else previous + cotangent


def _as_tensors(value, tensor_id):
    """`value` with each recorded tensor value turned back into a tensor of its id."""
    if tensor_id is None or value is None:  # None: a value the rules do not read
        return value
    if type(tensor_id) is tuple:
        return same_kind(value, [_as_tensors(v, i) for v, i in zip(value, tensor_id)])
    return handle(value, tensor_id)
