"""Golden tests of the `swe_agent` harness against SWE-agent v1.1.0's default config.

Each test names the upstream behaviour it pins (release, file); the texts are our own words,
so the tests check structure and meaning: which template, which count, which order.
Upstream files (SWE-agent/SWE-agent at tag v1.1.0): config/default.yaml,
sweagent/agent/agents.py, sweagent/tools/{tools,parsing,commands}.py,
tools/edit_anthropic/bin/str_replace_editor, tools/review_on_submit_m/bin/submit.
"""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessrl.harness._swe_tools import BLOCKLIST, BLOCKLIST_STANDALONE, blocked, filemap, patch
from harnessrl.harness.base import FormatError, Intent, ToolCall, make_harness
from harnessrl.harness.swe_agent import render_call
from tests.harness.agent_fixtures import CALC, MemSession, make_suite, session

H = make_harness("swe_agent")
FIXED = CALC.replace("a - b", "a + b")


def call(name, **args):
    return render_call(name, args, "Thinking about it.")


# ---------------------------------------------------------------------------------------
# the function-calling parser (sweagent/tools/parsing.py FunctionCallingParser, 1.1.0)


def test_exactly_one_call_and_the_error_code_of_each_failure():
    assert H.parse(call("bash", command="ls")) == [ToolCall("bash", {"command": "ls"})]
    # arguments may arrive JSON-encoded in a string (OpenAI style), as the parser decodes them
    enc = '<tool_call>{"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}</tool_call>'
    assert H.parse(enc) == [ToolCall("bash", {"command": "ls"})]
    # 0 calls -> error code "missing"; a fenced command is not a call (its message says so)
    for text in ("I will run ls.", "```\nls\n```"):
        err = H.parse(text)
        assert isinstance(err, FormatError) and err.code == "missing"
        assert "did not call any tool" in H.format_error_message(err) and "```" in H.format_error_message(err)
    # 2+ calls -> "multiple": nothing runs, not even the first
    err = H.parse(call("bash", command="ls") + call("submit"))
    assert err.code == "multiple" and "more than one tool" in H.format_error_message(err)
    # an unexpected argument has its own text; unknown names, missing arguments and bad JSON the generic one
    err = H.parse(call("bash", command="ls", timeout=5))
    assert err.code == "unexpected_arg" and "timeout" in err.message and "allowed arguments" in H.format_error_message(err)
    for text, words in [(call("execute_bash", command="ls"), "'execute_bash' is not one of the available commands"),
                        (call("str_replace_editor", command="view"), "missing: path"),
                        ('<tool_call>{"name": "bash", "arguments": {"command": </tool_call>', "not valid JSON"),
                        ('<tool_call>["bash"]</tool_call>', '"name"')]:
        err = H.parse(text)
        assert isinstance(err, FormatError) and err.code == "other" and words in err.message, (text, err)
        assert H.format_error_message(err).startswith("Your action could not be parsed: ")


def test_the_parser_leaves_argument_types_to_the_tool():
    # FunctionCallingParser checks names, not types: a bad insert_line reaches the editor's argparse
    assert H.parse(call("str_replace_editor", command="insert", path="/app/a", insert_line="two", new_str="x")) == [
        ToolCall("str_replace_editor", {"command": "insert", "path": "/app/a", "insert_line": "two", "new_str": "x"})]


paths = st.from_regex(r"[a-z][a-z0-9_]{0,6}(/[a-z][a-z0-9_]{0,6}){0,1}\.(py|txt)", fullmatch=True)
texts = st.text(max_size=60) | st.sampled_from(["</tool_call>", "<tool_call>", "a\tb\n", '"}\n</tool_call>x'])


@settings(max_examples=200, deadline=None)
@given(paths, texts, texts, texts)
def test_render_is_the_inverse_of_parse(path, old, new, command):
    """Any text, `</tool_call>` included, survives the JSON call (`</` is written `<\\/`)."""
    assert H.parse(H.render_intent(Intent("replace", path=path, old=old, new=new), None)) == [ToolCall(
        "str_replace_editor", {"command": "str_replace", "path": f"/app/{path}", "old_str": old, "new_str": new})]
    assert H.parse(H.render_intent(Intent("run", command=command), None)) == [ToolCall("bash", {"command": command})]
    created = H.render_turn([Intent("write", path=path, content=new)], MemSession({}))[0]
    assert H.parse(created)[0].args == {"command": "create", "path": f"/app/{path}", "file_text": new}
    rewrite = H.render_turn([Intent("write", path=path, content=new)], MemSession({path: old}))[0]
    if old == "" and new.endswith("\n"):  # an empty file: insert at line 0 (the tool splits on old_str)
        expected = {"command": "insert", "path": f"/app/{path}", "insert_line": 0, "new_str": new[:-1]}
    else:
        expected = {"command": "str_replace", "path": f"/app/{path}", "old_str": old, "new_str": new}
    assert H.parse(rewrite)[0].args == expected


