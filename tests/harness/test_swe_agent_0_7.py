"""The `swe_agent_0_7` harness: SWE-agent's classic ACI as SWE-agent v1.1.0 runs it with
`config/sweagent_0_7/07.yaml` (thought-action parser, tools/windowed + tools/search +
tools/windowed_edit_linting + tools/submit, last 5 observations kept). Upstream files named
per test; the texts are our own words, the tests pin structure and meaning."""

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harnessrl.harness.base import FormatError, Intent, ToolCall, make_harness
from tests.harness.agent_fixtures import CALC, MemSession, calc_task, session

H = {"swe_agent": make_harness("swe_agent_0_7")}
FIXED = CALC.replace("a - b", "a + b")

paths = st.from_regex(r"[a-z][a-z0-9_]{0,6}(/[a-z][a-z0-9_]{0,6}){0,2}\.(py|txt|md)", fullmatch=True)
line = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"), max_size=30)
lines = st.lists(line, min_size=1, max_size=8)
commands = st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=60).map(str.strip).filter(bool)


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return calc_task(tmp_path_factory.mktemp("suite"))


def fence(cmd):
    return f"DISCUSSION\nok\n```\n{cmd}\n```"


def _swe_apply(text: str, call: ToolCall) -> str:
    start, end = map(int, call.args["range"].split(":"))
    ls = text.split("\n")
    ls[start - 1:end] = call.args["text"].split("\n") if call.args["text"] else []
    return "\n".join(ls)


@settings(max_examples=150, deadline=None)
@given(paths, lines, lines, lines, lines)
def test_swe_agent_0_7_edit_round_trip(path, before, old, new, after):
    h = H["swe_agent"]
    old_t, new_t = "\n".join(old) + "\n", "\n".join(new) + "\n"
    file = "\n".join(before) + "\n" + old_t + "\n".join(after) + "\n"
    intent = Intent("replace", path=path, old=old_t, new=new_t)
    assume(old != new and h.expressible(intent) and "```" not in file and "end_of_edit" not in file.split("\n"))
    closed = MemSession({path: file}, {"open_file": None})
    text, used = h.render_turn([intent], closed)
    assert used == 0 and h.parse(text) == [ToolCall("open", {"path": path})]  # open the file first
    text, used = h.render_turn([intent], MemSession({path: file}, {"open_file": path}))
    calls = h.parse(text)
    assert used == 1 and calls[0].name == "edit"
    assert _swe_apply(file, calls[0]) == file.replace(old_t, new_t, 1)


@settings(max_examples=300, deadline=None)
@given(commands)
def test_swe_agent_0_7_bash_round_trip(command):
    h = H["swe_agent"]
    intent = Intent("run", command=command)
    assume(h.expressible(intent))
    assert h.parse(h.render_intent(intent, None)) == [ToolCall("bash", {"command": command})]


def test_swe_agent_0_7_takes_the_last_fenced_block_and_one_command():
    h = H["swe_agent"]
    assert h.parse("DISCUSSION\nx\n```\nls\n```\nthen\n```\npwd\n```\n") == [ToolCall("bash", {"command": "pwd"})]
    assert isinstance(h.parse("DISCUSSION\nno command"), FormatError)
    assert isinstance(h.parse("```\nedit 1:2\nfoo\n```"), FormatError)  # no end_of_edit
    assert isinstance(h.parse("```\nopen a.py\nls\n```"), FormatError)  # two commands
    assert h.parse('```\nopen "my file.py" 20\n```') == [ToolCall("open", {"path": "my file.py", "line": "20"})]


# ---------------------------------------------------------------------------------------
# sessions in a real sandboxed workspace


@pytest.mark.sandbox
def test_swe_agent_0_7_window_scroll_and_observation_template(task):
    """tools/windowed (open, scroll_down, goto) + windowed_file.py (first line clamped to
    n_lines - 1 - window, target a sixth of a window below the top), tools/search, 07.yaml
    next_step(_no_output)_template, last_n_observations n=5."""
    h, s, env = session("swe_agent_0_7", task)
    try:
        assert [m["role"] for m in s.messages] == ["system", "user", "user"]  # system, demonstration, instance
        assert "--- DEMONSTRATION ---" in s.messages[1]["content"] and s.messages[2]["content"].endswith(
            "(Open file: n/a)\n(Current directory: /app)\nbash-$")
        r = s.step(fence("open big.py"))
        lines = r.observation.split("\n")
        assert lines[0] == "[File: /app/big.py (250 lines total)]" and lines[1] == "1:line_1 = 1"
        assert lines[100] == "100:line_100 = 100" and lines[101] == "(150 more lines below)"
        assert r.observation.endswith("(Open file: /app/big.py)\n(Current directory: /app)\nbash-$")
        r = s.step(fence("scroll_down"))
        assert "(98 more lines above)" in r.observation and "99:line_99 = 99" in r.observation  # overlap 2
        r = s.step(fence("goto 200"))  # the clamp leaves the last line below the window, as upstream
        assert "200:line_200 = 200" in r.observation and "249:line_249" in r.observation and "(1 more lines below)" in r.observation
        assert s.step(fence("goto 400")).observation.startswith("Error: <line> must be at most 250")
        assert s.step(fence("goto x")).observation.startswith("Usage: goto <line>\nError: <line> must be a number")
        r = s.step(fence("search_file alpha sub/notes.txt"))
        assert 'Found 2 matches for "alpha" in /app/sub/notes.txt:' in r.observation and "Line 2:beta alpha" in r.observation
        r = s.step(fence("search_dir alpha"))
        assert "/app/sub/notes.txt (2 matches)" in r.observation
        r = s.step(fence("cd sub"))
        assert r.observation == ("Your command completed successfully and printed no output.\n(Open file: /app/big.py)\n"
                                 "(Current directory: /app/sub)\nbash-$")
        r = s.step(fence("find_file calc.py /app"))
        assert 'Found 1 matches for "calc.py" in /app:\n/app/calc.py' in r.observation
        # only the last 5 observations stay whole
        omitted = [m["content"] for m in s.messages if m["content"].startswith("Old environment output:")]
        assert len(omitted) == 4 and "lines omitted" in omitted[0]
        # tools/windowed/bin/create: an empty file (touch); an existing one only warns
        r = s.step(fence("create new/empty.py"))
        assert r.observation.startswith("[File: /app/sub/new/empty.py (0 lines total)]")
        assert env.workspace.read_text("sub/new/empty.py") == ""
        assert s.step(fence("create /app/calc.py")).observation.startswith("Warning: File '/app/calc.py' already exists.\n(Open")
    finally:
        env.close()


