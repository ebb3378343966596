"""The scripted replies for the tool-call programs (Qwen Code, OpenHands, opencode, Codex) in each program's own
tools, including the steps each program's rules add: Qwen Code edits only files it has read
(since they last changed), OpenHands' editor creates only new files in existing folders. The
programs themselves run these in tests/harness/test_conformance.py (slow)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from harnessrl.harness.base import Intent, TextHarness, make_harness
from harnessrl.tasks.workspace import Workspace


def call(text: str) -> dict:
    assert text.startswith("<tool_call>\n") and text.endswith("\n</tool_call>"), text
    return json.loads(text[len("<tool_call>\n"):-len("\n</tool_call>")])


@pytest.fixture
def session():
    with Workspace.create(None, quota_mb=16) as ws:
        ws.write_text("a.py", "x = 1\n")
        ws.write_text("empty.txt", "")
        yield SimpleNamespace(env=SimpleNamespace(workspace=ws), read_paths=set())


def test_qwen_code_reads_a_file_before_it_edits_it_and_again_after_a_shell_command(session):
    h = make_harness("qwen-code-cli")
    replace = Intent("replace", path="a.py", old="x = 1", new="x = 2")
    text, used = h.render_turn([replace], session)
    assert used == 0 and call(text) == {"name": "read_file", "arguments": {"file_path": "/app/a.py"}}
    text, used = h.render_turn([replace], session)
    assert used == 1 and call(text) == {"name": "edit", "arguments": {
        "file_path": "/app/a.py", "old_string": "x = 1", "new_string": "x = 2"}}
    text, used = h.render_turn([Intent("run", command="echo hi > a.py")], session)
    assert used == 1 and call(text)["name"] == "run_shell_command"
    assert "base64 -d | bash" in call(text)["arguments"]["command"]
    assert h.render_turn([replace], session)[1] == 0  # the shell may have changed it: read again
    new = Intent("write", path="pkg/new.py", content="y = 1\n")  # a new file needs no read
    text, used = h.render_turn([new], session)
    assert used == 1 and call(text) == {"name": "write_file", "arguments": {"file_path": "/app/pkg/new.py",
                                                                             "content": "y = 1\n"}}
    assert h.render_turn([Intent("finish", message="Done.")], session) == ("Done.", 1)  # no tool call


def test_openhands_writes_through_its_editor_and_finishes_with_finish(session):
    h = make_harness("openhands-cli")
    text, used = h.render_turn([Intent("write", path="pkg/new.py", content="y\n")], session)
    assert used == 0 and call(text)["name"] == "terminal" and call(text)["arguments"]["command"] == "mkdir -p /app/pkg"
    session.env.workspace.write_text("pkg/keep", "")  # the folder now exists
    args = call(h.render_turn([Intent("write", path="pkg/new.py", content="y\n")], session)[0])["arguments"]
    assert (args["command"], args["path"], args["file_text"]) == ("create", "/app/pkg/new.py", "y\n")
    args = call(h.render_turn([Intent("write", path="a.py", content="x = 3\n")], session)[0])["arguments"]
    assert (args["command"], args["old_str"], args["new_str"]) == ("str_replace", "x = 1\n", "x = 3\n")  # no overwrite by create
    args = call(h.render_turn([Intent("write", path="empty.txt", content="z\n")], session)[0])["arguments"]
    assert (args["command"], args["insert_line"], args["new_str"]) == ("insert", 0, "z\n")
    for kind, risk in (("read", "LOW"), ("write", "MEDIUM")):
        assert call(h.render_intent(Intent(kind, path="a.py", content="q\n"), session))["arguments"]["security_risk"] == risk
    assert call(h.render_turn([Intent("finish", message="Done.")], session)[0]) == {
        "name": "finish", "arguments": {"message": "Done."}}


def test_opencode_calls_its_own_tools_without_a_read_first(session):
    h = make_harness("opencode-cli")
    text, used = h.render_turn([Intent("replace", path="a.py", old="x = 1", new="x = 2")], session)
    assert used == 1 and call(text) == {"name": "edit", "arguments": {
        "filePath": "/app/a.py", "oldString": "x = 1", "newString": "x = 2"}}  # it edits unread files
    assert call(h.render_turn([Intent("write", path="pkg/new.py", content="y\n")], session)[0]) == {
        "name": "write", "arguments": {"filePath": "/app/pkg/new.py", "content": "y\n"}}
    run = call(h.render_turn([Intent("run", command="echo 'hi' > a.py")], session)[0])
    assert run["name"] == "bash" and run["arguments"]["command"].endswith("| base64 -d | bash")
    assert call(h.render_turn([Intent("read", path="a.py")], session)[0]) == {"name": "read",
                                                                              "arguments": {"filePath": "/app/a.py"}}
    assert h.render_turn([Intent("finish", message="Done.")], session) == ("Done.", 1)  # no tool call


def test_codex_edits_through_exec_command_with_the_files_whole_new_text(session):
    import base64
    import shlex

    h = make_harness("codex-cli")

    def written(text: str) -> tuple[str, str]:
        args = call(text)["arguments"]
        assert call(text)["name"] == "exec_command" and args["workdir"] == "/app" and args["yield_time_ms"] >= 30_000
        head, _, path = args["cmd"].rpartition(" > ")
        return base64.b64decode(head.split("echo ")[-1].split(" |")[0]).decode(), shlex.split(path)[0]

    text, used = h.render_turn([Intent("replace", path="a.py", old="x = 1", new="x = 2")], session)
    assert used == 1 and written(text) == ("x = 2\n", "/app/a.py")
    text = h.render_turn([Intent("write", path="pkg/new file.py", content="y\n")], session)[0]
    assert written(text) == ("y\n", "/app/pkg/new file.py")
    assert call(text)["arguments"]["cmd"].startswith("mkdir -p /app/pkg && ")
    assert call(h.render_turn([Intent("read", path="a.py")], session)[0])["arguments"]["cmd"] == "cat /app/a.py"
    with pytest.raises(ValueError, match="must exist"):
        h.render_intent(Intent("replace", path="missing.py", old="a", new="b"), session)
    assert h.render_turn([Intent("finish", message="Done.")], session) == ("Done.", 1)


@pytest.mark.parametrize("name", ["qwen-code-cli", "qwen-code-cli-8k", "openhands-cli", "opencode-cli", "codex-cli"])
def test_the_tool_call_programs_have_shell_and_edit(name):
    h = make_harness(name)
    assert h.capabilities == {"shell", "edit"}
    assert not hasattr(h, "parse") and not isinstance(h, TextHarness)  # the program parses its replies, not the harness
