"""Aider's edit-block grammar and matching rules, as pure functions."""

import pytest

from harnessrl.harness import _aider_edits as ed
from tests.harness.agent_fixtures import dedent

FILE = dedent('''
    def f(x):
        if x:
            return 1
        return 0


    def g(x):
        if x:
            return 1
        return 0
''')


@pytest.mark.parametrize("head,div,upd", [
    ("<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"),
    ("<<<<< SEARCH", "=====", ">>>>> REPLACE"),
    ("<<<<<<<<< SEARCH>", "=========", ">>>>>>>>> REPLACE  "),
])
def test_marker_variants_match_aider_regexes(head, div, upd):
    text = f"a.py\n```\n{head}\nold\n{div}\nnew\n{upd}\n```\n"
    assert ed.find_edit_blocks(text) == [ed.EditBlock("a.py", "old\n", "new\n")]


@pytest.mark.parametrize("bad", ["<<<< SEARCH", "<<<<<<<<<< SEARCH", "<<<<<<< search"])
def test_marker_lengths_outside_5_to_9_are_not_markers(bad):
    assert ed.find_edit_blocks(f"a.py\n{bad}\nold\n=======\nnew\n>>>>>>> REPLACE\n") == []


def test_filename_from_up_to_three_lines_back_and_carried_over():
    text = ("Change both:\n\n`pkg/mod.py`:\n```python\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n```\n"
            "```python\n<<<<<<< SEARCH\nc\n=======\nd\n>>>>>>> REPLACE\n```\n")
    blocks = ed.find_edit_blocks(text)
    assert [b.path for b in blocks] == ["pkg/mod.py", "pkg/mod.py"]  # the second reuses the path


@pytest.mark.parametrize("text,msg", [
    ("<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n", "filename"),
    ("a.py\n<<<<<<< SEARCH\na\nb\n", "======="),
    ("a.py\n<<<<<<< SEARCH\na\n=======\nb\n", ">>>>>>> REPLACE"),
])
def test_malformed_blocks_raise_format_errors(text, msg):
    with pytest.raises(ed.EditFormatError, match=msg):
        ed.find_edit_blocks(text)


def test_exact_match_replaces_first_occurrence_only():
    block = ed.EditBlock("m.py", "    if x:\n        return 1\n", "    if x:\n        return 2\n")
    out = ed.apply_block(FILE, block)
    assert out.count("return 2") == 1 and out.index("return 2") < out.index("def g")


def test_whitespace_tolerant_match_restores_the_files_indentation():
    block = ed.EditBlock("m.py", "if x:\n    return 1\n", "if x:\n    return 3\n")  # indentation stripped
    out = ed.apply_block(FILE, block)
    assert "    if x:\n        return 3\n" in out and out.count("return 3") == 1


def test_dotdotdot_elision_matches_each_piece_exactly_once():
    text = FILE + "\n\nVALUE = 3\n"
    search = "def g(x):\n...\nVALUE = 3\n"
    replace = "def g(y):\n...\nVALUE = 4\n"
    out = ed.apply_block(text, ed.EditBlock("m.py", search, replace))
    assert "def g(y):" in out and out.endswith("VALUE = 4\n") and "def f(x):" in out
    assert out.count("return 1") == 2  # the elided middle is untouched
    # an elided piece that occurs twice cannot be placed
    assert ed.apply_block(FILE, ed.EditBlock("m.py", "    return 1\n...\n", "    return 5\n...\n")) is None


def test_empty_search_creates_or_appends():
    assert ed.apply_block(None, ed.EditBlock("new.py", "", "x = 1\n")) == "x = 1\n"
    assert ed.apply_block("a = 0", ed.EditBlock("m.py", "", "b = 1\n")) == "a = 0\nb = 1\n"


