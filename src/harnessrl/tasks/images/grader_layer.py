"""The grader layer: the tests' runner and its dependencies on top of a task image, so grading is offline.

    deps = test_dependencies(run_tests_text)          # ["pytest==8.4.1", "requests"] named by run-tests.sh / test.sh
    python = image_python(root)                        # "3.13" (the image's own python3), or None
    containerfile = grader_containerfile(task_ref, python_missing=python is None)
    packages = installed_packages(root)                # {"deb": {"bash": "5.2.37-2"}, "python": {"pytest": "8.4.1"}}

Terminal-Bench's run-tests.sh and Harbor's test.sh install their runner at test time
(`curl … uv`, `uv add pytest`, `pip install pytest==…`): that needs the network while the agent's
work is graded. Here the same packages are installed when the image is built, into
/opt/harnessrl/grader (`pip install --target`, wheels for the image's Python, resolved by the
host's pip from the machine's package registry), in a layer the agent's image does not contain.
An image without python3 gets Debian's python3 in that layer too.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

GRADER_DIR = "/opt/harnessrl/grader"
PYTEST = "pytest"  # unpinned: the task's own pin wins when it names one


def test_dependencies(script: str) -> list[str]:
    """Packages a test script installs (pip install / uv add / uv pip install / uvx --with), pytest first."""
    found: list[str] = []
    for line in script.replace("\\\n", " ").splitlines():
        line = line.split("#", 1)[0]
        for cmd in re.split(r"&&|\|\||;", line):
            try:
                words = shlex.split(cmd)
            except ValueError:
                continue
            names = _installed_by(words)
            found += [n for n in names if n not in found]
    if not any(re.match(r"pytest\b(?![-_])", n) for n in found):
        found.insert(0, PYTEST)
    return found


def _installed_by(words: list[str]) -> list[str]:
    if "--with" in words:  # uvx -p 3.13 --with pytest==8.4.1 pytest ...
        return [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--with"]
    for i in range(len(words) - 1):
        pair = (words[i], words[i + 1])
        if pair in (("pip", "install"), ("pip3", "install"), ("uv", "add")) or (
                i + 2 < len(words) and words[i:i + 3] == ["uv", "pip", "install"]):
            start = i + (3 if words[i] == "uv" and words[i + 1] == "pip" else 2)
            return [w for w in words[start:] if not w.startswith("-") and re.match(r"[A-Za-z0-9]", w)
                    and "/" not in w and not w.endswith((".txt", ".toml"))]
    return []


def image_python(root: Path) -> str | None:
    """The X.Y of the image's `python3` (its standard library's folder next to the interpreter), or None."""
    for prefix in ("usr/local", "usr"):
        exe = root / prefix / "bin" / "python3"
        if not (exe.exists() or exe.is_symlink()):
            continue
        libs = sorted((root / prefix / "lib").glob("python3.*/os.py"))
        if libs:
            return libs[-1].parent.name.removeprefix("python")
    return None


def download_runner(deps: list[str], python: str, target: Path, log: Path) -> None:
    """Install `deps` for CPython `python` (x86-64 Linux) into `target` with the host's pip (no build)."""
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
           "--target", str(target), "--python-version", python, "--implementation", "cp", "--only-binary=:all:",
           "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
           "--platform", "manylinux2014_x86_64", "--platform", "any"]
    with open(log, "ab") as out:
        out.write(f"$ {' '.join(cmd + deps)}\n".encode())
        out.flush()
        proc = subprocess.run([*cmd, *deps], stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise RuntimeError(f"the test runner's packages {deps} have no wheels for CPython {python} here (log: {log})")


def grader_containerfile(task_ref: str, python_missing: bool) -> str:
    """FROM the task's image: Debian's python3 when the image has none, then the runner folder."""
    lines = [f"FROM {task_ref}", "USER root"]
    if python_missing:
        lines.append("RUN apt-get update && apt-get install -y --no-install-recommends python3 "
                     "&& rm -rf /var/lib/apt/lists/*")
    lines.append(f"COPY runner {GRADER_DIR}")
    lines.append('LABEL harnessrl.grader_layer="1"')
    return "\n".join(lines) + "\n"


def installed_packages(root: Path) -> dict[str, dict[str, str]]:
    """Debian packages (dpkg status) and Python distributions (*.dist-info) installed in an image root."""
    deb: dict[str, str] = {}
    status = root / "var/lib/dpkg/status"
    if status.exists():
        for block in status.read_text(errors="replace").split("\n\n"):
            fields = dict(re.findall(r"^(Package|Version|Status): (.*)$", block, re.M))
            if fields.get("Status", "").endswith(" installed") and "Package" in fields:
                deb[fields["Package"]] = fields.get("Version", "")
    python: dict[str, str] = {}
    patterns = ("usr/lib/python3*/*-packages/*.dist-info", "usr/local/lib/python3*/*-packages/*.dist-info",
                "usr/lib/python3/dist-packages/*.dist-info", "opt/*/lib/python3*/site-packages/*.dist-info",
                "root/.local/lib/python3*/site-packages/*.dist-info", "app/*/lib/python3*/site-packages/*.dist-info")
    for pattern in patterns:
        for info in root.glob(pattern):
            name, _, version = info.name.removesuffix(".dist-info").rpartition("-")
            if name and str(info).find(GRADER_DIR.lstrip("/")) < 0:
                python[name.lower().replace("_", "-")] = version
    return {"deb": dict(sorted(deb.items())), "python": dict(sorted(python.items()))}
