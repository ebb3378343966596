"""Well-formed but hostile or nonsensical actions (what an untrained LM emits) never crash a
session: every one becomes an observation with a turn status, and nothing escapes /app.
Numbers include 400-digit integers, infinities and NaN (they must be refused, not raised)."""

import json
import random

import pytest

from harnessrl.episode import TURN_STATUSES
from harnessrl.harness.openhands_reconstruction import render_call
from harnessrl.harness.qwen_code_reconstruction import render_calls
from harnessrl.harness.swe_agent import render_call as swe_call
from tests.harness.agent_fixtures import make_suite, session

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

PATHS = ["calc.py", "/app/calc.py", "../../etc/passwd", "/etc/passwd", "/app/../etc/shadow", "", ".", "/", "/app",
         "a\x00b", "sub/deep/new.py", "ünï/cødé.txt", "/app/" + "x" * 300, "link", "/proc/self/environ"]
TEXTS = ["", "x", "\n", "return a + b", "\ud800 lone surrogate", "a\x00b", "line\n" * 50, "<<<<<<< SEARCH", "}{", "é" * 20]
NUMS = [-5, 0, 1, 3, 10**9, "7", None, True, 2.5, 10**400, -10**30, float("inf"), 1e308]


def pick(rng, xs):
    return xs[rng.randrange(len(xs))]


def action(style, rng):
    p, t, n = pick(rng, PATHS), pick(rng, TEXTS), pick(rng, NUMS)
    if style == "answer_tag":
        return pick(rng, [f'<answer path="{p}">\n{t}</answer>', f"<answer>\n{t}</answer>", t])
    if style == "aider":
        return f"{p}\n```\n<<<<<<< SEARCH\n{t}\n=======\n{pick(rng, TEXTS)}\n>>>>>>> REPLACE\n```\n"
    if style == "swe_agent":
        name = pick(rng, ["str_replace_editor"] * 3 + ["bash", "submit"])
        if name == "bash":
            args = {"command": pick(rng, [f"cat {p}", "ln -s /etc/passwd link", "echo hi > /etc/x", "exit", t or "ls"])}
        elif name == "submit":
            args = {}
        else:
            args = {"command": pick(rng, ["view", "create", "str_replace", "insert", "undo_edit", "delete"]), "path": p,
                    "old_str": t, "new_str": pick(rng, TEXTS), "file_text": t}
            if rng.random() < 0.5:
                args["insert_line"] = pick(rng, [-1, 0, 2, "two", None, 10**6, 10**400])
            if rng.random() < 0.3:
                args["view_range"] = pick(rng, [[1, 2], [0, -1], [5, 1], [1], "1 2", [1, 10**400], [[[[1]]]]])
        return swe_call(name, args)
    if style == "swe_agent_0_7":
        cmd = pick(rng, [f'open "{p}" {n}', f"goto {n}", "scroll_up", "scroll_down", f"create {p}", f"find_file {t or 'x'} {p}",
                         f"search_dir '{t}' {p}", f"search_file '{t}' {p}", f"edit {n}:{pick(rng, NUMS)}\n{t}\nend_of_edit",
                         f"cat {p}", f"ln -s /etc/passwd link", "echo hi > /etc/x", "submit" if rng.random() < 0.05 else "ls"])
        return f"DISCUSSION\ntry\n```\n{cmd}\n```\n"
    if style == "openhands":
        name = pick(rng, ["str_replace_editor"] * 3 + ["execute_bash"])
        if name == "execute_bash":
            return render_call(name, {"command": pick(rng, [f"cat {p}", "ln -s /etc/passwd link", t or "ls"]),
                                      "timeout": pick(rng, [-3, 0, 1, 5, 10**400, float("inf")]),
                                      "security_risk": pick(rng, ["LOW", "MEDIUM", "HIGH", "NONE"])})
        args = {"command": pick(rng, ["view", "create", "str_replace", "insert", "undo_edit"]), "path": p,
                "old_str": t, "new_str": pick(rng, TEXTS), "file_text": t, "security_risk": "MEDIUM"}
        if rng.random() < 0.5:
            args["insert_line"] = pick(rng, [-1, 0, 2, 10**6, 10**400])
        if rng.random() < 0.3:
            args["view_range"] = pick(rng, [[1, 2], [0, -1], [5, 1], [1, 10**6], [1, 10**400], [[[[1]]]]])
        return render_call(name, args)
    if style == "qwen_code":
        calls = []
        for _ in range(rng.randint(1, 3)):
            calls.append(pick(rng, [
                ("read_file", {"file_path": p, "offset": n, "limit": pick(rng, NUMS)}),
                ("edit", {"file_path": p, "old_string": t, "new_string": pick(rng, TEXTS), "replace_all": pick(rng, [True, False, "yes"])}),
                ("write_file", {"file_path": p, "content": t}),
                ("run_shell_command", {"command": t or "ls", "directory": p, "timeout": n}),
                ("browser", {"url": "http://example.com"}),
            ]))
        return render_calls(calls)
    keys = pick(rng, [t, f"cat {p}\n", "C-c", "ln -s /etc/passwd link\n", "\x00", "x" * 70_000])
    duration = pick(rng, [-1, 0, 0.2, 0.1, 10**400, float("inf"), float("nan")])
    return json.dumps({"analysis": "", "plan": "", "commands": [{"keystrokes": keys, "duration": duration}],
                       "task_complete": rng.random() < 0.1})


@pytest.mark.parametrize("style", ["answer_tag", "aider", "swe_agent", "swe_agent_0_7", "openhands", "qwen_code", "terminus"])
def test_hostile_actions_never_crash_a_session(style, tmp_path):
    task = make_suite(tmp_path / "suite")["fix-add"]
    rng = random.Random(f"{style}-7")
    steps = 0
    for episode in range(3):
        h, s, env = session(style, task)
        try:
            for _ in range(12):
                r = s.step(action(style, rng))
                steps += 1
                assert r.status in TURN_STATUSES and isinstance(r.observation, str)
                if r.done:
                    break
            verdict = s.finish()
            assert verdict.outcome in ("solved", "dropped_requirement", "broke_existing",
                                       "dropped_requirement+broke_existing", "test_error")
        finally:
            env.close()
    assert steps >= 3
    with open("/etc/passwd") as f:
        assert "lone surrogate" not in f.read()  # the host is untouched