# ---------------------------------------------------------------------------------------
# the blocklist (sweagent/tools/tools.py ToolFilterConfig + should_block_action, 1.1.0)


def test_blocklist_as_released_and_as_fixed_on_main():
    assert "make" in BLOCKLIST and "python -m venv" in BLOCKLIST and "su" in BLOCKLIST_STANDALONE
    # v1.1.0 tests `entry.startswith(action)`: a bare `make` or `vim` (or any prefix of an entry,
    # like `ma`) is blocked, `make test` and `vim a.py` run; bare interpreters are standalone-blocked
    for action, released, fixed in [("make", True, True), ("make test", False, True), ("vim a.py", False, True),
                                    ("vim", True, True), ("ma", True, False), ("tail -f log", False, True),
                                    ("python", True, True), ("python x.py", False, False), ("ls", False, False),
                                    ("bash", True, True), ("radare2 bin", True, True), ("r2 -q", True, True),
                                    ("radare2 bin -c 'pdf'", False, False), ("  ", False, False)]:
        assert blocked(action) is released, action
        assert blocked(action, mode="main") is fixed, action


# ---------------------------------------------------------------------------------------
# pure pieces of the editor and the review patch


def test_filemap_elides_function_bodies_of_five_lines_or_more():
    src = "import os\n\n\ndef long():\n" + "".join(f"    x{i} = {i}\n" for i in range(6)) + "\n\ndef short():\n    return 1\n"
    out = filemap(src).split("\n")
    # tree-sitter rows 4..9 (0-based) are the body: one "... eliding lines 5-10 ..." row, numbered `%6d `
    assert out[:5] == ["     1 import os", "     2 ", "     3 ", "     4 def long():", "     5 ... eliding lines 5-10 ..."]
    assert out[-2:] == ["    13 def short():", "    14     return 1"]
    assert filemap("def broken(:\n") is None  # ast cannot parse it: the caller shows the cut file instead


def test_patch_is_git_style():
    diff = patch({"a.py": b"x = 1\n", "gone.txt": b"bye\n"}, {"a.py": b"x = 2\n", "new.txt": b"hi"})
    assert "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n" in diff
    assert "diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n" in diff
    assert "+hi\n\\ No newline at end of file\n" in diff and "deleted file mode 100644" in diff


# ---------------------------------------------------------------------------------------
# sessions in a real sandboxed workspace


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    big = "".join(f"def f{i}(x):\n" + "".join(f"    y{j} = x + {j}\n" for j in range(6)) + "    return y0\n\n\n"
                  for i in range(200))
    suite = make_suite(tmp_path_factory.mktemp("suite"), {"fix-add": {"files": {
        "calc.py": CALC, "tabs.py": "def f():\n\treturn 1\n\n\ndef g():\n\treturn 2\n", "big.py": big,
        "empty.txt": "", "twice.txt": "a = 1\nb = 2\na = 1\nb = 2\n"}}})
    return suite["fix-add"]


def tool(observation):
    """A valid call's result: a "tool" message upstream, shown as Qwen-family templates render it."""
    return f"<tool_response>\n{observation}\n</tool_response>"


def edit(s, **args):
    return s.step(call("str_replace_editor", **args))


@pytest.mark.sandbox
def test_observation_templates(task):
    """agents.py add_step_to_history: `OBSERVATION:` + output; blank output -> the no-output
    message alone; over max_observation_length (100,000) -> `Observation: ` + the first 100,000
    characters + a clipped note giving the limit and the number elided."""
    h, s, env = session("swe_agent", task)
    try:
        r = s.step(call("bash", command="echo a; echo b >&2; echo c"))
        assert r.observation == tool("OBSERVATION:\na\nb\nc\n")  # stdout and stderr as one stream, in order
        r = s.step(call("bash", command="true"))
        assert r.observation == tool("Your command completed successfully and printed no output.")
        r = s.step(call("bash", command="head -c 100011 /dev/zero | tr '\\0' x"))
        head, note = r.observation.split("<response clipped>")
        assert head == "<tool_response>\nObservation: " + "x" * 100_000 and "100000 characters" in note and "11 characters" in note
        assert [m["role"] for m in s.messages] == ["system", "user"] + ["assistant", "user"] * 3  # all kept (cache_control only)
    finally:
        env.close()


