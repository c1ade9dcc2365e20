"""What a release carries: one version, the licence, the typing marker."""
import tomllib
from pathlib import Path

import srcad

ROOT = Path(__file__).parent.parent


def test_the_version_is_defined_once_and_read_by_the_build():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "srcad.version.__version__"}
    assert srcad.__version__ in (ROOT / "CHANGELOG.md").read_text()


def test_the_licence_and_the_typing_marker_are_package_files():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "MIT" and "MIT License" in (
        ROOT / "LICENSE").read_text()
    assert "Typing :: Typed" in project["project"]["classifiers"]
    assert project["tool"]["setuptools"]["package-data"]["srcad"] == ["py.typed"]
    assert (ROOT / "srcad" / "py.typed").is_file()
