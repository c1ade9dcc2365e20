"""`autograd.scipy` is SciPy (srcad's SciPy rules and source transformation serve)."""
import sys
import types

import scipy.integrate
import scipy.linalg
import scipy.signal
import scipy.special
import scipy.stats

integrate, linalg, signal, special, stats = (scipy.integrate, scipy.linalg, scipy.signal,
                                             scipy.special, scipy.stats)
misc = types.ModuleType("autograd.scipy.misc")
misc.logsumexp = scipy.special.logsumexp
_MODULES = {"integrate": integrate, "linalg": linalg, "signal": signal, "special": special,
            "stats": stats, "misc": misc}
sys.modules.update({f"autograd.scipy.{name}": module for name, module in _MODULES.items()})
for _name in ("norm", "t", "beta", "chi2", "gamma", "poisson", "multivariate_normal",
              "dirichlet"):
    sys.modules[f"autograd.scipy.stats.{_name}"] = getattr(scipy.stats, _name)