@pytest.mark.sandbox
def test_requery_keeps_only_the_latest_failure_and_the_third_ends_the_run(task):
    """agents.py forward_with_handling + get_model_requery_history: a format error, a blocked
    action or a bash syntax error is re-asked with the valid history + the failed reply + the
    error; a valid reply drops the failures; the 3rd failure in a row (max_requeries=3) exits
    with `exit_format` and autosubmits."""
    h, s, env = session("swe_agent", task)
    try:
        r = s.step("no call at all")
        assert r.status == "format_error" and not r.done and len(s.messages) == 4
        r = s.step(call("bash", command="vim"))  # blocklist_error_template
        assert r.status == "blocked" and r.observation == "The operation 'vim' is not available in this environment."
        assert len(s.messages) == 4 and "vim" in s.messages[2]["content"]  # only the latest failure is shown
        r = s.step(call("bash", command="ls"))
        assert r.status == "ok" and len(s.messages) == 4 and s.messages[2]["content"] == call("bash", command="ls")
        r = s.step(call("bash", command="echo ("))  # shell_check_error_template, with `bash -n`'s output
        assert r.status == "format_error" and "syntax errors and was NOT run" in r.observation and "syntax error" in r.observation
        r = s.step(call("bash", command="make"))
        assert r.status == "blocked" and not r.done
        r = s.step(call("bash", command="python"))
        assert r.done and s.stop_reason == "exit_format" and s.stop_status == "format_error" and s.format_errors == 5
        assert not s.finish().success  # graded as the workspace stands (nothing was fixed)
    finally:
        env.close()


@pytest.mark.sandbox
def test_submit_asks_for_a_review_first_and_exit_submits_nothing(task):
    """tools/review_on_submit_m/bin/submit: the first `submit` prints SUBMIT_REVIEW_MESSAGES[0]
    with {{diff}} = the changes so far (SUBMIT_STAGE 0 -> 1), the next one submits; `submit -f`
    submits at once. agents.py handle_action: `exit` ends the run, nothing submitted."""
    h, s, env = session("swe_agent", task)
    try:
        assert edit(s, command="str_replace", path="/app/calc.py", old_str="a - b", new_str="a + b").status == "ok"
        r = s.step(call("submit"))
        assert r.status == "ok" and not r.done and "<diff>\ndiff --git a/calc.py b/calc.py\n" in r.observation
        assert "+    return a + b\n" in r.observation and "Run the submit command again" in r.observation
        r = s.step(call("submit"))
        assert r.done and s.stop_reason == "submitted" and s.finish().success
    finally:
        env.close()
    h, s, env = session("swe_agent", task)
    try:
        edit(s, command="str_replace", path="/app/calc.py", old_str="a - b", new_str="a + b")
        r = s.step(call("bash", command="submit -f"))  # the tools are commands in the shell upstream
        assert r.done and s.stop_reason == "submitted" and s.finish().success
    finally:
        env.close()
    h, s, env = session("swe_agent", task)
    try:
        edit(s, command="str_replace", path="/app/calc.py", old_str="a - b", new_str="a + b")
        r = s.step(call("bash", command="exit"))
        assert r.done and s.stop_reason == "exit_command"
        v = s.finish()  # no patch: the repository is judged as it began
        assert not v.success and env.workspace.read_text("calc.py") == CALC
    finally:
        env.close()


@pytest.mark.sandbox
def test_three_timeouts_in_a_row_end_the_run(task):
    """tools.py execution_timeout / max_consecutive_execution_timeouts=3; agents.py
    command_cancelled_timeout_template; the 3rd exits with `exit_command_timeout`."""
    h, s, env = session("swe_agent", task, command_timeout_s=1.0)
    try:
        r = s.step(call("bash", command="sleep 5"))
        assert r.status == "timeout" and "'sleep 5'" in r.observation and "1 seconds" in r.observation and not r.done
        s.step(call("bash", command="sleep 5"))
        r = s.step(call("bash", command="sleep 5"))
        assert r.done and s.stop_reason == "exit_command_timeout" and s.stop_status == "timeout"
    finally:
        env.close()


