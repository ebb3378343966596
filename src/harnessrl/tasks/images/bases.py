"""Stand-in base images: what a task's `FROM` names, built once from the Debian mirror (no registry).

    resolve("ubuntu:24.04")      -> StandIn(family="ubuntu-24.04", suite="trixie", note="Ubuntu 24.04 -> Debian 13 ...")
    resolve("python:3.12-slim")  -> raises Unreachable (no Debian release ships CPython 3.12; never another Python)
    resolve("alpine:3.20")       -> raises Unreachable
    build_stand_in(store, resolve("python:3.13-slim"), say=print)   # once; tags every name of the family

Where no image registry is reachable, a task's base is rebuilt from Debian packages:
`debootstrap --variant=minbase` of the suite from the machine's configured Debian mirror,
imported with `podman import` (one root per suite, cached), then a small recipe on top per
family (the Python images add Debian's CPython, pip and venv; Terminal-Bench's own base images
add what their Dockerfiles add: tmux and asciinema). Every stand-in says what it replaces and
how it differs in its `note`; the note is stored in the image (label `harnessrl.stand_in`), in
every task image built on it, printed by `tasks check`, and copied into episode metadata.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from harnessrl.tasks.images.store import ImageError, ImageStore

# The CPython minor version each Debian suite ships (the only Pythons a stand-in may carry).
SUITE_PYTHON = {"trixie": "3.13", "bookworm": "3.11"}
SUITE_VERSION = {"trixie": "13", "bookworm": "12"}
LABEL = "harnessrl.stand_in"


class Unreachable(ValueError):
    """The base image cannot be had here: no registry, and no honest stand-in."""


@dataclass(frozen=True)
class StandIn:
    family: str  # one recipe, possibly several names: "debian-13", "python-3.13", "t-bench-ubuntu-24-04"
    asked: str  # the name as the task wrote it
    suite: str  # Debian suite of the root
    recipe: str  # Containerfile lines on top of the suite's minbase root ("" for the root itself)
    note: str  # the substitution, in one sentence

    @property
    def tag(self) -> str:
        """The fully qualified name the task's FROM resolves to locally."""
        return qualify(self.asked)

    @property
    def image(self) -> str:
        return f"localhost/harnessrl-base/{self.family}:latest"

    def record(self) -> dict:
        return asdict(self) | {"tag": self.tag, "image": self.image}


def qualify(name: str) -> str:
    """docker's short names, as podman stores them: ubuntu:24.04 -> docker.io/library/ubuntu:24.04."""
    if ":" not in name.rsplit("/", 1)[-1] and "@" not in name:
        name += ":latest"
    first = name.split("/", 1)[0]
    if "/" not in name:
        return f"docker.io/library/{name}"
    if "." not in first and ":" not in first and first != "localhost":
        return f"docker.io/{name}"
    return name


def configured_mirror() -> str:
    """The machine's Debian mirror (apt's first `URIs:` / `deb` line), else deb.debian.org."""
    for path in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        m = re.search(r"^URIs:\s*(\S+)", path.read_text(errors="replace"), re.M)
        if m and "security" not in m.group(1):
            return m.group(1)
    lists = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*.list"))]
    for path in lists:
        if path.exists():
            m = re.search(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)", path.read_text(errors="replace"), re.M)
            if m and "security" not in m.group(1):
                return m.group(1)
    return "http://deb.debian.org/debian"


# -- the recipes ------------------------------------------------------------------------------

_PYTHON = """RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-pip python3-venv \\
 && rm -f /usr/lib/python3*/EXTERNALLY-MANAGED && ln -sf /usr/bin/python3 /usr/local/bin/python \\
 && ln -sf /usr/bin/pip3 /usr/local/bin/pip && rm -rf /var/lib/apt/lists/*
ENV LANG=C.UTF-8
CMD ["python3"]
"""
_TBENCH = """RUN apt-get update && apt-get install -y --no-install-recommends tmux asciinema && rm -rf /var/lib/apt/lists/*
"""
_ROOT = 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nCMD ["bash"]\n'


def _python(asked: str, minor: str, variant: str | None, family_prefix: str = "python") -> StandIn:
    suite = next((s for s, v in SUITE_PYTHON.items() if v == minor), None)
    if suite is None:
        have = ", ".join(f"{s}: {v}" for s, v in SUITE_PYTHON.items())
        raise Unreachable(f"{asked}: no Debian release on the mirror ships CPython {minor} ({have}); "
                          "a stand-in never carries another Python")
    moved = f"; Debian {suite} instead of {variant}" if variant and variant != suite else ""
    note = (f"{asked} -> Debian {SUITE_VERSION[suite]} ({suite}) minbase with Debian's CPython {minor} in /usr "
            f"(python, pip linked in /usr/local/bin, pip not externally managed){moved}; not the Docker Hub image")
    return StandIn(f"{family_prefix}-{minor}", asked, suite, _ROOT + _PYTHON, note)