@pytest.mark.sandbox
def test_swe_agent_0_7_edit_lints_and_reverts(task):
    """tools/windowed_edit_linting/bin/edit: flake8 before and after, new errors -> both windows
    shown and the edit reverted; success -> the window from the edited line."""
    h, s, env = session("swe_agent_0_7", task)
    try:
        s.step(fence("open calc.py"))
        r = s.step(fence("edit 5:5\n    return a + undefined_thing\nend_of_edit"))
        assert r.status == "tool_error" and "F821 undefined name 'undefined_thing'" in r.observation
        assert "NOT applied" in r.observation and env.workspace.read_text("calc.py") == CALC
        r = s.step(fence("edit 5:5\n    return a + b\nend_of_edit"))
        assert r.observation.startswith("File updated.") and env.workspace.read_text("calc.py") == FIXED
        r = s.step(fence("submit"))
        assert r.done and s.stop_reason == "submitted" and s.finish().success
    finally:
        env.close()


@pytest.mark.sandbox
def test_swe_agent_0_7_requery_blocklist_and_autosubmit(task):
    """agents.py forward_with_handling (max_requeries=3, only the latest failure shown),
    tools.py should_block_action as released in 1.1.0 (`make`, bare `vim` blocked; `vim a.py`
    not), ThoughtActionParser's format error, exit_format with autosubmission."""
    h, s, env = session("swe_agent_0_7", task)
    try:
        r = s.step(fence("vim"))
        assert r.status == "blocked" and r.observation == "The operation 'vim' is not available in this environment."
        r = s.step(fence("make"))
        assert r.status == "blocked" and [m["content"] for m in s.messages].count(fence("vim")) == 0
        s.step(fence("open calc.py"))  # a valid step drops the failed attempts from the history
        assert not any("The operation 'make'" in m["content"] for m in s.messages)
        s.step(fence("edit 5:5\n    return a + b\nend_of_edit"))
        for i in range(2):
            r = s.step("I forgot the command block")
            assert r.status == "format_error" and not r.done and "not formatted correctly" in r.observation
        r = s.step("still no command")
        assert r.done and s.stop_status == "format_error" and s.stop_reason == "exit_format"
        assert s.finish().success  # the workspace as it stood was submitted
    finally:
        env.close()


@pytest.mark.sandbox
def test_swe_agent_0_7_truncation_exit_and_timeouts(task):
    """TemplateConfig.next_step_truncated_observation_template (07.yaml keeps the default: no
    prompt lines), `exit` (nothing submitted), 3 consecutive timeouts -> exit_command_timeout."""
    h, s, env = session("swe_agent_0_7", task)
    try:
        r = s.step(fence("head -c 100005 /dev/zero | tr '\\0' y"))
        assert r.observation.startswith("Observation: " + "y" * 100_000 + "<response clipped>") and "5 characters" in r.observation
        assert r.observation.endswith("</NOTE>")
        s.step(fence("open calc.py"))
        s.step(fence("edit 5:5\n    return a + b\nend_of_edit"))
        r = s.step(fence("exit"))
        assert r.done and s.stop_reason == "exit_command" and not s.finish().success
        assert env.workspace.read_text("calc.py") == CALC
    finally:
        env.close()
    h, s, env = session("swe_agent_0_7", task, command_timeout_s=1.0)
    try:
        for i in range(3):
            r = s.step(fence("sleep 5"))
            assert r.status == "timeout" and "stopped because it ran longer than 1 seconds" in r.observation
        assert r.done and s.stop_status == "timeout" and s.stop_reason == "exit_command_timeout"
    finally:
        env.close()


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.parametrize("suite_name", ["code-v1", "terminal-v1"])
def test_the_oracle_solves_builtin_tasks_through_the_classic_aci(suite_name, tmp_path):
    """swe_agent_0_7 is not in `--harness all` (so not in test_oracle_suites): a sample of each
    built-in suite through it and its 30-line-window variant (all cells: 41 + 21 solved, measured)."""
    from harnessrl.evaluate.run import plan_eval, run_eval
    from harnessrl.records import RecordStore
    from harnessrl.rollout.suites import load_suite

    suite = load_suite(suite_name)
    plan = plan_eval(suite, ["swe_agent_0_7", "swe_agent_window30"], seeds=1, tasks=[t.name for t in list(suite)[:4]])
    result = run_eval("oracle", plan, RecordStore(tmp_path / "store"), workers=2)
    assert len(result.episodes) == 8 and all(e.success for e in result.episodes), [
        (e.context.task_id, e.context.harness_id, e.outcome, e.status) for e in result.episodes if not e.success]