@pytest.mark.sandbox
def test_str_replace_editor_as_edit_anthropic_does_it(task):
    """tools/edit_anthropic/bin/str_replace_editor at v1.1.0 (USE_FILEMAP=true, no linter)."""
    h, s, env = session("swe_agent", task)
    try:
        # view: `%6d\t` numbering; a .py file over 16,000 characters becomes a filemap
        r = edit(s, command="view", path="/app/calc.py")
        assert r.observation.startswith("<tool_response>\nOBSERVATION:\nResult of `cat -n` on /app/calc.py:\n"
                                        '     1\t"""Tiny calculator."""\n')
        r = edit(s, command="view", path="/app/big.py")
        assert "... eliding lines 2-8 ..." in r.observation and "abbreviated" in r.observation
        r = edit(s, command="view", path="/app/big.py", view_range=[10, 11])
        assert "    10\t\n    11\tdef f1(x):\n" in r.observation
        for vr, words in [([0, 3], "first element `0`"), ([1, 10**5], "second element `100000`"),
                          ([5, 2], "at least its first"), ([1], "expected 2 arguments")]:
            r = edit(s, command="view", path="/app/calc.py", view_range=vr)
            assert r.status == "tool_error" and words in r.observation, (vr, r.observation)
        # str_replace: the count is checked before old == new; several hits list the lines holding old_str
        r = edit(s, command="str_replace", path="/app/calc.py", old_str="a / b", new_str="a / b")
        assert "does not occur verbatim" in r.observation
        r = edit(s, command="str_replace", path="/app/twice.txt", old_str="a = 1", new_str="a = 3")
        assert "in lines [1, 3]" in r.observation
        r = edit(s, command="str_replace", path="/app/twice.txt", old_str="a = 1\nb = 2", new_str="z")
        assert "in lines []" in r.observation  # a multi-line old_str is in no single line, as upstream
        r = edit(s, command="str_replace", path="/app/calc.py", old_str="a - b", new_str="a - b")
        assert "are the same" in r.observation
        # every edit expands the tabs of the whole file
        r = edit(s, command="str_replace", path="/app/tabs.py", old_str="return 2", new_str="return 3")
        assert r.status == "ok" and env.workspace.read_text("tabs.py") == "def f():\n        return 1\n\n\ndef g():\n        return 3\n"
        # an empty file holds "" once: str_replace writes it, then the tool crashes (split on "")
        r = edit(s, command="str_replace", path="/app/empty.txt", old_str="", new_str="hello\n")
        assert r.status == "tool_error" and "empty separator" in r.observation
        assert env.workspace.read_text("empty.txt") == "hello\n"
        r = edit(s, command="insert", path="/app/empty.txt", insert_line=9, new_str="x")
        assert "[0, 2]" in r.observation
        r = edit(s, command="insert", path="/app/empty.txt", insert_line="one", new_str="x")
        assert r.status == "tool_error" and "invalid int value: 'one'" in r.observation
        # 1.1.0 never stores the edit history: undo_edit has nothing to undo
        r = edit(s, command="undo_edit", path="/app/calc.py")
        assert r.status == "tool_error" and "no edit history" in r.observation
        # create / path checks, in the tool's order
        r = edit(s, command="create", path="calc.py", file_text="x")
        assert "not an absolute path" in r.observation and "/app/calc.py?" in r.observation
        assert "already exists" in edit(s, command="create", path="/app/calc.py", file_text="x").observation
        assert "does not exist; create it first" in edit(s, command="create", path="/app/no/dir.py", file_text="x").observation
        assert "only `view`" in edit(s, command="str_replace", path="/app", old_str="x").observation
        assert "Unknown command delete" in edit(s, command="delete", path="/app/calc.py").observation
        r = edit(s, command="view", path="/app")
        assert "/app/calc.py\n" in r.observation and "/app/tabs.py" in r.observation
        # typed in bash, the editor is the same tool
        r = s.step(call("bash", command="str_replace_editor view /app/calc.py --view_range 4 5"))
        assert "     4\tdef add(a, b):\n     5\t    return a - b\n" in r.observation
    finally:
        env.close()


@pytest.mark.sandbox
def test_undo_edit_works_when_asked_for(task):
    h, s, env = session("swe_agent", task, options={"editor_undo": True})
    try:
        edit(s, command="str_replace", path="/app/calc.py", old_str="a - b", new_str="a + b")
        r = edit(s, command="undo_edit", path="/app/calc.py")
        assert r.status == "ok" and env.workspace.read_text("calc.py") == CALC
    finally:
        env.close()


def test_the_model_is_shown_the_three_tools_as_json_schemas():
    docs = H.tool_docs()
    names = [json.loads(line)["function"]["name"] for line in docs.splitlines()]
    assert names == ["bash", "str_replace_editor", "submit"]
    editor = json.loads(docs.splitlines()[1])["function"]["parameters"]
    assert editor["required"] == ["command", "path"] and editor["properties"]["command"]["enum"] == [
        "view", "create", "str_replace", "insert", "undo_edit"]
