"""A task's other services (docker-compose.yaml): built from their own Dockerfiles, run beside the
agent in the episode's network namespace.

    main, others = read_compose(Path("env/docker-compose.yaml"), Path("env"))   # the agent's service + the rest
    with Services(store, sandbox, built.services, network, names) as services:  # each in its own root and uid
        ...                                                                        # `curl http://api-server:5000/`

The agent's service is the one named `main` (Harbor), `client` (Terminal-Bench), or the only one.
Every other service is a sidecar: built from its `build` (context, dockerfile, args) or, with only
an `image`, taken from a stand-in base (bases.py: `python:3.13-slim` resolves, `redis` does not:
unreachable_base). Kept from compose: command, entrypoint, environment (a `${VAR}` from the
machine's environment is never read: its default or empty), working_dir, healthcheck (test,
interval, retries, start_period; the agent starts once every sidecar is healthy, as
`depends_on: condition: service_healthy` asks), the file's order as the start order.

How they run: each sidecar in its own episode root (its image under a private overlay) and its own
unprivileged uid, under the same jail as the agent, and every one of them, the agent's commands and
the grader's test run join ONE loopback-only network namespace per episode (tasks/netns.py), as
the containers of a pod do. Each service name resolves to 127.0.0.1 through /etc/hosts in every
root. So `api-server:5000` is reachable from the agent and from the tests, nothing else is. Not
kept: `ports`/`expose` (every port of every service is reachable inside the episode; two services
listening on one port conflict), volumes, networks, deploy limits (the jail's own apply).
Sidecars are not the agent: grading stops only the agent's processes, the tests then talk to the
sidecars as they are.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harnessrl.tasks.images.store import BuildRefused, ImageError, ImageStore
from harnessrl.tasks.workspace import Workspace

MAIN_NAMES = ("main", "client")  # Harbor's, Terminal-Bench's name for the agent's service


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    context: Path | None = None  # build context (None: `image` only)
    dockerfile: Path | None = None
    build_args: dict[str, str] = field(default_factory=dict)
    image: str | None = None  # a stand-in base name when there is no build
    command: tuple[str, ...] | None = None  # compose's command (replaces the image's CMD)
    entrypoint: tuple[str, ...] | None = None
    environment: dict[str, str] = field(default_factory=dict)
    working_dir: str | None = None
    healthcheck: tuple[str, ...] | str | None = None  # argv (CMD) or a shell line (CMD-SHELL)
    interval_s: float = 2.0
    retries: int = 15
    start_period_s: float = 5.0


_VAR = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}|\$(\w+)")


def _no_host_vars(value) -> str:
    """${VAR:-default} -> default, ${VAR} / $VAR -> "": the machine's environment never leaks in."""
    return _VAR.sub(lambda m: m.group(2) or "", str(value))


def _seconds(value, default: float) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*", str(value)) if value is not None else None
    if not m:
        return default
    return float(m.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}[m.group(2)]


def _argv(value) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple(str(v) for v in value) if isinstance(value, list) else tuple(shlex.split(str(value)))


def _health(hc) -> tuple[tuple[str, ...] | str | None, float, int, float]:
    if not isinstance(hc, dict) or hc.get("disable"):
        return None, 2.0, 15, 5.0
    test = hc.get("test")
    check: tuple[str, ...] | str | None
    if isinstance(test, list) and test and test[0] == "CMD":
        check = tuple(str(t) for t in test[1:])
    elif isinstance(test, list) and test and test[0] == "CMD-SHELL":
        check = " ".join(str(t) for t in test[1:])
    elif isinstance(test, str):
        check = test
    else:
        check = None
    return (check, _seconds(hc.get("interval"), 2.0), int(hc.get("retries", 15) or 15),
            _seconds(hc.get("start_period"), 5.0))


def _build_of(service: dict, base: Path) -> tuple[Path, Path, dict[str, str]] | None:
    build = service.get("build")
    if build is None:
        return None
    if isinstance(build, str):
        build = {"context": build}
    ctx = (base / _no_host_vars(build.get("context", "."))).resolve()
    dockerfile = ctx / _no_host_vars(build.get("dockerfile", "Dockerfile"))
    args = build.get("args") or {}
    if isinstance(args, list):
        args = dict(a.split("=", 1) for a in args if "=" in a)
    return ctx, dockerfile, {str(k): str(v) for k, v in args.items() if "$" not in str(v)}


