"""Sealed splits: tasks and/or harnesses put out of training's reach, evaluated once, tamper-evident.

    seal = create_seal("unseen-harness", harnesses=[make_harness("terminus")], tasks=suite.tasks[:10])
    check_not_sealed(tasks=batch_tasks, harnesses=train_harnesses)     # trainers call this: raises SealedError
    write_sealed_eval(seal, store, episodes, summary)                   # once per seal, hash-chained
    verify_seal("unseen-harness", store) -> list of problems ([] = intact)

Files in the seals directory (`HARNESSRL_SEALS`, default runs/seals):
    <name>.seal.json   {"manifest": {...}, "hash": sha256(canonical manifest)}
    <name>.eval.json   {"entry": {..., "prev": <manifest hash>}, "hash": sha256(prev + canonical entry)}

Items are matched by id AND by a content fingerprint (a task's files; a harness spec without
its id/description), so renaming a sealed task or harness does not let training reach it.
Each evaluated episode is digested from the record store's stored copy; `verify_seal`
recomputes every hash and digest, so an edit to the manifest, the evaluation file or a stored
episode — or a change to a sealed task's files since sealing — is reported.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from harnessrl.config import ConfigError
from harnessrl.records import RecordStore, episode_to_json
from harnessrl.rollout.suites import task_id
from harnessrl.tasks.contract import TaskLike

FORMAT = "harnessrl-seal/1"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class SealedError(ConfigError):
    """Training (or an unsealed evaluation) touched a sealed task or harness."""


def seals_dir(path: str | Path | None = None) -> Path:
    return Path(path or os.environ.get("HARNESSRL_SEALS", "runs/seals"))


def canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def task_fingerprint(task: Task) -> str:
    """SHA-256 over a task's folder (file names and bytes), independent of its id."""
    root = Path(task.root)
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def harness_fingerprint(harness: Any) -> str:
    """SHA-256 over a harness spec without its id and description (what the agent meets)."""
    spec = getattr(harness, "spec", harness)
    return sha256(canonical(spec.model_dump(mode="json", exclude={"id", "description"})))


@dataclass(frozen=True)
class Seal:
    name: str
    manifest: dict[str, Any]
    hash: str
    path: Path

    @property
    def task_ids(self) -> set[str]:
        return {t["id"] for t in self.manifest["tasks"]}

    @property
    def harness_ids(self) -> set[str]:
        return {h["id"] for h in self.manifest["harnesses"]}

    @property
    def eval_path(self) -> Path:
        return self.path.with_name(f"{self.name}.eval.json")


