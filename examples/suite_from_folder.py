"""A suite from a folder: one small coding task, written here, evaluated by the scripted oracle in two harnesses."""

import sys
from pathlib import Path

import harnessrl

root = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/quickstart") / "my-suite"
files = {
    "suite.toml": '[suite]\nname = "my-suite"\n\n[defaults]\nkind = "code"\n',
    "fix-add/task.toml": 'title = "add() subtracts"\n',
    "fix-add/instruction.md": "The function add in calc.py returns the wrong result. Fix it.\n",
    "fix-add/workspace/calc.py": "def add(a, b):\n    return a - b\n",
    "fix-add/tests/requirement/test_add.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    "fix-add/tests/regression/test_kept.py": "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
    "fix-add/solution/edits.toml": "[[step]]\npath = \"calc.py\"\nold = \"    return a - b\\n\"\nnew = \"    return a + b\\n\"\n",
}
for rel, text in files.items():
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)

suite = harnessrl.load_suite(root)
print(f"{suite.name}: {[t.name for t in suite]}")
result = harnessrl.evaluate("oracle", suite, ["aider", "openhands"], store=root.parent / "store")
for row in result.summary:
    print(f"{row['harness_id']:10s} pass@1 {row['pass@1']:.2f}")
