#!/usr/bin/env python3
"""Offline `uv`, `uvx` and console scripts for a task image's grader layer (standard library only).

Harbor's tests/test.sh and Terminal-Bench's run-tests.sh fetch their runner while they grade:

    curl -LsSf https://astral.sh/uv/0.9.7/install.sh | sh; source $HOME/.local/bin/env
    uvx --with pytest==8.4.1 --with pytest-json-ctrf==0.3.5 pytest --ctrf /logs/verifier/ctrf.json /tests/test_state.py
    uv add pytest==8.4.1 && uv run pytest /tests/test_outputs.py -rA

Grading has no network, so the download fails; the packages these lines name were installed when
the image was built (grader_layer.py, into /opt/harnessrl/grader), and this file, copied into the
layer as /opt/harnessrl/bin/uv, /opt/harnessrl/bin/uvx and one name per console script of those
packages (pytest, py.test, ...), runs them from there. The grader puts /opt/harnessrl/bin first on
PATH. `uv add`, `uv pip install`, `uv venv`, `uv init`, `uv sync`, `uv tool install` do nothing
(their packages are already there); a requested Python version (`-p 3.13`) is the image's own.

A console script runs with the image's python3, `-P` (the working directory, where the agent's
files are, never shadows a module), the runner folder first on sys.path, pytest's plugin
auto-loading off and the runner's own pytest plugins loaded by name (`-p`), so a plugin the agent
installed in the image's site-packages is never loaded.
"""

import configparser
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(os.path.dirname(HERE), "grader")
PYTHONS = {"python", "python3"} | {f"python3.{n}" for n in range(6, 20)}
NOOPS = {"add", "sync", "init", "venv", "lock", "remove", "cache"}
# options (of uv, uv run, uv tool run/uvx) that take a value; every other option is a flag
VALUED = {"--with", "-w", "--from", "--python", "-p", "--with-requirements", "--with-editable", "--directory",
          "--project", "--index-url", "-i", "--extra-index-url", "--index", "--default-index", "--find-links", "-f",
          "--cache-dir", "--config-file", "--env-file", "--color", "--python-preference", "--constraints", "-c",
          "--overrides", "--build-constraints", "--extra", "--group", "--package", "--link-mode",
          "--resolution", "--prerelease", "--exclude-newer", "--refresh-package", "--reinstall-package",
          "--upgrade-package", "-P", "--index-strategy", "--keyring-provider", "--allow-insecure-host"}
BOOT = ("import importlib, sys\n"
        "runner, name, module, attr = sys.argv[1:5]\n"
        "sys.path.insert(0, runner)\n"
        "sys.argv = [name] + sys.argv[5:]\n"
        "obj = importlib.import_module(module)\n"
        "for part in attr.split('.'):\n"
        "    obj = getattr(obj, part)\n"
        "sys.exit(obj())\n")


def entry_points(group):
    """{name: "module:attr"} of the runner folder's distributions in one entry-point group."""
    out = {}
    try:
        names = sorted(os.listdir(RUNNER))
    except OSError:
        return out
    for name in names:
        path = os.path.join(RUNNER, name, "entry_points.txt")
        if not name.endswith(".dist-info") or not os.path.exists(path):
            continue
        parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
        parser.optionxform = str
        try:
            parser.read(path, encoding="utf-8")
        except configparser.Error:
            continue
        if parser.has_section(group):
            for key, value in parser.items(group):
                out.setdefault(key.strip(), value.strip())
    return out


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (RUNNER, env.get("PYTHONPATH", "")) if p)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def run_command(name, args):
    """Run `name` (a Python, a console script of the runner, or another program) with `args`."""
    if name in PYTHONS:
        os.execve(sys.executable, [sys.executable, *args], _env())
    target = entry_points("console_scripts").get(name)
    if target is not None:
        module, _, attr = target.partition(":")
        if module.split(".")[0] in ("pytest", "_pytest", "py"):
            plugins = [v.partition(":")[0] for v in entry_points("pytest11").values()]
            args = [a for p in plugins for a in ("-p", p)] + list(args)
        safe = ["-P"] if sys.version_info >= (3, 11) else []  # -P: no working directory on sys.path
        os.execve(sys.executable, [sys.executable, *safe, "-c", BOOT, RUNNER, name, module.strip(),
                                   attr.strip() or "main", *args], _env())
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = os.path.join(folder, name)
        if folder and os.path.abspath(folder) != HERE and os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            os.execve(candidate, [name, *args], _env())
    sys.stderr.write(f"{name}: not in the grader layer (offline); the image has no such program\n")
    return 127


def split_options(args):
    """(options as [(flag, value or None)], the first positional argument's index)."""
    options, i = [], 0
    while i < len(args):
        word = args[i]
        if word == "--":
            return options, i + 1
        if not word.startswith("-") or word == "-":
            return options, i
        flag, eq, value = word.partition("=")
        if eq:
            options.append((flag, value))
        elif flag in VALUED:
            options.append((flag, args[i + 1] if i + 1 < len(args) else ""))
            i += 1
        else:
            options.append((flag, None))
        i += 1
    return options, i


def tool_run(args):
    """`uvx [options] command[@version] args` / `uv tool run ...`."""
    options, start = split_options(args)
    if start >= len(args):
        sys.stderr.write("uvx: no command given\n")
        return 2
    name = args[start].split("@", 1)[0]
    if "==" in name:
        name = name.split("==", 1)[0]
    return run_command(name, args[start + 1:])


def uv(args):
    options, start = split_options(args)
    if any(flag in ("--version", "-V") for flag, _ in options) or args[start:start + 1] == ["version"]:
        print("uv 0.0.0 (harnessrl offline stand-in)")
        return 0
    if start >= len(args):
        sys.stderr.write("uv: no command given\n")
        return 2
    command, rest = args[start], args[start + 1:]
    if command == "run":
        run_options, first = split_options(rest)
        if any(flag in ("-m", "--module") for flag, _ in run_options):
            return run_command("python3", ["-m", *rest[first:]])
        if first >= len(rest):
            sys.stderr.write("uv run: no command given\n")
            return 2
        program = rest[first]
        if program.endswith(".py"):
            return run_command("python3", rest[first:])
        return run_command(program, rest[first + 1:])
    if command == "tool" and rest[:1] == ["run"]:
        return tool_run(rest[1:])
    if command in NOOPS or (command in ("pip", "tool", "python") and rest[:1] in (["install"], ["sync"])):
        sys.stderr.write(f"uv {command}: offline; the grader layer already holds the test runner's packages\n")
        return 0
    sys.stderr.write(f"uv {command}: not available offline in the grader layer\n")
    return 2


def main(argv):
    name = os.path.basename(argv[0])
    if name == "uvx":
        return tool_run(argv[1:])
    if name == "uv":
        return uv(argv[1:])
    return run_command(name, argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
