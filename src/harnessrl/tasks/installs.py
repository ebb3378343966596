"""What a foreign task installs, read from its shell lines, against what this host offers.

A Terminal-Bench or Harbor task installs its dependencies in its Dockerfile (and sometimes
in run-tests.sh or the reference solution). We never run those installs: the sandbox has no
network. Instead each install command is read here and checked against the host:

    words = command_words("DEBIAN_FRONTEND=noninteractive apt-get install -y curl r-base")
    apt_packages(words)          -> ["curl", "r-base"]
    pip_requirements(words)      -> None (not a pip line)
    check_pin("numpy==2.1.2")    -> PinProblem("numpy==2.1.2 is pinned; this host has numpy 2.4.6")

Pins: a task that pins a Python package (`pandas==2.2.3`, `numpy>=2,<2.2`) is accepted only
when the installed version satisfies the pin. Otherwise it is refused with the pin named
(policy "exact", the default) — the task would otherwise run silently against another
version — or, when the user asks for `pins="loose"`, accepted with the mismatch in its notes.
We refuse rather than build a per-task environment: the sandbox runs the host's interpreter,
and a per-task interpreter would need a registry download at load time and a second
interpreter inside the sandbox's trust domain.
"""

from __future__ import annotations

import importlib.metadata
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

#: Terminal-Bench's harness installs these into every image for itself (session recording and
#: the tmux pane the Terminus agent types into); a task does not depend on them.
HARNESS_TOOLS = frozenset({"asciinema", "tmux"})
#: Download tools: the sandbox has no network, so a task installing one but lacking it is no blocker.
DOWNLOADERS = frozenset({"curl", "wget", "ca-certificates", "gnupg", "gpg", "apt-transport-https", "software-properties-common"})
#: The sandbox runs harnessrl's own Python (with pip): a task's Python packages are checked against it.
PYTHON_PROVIDED = frozenset({"python3", "python3-pip", "python3-venv", "python-is-python3", "python3-full"})
#: Test tooling: run-tests.sh installs these for its own pytest run, which harnessrl replaces.
TEST_TOOLS = re.compile(r"^(pytest(-[\w-]+)?|pluggy|iniconfig|coverage)$", re.IGNORECASE)

#: pip / uv options that take a value as the next word (the value is not a package).
_PIP_VALUE_OPTIONS = frozenset({
    "-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c", "--constraint", "--trusted-host",
    "-t", "--target", "--prefix", "--root", "--platform", "--python-version", "--implementation", "--abi",
    "--src", "--upgrade-strategy", "--progress-bar", "--cache-dir", "--log", "--timeout", "--retries", "--proxy",
    "--cert", "--client-cert", "--only-binary", "--no-binary", "-C", "--config-settings", "--global-option",
    "--python", "-p", "--index", "--default-index", "--index-strategy", "--resolution", "--prerelease",
    "--extra", "--group", "--python-platform", "--keyring-provider", "--exclude-newer",
})
#: Options whose value names a requirements source we cannot read offline.
_PIP_SOURCE_OPTIONS = frozenset({"-r", "--requirement", "-e", "--editable"})
_APT = ("apt-get", "apt", "apk", "yum", "dnf", "microdnf")


def command_words(command: str) -> list[str]:
    """A shell command's words without leading `VAR=value` assignments, `sudo` or `env`."""
    try:
        words = shlex.split(command, posix=True)
    except ValueError:
        words = command.split()
    while words and (re.match(r"^\w+=", words[0]) or words[0] in ("sudo", "env", "-E", "command")):
        words = words[1:]
    return words


def apt_packages(words: list[str]) -> list[str] | None:
    """The packages of an `apt-get install` line ([] for update/clean/...), None if not an apt line."""
    if not words or words[0] not in _APT:
        return None
    if "install" not in words and "add" not in words:
        return []
    at = words.index("install") if "install" in words else words.index("add")
    out = []
    skip = False
    for w in words[at + 1:]:
        if skip:
            skip = False
        elif w in ("-o", "-t", "--target-release"):
            skip = True  # these take a value
        elif not w.startswith("-"):
            out.append(re.split(r"[=:]", w, maxsplit=1)[0])  # "pkg=1.2", "pkg:amd64" -> "pkg"
    return out


def pip_requirements(words: list[str]) -> tuple[list[str], list[str]] | None:
    """(requirement specs, sources we cannot read) of a pip/uv install line; None if not one.

    Handles `pip install`, `pip3 install`, `python -m pip install`, `uv pip install`, `uv add`;
    quotes are shell quotes (`"pandas==2.2.3"` is the spec pandas==2.2.3); option values
    (`--index-url URL`) are not packages."""
    start = None
    for i in range(len(words)):
        if words[i:i + 2] in (["pip", "install"], ["pip3", "install"], ["uv", "add"]) or \
                (re.fullmatch(r"pip3(\.\d+)?", words[i]) and words[i + 1:i + 2] == ["install"]):
            start = i + 2
        elif words[i:i + 3] in (["-m", "pip", "install"], ["uv", "pip", "install"]):
            start = i + 3
        if start is not None:
            break
    if start is None:
        return None
    specs, sources = [], []
    rest = words[start:]
    i = 0
    while i < len(rest):
        w = rest[i]
        if w in _PIP_SOURCE_OPTIONS:
            sources.append(f"{w} {rest[i + 1] if i + 1 < len(rest) else ''}".strip())
            i += 2
            continue
        if w.startswith("--requirement=") or w.startswith("--editable=") or (w.startswith("-r") and len(w) > 2):
            sources.append(w)
        elif w in _PIP_VALUE_OPTIONS:
            i += 2
            continue
        elif not w.startswith("-"):
            if w in (".", "..") or "/" in w or w.endswith((".whl", ".tar.gz", ".zip")):
                sources.append(w)  # a local path, a wheel, a URL
            else:
                specs.append(w)
        i += 1
    return specs, sources


