"""Builders for harness tests: tiny task folders on disk, and an in-memory workspace for
render-only checks (round trips need file contents, not a sandbox)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from harnessrl.harness.base import make_harness
from harnessrl.tasks.base import load_suite_folder
from harnessrl.tasks.runtime import TaskRuntime
from harnessrl.tasks.sandbox import Sandbox

CALC = '''\
"""Tiny calculator."""


def add(a, b):
    return a - b


def mul(a, b):
    return a * b
'''

REQ_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
REG_TEST = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
FIX = 'path = "calc.py"\nold = """\n    return a - b\n"""\nnew = """\n    return a + b\n"""\n'


def calc_task(root: Path):
    """The sessions' task: `add` in calc.py subtracts; a 250-line file and a nested text file beside it."""
    long_file = "".join(f"line_{i} = {i}\n" for i in range(1, 251))
    return make_suite(root, {"fix-add": {"files": {"calc.py": CALC, "big.py": long_file,
                                                   "sub/notes.txt": "alpha\nbeta alpha\n"}}})["fix-add"]


def make_suite(root: Path, tasks: dict[str, dict] | None = None):
    """A suite folder with the given tasks (default: one code task `fix-add`)."""
    tasks = tasks or {"fix-add": {}}
    root.mkdir(parents=True, exist_ok=True)
    (root / "suite.toml").write_text('[suite]\nname = "t-v1"\n')
    for name, spec in tasks.items():
        d = root / name
        (d / "workspace").mkdir(parents=True)
        (d / "tests" / "requirement").mkdir(parents=True)
        (d / "tests" / "regression").mkdir(parents=True)
        (d / "solution").mkdir()
        kind = spec.get("kind", "code")
        (d / "task.toml").write_text(f'title = "{name}"\nkind = "{kind}"\nneeds_shell = {str(spec.get("needs_shell", False)).lower()}\n')
        (d / "instruction.md").write_text(spec.get("instruction", "Make `add` in calc.py return the sum."))
        for rel, text in spec.get("files", {"calc.py": CALC}).items():
            (d / "workspace" / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / "workspace" / rel).write_text(text)
        (d / "tests" / "requirement" / "test_req.py").write_text(spec.get("req", REQ_TEST))
        (d / "tests" / "regression" / "test_reg.py").write_text(spec.get("reg", REG_TEST))
        if spec.get("edits", FIX):
            (d / "solution" / "edits.toml").write_text("[[step]]\n" + spec.get("edits", FIX))
        if spec.get("script"):
            (d / "solution" / "solve.sh").write_text(spec["script"])
    return load_suite_folder(root)


_SANDBOX: Sandbox | None = None


def runtime(task) -> TaskRuntime:
    global _SANDBOX
    if _SANDBOX is None:
        _SANDBOX = Sandbox()
    return TaskRuntime(task, _SANDBOX)


def session(harness_id: str, task, **spec_changes):
    """An open session of a built-in harness (optionally with spec fields changed) on a fresh runtime."""
    h = make_harness(harness_id)
    if spec_changes:
        options = {**h.spec.options, **spec_changes.pop("options", {})}
        h = make_harness(h.spec.model_copy(update={**spec_changes, "options": options}))
    env = runtime(task)
    return h, h.open(task, env, 0), env


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


class MemWorkspace:
    """Just enough of harnessrl.tasks.Workspace for rendering: files in a dict."""

    def __init__(self, files: dict[str, str]):
        self.data = dict(files)

    def read_text(self, rel):
        return self.data[rel]

    def write_text(self, rel, text):
        self.data[rel] = text

    def write_bytes(self, rel, data):
        self.data[rel] = data.decode("utf-8")

    def exists(self, rel):
        return rel == "" or rel in self.data or any(k.startswith(rel + "/") for k in self.data)

    def is_dir(self, rel):
        return rel == "" or any(k.startswith(rel + "/") for k in self.data)

    def files(self):
        return sorted(self.data)


class MemEnv:
    def __init__(self, files: dict[str, str]):
        self.workspace = MemWorkspace(files)


class MemSession:
    """A stand-in session for render_intent: an env with files and a view."""

    def __init__(self, files: dict[str, str], view: dict | None = None):
        self.env = MemEnv(files)
        self._view = view or {}

    def view(self):
        return self._view
