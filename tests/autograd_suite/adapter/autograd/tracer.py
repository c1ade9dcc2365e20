"""srcad traces nothing at run time: no value is ever a box."""
from autograd.extend import notrace_primitive, primitive  # noqa: F401


def isbox(value) -> bool:
    return False
