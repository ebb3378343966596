"""Installing a pinned agent program into its own environment, locked and hashed.

Developer note. Layout, one folder per program version (`$HARNESSRL_AGENTS_DIR`, default
`~/.cache/harnessrl/agents`):

    <name>-<version>/
        env/             a venv (pip programs, made from the spec's Python) or an npm prefix
        lock.txt         the resolved versions: `pip freeze --all`, or npm's package-lock.json
        manifest.json    SHA-256 of every file (symlinks by target), size, content hash; written LAST

- `install(name)` runs the registry's ordinary client once (`pip install pkg==X`, `npm install
  pkg@X`) under `nice`, constrained by the lock shipped in `agents/locks/` when there is one (so a
  fresh machine resolves the same versions), then writes the lock and the manifest. A folder
  without a manifest is an interrupted install: it is removed and redone. With a manifest,
  `install` is a no-op that verifies (offline); drift is an error that names `--force`.
- `verify(name)` re-hashes the tree against the manifest: changed, missing and extra files
  (contents and symlink targets; not modes). The content hash names this install: pip writes
  `.pyc` files that embed source mtimes, so two pip installs of the same lock hash differently
  (npm installs hash the same).
  Running a program outside the sandbox (which mounts the tree read-only and sets
  PYTHONDONTWRITEBYTECODE) would add `__pycache__` files: that is drift, and is reported.
- `installed(name)` is what a launch needs: the entry point and the trees the sandbox must
  mount read-only (`Sandbox(ro_paths=...)`, which stages a tree under /root for the workspace
  uid); the venv's interpreter lives outside the venv (pyenv), so its tree is one of them.
- Python programs get a venv made from an interpreter of the spec's version: the running one
  when it matches, else pyenv's newest (`$PYENV_ROOT/versions/3.12.*`), else `python3.12` on
  PATH. npm programs use the system's `node`/`npm` (under /usr, mounted anyway).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessrl.config import ConfigError
from harnessrl.fileio import atomic_write_text
from harnessrl.models import sha256_file
from harnessrl.programs import all_programs, program
from harnessrl.programs.base import LOCKS, Program

ProgramSpec = Program  # the old name

MANIFEST, LOCK, ENV = "manifest.json", "lock.txt", "env"
LOCKS_DIR = LOCKS  # the built-in programs' locks (harnessrl/programs/locks); a program names its own: Program.lock


def agents_dir() -> Path:
    """Where programs are installed: $HARNESSRL_AGENTS_DIR, else ~/.cache/harnessrl/agents."""
    env = os.environ.get("HARNESSRL_AGENTS_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "harnessrl" / "agents"


def program_dir(name: str) -> Path:
    return agents_dir() / program(name).dirname


def is_installed(name: str) -> bool:
    return program(name).kind == "local" or (program_dir(name) / MANIFEST).is_file()


@dataclass(frozen=True)
class Installed:
    """An installed program, as a launch needs it."""

    spec: ProgramSpec
    root: Path  # <agents dir>/<name>-<version>
    env: Path  # root/env: the venv or the npm prefix
    executable: Path  # the entry point, run by absolute path (never put env/bin on the agent's PATH)
    ro_paths: tuple[Path, ...]  # trees the sandbox mounts read-only: the install, the interpreter's tree
    content_hash: str  # SHA-256 over the manifest's file list


def installed(name: str) -> Installed:
    """The installed program `name`; a one-line ConfigError telling how to install it otherwise."""
    spec = program(name)
    if spec.kind == "local":  # a file its package ships: nothing installed, nothing mounted (its launch copies it)
        entry = Path(spec.entry)
        return Installed(spec, entry.parent, entry.parent, entry, (), content_hash({entry.name: sha256_file(entry)}))
    root = program_dir(name)
    if not (root / MANIFEST).is_file():
        raise ConfigError(f"agent program {name!r} is not installed; run `harnessrl agents install {name}`")
    manifest = json.loads((root / MANIFEST).read_text())
    env = root / ENV
    exe = env / "bin" / spec.entry if spec.kind == "pip" else env / "node_modules" / ".bin" / spec.entry
    ro = [root]
    if spec.kind == "pip":  # the venv's python is a symlink into the base interpreter's tree
        base = Path(os.path.realpath(env / "bin" / "python")).parents[1]
        if not base.is_relative_to("/usr"):
            ro.append(base)
    return Installed(spec, root, env, exe, tuple(ro), manifest["content_hash"])


# -- installing -------------------------------------------------------------------------------

def find_python(version: str) -> Path:
    """An interpreter `pythonX.Y` of `version`: the running one, pyenv's newest, or PATH's."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return Path(os.path.realpath(sys.executable))
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"

    def key(p: Path) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", p.name))

    for d in sorted(pyenv.glob(f"{version}.*"), key=key, reverse=True):
        if (d / "bin" / f"python{version}").exists():
            return d / "bin" / f"python{version}"
    found = shutil.which(f"python{version}")
    if found:
        return Path(found)
    raise ConfigError(f"Python {version} not found (needed by an agent program); install it, e.g. "
                      f"`pyenv install {version}`, or put python{version} on PATH")


