"""`const_graph`: autograd caches a traced graph; srcad caches the transformed program, so
the function itself serves."""


def const_graph(fun, *args, **kwargs):
    return fun
