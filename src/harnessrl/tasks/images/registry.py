"""Building with buildah as written, with the machine's package-registry configuration mounted, never baked.

    bud(store, context_dir, dockerfile, "localhost/harnessrl-task/x:key", log_path, labels={...})

`RUN` steps reach the package registries (PyPI, Debian, npm) the way this machine does: the
host's CA bundle, pip configuration (and the local wheel folders and indexes it names) and npm
configuration are bind-mounted read-only into every `RUN` step (`buildah bud --volume`). The
network is the host's (`--network host`), as for any build on this machine; nothing is pulled
(`--pull=never`): every `FROM` must already be in the store (a stand-in or an earlier stage).

A bind mount needs a mount point; where the image had none, the runtime creates an empty file
or folder that would stay in the layer. `scrub` removes exactly those (an empty file or empty
folder at a mount target) in one last layer, so the image holds no trace of the machine's
configuration, not even its file names.
"""

from __future__ import annotations

import configparser
from collections.abc import Callable
from pathlib import Path

from harnessrl.tasks.images.store import ULIMITS, ImageError, ImageStore

CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
PIP_CONFIGS = (Path("/etc/pip.conf"), Path("/etc/xdg/pip/pip.conf"), Path.home() / ".config/pip/pip.conf",
               Path.home() / ".pip/pip.conf")
REGISTRY_KEYS = {"index-url", "extra-index-url", "find-links", "cert", "trusted-host", "timeout", "retries", "proxy"}
NPM_CONFIGS = (Path("/etc/npmrc"), Path.home() / ".npmrc")


def _local_paths(value: str) -> list[Path]:
    """Local folders a pip option names (find-links /opt/wheels, index file:///opt/pypi/simple)."""
    out = []
    for item in value.split():
        path = item[len("file://"):] if item.startswith("file://") else item
        if path.startswith("/") and Path(path).exists():
            # a local index's pages link its files relatively (simple/x/ -> ../../files/...): mount
            # the folder around "simple", not "simple" alone
            out.append(Path(path).parent if Path(path).name == "simple" else Path(path))
    return out


def merged_pip_config(store: ImageStore) -> Path | None:
    """The host's pip configuration files merged in pip's order (global, then user) into one file,
    keeping only where packages come from (indexes, wheel folders, certificates)."""
    parser = configparser.ConfigParser(interpolation=None)
    found = [p for p in PIP_CONFIGS if p.exists()]
    if not found:
        return None
    try:
        parser.read(found)
    except configparser.Error:
        return None
    for section in parser.sections():  # where packages come from, not what the host pins (constraint=...)
        for key in list(parser[section]):
            if key not in REGISTRY_KEYS:
                del parser[section][key]
    out = store.root / "registry" / "pip.conf"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_suffix(".tmp"), "w") as fh:
        parser.write(fh)
    out.with_suffix(".tmp").replace(out)
    return out


def registry_mounts(store: ImageStore) -> list[tuple[Path, str]]:
    """(host path, path in the build) pairs: the CA bundle, pip's configuration (and the local
    folders it names), npm's configuration."""
    mounts: list[tuple[Path, str]] = []
    if CA_BUNDLE.exists():
        mounts.append((CA_BUNDLE.resolve(), str(CA_BUNDLE)))
    pip = merged_pip_config(store)
    if pip is not None:
        mounts.append((pip, "/etc/pip.conf"))
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(pip)
        for section in parser.sections():
            for key in ("find-links", "index-url", "extra-index-url"):
                for path in _local_paths(parser.get(section, key, fallback="")):
                    if str(path) not in {m[1] for m in mounts}:
                        mounts.append((path, str(path)))
    npm = next((p for p in NPM_CONFIGS if p.exists()), None)
    if npm is not None:
        mounts.append((npm, "/etc/npmrc"))
    return mounts


def bud(store: ImageStore, context: Path, dockerfile: Path, tag: str, log: Path, labels: dict[str, str] | None = None,
        build_args: dict[str, str] | None = None, target: str | None = None,
        on_line: Callable[[str], None] | None = None, timeout: float | None = None) -> None:
    """`buildah bud` the Dockerfile as written, then scrub the mount points; the result is tagged `tag`."""
    mounts = registry_mounts(store)
    args = ["bud", "--pull=never", "--network", "host", "--layers", "--force-rm", "--isolation", "oci", *ULIMITS,
            "-f", str(dockerfile), "-t", f"{tag}-unscrubbed"]
    for host, inside in mounts:
        args += ["--volume", f"{host}:{inside}:ro"]
    for key, value in (labels or {}).items():
        args += ["--label", f"{key}={value}"]
    for key, value in (build_args or {}).items():
        args += ["--build-arg", f"{key}={value}"]
    if target:
        args += ["--target", target]
    store.buildah(*args, str(context), log=log, on_line=on_line, timeout=timeout)
    scrub(store, f"{tag}-unscrubbed", tag, [inside for _, inside in mounts], log)
    store.podman("untag", f"{tag}-unscrubbed", check=False)


def scrub(store: ImageStore, source: str, tag: str, targets: list[str], log: Path) -> None:
    """Commit `source` as `tag` without the empty mount points the build left at `targets`."""
    ctr = store.buildah("from", "--pull-never", source).stdout.decode().strip()
    try:
        root = Path(store.buildah("mount", ctr).stdout.decode().strip())
        removed = []
        for target in sorted(targets, key=len, reverse=True):
            path = root / target.lstrip("/")
            if path.is_symlink():
                continue
            if path.is_file() and path.stat().st_size == 0:
                path.unlink()
                removed.append(target)
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
                removed.append(target)
            # an emptied parent the mount created (/opt/pypi for /opt/pypi/simple); top-level folders stay
            parent = path.parent
            while parent.parent != root and parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent
        with open(log, "a") as out:
            out.write(f"scrubbed mount points: {removed}\n")
        store.buildah("unmount", ctr, check=False)
        store.buildah("commit", "--rm", ctr, tag)
    except (ImageError, OSError):
        store.buildah("rm", ctr, check=False)
        raise
