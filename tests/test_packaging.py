"""What `pip install harnessrl` gets: a wheel with the license, classifiers, extras and type marker, and a
README that says how to install without make."""

import re
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel_metadata(tmp_path_factory):
    """Build the wheel from a copy of the sources (the checkout gets no build/ folder) and read it."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"),
                    str(src)], check=True, capture_output=True, timeout=300)
    wheel = next((tmp / "dist").glob("harnessrl-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = Parser().parsestr(z.read(next(n for n in names if n.endswith("dist-info/METADATA"))).decode())
    return names, meta


def test_license_file_is_apache_2(wheel_metadata):
    names, meta = wheel_metadata
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert any(n.endswith("dist-info/licenses/LICENSE") for n in names)
    assert meta["License"] == "Apache-2.0"
    assert "License :: OSI Approved :: Apache Software License" in meta.get_all("Classifier")


def test_classifiers_extras_and_type_marker(wheel_metadata):
    names, meta = wheel_metadata
    classifiers = meta.get_all("Classifier")
    assert "Operating System :: POSIX :: Linux" in classifiers and "Typing :: Typed" in classifiers
    assert "harnessrl/py.typed" in names
    extras = set(meta.get_all("Provides-Extra"))
    assert {"trl", "vllm", "tracking", "wandb"} <= extras
    requires = meta.get_all("Requires-Dist")
    assert any(r.startswith("trl") and 'extra == "trl"' in r for r in requires)


def test_project_urls_are_not_placeholders(wheel_metadata):
    _, meta = wheel_metadata
    for url in meta.get_all("Project-URL") or []:
        assert not re.search(r"example\.(com|org)|your[-_]?(org|name)|TODO|xxx", url, re.I), url


def test_readme_installs_without_make_and_names_the_system_packages():
    readme = (ROOT / "README.md").read_text()
    assert "pip install -e ." in readme and "Without make" in readme
    assert "Linux only" in readme
    setup = (ROOT / "scripts" / "setup-system.sh").read_text()
    packages = {p for group in re.findall(r"pkgs\+?=\(([^)]*)\)", setup) for p in group.split()}
    assert "python3-seccomp" in packages
    listed = re.search(r"install the Debian packages\s*`([^`]*)`", readme).group(1).split()
    assert packages <= set(listed), packages - set(listed)
    assert (ROOT / "CHANGELOG.md").read_text().startswith("# Changelog")