def resolve(asked: str) -> StandIn:
    """The stand-in for a FROM name, or Unreachable with the reason."""
    name = qualify(asked)
    repo, _, tag = name.rpartition(":")
    if repo == "docker.io/library/debian":
        for suite, version in SUITE_VERSION.items():
            if re.fullmatch(rf"({version}|{suite})(\.\d+)*(-slim)?(-\d+)?", tag):
                note = f"{asked} -> harnessrl's debootstrap minbase of Debian {version} ({suite}); not the Docker Hub image"
                return StandIn(f"debian-{version}", asked, suite, _ROOT, note)
    if repo == "docker.io/library/ubuntu" and tag in ("24.04", "noble", "latest", "22.04", "jammy"):
        suite = "trixie" if tag in ("24.04", "noble", "latest") else "bookworm"
        note = (f"{asked} -> Debian {SUITE_VERSION[suite]} ({suite}) minbase: no Ubuntu mirror here; package names "
                "mostly agree, Ubuntu-pinned versions (…ubuntuN) will not resolve")
        return StandIn(f"ubuntu-as-debian-{SUITE_VERSION[suite]}", asked, suite, _ROOT, note)
    m = re.fullmatch(r"(3\.\d+)(?:\.\d+)?(?:-slim)?(?:-(bookworm|trixie))?", tag)
    if repo == "docker.io/library/python" and m:
        return _python(asked, m.group(1), m.group(2))
    if repo.startswith("ghcr.io/laude-institute/t-bench/"):
        kind = repo.rsplit("/", 1)[-1]
        if kind == "ubuntu-24-04":
            base = resolve("ubuntu:24.04")
        elif (pm := re.fullmatch(r"python-3-(\d+)", kind)):
            base = _python(asked, f"3.{pm.group(1)}", "bookworm")
        else:
            raise Unreachable(f"{asked}: unknown Terminal-Bench base image; known: ubuntu-24-04, python-3-NN")
        note = f"{asked} -> rebuilt from Terminal-Bench's base Dockerfile (adds tmux, asciinema) on: {base.note}"
        return StandIn(f"t-bench-{kind}", asked, base.suite, base.recipe + _TBENCH, note)
    raise Unreachable(f"{asked}: no registry is reachable and harnessrl has no stand-in for it "
                      "(stand-ins: debian 12/13, ubuntu 22.04/24.04, python 3.11/3.13, Terminal-Bench's bases)")


# -- building -----------------------------------------------------------------------------------


def minbase_ref(suite: str) -> str:
    return f"localhost/harnessrl-base/minbase:{suite}"


def build_minbase(store: ImageStore, suite: str, say: Callable[[str], None] = print) -> str:
    """debootstrap --variant=minbase of `suite` from the configured mirror, imported once as an image."""
    ref = minbase_ref(suite)
    with store.lock(f"minbase-{suite}"):
        if store.exists(ref):
            return ref
        mirror = configured_mirror()
        log = store.build_dir(f"minbase-{suite}") / "build.log"
        say(f"debootstrap {suite} from {mirror} (once; log {log})")
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(dir=store.root / "tmp") as tmp:
            target = Path(tmp) / "root"
            with open(log, "ab") as out:
                proc = subprocess.run(["debootstrap", "--variant=minbase", "--include=ca-certificates", suite,
                                       str(target), mirror], stdout=out, stderr=subprocess.STDOUT)
            if proc.returncode != 0:
                raise ImageError(f"debootstrap {suite} from {mirror} failed (exit {proc.returncode}); log: {log}")
            # debootstrap leaves the mirror's apt lists and caches: a fresh image has none
            subprocess.run(["sh", "-c", f"rm -rf {target}/var/lib/apt/lists/* {target}/var/cache/apt/*.bin"], check=False)
            tar = subprocess.Popen(["tar", "-C", str(target), "--numeric-owner", "-c", "."], stdout=subprocess.PIPE)
            label = json.dumps({"suite": suite, "mirror": mirror, "variant": "minbase"})
            store.podman("import", "--change", f"LABEL harnessrl.minbase={label}", "-", ref, log=log,
                         input=tar.stdout.read())
            tar.wait()
        say(f"minbase {suite}: {time.perf_counter() - t0:.0f} s, {store.size(ref) / 1e6:.0f} MB")
        return ref


def build_stand_in(store: ImageStore, stand_in: StandIn, say: Callable[[str], None] = print) -> str:
    """Build the stand-in's family image once and tag `stand_in.tag` on it. Returns the tag."""
    from harnessrl.tasks.images.registry import bud  # the build-time registry mounts, shared with task builds

    if store.exists(stand_in.tag) and LABEL in store.labels(stand_in.tag):
        return stand_in.tag
    base = build_minbase(store, stand_in.suite, say)
    with store.lock(f"base-{stand_in.family}"):
        if not store.exists(stand_in.image):
            say(f"stand-in {stand_in.family} on Debian {stand_in.suite}")
            t0 = time.perf_counter()
            with tempfile.TemporaryDirectory(dir=store.root / "tmp") as ctx:
                (Path(ctx) / "Containerfile").write_text(f"FROM {base}\n{stand_in.recipe}")
                family = {"family": stand_in.family, "suite": stand_in.suite}
                bud(store, Path(ctx), Path(ctx) / "Containerfile", stand_in.image,
                    store.build_dir(f"base-{stand_in.family}") / "build.log",
                    labels={"harnessrl.family": json.dumps(family)})
            say(f"stand-in {stand_in.family}: {time.perf_counter() - t0:.0f} s")
        # Each asked name gets its own tiny image carrying its own substitution note.
        ctr = store.buildah("from", "--pull-never", stand_in.image).stdout.decode().strip()
        try:
            store.buildah("config", "--label", f"{LABEL}={json.dumps(stand_in.record())}", ctr)
            store.buildah("commit", "--rm", ctr, stand_in.tag)
        except ImageError:
            store.buildah("rm", ctr, check=False)
            raise
    return stand_in.tag


def stand_in_of(store: ImageStore, ref: str) -> dict | None:
    """The substitution record stored in an image (None for an image that is not a stand-in)."""
    raw = store.labels(ref).get(LABEL)
    return json.loads(raw) if raw else None


DEFAULT = ("debian:13", "ubuntu:24.04", "python:3.13-slim", "ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest",
           "ghcr.io/laude-institute/t-bench/python-3-13:latest")