def read_compose(compose: Path, default_ctx: Path) -> tuple[tuple[Path, Path, dict[str, str]], tuple[ServiceSpec, ...]]:
    """((context, dockerfile, build args) of the agent's service, the other services in file order)."""
    try:
        data = yaml.safe_load(compose.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise BuildRefused("compose_unreadable", f"{compose.name}: {err}") from None
    services = data.get("services") or {}
    if not isinstance(services, dict):
        raise BuildRefused("compose_unreadable", f"{compose.name}: services is not a mapping")
    main = next((n for n in MAIN_NAMES if n in services), None) or (next(iter(services)) if len(services) == 1 else None)
    if services and main is None:
        raise BuildRefused("compose_services", f"{compose.name} has {len(services)} services ({', '.join(services)}) "
                             "and none is the agent's (named main or client)")
    service = (services.get(main) if main else None) or {}
    own = _build_of(service, compose.parent)
    if own is None and service.get("image") and main != "main":  # Harbor's main is built from environment/Dockerfile
        raise BuildRefused("compose_image", f"{compose.name} runs the prebuilt image {service['image']!r}")
    main_build = own or (default_ctx, default_ctx / "Dockerfile", {})
    others = []
    for name, svc in services.items():
        if name == main:
            continue
        svc = svc or {}
        built = _build_of(svc, compose.parent)
        image = _no_host_vars(svc["image"]) if svc.get("image") and built is None else None
        if built is None and not image:
            raise BuildRefused("compose_unreadable", f"service {name!r} has neither build nor image")
        env = svc.get("environment") or {}
        if isinstance(env, list):
            env = dict(e.split("=", 1) if "=" in e else (e, "") for e in map(str, env))
        check, interval, retries, start = _health(svc.get("healthcheck"))
        others.append(ServiceSpec(
            name=str(name), context=built[0] if built else None, dockerfile=built[1] if built else None,
            build_args=built[2] if built else {}, image=image, command=_argv(svc.get("command")),
            entrypoint=_argv(svc.get("entrypoint")), working_dir=svc.get("working_dir"),
            environment={str(k): _no_host_vars(v if v is not None else "") for k, v in env.items()},
            healthcheck=check, interval_s=interval, retries=retries, start_period_s=start))
    return main_build, tuple(others)


def hosts_text(names: list[str]) -> str:
    return "127.0.0.1\tlocalhost " + " ".join(n for n in names if n != "localhost") + "\n::1\tlocalhost ip6-localhost\n"


def write_hosts(merged: Path, uid: int, gid: int, names: list[str]) -> None:
    """/etc/hosts of an episode root: every service name at 127.0.0.1 (one shared loopback network).
    Written by the host into the root's upper layer, never through a link the image holds."""
    etc = merged / "etc"
    if etc.is_symlink() or not etc.is_dir():
        return
    path = etc / "hosts"
    if path.is_symlink() or path.exists():
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as out:
        out.write(hosts_text(names))
    os.chown(path, uid, gid)


class Services:
    """The sidecars of one episode, started in order (each healthy before the next), stopped at close()."""

    def __init__(self, store: ImageStore, sandbox, services: list[dict], network, names: list[str],
                 lifetime_s: float = 7200.0):
        from harnessrl.tasks.images.rootfs import EpisodeRoot

        self.running: list[tuple[str, Workspace, object]] = []
        try:
            for svc in services:
                ws = Workspace.create(None, quota_mb=64, scratch_mb=1024, scratch_inodes=100_000)
                self.running.append((svc["name"], ws, None))
                root = EpisodeRoot.create(store, svc["image"], ws)
                sandbox.attach_image(ws, root)
                write_hosts(root.merged, ws.uid, ws.gid, names)
                argv = service_argv(svc, root)
                if not argv:
                    raise ImageError(f"service {svc['name']}: no command (its image has no CMD/ENTRYPOINT)")
                cwd = svc.get("working_dir") or root.workdir
                proc = sandbox.spawn(argv, ws, cwd=cwd, env=dict(svc.get("env") or {}), network=network,
                                     stdin=False, lifetime_s=lifetime_s)
                self.running[-1] = (svc["name"], ws, proc)
                _wait_healthy(sandbox, ws, cwd, network, svc, proc)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for _, ws, proc in reversed(self.running):
            if proc is not None:
                proc.close()
            ws.close()
        self.running = []

    def __enter__(self) -> Services:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def service_argv(svc: dict, root) -> list[str]:
    """Compose's rule: `entrypoint` replaces the image's ENTRYPOINT and drops its CMD; `command`
    replaces the CMD."""
    entrypoint = svc.get("entrypoint")
    command = svc.get("command")
    ep = list(entrypoint) if entrypoint is not None else list(root.entrypoint)
    cmd = list(command) if command is not None else (list(root.cmd) if entrypoint is None else [])
    return ep + cmd


def _wait_healthy(sandbox, ws: Workspace, cwd: str, network, svc: dict, proc) -> None:
    """Run the healthcheck in the service's root and network until it passes (compose's retries after
    its start period); without one, give the service its start period. A service that exits fails."""
    check = svc.get("healthcheck")
    interval = float(svc.get("interval_s", 2.0))
    deadline = time.monotonic() + float(svc.get("start_period_s", 5.0)) + interval * int(svc.get("retries", 15))
    if not check:
        time.sleep(min(2.0, float(svc.get("start_period_s", 5.0))))
        if not proc.alive:
            raise ImageError(f"service {svc['name']} exited at start: {proc.read()[-300:].strip()}")
        return
    while True:
        r = sandbox.run(list(check) if isinstance(check, list) else check, ws, cwd=cwd, network=network, timeout_s=10)
        if r.exit_code == 0:
            return
        if not proc.alive:
            raise ImageError(f"service {svc['name']} exited before it was healthy: {proc.read()[-300:].strip()}")
        if time.monotonic() > deadline:
            raise ImageError(f"service {svc['name']} not healthy after {svc.get('retries', 15)} checks: "
                             f"{(r.stderr or r.stdout)[-200:].strip()}")
        time.sleep(interval)


def wait_listening(network, proc, before: set[int], timeout_s: float = 10.0) -> set[int]:
    """Wait until the service `proc` listens on a new port of the episode network (an image's
    ENTRYPOINT has no healthcheck; an agent or a test that connects at once would otherwise find
    nothing), it exits, or `timeout_s` passes (a service that never listens). The new ports."""
    deadline = time.monotonic() + timeout_s
    while True:
        new = network.listening() - before
        if new or not proc.alive or time.monotonic() > deadline:
            return new
        time.sleep(0.1)