def create_seal(name: str, *, tasks: Iterable[Any] = (), harnesses: Iterable[Any] = (), suite: str = "",
                directory: str | Path | None = None, note: str = "") -> Seal:
    if not _NAME.match(name):
        raise ConfigError(f"seal name {name!r}: use letters, digits, '.', '_' or '-' (max 100 characters)")
    tasks, harnesses = list(tasks), list(harnesses)
    if not tasks and not harnesses:
        raise ConfigError("a seal needs at least one task or harness")
    manifest = {
        "format": FORMAT, "name": name, "suite": suite, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "note": note,
        "tasks": [{"id": task_id(t), "fingerprint": task_fingerprint(t)} for t in tasks],
        "harnesses": [{"id": h.id, "fingerprint": harness_fingerprint(h)} for h in harnesses],
    }
    directory = seals_dir(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.seal.json"
    digest = sha256(canonical(manifest))
    try:
        with open(path, "x", encoding="utf-8") as f:  # a seal is never overwritten
            json.dump({"manifest": manifest, "hash": digest}, f, indent=2, ensure_ascii=False)
    except FileExistsError:
        raise ConfigError(f"seal {name!r} already exists at {path}; seals are never overwritten — choose another name") from None
    return Seal(name, manifest, digest, path)


def load_seal(name_or_path: str | Path, directory: str | Path | None = None) -> Seal:
    path = Path(name_or_path)
    if not path.name.endswith(".seal.json"):
        path = seals_dir(directory) / f"{name_or_path}.seal.json"
    if not path.exists():
        raise ConfigError(f"no seal {str(name_or_path)!r} (looked for {path})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Seal(data["manifest"]["name"], data["manifest"], data["hash"], path)
    except (ValueError, KeyError, TypeError) as err:
        raise ConfigError(f"{path}: not a readable seal ({err})") from None


def all_seals(directory: str | Path | None = None) -> list[Seal]:
    d = seals_dir(directory)
    return [load_seal(p) for p in sorted(d.glob("*.seal.json"))] if d.is_dir() else []


def check_not_sealed(*, tasks: Iterable[Any] = (), harnesses: Iterable[Any] = (), task_ids: Iterable[str] = (),
                     harness_ids: Iterable[str] = (), directory: str | Path | None = None) -> None:
    """Raise SealedError if any given task or harness (by id or content) is in a seal."""
    seals = all_seals(directory)
    if not seals:
        return
    hits: list[str] = []
    sealed_tasks = {t["id"]: s.name for s in seals for t in s.manifest["tasks"]}
    sealed_task_fp = {t["fingerprint"]: s.name for s in seals for t in s.manifest["tasks"]}
    sealed_h = {h["id"]: s.name for s in seals for h in s.manifest["harnesses"]}
    sealed_h_fp = {h["fingerprint"]: s.name for s in seals for h in s.manifest["harnesses"]}
    for tid in task_ids:
        if tid in sealed_tasks:
            hits.append(f"task {tid} (seal {sealed_tasks[tid]})")
    for t in tasks:
        tid, fp = task_id(t), (task_fingerprint(t) if getattr(t, "root", None) else None)
        if tid in sealed_tasks or fp in sealed_task_fp:
            hits.append(f"task {tid} (seal {sealed_tasks.get(tid) or sealed_task_fp[fp]})")
    for hid in harness_ids:
        if hid in sealed_h:
            hits.append(f"harness {hid} (seal {sealed_h[hid]})")
    for h in harnesses:
        fp = harness_fingerprint(h)
        if h.id in sealed_h or fp in sealed_h_fp:
            hits.append(f"harness {h.id} (seal {sealed_h.get(h.id) or sealed_h_fp[fp]})")
    if hits:
        raise SealedError("refusing to use sealed items: " + "; ".join(sorted(set(hits)))
                          + ". Sealed tasks and harnesses are for one final evaluation only (harnessrl eval --sealed NAME).")


# ----------------------------------------------------------------------------------------
# The one evaluation of a seal


def episode_digest(ep: Any) -> str:
    return sha256(canonical(episode_to_json(ep)))


def _stored(store: RecordStore, ids: list[str]) -> dict[str, Any]:
    if not ids:
        return {}
    quoted = ",".join("'" + i.replace("'", "") + "'" for i in ids)
    return {e.episode_id: e for e in store.episodes(where=f"episode_id IN ({quoted})")}


def write_sealed_eval(seal: Seal, store: RecordStore, episode_ids: list[str], result: dict[str, Any]) -> Path:
    """Record the seal's evaluation once: digests of the stored episodes, chained to the manifest."""
    problems = verify_manifest(seal)
    if problems:
        raise SealedError(f"seal {seal.name!r} is not intact: {'; '.join(problems)}")
    stored = _stored(store, episode_ids)
    missing = [i for i in episode_ids if i not in stored]
    if missing:
        raise SealedError(f"{len(missing)} evaluated episodes are not in the record store {store.root}")
    episodes = [{"episode_id": i, "task_id": stored[i].context.task_id, "harness_id": stored[i].context.harness_id,
                 "seed": stored[i].context.seed, "success": stored[i].success, "outcome": stored[i].outcome,
                 "digest": episode_digest(stored[i])} for i in episode_ids]
    entry = {"seal": seal.name, "prev": seal.hash, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
             "store": str(store.root), "episodes": episodes, "result": result}
    try:
        with open(seal.eval_path, "x", encoding="utf-8") as f:
            json.dump({"entry": entry, "hash": sha256(seal.hash.encode() + canonical(entry))}, f, indent=2,
                      ensure_ascii=False, default=str)
    except FileExistsError:
        raise SealedError(f"seal {seal.name!r} was already evaluated ({seal.eval_path}); a sealed split is evaluated once") from None
    return seal.eval_path


def verify_manifest(seal: Seal) -> list[str]:
    return [] if sha256(canonical(seal.manifest)) == seal.hash else [f"{seal.path}: the manifest was edited (hash mismatch)"]


def verify_seal(name: str, store: RecordStore | None = None, directory: str | Path | None = None,
                tasks: Iterable[Any] = (), harnesses: Iterable[Any] = ()) -> list[str]:
    """Every problem found ([] = intact). `tasks`/`harnesses`: current objects to re-fingerprint."""
    seal = load_seal(name, directory)
    problems = verify_manifest(seal)
    fps = {t["id"]: t["fingerprint"] for t in seal.manifest["tasks"]}
    for t in tasks:
        if task_id(t) in fps and task_fingerprint(t) != fps[task_id(t)]:
            problems.append(f"task {task_id(t)} changed since it was sealed")
    hfps = {h["id"]: h["fingerprint"] for h in seal.manifest["harnesses"]}
    for h in harnesses:
        if h.id in hfps and harness_fingerprint(h) != hfps[h.id]:
            problems.append(f"harness {h.id} changed since it was sealed")
    if not seal.eval_path.exists():
        return problems
    try:
        data = json.loads(seal.eval_path.read_text(encoding="utf-8"))
        entry, digest = data["entry"], data["hash"]
    except (ValueError, KeyError, TypeError) as err:
        return problems + [f"{seal.eval_path}: unreadable ({err})"]
    if entry.get("prev") != seal.hash:
        problems.append(f"{seal.eval_path}: not chained to this seal's manifest")
    if sha256(str(entry.get("prev", "")).encode() + canonical(entry)) != digest:
        problems.append(f"{seal.eval_path}: the evaluation record was edited (hash mismatch)")
    if store is not None:
        stored = _stored(store, [e["episode_id"] for e in entry.get("episodes", [])])
        for e in entry.get("episodes", []):
            ep = stored.get(e["episode_id"])
            if ep is None:
                problems.append(f"episode {e['episode_id']} is missing from {store.root}")
            elif episode_digest(ep) != e["digest"]:
                problems.append(f"episode {e['episode_id']} was edited in {store.root}")
    return problems
