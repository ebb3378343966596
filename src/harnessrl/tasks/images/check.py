"""`tasks check --runtime image`: one row per task folder — can its image be built here, is it built,
what was substituted, and a machine-readable reason otherwise.

    rows = image_rows(store, [Path("tasks/a"), Path("tasks/b")])
    # [ImageRow(name="a", runtime="image", status="built", reason="", detail="", substitutions=[...]), ...]

status: built (a finished build matches the current inputs), buildable (nothing refuses it;
`harnessrl tasks build` builds it), refused. reason codes: no_dockerfile, compose_services (several
services, none the agent's), compose_image, compose_unreadable, unreachable_base (also a sidecar's),
build_failed (a previous build of these very inputs failed: see its log). Warnings that do not refuse a task are `notes`: build_network (a RUN
step downloads from outside the package registries: curl, wget, git clone ... may fail here),
solution_network (the reference solution downloads: episodes run without a network), service
(an ENTRYPOINT/CMD service, started in the background), services (docker-compose sidecars, started
beside the agent in the episode's network: services.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from harnessrl.tasks.images import bases
from harnessrl.tasks.images.build import BuildRefused, image_name, build_key, task_build_spec
from harnessrl.tasks.images.grader_layer import test_dependencies
from harnessrl.tasks.images.store import ImageStore

_DOWNLOAD = re.compile(r"(?<![\w-])(?:(?:curl|wget)\s[^&|;]*(?:https?|ftp)://|git\s+clone|cargo\s+install|go\s+(?:get|install)|rustup)")
_SOLUTION_NET = re.compile(r"(?<![\w-])(curl|wget|git\s+clone|apt(?:-get)?\s+install|pip3?\s+install|uvx?|npm\s+install)(?![\w-])")


@dataclass
class ImageRow:
    name: str
    runtime: str
    status: str  # built | buildable | refused
    reason: str = ""
    detail: str = ""
    substitutions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _notes(folder: Path, dockerfile_text: str) -> list[str]:
    notes = []
    runs = [line for line in dockerfile_text.replace("\\\n", " ").splitlines() if line.strip().upper().startswith("RUN")]
    if any(_DOWNLOAD.search(r) for r in runs):
        notes.append("build_network")
    for solution in (folder / "solution.sh", folder / "solution" / "solve.sh"):
        if solution.exists() and _SOLUTION_NET.search(solution.read_text(errors="replace")):
            notes.append("solution_network")
    if re.search(r"^\s*(ENTRYPOINT|CMD)\s", dockerfile_text, re.M | re.I) and not re.search(
            r"^\s*CMD\s+\[?\s*\"?(/bin/)?(ba)?sh\"?\s*\]?\s*$", dockerfile_text, re.M | re.I):
        notes.append("service")
    return notes


def image_row(store: ImageStore | None, folder: Path) -> ImageRow:
    try:
        spec = task_build_spec(folder)
    except BuildRefused as err:
        return ImageRow(folder.name, "image", "refused", err.code, err.reason)
    subs, ids = [], []
    for name in spec.froms:
        try:
            stand_in = bases.resolve(name)
        except bases.Unreachable as err:
            return ImageRow(folder.name, "image", "refused", "unreachable_base", str(err))
        subs.append(stand_in.note)
        if store is not None and store.exists(stand_in.tag):
            ids.append(store.image_id(stand_in.tag))
    row = ImageRow(folder.name, "image", "buildable", substitutions=subs,
                   notes=_notes(folder, spec.dockerfile.read_text(errors="replace")))
    if spec.services:
        row.notes.append("services: " + ", ".join(s.name for s in spec.services))
    if store is None or len(ids) != len(spec.froms):
        return row
    key = build_key(spec, ids, test_dependencies(spec.tests_script))
    build = store.root / "builds" / key
    if (build / "meta.json").exists():
        meta = json.loads((build / "meta.json").read_text())
        if store.exists(meta["image"]):
            row.status = "built"
            row.detail = meta["image"]
    elif (build / "build.log").exists() and not store.exists(f"localhost/harnessrl-task/{image_name(spec.name)}:{key}"):
        row.status, row.reason = "refused", "build_failed"
        row.detail = f"the last build of these inputs failed (or is running now); log: {build / 'build.log'}"
    return row


def image_rows(store: ImageStore | None, folders: list[Path]) -> list[ImageRow]:
    return [image_row(store, f) for f in folders]
