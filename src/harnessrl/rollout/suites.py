"""Suites by name: built-in task suites, registered suites (e.g. MiniWoB++), or a folder.

    load_suite("code-v1")          harnessrl's built-in suites (harnessrl/tasks/builtin)
    load_suite("miniwob")          a suite some package registered (name -> "module:function")
    load_suite("path/to/suite")    a suite folder on disk (suite.toml; Terminal-Bench/Harbor folders)

A loaded suite is iterable over tasks and has `name`; every task has `id` (or `task_id`),
`kind`, `suite` and `instruction`, which is all the evaluation needs.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from harnessrl.config import ConfigError
from harnessrl.tasks.contract import TaskLike

#: suite name -> "module:function" returning the suite (registered by the packages that own them)
SUITE_LOADERS: dict[str, str] = {
    "miniwob": "harnessrl.envs.miniwob.suite:load_suite",
    "lookup": "harnessrl.envs.lookup:load_suite",
}


def register_suite(name: str, loader: str) -> None:
    SUITE_LOADERS[name] = loader


def known_suites() -> list[str]:
    from harnessrl.tasks.base import builtin_suites

    return sorted(set(builtin_suites()) | set(SUITE_LOADERS))


def load_suite(name: str | Path) -> Any:
    from harnessrl.tasks import base

    text = str(name)
    if text in base.builtin_suites():
        return base.load_suite_folder(base.BUILTIN_DIR / text)
    if text in SUITE_LOADERS:
        module, _, attr = SUITE_LOADERS[text].partition(":")
        try:
            loader = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as err:
            raise ConfigError(f"suite {text!r} is registered as {SUITE_LOADERS[text]} but cannot be loaded: {err}") from None
        return loader()
    path = Path(text)
    if path.is_dir():
        try:
            from harnessrl.tasks.loaders import load_suite as load_any  # Terminal-Bench / Harbor folders too
        except ImportError:
            load_any = base.load_suite_folder
        try:
            return load_any(path)
        except base.SuiteError as err:
            raise ConfigError(str(err)) from None
    from harnessrl import plugins

    loader = plugins.resolve("harnessrl.suites", text, "suite")  # pkg.module:load_suite, or an installed plugin's name
    if loader is not None:
        return loader() if callable(loader) else loader
    raise ConfigError(f"unknown suite {text!r}; known: {', '.join(known_suites())} (or give a suite folder, or a plugin: "
                      "pkg.module:loader / an entry point of harnessrl.suites)")


def task_id(task: TaskLike) -> str:
    return getattr(task, "task_id", None) or task.id


def pick_tasks(suite: Any, names: list[str]) -> list[Any]:
    """The named tasks (names or ids) of a loaded suite, in the given order.

    A suite that can open tasks beyond those it lists (MiniWoB++: any task of the benchmark,
    not just those with an oracle) answers through its `find(name)`. A name the loader
    rejected is reported with the loader's reason and fix, not as an unknown name."""
    tasks = list(suite)
    by_id = {task_id(t): t for t in tasks} | {getattr(t, "name", task_id(t)): t for t in tasks}
    find = getattr(suite, "find", None)
    out, unknown = [], []
    for name in names:
        if name in by_id:
            out.append(by_id[name])
            continue
        try:
            found = find(name) if find is not None else None
        except ValueError as err:
            raise ConfigError(str(err)) from None
        if found is not None:
            out.append(found)
            continue
        bare = name.rsplit("/", 1)[-1]
        rejection = next((r for r in getattr(suite, "rejected", ()) if Path(r.path).name == bare), None)
        if rejection is not None:
            fix = f"; fix: {rejection.fix}" if getattr(rejection, "fix", "") else ""
            raise ConfigError(f"task {name!r} of suite {getattr(suite, 'name', '?')!r} was not loaded: {rejection.reason}{fix} "
                              f"(`harnessrl tasks check {getattr(suite, 'root', 'DIR')}` lists every task)")
        unknown.append(name)
    if unknown:
        known = ", ".join(sorted(getattr(t, "name", task_id(t)) for t in tasks)[:10])
        raise ConfigError(f"suite {getattr(suite, 'name', '?')!r} has no task(s) {unknown}; known: {known}"
                          + (" ..." if len(tasks) > 10 else ""))
    return out


#: policies that replay a task's oracle (scripted.Oracle and its faulty variants)
ORACLE_POLICIES = ("oracle", "oracle-drop", "oracle-break", "oracle-malformed", "oracle-typo")


def check_oracle_tasks(policy: str, tasks: list[TaskLike]) -> None:
    """Refuse, before any episode runs, an oracle policy on tasks that have no oracle (a MiniWoB
    task without a scripted oracle); every other policy runs every task."""
    if str(policy).partition(":")[0] not in ORACLE_POLICIES:
        return
    missing = [task_id(t) for t in tasks if getattr(t, "has_oracle", True) is False]
    if missing:
        raise ConfigError(f"--policy {policy} needs a scripted oracle, and {', '.join(missing[:5])}"
                          f"{' ...' if len(missing) > 5 else ''} has none; run these tasks with another policy "
                          "(lm:PATH, endpoint:MODEL), or leave them out of --tasks")
