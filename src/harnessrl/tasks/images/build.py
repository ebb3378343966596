"""A task's image from its own Dockerfile, plus its grader layer; cached by the build inputs.

    spec = task_build_spec(Path("tasks/hello-world"))   # BuildSpec: dockerfile, context, tests script, FROMs
    built = build_task(store, spec, say=print)           # Built: image, grader_image, stand_ins, packages, cached
    built.image          # localhost/harnessrl-task/hello-world:<key>         (what the agent runs in)
    built.grader_image   # localhost/harnessrl-task/hello-world:<key>-grader  (+ the tests' runner)

The Dockerfile is built as written (`buildah bud --pull=never`, registry mounts: registry.py).
Its `FROM` names that are not earlier stages must be stand-ins (bases.py), built on first use.
The cache key hashes everything the image depends on: the Dockerfile, every file of the build
context, the image ids of the bases, the test runner's packages and this recipe's version; a key
lock (store.lock) lets two builders of the same task wait for one build. Each build writes
build.log, meta.json (images, substitutions, seconds, bytes) and packages.json (installed Debian
and Python package versions) under the store's builds/<key>/.

Refused with a machine-readable reason (BuildRefused.code):
  no_dockerfile, compose_services (more than one service), compose_image (a prebuilt image),
  unreachable_base (no registry and no stand-in), build_failed (see the log), runner_unavailable.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from harnessrl.tasks.images import bases
from harnessrl.tasks.images.grader_layer import (
    download_runner,
    grader_containerfile,
    image_python,
    installed_packages,
    stage_tools,
    test_dependencies,
)
from harnessrl.tasks.images.registry import bud
from harnessrl.tasks.images.store import ImageError, ImageStore

RECIPE = "harnessrl-task-image-2"  # bump when the way images are built changes: every key changes


class BuildRefused(Exception):
    def __init__(self, code: str, reason: str):
        super().__init__(f"{code}: {reason}")
        self.code, self.reason = code, reason


@dataclass(frozen=True)
class BuildSpec:
    name: str
    folder: Path
    dockerfile: Path
    context: Path
    tests_script: str  # run-tests.sh or tests/test.sh (read for the runner's packages)
    froms: tuple[str, ...]  # external bases, in order
    build_args: dict[str, str] = field(default_factory=dict)


@dataclass
class Built:
    task: str
    key: str
    image: str
    grader_image: str
    stand_ins: list[dict]
    runner: list[str]
    python: str
    seconds: float
    bytes: int
    cached: bool = False
    packages: dict = field(default_factory=dict)


# -- what to build ----------------------------------------------------------------------------


def _compose_build(compose: Path, default_ctx: Path) -> tuple[Path, Path, dict[str, str]]:
    """A single-service docker-compose.yaml's build: (context, dockerfile, args)."""
    try:
        data = yaml.safe_load(compose.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise BuildRefused("compose_unreadable", f"{compose.name}: {err}") from None
    services = data.get("services") or {}
    if len(services) > 1:
        raise BuildRefused("compose_services", f"{compose.name} has {len(services)} services "
                           f"({', '.join(services)}); one container per task is supported")
    service = next(iter(services.values()), None) or {}
    build = service.get("build")
    if build is None:
        if service.get("image"):
            raise BuildRefused("compose_image", f"{compose.name} runs the prebuilt image {service['image']!r}")
        return default_ctx, default_ctx / "Dockerfile", {}
    if isinstance(build, str):
        build = {"context": build}
    ctx = (compose.parent / str(build.get("context", "."))).resolve()
    dockerfile = ctx / str(build.get("dockerfile", "Dockerfile"))
    args = build.get("args") or {}
    if isinstance(args, list):
        args = dict(a.split("=", 1) for a in args if "=" in a)
    return ctx, dockerfile, {str(k): str(v) for k, v in args.items() if "${" not in str(v)}


def external_froms(dockerfile_text: str, build_args: dict[str, str]) -> tuple[str, ...]:
    """The images FROM lines name that are not earlier stages (ARG defaults before FROM substituted)."""
    args = dict(build_args)
    stages: set[str] = set()
    out: list[str] = []
    text = dockerfile_text.replace("\\\n", " ")
    for line in text.splitlines():
        words = line.strip().split()
        if not words or words[0].startswith("#"):
            continue
        op = words[0].upper()
        if op == "ARG" and not stages and len(words) > 1 and "=" in words[1]:
            k, v = words[1].split("=", 1)
            args.setdefault(k, v.strip('"'))
        if op == "FROM":
            words = [w for w in words[1:] if not w.startswith("--")]
            image = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), words[0])
            if len(words) >= 3 and words[1].upper() == "AS":
                stages.add(words[2].lower())
            if image.lower() not in stages and image != "scratch" and image not in out:
                out.append(image)
    return tuple(out)


def task_build_spec(folder: Path) -> BuildSpec:
    """The Dockerfile, context and test script of a Terminal-Bench (task.yaml) or Harbor (task.toml) folder."""
    folder = folder.resolve()
    if (folder / "task.toml").exists():  # Harbor: environment/Dockerfile, tests/test.sh
        ctx = folder / "environment"
        tests = folder / "tests" / "test.sh"
    else:  # Terminal-Bench: Dockerfile at the top, run-tests.sh
        ctx = folder
        tests = folder / "run-tests.sh"
    compose = next((ctx / n for n in ("docker-compose.yaml", "docker-compose.yml") if (ctx / n).exists()), None)
    ctx, dockerfile, args = _compose_build(compose, ctx) if compose else (ctx, ctx / "Dockerfile", {})
    if not dockerfile.exists():
        raise BuildRefused("no_dockerfile", f"{dockerfile.relative_to(folder) if dockerfile.is_relative_to(folder) else dockerfile} not found")
    text = dockerfile.read_text(encoding="utf-8", errors="replace")
    script = tests.read_text(encoding="utf-8", errors="replace") if tests.exists() else ""
    return BuildSpec(folder.name, folder, dockerfile, ctx, script, external_froms(text, args), args)


