"""autograd's way of turning an operator on functions of one argument into one on functions
of several (`argnum`)."""
import functools


def unary_to_nary(unary_operator):
    @functools.wraps(unary_operator)
    def nary_operator(fun, argnum=0, *op_args, **op_kwargs):
        def nary_f(*args, **kwargs):
            def unary_f(x):
                values = list(args)
                if isinstance(argnum, int):
                    values[argnum] = x
                else:
                    for position, value in zip(argnum, x):
                        values[position] = value
                return fun(*values, **kwargs)
            x = args[argnum] if isinstance(argnum, int) else tuple(args[i] for i in argnum)
            return unary_operator(unary_f, x, *op_args, **op_kwargs)
        return nary_f
    return nary_operator
