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

import configparser
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

GRADER_DIR = "/opt/harnessrl/grader"
TOOLS_DIR = "/opt/harnessrl/bin"  # uv, uvx and the runner's console scripts, offline (uv_shim.py); first on PATH
SHIM_SOURCE = Path(__file__).with_name("uv_shim.py")
PYTEST = "pytest"  # unpinned: the task's own pin wins when it names one


def test_dependencies(script: str) -> list[str]:
    """Packages a test script installs (pip install / uv add / uv pip install / uv tool install / uvx and
    uv run --with or -w, uvx's own command), pytest first."""
    found: list[str] = []
    for line in script.replace("\\\n", " ").splitlines():
        line = line.split("#", 1)[0]
        for cmd in re.split(r"&&|\|\||;|\|", line):
            try:
                words = shlex.split(cmd)
            except ValueError:
                continue
            for spec in (_pin(n) for n in _installed_by(words)):
                if spec and _name(spec) not in {_name(f) for f in found}:
                    found.append(spec)
    if not any(re.match(r"pytest\b(?![-_])", n) for n in found):
        found.insert(0, PYTEST)
    return found


def _name(spec: str) -> str:
    return re.split(r"[\[<>=!~ ]", spec, maxsplit=1)[0].lower().replace("_", "-")


def _pin(spec: str) -> str:
    """uv's `name@1.2` is pip's `name==1.2`; anything that is not a package name is dropped."""
    spec = spec.strip()
    if "@" in spec and "://" not in spec:
        name, _, version = spec.partition("@")
        spec = f"{name}=={version}" if version and version != "latest" else name
    return spec if re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*(\[[^\]]*\])?\s*([<>=!~].*)?$", spec) else ""


_UV_VALUED = {"--with", "-w", "--from", "--python", "-p", "--with-requirements", "--with-editable", "--directory",
              "--project", "--index-url", "-i", "--extra-index-url", "--index", "--find-links", "-f", "--cache-dir"}


def _uv_tool(words: list[str]) -> list[str]:
    """uvx options + command: the --with/-w packages, --from's, or else the command's own package."""
    out, i, source = [], 0, None
    while i < len(words):
        word = words[i]
        flag, eq, value = word.partition("=")
        if not word.startswith("-"):
            break
        if not eq and flag in _UV_VALUED:
            value, i = (words[i + 1] if i + 1 < len(words) else ""), i + 1
        if flag in ("--with", "-w"):
            out += [v for v in value.split(",") if v]
        elif flag == "--from":
            source = value
        i += 1
    command = words[i] if i < len(words) else ""
    if source or out:  # `uvx --with a --with b cmd`: cmd comes from those packages (or --from's)
        return out + ([source] if source else [])
    return [command] if command and command not in ("python", "python3") and not command.endswith(".py") else []


def _installed_by(words: list[str]) -> list[str]:
    for i, word in enumerate(words):
        base = word.rsplit("/", 1)[-1]
        if base == "uvx":
            return _uv_tool(words[i + 1:])
        if base == "uv" and words[i + 1:i + 3] == ["tool", "run"]:
            return _uv_tool(words[i + 3:])
        if base == "uv" and words[i + 1:i + 2] == ["run"]:  # uv run --with X cmd: the --with packages only
            return _uv_tool(words[i + 2:]) if any(w in ("--with", "-w") or w.startswith("--with=")
                                                  for w in words[i + 2:]) else []
        start = None
        if base in ("pip", "pip3") and words[i + 1:i + 2] == ["install"]:
            start = i + 2
        elif base == "uv" and words[i + 1:i + 2] == ["add"]:
            start = i + 2
        elif base == "uv" and words[i + 1:i + 3] in (["pip", "install"], ["tool", "install"]):
            start = i + 3
        elif base in ("python", "python3") and words[i + 1:i + 4] == ["-m", "pip", "install"]:
            start = i + 4
        if start is not None:
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


def console_scripts(runner: Path) -> list[str]:
    """The console-script names of the distributions pip put in `runner` (pytest, py.test, ...)."""
    names: set[str] = set()
    for ep in runner.glob("*.dist-info/entry_points.txt"):
        parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
        parser.optionxform = str
        try:
            parser.read(ep, encoding="utf-8")
        except configparser.Error:
            continue
        if parser.has_section("console_scripts"):
            names |= {k.strip() for k in parser["console_scripts"] if re.fullmatch(r"[A-Za-z0-9][\w.-]*", k.strip())}
    return sorted(names)


def stage_tools(ctx: Path) -> list[str]:
    """Put the offline uv/uvx shim, under each name it answers to, in ctx/bin (pip's own scripts in
    runner/bin name the host's interpreter and are dropped). Returns the names."""
    shutil.rmtree(ctx / "runner" / "bin", ignore_errors=True)
    tools = ctx / "bin"
    tools.mkdir()
    names = ["uv", "uvx", *[n for n in console_scripts(ctx / "runner") if n not in ("uv", "uvx")]]
    for name in names:
        shutil.copyfile(SHIM_SOURCE, tools / name)
        (tools / name).chmod(0o755)
    return names


def grader_containerfile(task_ref: str, python_missing: bool) -> str:
    """FROM the task's image: Debian's python3 when the image has none, then the runner folder and
    the offline tools."""
    lines = [f"FROM {task_ref}", "USER root"]
    if python_missing:
        lines.append("RUN apt-get update && apt-get install -y --no-install-recommends python3 "
                     "&& rm -rf /var/lib/apt/lists/*")
    lines.append(f"COPY runner {GRADER_DIR}")
    lines.append(f"COPY bin {TOOLS_DIR}")
    lines.append('LABEL harnessrl.grader_layer="2"')
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