# ---------------------------------------------------------------------------------------
# The host


def apt_installed(package: str) -> bool:
    if shutil.which(package):
        return True
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "install ok installed" in out.stdout


def missing_apt(packages: list[str]) -> tuple[list[str], list[str]]:
    """(blockers, ignored): packages the host lacks that matter, and those skipped with a reason."""
    blockers, ignored = [], []
    for p in packages:
        if p in HARNESS_TOOLS:
            ignored.append(f"{p} (Terminal-Bench's own tooling, not a task dependency)")
        elif apt_installed(p):
            continue
        elif p in PYTHON_PROVIDED:
            ignored.append(f"{p} (the sandbox runs harnessrl's Python)")
        elif p in DOWNLOADERS:
            ignored.append(f"{p} (a download tool; the sandbox has no network)")
        else:
            blockers.append(p)
    return blockers, ignored


@dataclass(frozen=True)
class PinProblem:
    spec: str
    message: str  # one line naming the pin and what the host has
    fix: str
    missing: bool = False  # not installed at all (versus another version)


def check_pin(spec: str) -> PinProblem | None:
    """None when the interpreter the sandbox uses satisfies `spec`; else what is wrong."""
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        return PinProblem(spec, f"cannot read the Python requirement {spec!r}",
                          "write it as a PEP 508 requirement (name, optional ==version)")
    if req.marker is not None and not req.marker.evaluate():
        return None  # not for this platform / Python
    try:
        have = importlib.metadata.version(req.name)
    except importlib.metadata.PackageNotFoundError:
        return PinProblem(spec, f"needs Python package {spec!r}, which is not installed",
                          f"pip install '{spec}' into the interpreter harnessrl runs with", missing=True)
    if not req.specifier:
        return None
    try:
        ok = req.specifier.contains(Version(have), prereleases=True)
    except InvalidVersion:
        ok = False
    if ok:
        return None
    return PinProblem(spec, f"pins {spec}; this host has {req.name} {have}",
                      f"pip install '{spec}' into the interpreter harnessrl runs with, or run against the host's "
                      'version knowingly: pins = "loose" in suite.toml (tasks check --pins loose)')


def requirement_name(spec: str) -> str:
    try:
        return Requirement(spec).name
    except InvalidRequirement:
        return spec


# ---------------------------------------------------------------------------------------
# Shell scripts


_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")


def shell_commands(script: str) -> list[str]:
    """A script's commands, split on &&, ||, ;, | and newlines, without comments or heredoc bodies.

    Good enough to classify lines (install? download?); a heredoc's body is data written to a
    file, not commands, so `cat > app.py <<EOF ... requests.get(url) ... EOF` is not a download."""
    text = re.sub(r"\\\s*\n", " ", script)
    lines, end = [], None
    for line in text.splitlines():
        if end is not None:
            if line.strip() == end:
                end = None
            continue
        m = _HEREDOC.search(line)
        if m:
            end = m.group(2)
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        lines.append(re.sub(r"\s+#.*$", "", line))
    return [c.strip() for c in re.split(r"&&|\|\||;|\||\n", "\n".join(lines)) if c.strip()]


_DOWNLOAD_TOOLS = frozenset({"curl", "wget", "npm", "npx", "yarn", "pnpm", "pipx", "rustup", "snap", "conda", "mamba",
                             "uvx", "add-apt-repository", "aria2c"})
_DOWNLOAD_SUBCOMMANDS = {"git": {"clone", "fetch", "pull", "submodule"}, "go": {"get", "install", "mod"},
                         "gem": {"install"}, "cargo": {"install", "add", "fetch"}, "uv": {"add", "sync", "tool"},
                         "docker": {"pull", "run", "build"}}


def downloads(command: str) -> bool:
    """Does this one command (from shell_commands) fetch from the network? Judged by the command
    itself, not by words in its arguments: `echo "install with curl"` downloads nothing."""
    words = command_words(command)
    if not words:
        return False
    tool = words[0].rsplit("/", 1)[-1]
    if tool in _DOWNLOAD_TOOLS:
        return True
    if tool in _DOWNLOAD_SUBCOMMANDS and set(words[1:4]) & _DOWNLOAD_SUBCOMMANDS[tool]:  # `git -C dir fetch`
        return True
    return bool(re.search(r"(\$\(|`)\s*(curl|wget)\b", command))  # $(curl ...) inside another command
