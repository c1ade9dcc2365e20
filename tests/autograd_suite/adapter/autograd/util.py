"""`autograd.util.quick_grad_check`, deprecated in autograd: a first-order reverse check."""
import warnings


def quick_grad_check(fun, arg0, extra_args=(), kwargs=None, verbose=True, eps=1e-4, rtol=1e-4,
                     atol=1e-6, rs=None):
    warnings.warn("quick_grad_check is deprecated; use autograd.test_util.check_grads.")
    from autograd.test_util import check_grads
    check_grads(lambda x: fun(x, *extra_args, **(kwargs or {})), modes=["rev"], order=1)(arg0)
