"""Write generated tasks as harnessrl suites: one suite folder per split, and a manifest.

    OUT/<name>-train/   suite.toml + one folder per task (task.toml, instruction.md, workspace/, tests/, solution/)
    OUT/<name>-heldout/
    OUT/<name>-sealed/  (seal it before use: `harnessrl seal`)
    OUT/manifest.json   counts and every task's origin, rule, knobs and split

Everything written is a pure function of the tasks (sorted keys, no time stamps), so a seed gives a
byte-identical tree.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from harnessrl.tasks.factory.build import TaskSpec
from harnessrl.tasks.factory.pool import PoolStats, task_split
from harnessrl.tasks.factory.split import SPLITS


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a TOML basic string
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(type(v))


def _multiline(s: str) -> str:
    return f"'''\n{s}'''" if "'''" not in s and not s.endswith("'") else json.dumps(s)


def task_toml(spec: TaskSpec, seed: int) -> str:
    k = spec.knobs
    rules = [b.mutation.rule for b in spec.bugs]
    fns = " and ".join(f"{r.function}" for r in spec.reports)
    if len(spec.bugs) > 1:
        title = f"{fns} misbehave"
    else:
        title = f"{fns}: implement it" if rules == ["docstring_to_implement"] else f"{fns} misbehaves"
    lines = [f"title = {toml_value(title)}",
             'category = "bugfix"', f"difficulty = {toml_value(k.difficulty())}",
             f"tags = {toml_value(['factory', *dict.fromkeys(rules)])}", "",
             "[factory]", f"seed = {seed}", f"split = {toml_value(task_split(spec))}",
             f"context = {toml_value(k.context)}", f"files = {k.files}", f"visibility = {toml_value(k.visibility)}",
             f"bugs = {k.bugs}", f"failing_cases = {len(spec.failing)}"]
    for b in spec.bugs:
        mu = b.mutation
        lines += ["", "[[factory.bug]]", f"rule = {toml_value(mu.rule)}", f"origin_file = {toml_value(b.module.origin)}",
                  f"origin_function = {toml_value(mu.function)}", f"origin_line = {mu.line}", f"origin_col = {mu.col}",
                  f"change = {toml_value(mu.note)}"]
    return "\n".join(lines) + "\n"


def edits_toml(spec: TaskSpec) -> str:
    parts = []
    for st in spec.steps:
        parts.append(f"[[step]]\npath = {toml_value(st.path)}\nold = {_multiline(st.old)}\nnew = {_multiline(st.new)}\n")
    return "\n".join(parts)


def task_files(spec: TaskSpec, seed: int) -> dict[str, str]:
    files = {"task.toml": task_toml(spec, seed), "instruction.md": spec.instruction, "solution/edits.toml": edits_toml(spec)}
    files.update({f"workspace/{p}": t for p, t in spec.workspace.items()})
    files.update({f"tests/{p}": t for p, t in spec.tests.items()})
    return files


def manifest(tasks: list[TaskSpec], stats: PoolStats, seed: int, name: str) -> dict:
    origins = sorted({o for t in tasks for o in t.origins})
    per_split = Counter(task_split(t) for t in tasks)
    return {
        "name": name, "seed": seed, "tasks": len(tasks), "origins": len(origins),
        "origin_files": len({o[0] for o in origins}),
        "per_split": {s: per_split.get(s, 0) for s in SPLITS},
        "origins_per_split": {s: len({o for t in tasks if task_split(t) == s for o in t.origins}) for s in SPLITS},
        "per_rule": dict(sorted(stats.rules.items())),
        "per_difficulty": dict(sorted(Counter(t.knobs.difficulty() for t in tasks).items())),
        "per_visibility": dict(sorted(Counter(t.knobs.visibility for t in tasks).items())),
        "per_context": dict(sorted(Counter(t.knobs.context for t in tasks).items())),
        "per_files": {str(k): v for k, v in sorted(Counter(t.knobs.files for t in tasks).items())},
        "per_bugs": {str(k): v for k, v in sorted(Counter(t.knobs.bugs for t in tasks).items())},
        "max_per_origin": max(Counter(o for t in tasks for o in set(t.origins)).values(), default=0),
        "confirmed_with_pytest": stats.confirmed, "candidates_tried": stats.candidates,
        "not_a_task": stats.not_a_task, "duplicates": stats.duplicates,
        "task_list": [{"name": t.name, "split": task_split(t), "origins": [list(o) for o in t.origins],
                       "rules": [b.mutation.rule for b in t.bugs], "difficulty": t.knobs.difficulty()} for t in tasks],
    }


def write_suites(out: Path, tasks: list[TaskSpec], stats: PoolStats, seed: int, name: str = "factory") -> dict:
    """Write the split suites and manifest.json under `out` (which must be empty or absent); returns the manifest."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out}: not empty; give a new folder (generated suites are never merged)")
    for split in SPLITS:
        mine = [t for t in tasks if task_split(t) == split]
        if not mine:
            continue
        root = out / f"{name}-{split}"
        root.mkdir(parents=True)
        (root / "suite.toml").write_text(
            f'[suite]\nname = "{name}-{split}"\nversion = "1"\n'
            f"description = {toml_value(f'Generated by harnessrl tasks generate (seed {seed}): the {split} split.')}\n"
            '\n[defaults]\nkind = "code"\nagent_timeout_s = 600\ntest_timeout_s = 60\n', encoding="utf-8")
        for spec in mine:
            for rel, text in sorted(task_files(spec, seed).items()):
                path = root / spec.name / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
    data = manifest(tasks, stats, seed, name)
    (out / "manifest.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return data
