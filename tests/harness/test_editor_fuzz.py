"""Every editor against files built to make a replace search slow: one step stays well under a
second. A model picks `old_str`, so a file of 200,000 `a` lines and an `old_str` of `a` is a
reply away; OpenHands' editor listed the lines of its occurrences by counting newlines from the
file's start for each one (quadratic: over 2 s for this 400 kB file, minutes for larger ones)."""

from __future__ import annotations

import json
import time

import pytest

from harnessrl.harness._oh_editor import occurrence_lines
from harnessrl.harness.swe_agent import render_call
from tests.harness.agent_fixtures import make_suite, session

pytestmark = pytest.mark.sandbox

#: file name -> content: many short matching lines, one long line, a long repeated block
FILES = {
    "lines.txt": "a\n" * 200_000,
    "one_line.txt": "a" * 400_000 + "\n",
    "blocks.txt": "x = 1\ny = 2\n" * 35_000,
}
#: (file, old, new): a one-character old_str matching everywhere, a multi-line one, a long one
EDITS = [("lines.txt", "a", "b"), ("lines.txt", "a\na", "b"), ("one_line.txt", "a", "b"),
         ("one_line.txt", "a" * 5_000, "b"), ("blocks.txt", "x = 1\ny = 2\n", "z = 3\n"), ("blocks.txt", "\n", " ")]
#: CPU seconds per step: 40x what the linear editors take here, 1/2 of the old quadratic listing
LIMIT_S = 1.0


def oh_call(old: str, new: str, path: str) -> str:
    body = "".join(f"<parameter={k}>{v}</parameter>\n" for k, v in
                   {"command": "str_replace", "path": path, "old_str": old, "new_str": new, "security_risk": "LOW"}.items())
    return f"<function=str_replace_editor>\n{body}</function>"


def swe_call(old: str, new: str, path: str) -> str:
    return render_call("str_replace_editor", {"command": "str_replace", "path": path, "old_str": old, "new_str": new}, "Edit.")


def qwen_call(old: str, new: str, path: str) -> str:
    call = {"name": "edit", "arguments": {"file_path": path, "old_string": old, "new_string": new}}
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"


def aider_block(old: str, new: str, path: str) -> str:
    return f"{path.removeprefix('/app/')}\n```\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n```\n"


#: harness -> how a reply asks it to replace `old` with `new` in the file at `path`
REPLIES = {"openhands": oh_call, "swe_agent": swe_call, "qwen_code": qwen_call, "aider": aider_block}


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return make_suite(tmp_path_factory.mktemp("suite"), {"big": {"files": FILES}})["big"]


@pytest.mark.parametrize("harness", sorted(REPLIES))
@pytest.mark.parametrize("name,old,new", EDITS, ids=[f"{f}-{len(o)}" for f, o, _ in EDITS])
def test_a_replace_on_an_adversarial_file_is_one_fast_step(task, harness, name, old, new):
    h, s, env = session(harness, task)
    try:
        t0 = time.process_time()
        r = s.step(REPLIES[harness](old, new, f"/app/{name}"))
        took = time.process_time() - t0
        assert r.status in ("ok", "tool_error"), r.observation[:300]  # the reply reached the editor
        assert took < LIMIT_S, f"{harness} took {took:.2f} s CPU on {name} with a {len(old)}-char old_str"
    finally:
        env.close()


def test_occurrence_lines_match_a_direct_count():
    text = "ab\nab ab\n\nxab\n" * 3
    lines = [i + 1 for i, line in enumerate(text.split("\n")) if "ab" in line]
    assert occurrence_lines(text, "ab") == lines
    assert occurrence_lines("aaaa\naa\n", "aa") == [1, 2]  # non-overlapping, each line once
    assert occurrence_lines("a\nb\na\nb\n", "a\nb") == [1, 3]
    assert occurrence_lines(FILES["lines.txt"], "a") == list(range(1, 200_001))
