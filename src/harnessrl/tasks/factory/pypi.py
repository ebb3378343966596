"""Real code with its own tests from PyPI: pinned sdists, fetched once into a cache, never at run time.

    harnessrl tasks fetch-sources                      # pip download each pin (sdist, no deps), check its hash,
                                                       # keep the module and its test file in the cache
    harnessrl tasks generate OUT --sources corpus,pypi # then the factory reads them from the cache

The cache is $HARNESSRL_SOURCES, default ~/.cache/harnessrl/factory-sources. A pin names the sdist's
SHA-256, so what the factory mutates is byte-for-byte the reviewed release. Only packages whose
module is one pure-Python file and whose tests are plain pytest functions (parametrized tables, no
fixtures, `import NAME`) fit the factory's in-process check, so the list is short and chosen by hand.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harnessrl.tasks.factory.sources import Module, parse_module


@dataclass(frozen=True)
class Pin:
    name: str  # the import name, and the workspace file NAME.py
    version: str
    sha256: str  # of the sdist
    module: str  # the module's path inside the sdist (below its top folder)
    tests: str  # the test file's path inside the sdist


PINS = (
    # inflection: Rails-style word inflections (camelize, pluralize, ordinal, ...); 432 lines, tests are tables
    Pin("inflection", "0.5.1", "1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417",
        "inflection/__init__.py", "test_inflection.py"),
)


def cache_dir() -> Path:
    return Path(os.environ.get("HARNESSRL_SOURCES") or Path.home() / ".cache" / "harnessrl" / "factory-sources")


def _dest(cache: Path, pin: Pin) -> Path:
    return cache / f"{pin.name}-{pin.version}"


def missing(cache: Path | None = None) -> list[str]:
    """The pins not in the cache ("name==version")."""
    cache = cache or cache_dir()
    return [f"{p.name}=={p.version}" for p in PINS if not (_dest(cache, p) / "SOURCE.json").exists()]


def fetch_sources(cache: Path | None = None, say=print) -> list[Path]:
    """Download each pinned sdist (pip, the configured index), check its hash, extract module + tests."""
    cache = cache or cache_dir()
    out = []
    for pin in PINS:
        dest = _dest(cache, pin)
        if (dest / "SOURCE.json").exists():
            say(f"{pin.name}=={pin.version}: cached in {dest}")
            out.append(dest)
            continue
        with tempfile.TemporaryDirectory(prefix="factory-src-") as tmp:
            r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                                "--no-binary", ":all:", "--no-deps", f"{pin.name}=={pin.version}", "-d", tmp],
                               capture_output=True, text=True)
            sdists = sorted(Path(tmp).glob("*.tar.gz"))
            if r.returncode != 0 or len(sdists) != 1:
                raise RuntimeError(f"pip download {pin.name}=={pin.version} failed: {(r.stdout + r.stderr)[-1500:]}")
            data = sdists[0].read_bytes()
            digest = hashlib.sha256(data).hexdigest()
            if digest != pin.sha256:
                raise RuntimeError(f"{sdists[0].name}: sha256 {digest}, pinned {pin.sha256}; refusing it")
            top = f"{pin.name}-{pin.version}/"
            with tarfile.open(sdists[0]) as tar:
                files = {rel: tar.extractfile(top + rel).read().decode("utf-8") for rel in (pin.module, pin.tests)}
        dest.mkdir(parents=True, exist_ok=True)
        (dest / f"{pin.name}.py").write_text(files[pin.module], encoding="utf-8")
        (dest / f"test_{pin.name}.py").write_text(files[pin.tests], encoding="utf-8")
        (dest / "SOURCE.json").write_text(json.dumps({"name": pin.name, "version": pin.version, "sha256": pin.sha256,
                                                      "module": pin.module, "tests": pin.tests}, indent=1) + "\n")
        say(f"{pin.name}=={pin.version}: fetched into {dest}")
        out.append(dest)
    return out


def load_pypi(cache: Path | None = None) -> list[Module]:
    """The cached pins as factory modules; ValueError naming the command when any is missing."""
    cache = cache or cache_dir()
    absent = missing(cache)
    if absent:
        raise ValueError(f"PyPI sources {absent} are not in {cache}: run `harnessrl tasks fetch-sources` once")
    mods = []
    for pin in PINS:
        dest = _dest(cache, pin)
        mods.append(parse_module(pin.name, (dest / f"{pin.name}.py").read_text(encoding="utf-8"),
                                 (dest / f"test_{pin.name}.py").read_text(encoding="utf-8"),
                                 f"pypi/{pin.name}-{pin.version}/{pin.module}", alias=pin.name))
    return mods