def install(name: str, *, force: bool = False, progress: Callable[[str], Any] | None = None) -> dict:
    """Install `name` (module docstring); returns its manifest. Idempotent: an installed program
    is verified, not reinstalled, unless `force`."""
    spec = program(name)
    if spec.kind == "local":
        raise ConfigError(f"agent program {name!r} ships with its package ({spec.entry}): nothing to install")
    say = progress or (lambda msg: None)
    root = program_dir(name)
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as lock:  # concurrent installs take turns
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / MANIFEST).is_file() and not force:
            problems = verify(name)
            if problems:
                raise ConfigError(f"agent program {name!r}: the installed files differ from their manifest "
                                  f"({problems[0]}; {len(problems)} differences); reinstall with "
                                  f"`harnessrl agents install {name} --force`")
            return json.loads((root / MANIFEST).read_text())
        if root.exists():  # an interrupted install, or --force
            say(f"removing {root}")
            shutil.rmtree(root)
        root.mkdir()
        t0 = time.perf_counter()
        try:
            if spec.kind == "pip":
                _install_pip(spec, root / ENV, say)
                lock_text = _run([str(root / ENV / "bin" / "python"), "-m", "pip", "freeze", "--all"], spec).stdout
            else:
                _install_npm(spec, root / ENV, say)
                lock_text = (root / ENV / "package-lock.json").read_text()
            for rel in spec.executables:
                (root / ENV / rel).chmod(0o755)
            say("hashing the installed files")
            manifest = write_manifest(spec, root, lock_text, _interpreter(spec, root / ENV), time.perf_counter() - t0)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)  # nothing half-installed looks installed
            raise
        return manifest


def _run(argv: list[str], spec: ProgramSpec, env: dict[str, str] | None = None, cwd: Path | None = None
         ) -> subprocess.CompletedProcess:
    r = subprocess.run(["nice", "-n", "10", *argv], capture_output=True, text=True, cwd=cwd,
                       env={**os.environ, **(env or {})})
    if r.returncode != 0:
        tail = " | ".join((r.stderr or r.stdout).strip().splitlines()[-3:])
        raise ConfigError(f"agent program {spec.name!r}: `{' '.join(argv[:4])} ...` failed (exit {r.returncode}): {tail}")
    return r


def _install_pip(spec: ProgramSpec, env: Path, say: Callable[[str], Any]) -> None:
    python = find_python(spec.python or f"{sys.version_info[0]}.{sys.version_info[1]}")
    say(f"creating a venv with {python}")
    _run([str(python), "-m", "venv", str(env)], spec)
    shipped = spec.lock or Path("/nonexistent")
    constraint = ["-c", str(shipped)] if shipped.is_file() else []
    say(f"pip install {spec.pin}" + (f" (constrained by {shipped.name})" if constraint else ""))
    _run([str(env / "bin" / "python"), "-m", "pip", "install", "--no-input", "--disable-pip-version-check",
          *constraint, spec.pin], spec, env={"PIP_NO_INPUT": "1"})


def _install_npm(spec: ProgramSpec, env: Path, say: Callable[[str], Any]) -> None:
    node = shutil.which("node")
    npm = shutil.which("npm")
    if not node or not npm:
        raise ConfigError(f"agent program {spec.name!r} needs Node {spec.node} and npm (Debian: apt-get install nodejs npm)")
    major = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip().lstrip("v").split(".")[0]
    if spec.node and major != spec.node:
        raise ConfigError(f"agent program {spec.name!r} needs Node {spec.node}, found v{major} ({node})")
    env.mkdir()
    quiet = {"npm_config_update_notifier": "false", "npm_config_fund": "false", "npm_config_audit": "false"}
    shipped = spec.lock or Path("/nonexistent")
    if shipped.is_file():  # the shipped tree: npm install follows a lock that satisfies package.json
        # (not `npm ci`: it insists on other platforms' optional packages being in the lock)
        (env / "package.json").write_text(json.dumps({"dependencies": {spec.package: spec.version}}, indent=2) + "\n")
        shutil.copyfile(shipped, env / "package-lock.json")
        say(f"npm install {spec.pin} (locked by {shipped.name})")
        _run([npm, "install", "--prefix", str(env), "--no-audit", "--no-fund"], spec, env=quiet, cwd=env)
    else:
        say(f"npm install {spec.pin}")
        _run([npm, "install", "--prefix", str(env), "--no-audit", "--no-fund", "--save-exact", spec.pin], spec,
             env=quiet, cwd=env)


