"""`python -m tests.autograd_suite <autograd checkout> [pytest options]`: autograd's tests on
srcad through the adapter; prints the pass rate. Without a checkout it says so and stops."""
import subprocess
import sys
from pathlib import Path

ADAPTER = Path(__file__).parent / "adapter"
# the modules testing autograd's internals (its tracer, vspaces and core), not its public API
INTERNAL = ("test_core.py", "test_vspaces.py", "test_graphs.py", "_test_complexity.py",
            "test_performance.py")


def main(argv) -> int:
    if not argv or not (Path(argv[0]) / "tests").is_dir():
        print("give a checkout of github.com/HIPS/autograd (its tests/ directory is read); "
              "none given, nothing run")
        return 0
    tests = Path(argv[0]) / "tests"
    files = sorted(str(p) for p in tests.glob("test_*.py") if p.name not in INTERNAL)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o",
               "addopts=", "--rootdir", str(tests), *files, *argv[1:]]
    environment = {"PYTHONPATH": f"{ADAPTER}:{tests}:{Path(__file__).parents[2]}"}
    import os
    return subprocess.run(command, env={**os.environ, **environment}).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
