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

A docker-compose.yaml's other services (services.py) are built too, each from its own Dockerfile
(or taken from a stand-in base when it names only an image): `Built.services`.

Refused with a machine-readable reason (BuildRefused.code):
  no_dockerfile, compose_services (several services, none named main or client), compose_image
  (the agent's service is a prebuilt image),
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
from harnessrl.tasks.images.services import ServiceSpec, read_compose
from harnessrl.tasks.images.store import BuildRefused, ImageError, ImageStore

RECIPE = "harnessrl-task-image-2"  # bump when the way images are built changes: every key changes


@dataclass(frozen=True)
class BuildSpec:
    name: str
    folder: Path
    dockerfile: Path
    context: Path
    tests_script: str  # run-tests.sh or tests/test.sh (read for the runner's packages)
    froms: tuple[str, ...]  # external bases, in order (the sidecars' too)
    build_args: dict[str, str] = field(default_factory=dict)
    services: tuple[ServiceSpec, ...] = ()  # docker-compose's other services (services.py)
    service_name: str = "main"  # the agent's service: its name in /etc/hosts


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
    services: list[dict] = field(default_factory=list)  # sidecars: name, image, command, env, healthcheck ...
    service_name: str = "main"


# -- what to build ----------------------------------------------------------------------------


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
    services: tuple[ServiceSpec, ...] = ()
    if compose is not None:
        (ctx, dockerfile, args), services = read_compose(compose, ctx)
    else:
        dockerfile, args = ctx / "Dockerfile", {}
    if not dockerfile.exists():
        raise BuildRefused("no_dockerfile", f"{dockerfile.relative_to(folder) if dockerfile.is_relative_to(folder) else dockerfile} not found")
    froms = list(external_froms(dockerfile.read_text(encoding="utf-8", errors="replace"), args))
    for svc in services:
        if svc.dockerfile is not None and not svc.dockerfile.exists():
            raise BuildRefused("no_dockerfile", f"service {svc.name}: {svc.dockerfile.name} not found")
        extra = external_froms(svc.dockerfile.read_text(encoding="utf-8", errors="replace"), svc.build_args) \
            if svc.dockerfile is not None else (svc.image,)
        froms += [f for f in extra if f not in froms]
    script = tests.read_text(encoding="utf-8", errors="replace") if tests.exists() else ""
    name = "client" if folder.joinpath("task.yaml").exists() else "main"
    return BuildSpec(folder.name, folder, dockerfile, ctx, script, tuple(froms), args, services, name)


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
    for svc in spec.services:  # a sidecar's recipe and build context, or the base it runs as is
        h.update(json.dumps([svc.name, svc.image, sorted(svc.build_args.items())]).encode())
        if svc.dockerfile is not None:
            h.update(svc.dockerfile.read_bytes())
            _context_digest(svc.context, h)
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
    main_bases, _ = ensure_bases(store, external_froms(spec.dockerfile.read_text(errors="replace"), spec.build_args),
                                 lambda m: None)  # the agent's image's own (already built above)
    runner = test_dependencies(spec.tests_script)
    key = build_key(spec, base_ids, runner)
    tag = f"localhost/harnessrl-task/{image_name(spec.name)}:{key}"
    with store.lock(key):
        meta_path = store.build_dir(key) / "meta.json"
        if meta_path.exists() and store.exists(tag) and store.exists(f"{tag}-grader") and all(
                store.exists(s["image"]) for s in json.loads(meta_path.read_text()).get("services", [])):
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
        services = [_build_service(store, spec, svc, tag, key, log, progress, timeout_s) for svc in spec.services]
        with store.mounted(tag) as root:
            python = image_python(root)
            packages = installed_packages(root)
        (store.build_dir(key) / "packages.json").write_text(json.dumps(packages, indent=1))
        grader_python = python or bases.SUITE_PYTHON.get(_suite_of(main_bases), "3.13")
        say(f"  {spec.name}: grader layer ({', '.join(runner)} for CPython {grader_python})")
        _build_grader_layer(store, tag, runner, grader_python, python is None, log)
        built = Built(spec.name, key, tag, f"{tag}-grader", stand_ins, runner, grader_python,
                      round(time.perf_counter() - t0, 1), store.size(tag), packages={
                          "deb": len(packages["deb"]), "python": len(packages["python"]),
                          "file": str(store.build_dir(key) / "packages.json")}, services=services,
                      service_name=spec.service_name)
        tmp = meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(built) | {"folder": str(spec.folder)}, indent=1))
        tmp.replace(meta_path)
    if budget_bytes is not None:
        store.prune(budget_bytes)
    say(f"{spec.name}: built in {built.seconds:.0f} s, {built.bytes / 1e6:.0f} MB")
    return built


def _build_service(store: ImageStore, spec: BuildSpec, svc: ServiceSpec, tag: str, key: str, log: Path,
                   progress, timeout_s: float) -> dict:
    """A sidecar's image (its own Dockerfile as written, or its stand-in base) and how to start it."""
    if svc.dockerfile is not None:
        image = f"{tag}-svc-{image_name(svc.name)}"
        try:
            bud(store, svc.context, svc.dockerfile, image, log, build_args=svc.build_args, on_line=progress,
                timeout=timeout_s, labels={"harnessrl.task": spec.name, "harnessrl.key": key,
                                           "harnessrl.service": svc.name})
        except ImageError:
            raise BuildRefused("build_failed", f"service {svc.name}: its Dockerfile did not build (log: {log})") from None
    else:
        image = bases.qualify(svc.image)
    return {"name": svc.name, "image": image, "command": list(svc.command) if svc.command is not None else None,
            "entrypoint": list(svc.entrypoint) if svc.entrypoint is not None else None, "env": svc.environment,
            "working_dir": svc.working_dir,
            "healthcheck": list(svc.healthcheck) if isinstance(svc.healthcheck, tuple) else svc.healthcheck,
            "interval_s": svc.interval_s, "retries": svc.retries, "start_period_s": svc.start_period_s}


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
