"""A run's training set, frozen: one record per (task, harness), written before training.

    manifest = build_manifest(tasks, harnesses, open_env)     # opens each pair once, at seed 0
    freeze(run_dir / MANIFEST, manifest)                      # written once; on resume: must match
    freeze(shared_path, manifest)                             # one comparison's runs: the same records

A record holds what the policy is trained on besides its own samples: the exact first prompt the
harness builds for the task (the messages, at the manifest's seed), the tools it offers, a hash of
the harness spec (prompts, limits, options) and a hash of the task's files (workspace, tests,
setup). Two grouping rules (Within vs Cross) compared on one manifest are provably trained on
identical task-harness records; a task folder or harness spec edited between a run and its resume
is refused, with the first differing record named, instead of silently mixing two training sets.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any, Callable

from harnessrl.config import ConfigError
from harnessrl.harness.base import Harness
from harnessrl.train.tasks import task_id

MANIFEST = "manifest.json"
VERSION = 1


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def task_sha256(task: Any) -> str:
    """The task's files (suite tasks: workspace, tests, setup, extra files) or, for tasks generated
    in code (lookup worlds, MiniWoB pages), the fields that define them."""
    h = hashlib.sha256()
    roots = [("workspace", getattr(task, "workspace_dir", None)), ("tests", getattr(task, "tests_dir", None))]
    if any(root is not None for _, root in roots):
        for name, root in roots:
            if root is None or not Path(root).is_dir():
                continue
            for path in sorted(p for p in Path(root).rglob("*") if p.is_file()):
                h.update(f"{name}/{path.relative_to(root).as_posix()}\0".encode())
                h.update(path.read_bytes())
        for src, dest in getattr(task, "extra_files", ()) or ():
            h.update(f"extra/{dest}\0".encode())
            h.update(Path(src).read_bytes() if Path(src).is_file() else b"")
        h.update(f"setup\0{getattr(task, 'setup_script', None) or ''}\0instruction\0{task.instruction}".encode())
        return h.hexdigest()
    if is_dataclass(task):
        h.update(json.dumps({f.name: getattr(task, f.name) for f in fields(task)}, sort_keys=True, default=str).encode())
    else:
        h.update(repr(task).encode())
    return h.hexdigest()


def build_manifest(tasks: list[Any], harnesses: list[Harness], open_env: Callable[[Any, int], Any],
                   seed: int = 0) -> dict[str, Any]:
    """One record per (task, harness), in the run's order, and the hash of them all."""
    records = []
    for task in tasks:
        files = task_sha256(task)
        for harness in harnesses:
            env = open_env(task, seed)
            try:
                session = harness.open(task, env, seed)
                session.ready()  # a program harness: its first call
                messages = session.messages
            finally:
                env.close()
            prompt = json.dumps(messages, sort_keys=True, ensure_ascii=False)
            records.append({"task_id": task_id(task), "harness_id": harness.id, "messages": messages,
                            "prompt_sha256": _sha(prompt.encode()), "tools": list(harness.tools),
                            "harness_sha256": _sha(harness.spec.model_dump_json().encode()), "task_sha256": files})
    body = json.dumps(records, sort_keys=True, ensure_ascii=False)
    return {"version": VERSION, "seed": seed, "records": records, "sha256": _sha(body.encode())}


def difference(saved: dict[str, Any], now: dict[str, Any]) -> str | None:
    """None if the two manifests hold the same records; else what differs first, in words."""
    if saved.get("sha256") == now["sha256"]:
        return None
    old = {(r["task_id"], r["harness_id"]): r for r in saved.get("records", [])}
    new = {(r["task_id"], r["harness_id"]): r for r in now["records"]}
    if set(old) != set(new):
        gone, added = sorted(set(old) - set(new)), sorted(set(new) - set(old))
        return f"task-harness pairs differ (only in the frozen one: {gone[:3]}; only now: {added[:3]})"
    for key, r in new.items():
        for field in ("task_sha256", "harness_sha256", "prompt_sha256", "tools"):
            if old[key].get(field) != r[field]:
                what = {"task_sha256": "the task's files", "harness_sha256": "the harness spec",
                        "prompt_sha256": "the first prompt", "tools": "the tools"}[field]
                return f"{what} of task {key[0]!r} in harness {key[1]!r} changed"
    return "the record order changed"


def freeze(path: str | Path, manifest: dict[str, Any]) -> str:
    """Write `manifest` at `path` if none is there (atomically, first writer wins); else check that
    the one there holds the same records. Returns the manifest's sha256."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(manifest, f, indent=1, ensure_ascii=False)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # fails if the file exists: parallel runs of one comparison never overwrite
            return manifest["sha256"]
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ConfigError(f"{path}: not a readable training manifest ({err}); restore it or start a new run folder") from None
    why = difference(saved, manifest)
    if why:
        raise ConfigError(f"{path}: this run's training records differ from the frozen manifest ({why}); "
                          "restore the task/harness as it was, or start a new run folder")
    return manifest["sha256"]


def freeze_training_set(cfg: Any, tasks: list[Any], harnesses: list[Harness], open_env: Callable[[Any, int], Any]) -> str:
    """Before a run's first update (and again on resume): its manifest in <run_dir>, and the shared
    one of its comparison (`cfg.manifest`) if it names one. Returns the sha256."""
    manifest = build_manifest(tasks, harnesses, open_env)
    if cfg.manifest:  # the comparison's first: a run refused here leaves nothing in its own folder
        freeze(cfg.manifest, manifest)
    return freeze(Path(cfg.run_dir) / MANIFEST, manifest)