# -- the cache key --------------------------------------------------------------------------------


def _context_digest(ctx: Path, h) -> None:
    for path in sorted(ctx.rglob("*")):
        rel = path.relative_to(ctx).as_posix()
        if path.is_symlink():
            h.update(f"L {rel} {os.readlink(path)}\n".encode())
        elif path.is_file():
            h.update(f"F {rel} {path.stat().st_mode & 0o7777:o}\n".encode())
            h.update(hashlib.sha256(path.read_bytes()).digest())
        elif path.is_dir():
            h.update(f"D {rel}\n".encode())


def build_key(spec: BuildSpec, base_ids: list[str], runner: list[str]) -> str:
    h = hashlib.sha256(RECIPE.encode())
    h.update(spec.dockerfile.read_bytes())
    h.update(json.dumps([base_ids, runner, sorted(spec.build_args.items())]).encode())
    _context_digest(spec.context, h)
    return h.hexdigest()[:20]


def image_name(name: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._") or "task"


# -- building --------------------------------------------------------------------------------------


def ensure_bases(store: ImageStore, froms: tuple[str, ...], say: Callable[[str], None]) -> tuple[list[dict], list[str]]:
    """Every external FROM as a local image (stand-ins built on first use): (substitution records, image ids)."""
    records, ids = [], []
    for name in froms:
        ref = bases.qualify(name)
        if not store.exists(ref) or bases.stand_in_of(store, ref) is None:
            try:
                stand_in = bases.resolve(name)
            except bases.Unreachable as err:
                raise BuildRefused("unreachable_base", str(err)) from None
            bases.build_stand_in(store, stand_in, say)
        record = bases.stand_in_of(store, ref)
        if record is not None:
            records.append(record)
        ids.append(store.image_id(ref))
    return records, ids


def build_task(store: ImageStore, spec: BuildSpec, say: Callable[[str], None] = print,
               timeout_s: float = 3600.0, budget_bytes: int | None = None) -> Built:
    """Build (or find in the cache) the task's image and its grader layer."""
    stand_ins, base_ids = ensure_bases(store, spec.froms, say)
    runner = test_dependencies(spec.tests_script)
    key = build_key(spec, base_ids, runner)
    tag = f"localhost/harnessrl-task/{image_name(spec.name)}:{key}"
    with store.lock(key):
        meta_path = store.build_dir(key) / "meta.json"
        if meta_path.exists() and store.exists(tag) and store.exists(f"{tag}-grader"):
            store.touch(key)
            data = json.loads(meta_path.read_text())
            return Built(**{k: v for k, v in data.items() if k in Built.__dataclass_fields__ and k != "cached"}, cached=True)
        log = store.build_dir(key) / "build.log"
        log.write_bytes(b"")
        t0 = time.perf_counter()
        say(f"{spec.name}: building {spec.dockerfile.name} (log {log})")
        progress = (lambda line: say(f"  {spec.name}: {line}") if line.startswith("STEP ") else None)
        try:
            bud(store, spec.context, spec.dockerfile, tag, log, build_args=spec.build_args, on_line=progress,
                timeout=timeout_s, labels={"harnessrl.task": spec.name, "harnessrl.key": key,
                                           "harnessrl.stand_ins": json.dumps(stand_ins)})
        except ImageError:
            raise BuildRefused("build_failed", f"the Dockerfile did not build (log: {log})") from None
        with store.mounted(tag) as root:
            python = image_python(root)
            packages = installed_packages(root)
        (store.build_dir(key) / "packages.json").write_text(json.dumps(packages, indent=1))
        grader_python = python or bases.SUITE_PYTHON.get(_suite_of(stand_ins), "3.13")
        say(f"  {spec.name}: grader layer ({', '.join(runner)} for CPython {grader_python})")
        _build_grader_layer(store, tag, runner, grader_python, python is None, log)
        built = Built(spec.name, key, tag, f"{tag}-grader", stand_ins, runner, grader_python,
                      round(time.perf_counter() - t0, 1), store.size(tag), packages={
                          "deb": len(packages["deb"]), "python": len(packages["python"]),
                          "file": str(store.build_dir(key) / "packages.json")})
        tmp = meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(built) | {"folder": str(spec.folder)}, indent=1))
        tmp.replace(meta_path)
    if budget_bytes is not None:
        store.prune(budget_bytes)
    say(f"{spec.name}: built in {built.seconds:.0f} s, {built.bytes / 1e6:.0f} MB")
    return built


def _suite_of(stand_ins: list[dict]) -> str:
    return stand_ins[-1]["suite"] if stand_ins else "trixie"


def _build_grader_layer(store: ImageStore, tag: str, runner: list[str], python: str, python_missing: bool,
                        log: Path) -> None:
    with tempfile.TemporaryDirectory(dir=store.root / "tmp") as tmp:
        ctx = Path(tmp)
        try:
            download_runner(runner, python, ctx / "runner", log)
        except RuntimeError as err:
            raise BuildRefused("runner_unavailable", str(err)) from None
        stage_tools(ctx)
        (ctx / "Containerfile").write_text(grader_containerfile(tag, python_missing))
        try:
            bud(store, ctx, ctx / "Containerfile", f"{tag}-grader", log)
        except ImageError:
            raise BuildRefused("build_failed", f"the grader layer did not build (log: {log})") from None
        shutil.rmtree(ctx / "runner", ignore_errors=True)
        shutil.rmtree(ctx / "bin", ignore_errors=True)