def _interpreter(spec: ProgramSpec, env: Path) -> str:
    if spec.kind == "pip":
        return os.path.realpath(env / "bin" / "python")
    return subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()


# -- hashing and verifying ------------------------------------------------------------------------

def write_manifest(spec: ProgramSpec, root: Path, lock_text: str, interpreter: str, seconds: float) -> dict:
    """Write `lock.txt`, then hash `root/env` into `manifest.json` (last: it marks the install
    complete); returns the manifest."""
    (root / LOCK).write_text(lock_text)
    files, size = tree_hashes(root / ENV)
    manifest = {
        "name": spec.name, "package": spec.package, "version": spec.version, "kind": spec.kind,
        "interpreter": interpreter, "install_seconds": round(seconds, 1), "size_bytes": size,
        "lock_sha256": hashlib.sha256(lock_text.encode()).hexdigest(), "content_hash": content_hash(files),
        "files": files,
    }
    atomic_write_text(root / MANIFEST, json.dumps(manifest, indent=0, sort_keys=True))
    return manifest


def tree_hashes(top: Path) -> tuple[dict[str, str], int]:
    """{relative path: sha256 hex, or `link:<target>` for a symlink} for every file under `top`,
    and the total size in bytes. Directories are implied by their files."""
    files: dict[str, str] = {}
    size = 0
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for name in [*filenames, *(d for d in dirnames if os.path.islink(os.path.join(dirpath, d)))]:
            path = Path(dirpath) / name
            rel = str(path.relative_to(top))
            if path.is_symlink():
                files[rel] = "link:" + os.readlink(path)
            elif path.is_file():
                files[rel] = sha256_file(path)
                size += path.stat().st_size
            else:
                files[rel] = "special"
    return dict(sorted(files.items())), size


def content_hash(files: dict[str, str]) -> str:
    """One SHA-256 over the sorted `path\\tdigest` lines: equal trees, equal hash."""
    h = hashlib.sha256()
    for rel, digest in sorted(files.items()):
        h.update(f"{rel}\t{digest}\n".encode())
    return h.hexdigest()


def verify(name: str) -> list[str]:
    """Differences between the installed tree and its manifest (empty: intact)."""
    if program(name).kind == "local":
        return []  # nothing installed: the file is part of its package
    root = program_dir(name)
    if not (root / MANIFEST).is_file():
        raise ConfigError(f"agent program {name!r} is not installed; run `harnessrl agents install {name}`")
    want = json.loads((root / MANIFEST).read_text())["files"]
    have, _ = tree_hashes(root / ENV)
    problems = [f"changed: {p}" for p in sorted(want) if p in have and have[p] != want[p]]
    problems += [f"missing: {p}" for p in sorted(set(want) - set(have))]
    problems += [f"extra: {p}" for p in sorted(set(have) - set(want))]
    return problems


def listing() -> list[dict]:
    """One row per known program: installed or not, version, size, path, content hash."""
    rows = []
    for name, spec in sorted(all_programs().items()):
        root = Path(spec.entry).parent if spec.kind == "local" else program_dir(name)
        row = {"name": name, "package": spec.pin, "kind": spec.kind, "installed": False, "size_mb": None,
               "path": str(root), "content_hash": None, "description": spec.description}
        if spec.kind == "local":
            row.update(installed=True, content_hash=installed(name).content_hash)
        elif (root / MANIFEST).is_file():
            m = json.loads((root / MANIFEST).read_text())
            row.update(installed=True, size_mb=m["size_bytes"] / 1e6, content_hash=m["content_hash"])
        rows.append(row)
    return rows


__all__ = ["Installed", "agents_dir", "content_hash", "find_python", "install", "installed", "is_installed",
           "listing", "program_dir", "tree_hashes", "verify", "write_manifest"]
