"""replay: a backward sweep that runs once per forward sweep, made callable again.

Reverse-mode Jacobians run the forward sweep once and the backward sweep once per row of
the Jacobian; the sweep pops its stack and restores variables as it goes, so each run must
start from the state the forward sweep left.
"""


def replaying(backward):
    """`backward`, callable any number of times: each call first puts back the cells of its
    closure (the stack, restored variables) and the contents of lists as the forward sweep
    left them. Only for sweeps that change nothing else (`CompiledAdjoint.replayable`):
    reverse-mode Jacobians run the forward sweep once and the backward sweep per row."""
    saved = []
    for cell in backward.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue
        saved.append((cell, value, list(value) if isinstance(value, list) else None))

    def replay(cotangent):
        for cell, value, items in saved:
            cell.cell_contents = value
            if items is not None:
                value[:] = items
        return backward(cotangent)
    return replay
