"""Terminal-Bench and Harbor task folders as Tasks that run in their own image (runtime = "image").

    suite = load_image_suite(Path("tb-tasks"))   # every task folder; refusals say why (tasks check --runtime image)

Unlike the host-replay loaders (tasks/foreign.py), nothing of the Dockerfile is interpreted here:
the image is built as written (build.py) when the episode starts. A folder is refused only when
its image cannot be built here (no Dockerfile, a second service, a base with no stand-in) or it
has nothing to grade with. A Harbor task is graded by its tests/test.sh (Harbor's verifier contract:
it writes /logs/verifier/reward.txt or reward.json; grading.py); a Terminal-Bench task by its pytest
files (run by the grader layer's pytest, offline). solution.sh / solution/solve.sh is the reference
solution.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

from harnessrl.tasks.base import Rejection, Solution, Suite, Task, TaskMeta
from harnessrl.tasks.images.check import image_row


def _difficulty(value) -> str:
    return value if value in ("easy", "medium", "hard") else "medium"


def load_image_task(folder: Path, suite: str) -> Task:
    """One task folder as an image-runtime Task (ValueError with the reason when it cannot be)."""
    row = image_row(None, folder)
    if row.status == "refused":
        raise ValueError(f"{row.reason}: {row.detail}")
    if (folder / "task.toml").exists():
        data = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
        instruction = (folder / "instruction.md").read_text(encoding="utf-8") if (folder / "instruction.md").exists() else ""
        meta = data.get("metadata", {}) or {}
        agent_s = float((data.get("agent") or {}).get("timeout_sec", 600))
        test_s = float((data.get("verifier") or {}).get("timeout_sec", 120))
        source = "harbor"
    else:
        data = yaml.safe_load((folder / "task.yaml").read_text(encoding="utf-8")) or {}
        instruction = data.get("instruction") or ((data.get("descriptions") or [{}])[0].get("description") or "")
        meta, source = data, "terminal-bench"
        agent_s, test_s = float(data.get("max_agent_timeout_sec", 360)), float(data.get("max_test_timeout_sec", 60))
    if not str(instruction).strip() and (folder / "steps").is_dir():
        raise ValueError("multi_step: a Harbor multi-step task (an instruction, tests and solution per step "
                         "under steps/) is not supported")
    if not str(instruction).strip():
        raise ValueError("no_instruction: task.yaml / instruction.md has none")
    tests = folder / "tests"
    files = tuple(sorted(str(p.relative_to(tests)) for p in tests.rglob("test_*.py"))) if tests.is_dir() else ()
    # Harbor's verifier is tests/test.sh (it writes /logs/verifier/reward.txt or reward.json);
    # Terminal-Bench's run-tests.sh only installs pytest and runs tests/, which the grader does offline
    script = "test.sh" if source == "harbor" and (tests / "test.sh").is_file() else None
    if not files and script is None:
        raise ValueError("no_tests: no tests/test.sh (Harbor) and no tests/test_*.py to grade with")
    heldout = tuple(f for f in files if f.startswith("heldout/"))
    solve = next((p for p in (folder / "solution.sh", folder / "solution" / "solve.sh") if p.exists()), None)
    solution = Solution(script=solve.read_text(encoding="utf-8"),
                        support_dir=solve.parent if solve.parent.name == "solution" else None) if solve else None
    return Task(
        id=f"{suite}/{folder.name}", name=folder.name, suite=suite, instruction=str(instruction).strip() + "\n",
        root=folder, workspace_dir=None, tests_dir=tests,
        test_files={"requirement": tuple(f for f in files if f not in heldout), "regression": (), "heldout": heldout},
        solution=solution, source=source, runtime="image", notes=tuple(row.substitutions),
        test_runner="script" if script else "pytest", test_script=script,
        meta=TaskMeta(title=folder.name, kind="terminal", category=str(meta.get("category", "")),
                      difficulty=_difficulty(meta.get("difficulty")), tags=[str(t) for t in meta.get("tags") or []],
                      needs_shell=True, agent_timeout_s=agent_s, test_timeout_s=test_s),
    )


def load_image_suite(root: Path, name: str | None = None, version: str = "1", description: str = "") -> Suite:
    root = Path(root)
    name = name or root.name
    single = (root / "task.yaml").exists() or (root / "task.toml").exists()
    folders = [root] if single else sorted(p for p in root.iterdir() if p.is_dir())
    tasks, rejected = [], []
    for folder in folders:
        if not ((folder / "task.yaml").exists() or (folder / "task.toml").exists()):
            rejected.append(Rejection(folder, "not a Terminal-Bench (task.yaml) or Harbor (task.toml) task", "remove it"))
            continue
        try:
            tasks.append(load_image_task(folder, name))
        except ValueError as err:
            rejected.append(Rejection(folder, str(err), "see `harnessrl tasks check --runtime image`"))
    return Suite(name, version, description, root, tuple(tasks), tuple(rejected))
