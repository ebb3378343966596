"""Each style's control logic against a real sandboxed workspace: formats of observations,
error messages, stop rules, limits. One small task: `add` in calc.py subtracts."""

import json

import pytest

from tests.harness.agent_fixtures import CALC, calc_task, session

FIXED = CALC.replace("a - b", "a + b")
pytestmark = pytest.mark.sandbox


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return calc_task(tmp_path_factory.mktemp("suite"))


# ---------------------------------------------------------------------------------------
# answer_tag


def test_answer_tag_one_reply_and_format_errors(task):
    h, s, env = session("answer_tag", task)
    try:
        r = s.step("I think the fix is to add.")
        assert r.status == "format_error" and "no <answer>" in r.observation and not r.done and s.format_errors == 1
        r = s.step(f'<answer path="calc.py">\n{FIXED}</answer>')
        assert r.done and s.finish().success and env.workspace.read_text("calc.py") == FIXED
    finally:
        env.close()


# ---------------------------------------------------------------------------------------
# aider


def test_aider_reflects_failures_and_stops_after_three(task):
    h, s, env = session("aider", task)
    try:
        bad = "calc.py\n```\n<<<<<<< SEARCH\n    return a * b * 2\n=======\n    return 0\n>>>>>>> REPLACE\n```\n"
        for i in range(3):
            r = s.step(bad)
            assert not r.done and r.status == "tool_error" and "1 SEARCH/REPLACE block failed to match" in r.observation
        r = s.step(bad)  # the fourth failure: no reflections left
        assert r.done and s.stop_reason == "reflections_exhausted" and s.turn == 4
    finally:
        env.close()


def test_aider_partial_success_then_fix_and_lint_reflection(task):
    h, s, env = session("aider", task)
    try:
        good = "calc.py\n```\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n```\n"
        lint = "calc.py\n```\n<<<<<<< SEARCH\n    return a * b\n=======\n    return a * undefined_name\n>>>>>>> REPLACE\n```\n"
        r = s.step(good + "\n" + lint)
        assert not r.done and "# Fix any errors below" in r.observation and "F821" in r.observation
        r = s.step("calc.py\n```\n<<<<<<< SEARCH\n    return a * undefined_name\n=======\n    return a * b\n>>>>>>> REPLACE\n```\n")
        assert r.done and s.stop_reason == "edits_applied" and s.finish().success
    finally:
        env.close()


def test_aider_never_runs_shell_commands(task):
    h, s, env = session("aider", task)
    try:
        r = s.step("Run this:\n```bash\ntouch /app/pwned\n```\n")
        assert r.done and s.stop_reason == "no_edits" and not env.workspace.exists("pwned")
        assert "shell" not in h.capabilities
    finally:
        env.close()


# ---------------------------------------------------------------------------------------
# openhands


def call(name, **params):
    if name in ("execute_bash", "str_replace_editor"):  # required since OpenHands 0.62
        params = {**params, "security_risk": params.get("security_risk", "MEDIUM")}
    body = "".join(f"<parameter={k}>{v}</parameter>\n" for k, v in params.items())
    return f"I will act.\n<function={name}>\n{body}</function>"


def test_openhands_bash_and_editor_observations(task):
    h, s, env = session("openhands", task)
    try:
        r = s.step(call("execute_bash", command="echo hi; exit 3"))
        assert r.observation.startswith("EXECUTION RESULT of [execute_bash]:\nhi\n")
        assert r.observation.endswith("[Current working directory: /app]\n[Python interpreter: python]\n"
                                      "[Command finished with exit code 3]")
        r = s.step(call("execute_bash", command="python -c \"print('x' * 50000)\""))
        assert len(r.observation) < 31_000 and "<response clipped>" in r.observation
        r = s.step(call("str_replace_editor", command="str_replace", path="/app/calc.py", old_str="return", new_str="yield"))
        assert "Multiple occurrences of old_str `return` in lines [5, 9]" in r.observation
        r = s.step(call("str_replace_editor", command="str_replace", path="/app/calc.py", old_str="nope", new_str="x"))
        assert "did not appear verbatim in /app/calc.py" in r.observation and r.status == "tool_error"
        r = s.step(call("str_replace_editor", command="str_replace", path="/app/calc.py", old_str="a - b", new_str="a + b"))
        assert "has been edited" in r.observation and "     5\t    return a + b" in r.observation
        r = s.step(call("str_replace_editor", command="undo_edit", path="/app/calc.py"))
        assert "undone successfully" in r.observation and env.workspace.read_text("calc.py") == CALC
        r = s.step(call("str_replace_editor", command="create", path="calc.py", file_text="x"))
        assert "should be an absolute path" in r.observation
        r = s.step("Let me think about this.")  # no tool call: the nudge
        assert r.status == "format_error" and "NEVER ask for human help" in r.observation and s.format_errors == 1
        # OpenHands 0.62: `think` runs nothing and is acknowledged; the risk rating is kept with the call
        r = s.step(call("think", thought="The sign in add is wrong."))
        assert r.observation == "EXECUTION RESULT of [think]:\nYour thought has been logged." and r.status == "ok"
        r = s.step(call("execute_bash", command="true", security_risk="LOW"))
        assert '"security_risk": "LOW"' in r.tool_call_json
        r = s.step(call("finish", message="done"))
        assert r.done and s.stop_reason == "finish"
    finally:
        env.close()


# ---------------------------------------------------------------------------------------
# qwen_code


def tc(name, **args):
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>"


