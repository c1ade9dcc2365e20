"""`python -m tests.autograd_suite.adbench <ADBench checkout>`: ADBench's autograd GMM and
bundle-adjustment programs (tools/Autograd), run unmodified on their test data, once with
autograd and once on srcad through the adapter; their gradients and Jacobians must agree
to 1e-10. Each run is a process of its own (the adapter is imported as `autograd`)."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ADAPTER = Path(__file__).parent / "adapter"
ROOT = Path(__file__).parents[2]

# run in a child: the GMM program as ADBench runs it (it writes its gradient), then the BA
# program's Jacobian of ADBench's test instance, written as JSON
_CHILD = r'''
import runpy, sys, json, numpy as np
tools, data, out = sys.argv[1:4]
sys.argv = ["Autograd_gmm_full.py", data + "/gmm/", out + "/", "test", "1", "1"]
sys.path[:0] = [tools + "/Autograd", tools]
runpy.run_path(tools + "/Autograd/Autograd_gmm_full.py", run_name="__main__")
sys.argv = ["Autograd_ba.py", data + "/ba/", out + "/", "test", "1", "0"]
ba = runpy.run_path(tools + "/Autograd/Autograd_ba.py", run_name="__main__")
reproj, w_err = ba["compute_ba_J"](ba["cams"], ba["X"], ba["w"], ba["obs"], ba["feats"])
with open(out + "/ba_J.json", "w") as f:
    json.dump({"reproj": [np.asarray(j).tolist() for j in reproj],
               "w": [[float(v), float(d)] for v, d in w_err]}, f)
'''


def run(checkout: Path, on_srcad: bool, out: Path) -> None:
    paths = [str(ADAPTER)] if on_srcad else []
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(paths + [str(ROOT)])}
    subprocess.run([sys.executable, "-c", _CHILD, str(checkout / "tools"),
                    str(checkout / "data"), str(out)], env=environment, check=True,
                   cwd=checkout / "tools" / "Autograd")


def read_gmm_gradient(out: Path) -> np.ndarray:
    text = (out / "test_J_Autograd.txt").read_text().split()
    return np.array([float(v) for v in text])


def main(argv) -> int:
    if not argv or not (Path(argv[0]) / "tools" / "Autograd").is_dir():
        print("give a checkout of github.com/microsoft/ADBench; none given, nothing run")
        return 0
    checkout = Path(argv[0]).resolve()
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as s:
        run(checkout, False, Path(a))
        run(checkout, True, Path(s))
        gmm = np.max(np.abs(read_gmm_gradient(Path(a)) - read_gmm_gradient(Path(s))))
        ba_a, ba_s = (json.loads((Path(d) / "ba_J.json").read_text()) for d in (a, s))
        ba = max(np.max(np.abs(np.array(x) - np.array(y)))
                 for key in ("reproj", "w") for x, y in zip(ba_a[key], ba_s[key]))
    print(f"GMM gradient: largest difference from autograd {gmm:.2e}")
    print(f"BA Jacobian:  largest difference from autograd {ba:.2e}")
    return 0 if max(gmm, ba) <= 1e-10 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
