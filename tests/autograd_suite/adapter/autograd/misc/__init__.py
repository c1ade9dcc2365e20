from autograd.misc.flatten import flatten  # noqa: F401
from autograd.misc.tracers import const_graph  # noqa: F401