def test_qwen_code_runs_all_calls_in_order_with_its_messages(task):
    h, s, env = session("qwen_code", task)
    try:
        r = s.step("Two steps.\n" + tc("run_shell_command", command="echo out; echo err >&2; exit 4", directory="sub")
                   + tc("edit", file_path="/app/calc.py", old_string="return", new_string="yield")
                   + tc("edit", file_path="/app/calc.py", old_string="nothing here", new_string="x")
                   + tc("read_file", file_path="calc.py"))
        responses = r.observation.split("</tool_response>")
        assert r.observation.count("<tool_response>") == 4
        # Qwen Code (0.15) runs commands in a pseudo-terminal: stdout and stderr arrive as one
        # Output, in order; Error is only for a command that could not run at all
        assert ("Command: echo out; echo err >&2; exit 4\nDirectory: sub\nOutput: out\nerr\nError: (none)\n"
                "Exit Code: 4\nSignal: (none)") in responses[0]
        assert "found 2 occurrences for old_string in /app/calc.py but replace_all was not enabled" in responses[1]
        assert "0 occurrences found for old_string in /app/calc.py" in responses[2]
        assert "File path must be absolute: calc.py" in responses[3]
        r = s.step(tc("edit", file_path="/app/calc.py", old_string="a - b", new_string="a + b"))
        assert "Successfully modified file: /app/calc.py (1 replacements)." in r.observation
        r = s.step("All done: add now adds.")
        assert r.done and s.stop_reason == "no_tool_call" and s.finish().success
    finally:
        env.close()


def test_qwen_code_read_only_search_tools(task):
    # list_directory / glob / grep_search as Qwen Code (0.15) lays out their results; the old
    # name search_file_content still works
    h, s, env = session("qwen_code", task)
    try:
        r = s.step(tc("list_directory", path="/app") + tc("glob", pattern="**/*.TXT")
                   + tc("grep_search", pattern=r"def \w+", include="c*.py")
                   + tc("search_file_content", pattern="alpha", path="/app/sub")
                   + tc("grep_search", pattern="(unclosed") + tc("list_directory", path="/etc")
                   + tc("glob", pattern="*.nothing"))
        out = r.observation.split("</tool_response>")
        assert "Directory listing for /app:\n[DIR] sub\n" in out[0] and "\ncalc.py\n" in out[0]
        assert 'Found 1 file(s) matching "**/*.TXT" within /app, sorted by modification time (newest first):\n/app/sub/notes.txt' in out[1]
        assert ('Found 2 matches for pattern "def \\w+" in path "." (filter: "c*.py"):\n---\nFile: calc.py\n'
                "L4: def add(a, b):\nL8: def mul(a, b):\n---") in out[2]
        assert 'Found 2 matches for pattern "alpha" in path "/app/sub":\n---\nFile: notes.txt\nL1: alpha\nL2: beta alpha\n---' in out[3]
        assert "Invalid regular expression pattern: (unclosed" in out[4] and r.status == "tool_error"
        assert "must be within the root directory (/app): /etc" in out[5]
        assert 'No files found matching pattern "*.nothing" within /app' in out[6]
        assert env.workspace.read_text("calc.py") == CALC  # read-only
    finally:
        env.close()


def test_qwen_code_loop_detector_and_retry_warning(task):
    h, s, env = session("qwen_code", task)
    try:
        for i in range(3):
            r = s.step(tc("read_file", file_path="relative.py"))
        assert "failed validation 3 times" in r.observation
        for i in range(2):
            r = s.step(tc("read_file", file_path="relative.py"))
        assert r.done and s.stop_reason == "loop_detected"
    finally:
        env.close()


# ---------------------------------------------------------------------------------------
# terminus


def keys(*cmds, complete=False):
    return json.dumps({"analysis": "", "plan": "", "commands": [{"keystrokes": k, "duration": d} for k, d in cmds],
                       "task_complete": complete})


def test_terminus_tmux_output_caps_errors_and_double_completion(task):
    h, s, env = session("terminus", task)
    try:
        assert "Current terminal state:" in s.messages[-1]["content"]
        r = s.step("I'll run ls")
        assert r.status == "format_error" and r.observation.startswith("Previous response had parsing errors:\nERROR:")
        r = s.step(keys(("cd sub && cat notes.txt\n", 5)))
        assert r.observation.startswith("New Terminal Output:") and "beta alpha" in r.observation
        r = s.step(keys(("seq 1 3000\n", 10)))
        assert "output limited to 10000 bytes" in r.observation and len(r.observation.encode()) < 10_300
        r = s.step(keys(("sleep 30\n", 0.5), ("C-c", 0.5)))  # a key name is a key, not text
        r = s.step(keys(("pwd\n", 5)))
        assert "/app/sub" in r.observation
        r = s.step(keys(complete=True))
        assert not r.done and "Are you sure" in r.observation
        r = s.step(keys(("true\n", 1)))  # not confirmed: completion resets
        r = s.step(keys(complete=True))
        assert not r.done
        r = s.step(keys(complete=True))
        assert r.done and s.stop_reason == "task_complete"
        assert not s.finish().success  # nothing was fixed
    finally:
        env.close()


@pytest.mark.parametrize("kill", ["tmux kill-server\n", "kill -9 $$\n"])
def test_terminus_ends_the_episode_when_the_agent_ends_its_own_terminal(task, kill):
    """An agent that kills its tmux server or shell ends its episode (graded as the workspace stands),
    it does not crash the harness (found by the audit's hook-side-effect attack)."""
    h, s, env = session("terminus", task)
    try:
        s.step(keys(("sed -i 's/a - b/a + b/' calc.py\n", 2)))
        r = s.step(keys((kill, 2), ("ls\n", 1)))
        if not r.done:  # the shell died but tmux restarted nothing: the next command finds no pane
            r = s.step(keys(("ls\n", 1)))
        assert r.done and s.stop_reason == "terminal_closed" and r.status == "tool_error", (r, s.stop_reason)
        assert s.finish().success  # the fix made before the terminal went away is graded
    finally:
        env.close()