def test_no_match_returns_none_and_the_report_names_block_hint_and_applied_count():
    block = ed.EditBlock("m.py", "def f(x):\n    if x:\n        return 7\n", "pass\n")
    assert ed.apply_block(FILE, block) is None
    report = ed.failure_report([(block, FILE)], applied=2)
    assert "1 SEARCH/REPLACE block failed to match" in report
    assert "<<<<<<< SEARCH\ndef f(x):" in report and "Perhaps you meant" in report
    assert "return 1" in report.split("Perhaps you meant")[1]  # the closest lines of the file
    assert "The other 2 SEARCH/REPLACE blocks applied cleanly" in report


def test_whole_file_listings():
    text = "Here it is:\n\ncalc.py\n```python\nx = 1\n```\n"
    assert ed.find_whole_files(text) == [("calc.py", "x = 1\n")]
    assert ed.find_whole_files("```\ny = 2\n```\n", only_file="only.py") == [("only.py", "y = 2\n")]
    with pytest.raises(ed.EditFormatError, match="closing"):
        ed.find_whole_files("calc.py\n```\nx = 1\n")


def test_render_block_round_trips_and_fences_avoid_content():
    text = ed.render_block("a.py", "old\n", "new\n")
    assert ed.find_edit_blocks(text) == [ed.EditBlock("a.py", "old\n", "new\n")]
    assert ed.choose_fence("```\ncode\n```\n") == "````"
    whole = ed.render_whole("doc.md", "```\ncode\n```\n", ed.choose_fence("```\ncode\n```\n"))
    assert ed.find_whole_files(whole) == [("doc.md", "```\ncode\n```\n")]


# ---------------------------------------------------------------------------------------
# parsing as Aider 0.86 reads replies (aider/coders/editblock_coder.py of that release)


def test_indented_markers_are_stripped_and_applied():
    # Aider 0.86 matches each marker against the stripped line, so a block whose markers the
    # model indented along with the code is still an edit block (the path line and the fence
    # are read unstripped, as there).
    reply = ("calc.py\n```python\n    <<<<<<< SEARCH\n    return a - b\n    =======\n    return a + b\n"
             "    >>>>>>> REPLACE\n```\n")
    assert ed.find_edit_blocks(reply) == [ed.EditBlock("calc.py", "    return a - b\n", "    return a + b\n")]
    applied = ed.apply_block("def add(a, b):\n    return a - b\n", ed.find_edit_blocks(reply)[0])
    assert applied == "def add(a, b):\n    return a + b\n"
    with pytest.raises(ed.EditFormatError, match="missing filename"):  # an indented fence hides the path, there too
        ed.find_edit_blocks("  calc.py\n  ```\n  <<<<<<< SEARCH\n  x\n  =======\n  y\n  >>>>>>> REPLACE\n  ```\n")


def test_a_fence_opening_with_a_path_names_the_file():
    # Aider 0.86: a line opening a fence names the file when the rest holds a "." or "/"
    # (```calc.py), while ```python is only a language tag.
    reply = "```calc.py\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n```\n"
    assert ed.find_edit_blocks(reply) == [ed.EditBlock("calc.py", "old\n", "new\n")]
    reply = "```src/util\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n```\n"
    assert ed.find_edit_blocks(reply)[0].path == "src/util"
    with pytest.raises(ed.EditFormatError, match="missing filename"):
        ed.find_edit_blocks("```python\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n```\n")


def test_filename_search_walks_back_over_fences_only():
    # Aider 0.86 looks at most 3 lines back and keeps going only past fence lines; of the names
    # it finds it prefers one with an extension (DeepSeek's "```python / name / ``` / ```" habit).
    reply = "```python\ncalc.py\n```\n```python\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n```\n"
    assert ed.find_edit_blocks(reply)[0].path == "calc.py"
    reply = "calc.py\nSome words.\n```\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n```\n"
    assert ed.find_edit_blocks(reply)[0].path == "Some words."  # the nearest non-fence line, as Aider
    reply = "**calc.py**:\n```\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n```\n"
    assert ed.find_edit_blocks(reply)[0].path == "calc.py"


# ---------------------------------------------------------------------------------------
# the udiff edit format (Aider 0.86, aider/coders/udiff_coder.py)

from harnessrl.harness import _aider_udiff as ud  # noqa: E402


def test_udiff_hunks_parse_with_headers_and_split_at_at_lines():
    # Aider 0.86: ```diff blocks; `--- a/x` / `+++ b/x` name the file (git prefixes dropped);
    # `@@` starts a hunk, its line numbers ignored; a hunk with no +/- line is dropped; a hunk
    # with no header belongs to the previous file
    reply = ("Fix both.\n```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n"
             "+    return a + b\n@@ @@\n unchanged\n```\nand\n```diff\n@@ @@\n-x = 1\n+x = 2\n```\n")
    hunks = ud.find_hunks(reply)
    assert [h.path for h in hunks] == ["calc.py", "calc.py"]
    assert hunks[0].before_after() == ("def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n")
    assert hunks[1].before_after() == ("x = 1\n", "x = 2\n")
    with pytest.raises(ed.EditFormatError, match="no file"):
        ud.find_hunks("```diff\n@@ @@\n-a\n+b\n```\n")
    new_file = ud.find_hunks("```diff\n--- /dev/null\n+++ b/new.py\n@@ @@\n+print(1)\n```\n")
    assert new_file[0].path == "new.py" and ud.apply_hunk(None, new_file[0]) == "print(1)\n"


def test_udiff_applies_exactly_once_else_retries_with_less_context():
    text = "def f():\n    a = 1\n    b = 2\n    return a + b\n"
    hunk = ud.find_hunks("```diff\n--- f.py\n+++ f.py\n@@ @@\n def f():\n-    a = 1\n+    a = 10\n     b = 2\n```")[0]
    assert ud.apply_hunk(text, hunk) == text.replace("a = 1\n", "a = 10\n")
    # Aider 0.86 retries a hunk whose context is wrong with less and less of that context
    stale = ud.find_hunks("```diff\n--- f.py\n+++ f.py\n@@ @@\n def g():\n-    a = 1\n+    a = 10\n```")[0]
    assert ud.apply_hunk(text, stale) == text.replace("a = 1\n", "a = 10\n")
    # lines occurring twice without context match nowhere (Aider's search refuses them)
    twice = "x = 0\nx = 0\n"
    ambiguous = ud.find_hunks("```diff\n--- t.py\n+++ t.py\n@@ @@\n-x = 0\n+x = 1\n```")[0]
    assert ud.apply_hunk(twice, ambiguous) is None
    report = ud.failure_report([ambiguous], applied=1)
    assert "t.py does not contain these 1 lines in a row" in report and "do not send them again" in report


# ---------------------------------------------------------------------------------------
# the conversation Aider opens with (Aider 0.86 base_coder.format_chat_chunks): system prompt,
# worked example exchanges, "that project is gone" + "Ok.", then the files and the request


@pytest.mark.parametrize("harness_id", ["aider", "aider_whole", "aider_udiff"])
def test_example_exchanges_come_between_system_prompt_and_task_and_parse(harness_id):
    from types import SimpleNamespace

    from harnessrl.harness.base import make_harness
    from tests.harness.agent_fixtures import MemEnv

    h = make_harness(harness_id)
    task = SimpleNamespace(kind="code", instruction="Fix add.", task_id="t", needs_shell=False)
    s = h.session_class(h, task, MemEnv({"calc.py": "x = 1\n"}), 0)
    messages = s.start()
    roles = [m["role"] for m in messages]
    assert roles[0] == "system" and roles[-1] == "user" and "Fix add." in messages[-1]["content"]
    examples = messages[1:-1]
    assert [m["role"] for m in examples] == ["user", "assistant"] * (len(examples) // 2) and len(examples) >= 4
    assert examples[-2:] == [{"role": "user", "content": "That was an example from another project; its files are gone. "
                                                          "Do not edit them."}, {"role": "assistant", "content": "Ok."}]
    for reply in (m["content"] for m in examples[:-2] if m["role"] == "assistant"):
        calls = h.parse(reply)  # each worked example is valid in the harness's own format
        assert isinstance(calls, list) and calls and all(c.args["path"].startswith(("stats/", "web/")) for c in calls)
