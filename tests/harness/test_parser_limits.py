"""Parsers under attack: 100 kB adversarial replies parse in well under a second (the old
backtracking regexes took 10-65 s on these shapes), every limit gives the model a clear
message instead of an exception, the linear scanners find exactly what the regexes they
replace found, and the session tools range-check the numbers a reply carries."""

import difflib
import json
import re
import time
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harnessrl.harness import _aider_edits as ed
from harnessrl.harness import _reply
from harnessrl.harness._oh_editor import Editor, EditorError
from harnessrl.harness._swe_windowed import Tools, WindowState
from harnessrl.harness.answer_tag import answers
from harnessrl.harness.base import FormatError, ToolCall, make_harness
from harnessrl.harness.miniwob_html import COMMAND
from harnessrl.harness.openhands_reconstruction import _tags
from tests.harness.agent_fixtures import MemEnv
from tests.harness.hostile_replies import PARSERS, adversarial, check_reply, harness_for

ADVERSARIAL = adversarial(100_000)
CASES = [(name, label, text) for name in PARSERS for label, text in ADVERSARIAL[name]]
#: CPU seconds: generous, yet 4-10x below what the quadratic parsers took on these shapes
LIMIT_S = 1.0


@pytest.mark.parametrize("name,label,text", CASES, ids=[f"{n}-{lbl}" for n, lbl, _ in CASES])
def test_100kb_adversarial_reply_parses_in_well_under_a_second(name, label, text):
    assert 90_000 <= len(text) <= 110_000 or label.startswith("huge")
    check_reply(harness_for(name), text, max_seconds=LIMIT_S)


def test_every_parser_has_adversarial_cases():
    assert set(ADVERSARIAL) == set(PARSERS)


# ---------------------------------------------------------------------------------------
# limits, with the message the model sees


def test_an_over_long_reply_is_a_format_error_before_parsing():
    h = make_harness("qwen_code")
    err = h.parse("x" * (h.spec.max_reply_chars + 1))
    assert isinstance(err, FormatError) and "at most 200,000 are read" in err.message and not err.crash
    assert h.parse("x" * h.spec.max_reply_chars) == []  # at the limit: parsed (no call, ends the episode)
    assert isinstance(h.parse(None), FormatError)


@pytest.mark.parametrize("text,why", [
    ("[" * 33 + "]" * 33, "nested more than 32"),
    ('{"a": "' + "[" * 5000 + '"}', None),  # brackets inside a string do not count
    ("[" + "9" * 19 + "]", "at most 18"),
    ("[" + "9" * 5000 + "]", "at most 18"),
    ("[1e999]", "too large"),
    ("[-1e400]", "too large"),
    ("[NaN]", "not a number JSON allows"),
    ("[Infinity]", "not a number JSON allows"),
    ('["\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["]', None),  # an escaped quote does not end the string
])
def test_json_limits(text, why):
    if why is None:
        _reply.loads(text)
        return
    with pytest.raises(ValueError, match=why):
        _reply.loads(text)


def test_json_depth_at_the_limit_parses():
    assert _reply.loads("[" * 32 + "]" * 32) is not None and _reply.loads("9" * 18) == 10**18 - 1


def test_deep_json_and_huge_numbers_reach_the_model_as_messages():
    deep = "[" * 5000 + "]" * 5000
    t = make_harness("terminus").parse('{"analysis": "", "plan": "", "commands": ' + deep + "}")
    assert "nested more than 32 levels" in t.message
    for duration, why in [("9" * 400, "at most 18"), ("9" * 18, "'duration' must be a number of seconds"),
                          ("1e999", "too large"), ("NaN", "not a number JSON allows")]:
        t = make_harness("terminus").parse('{"analysis": "", "plan": "", "commands": [{"keystrokes": "x", "duration": '
                                           + duration + "}]}")
        assert why in t.message
    q = make_harness("qwen_code").parse('<tool_call>{"name": "read_file", "arguments": {"offset": ' + "9" * 5000 + "}}</tool_call>")
    assert "at most 18" in q.message and len(q.message) < 300
    a = make_harness("miniwob-axtree").parse('<tool_call>{"name": "click", "arguments": {"ref": ' + "9" * 5000 + "}}</tool_call>")
    assert "at most 18" in a.message
    o = make_harness("openhands").parse("<function=str_replace_editor>\n<parameter=command>view</parameter>\n"
                                        f"<parameter=path>/app/a</parameter>\n<parameter=view_range>{deep}</parameter>\n</function>")
    assert "invalid value" in o.message and len(o.message) < 400  # the value is cut in the message
    for timeout in ("1e999", "nan", "9" * 5000, "inf"):
        o = make_harness("openhands").parse(f"<function=execute_bash>\n<parameter=command>ls</parameter>\n"
                                            f"<parameter=timeout>{timeout}</parameter>\n</function>")
        assert "finite number of seconds" in o.message
    assert isinstance(make_harness("miniwob-html").parse("CLICK " + "9" * 5000), FormatError)


def test_qwen_code_validation_range_checks_numbers():
    h = make_harness("qwen_code")
    ok = {"file_path": "/app/a.py"}
    assert h.validate(ToolCall("read_file", ok | {"offset": 3, "limit": 10})) == ""
    for key, value in [("offset", -1), ("limit", 10**12), ("offset", 1e300)]:
        assert "must be between" in h.validate(ToolCall("read_file", ok | {key: value})) or "wrong type" in \
            h.validate(ToolCall("read_file", ok | {key: value}))
    assert "must be between" in h.validate(ToolCall("run_shell_command", {"command": "ls", "timeout": 10**30}))
    assert h.validate(ToolCall("run_shell_command", {"command": "ls", "timeout": 1500.5})) == ""


def test_qwen_code_caps_calls_per_reply():
    one = '<tool_call>{"name": "read_file", "arguments": {"file_path": "/app/a"}}</tool_call>'
    assert len(make_harness("qwen_code").parse(one * 64)) == 64
    assert "more than 64 tool calls" in make_harness("qwen_code").parse(one * 65).message


def test_a_parser_bug_is_caught_and_flagged_not_raised():
    class Broken:
        spec = make_harness("terminus").spec

        @_reply.guarded
        def parse(self, text):
            raise RecursionError("boom")

    err = Broken().parse("x")
    assert isinstance(err, FormatError) and err.crash == "RecursionError"
    with pytest.raises(AssertionError, match="raised RecursionError"):
        check_reply(type("H", (Broken,), {"id": "broken"})(), "x")


# ---------------------------------------------------------------------------------------
# the linear scanners find what the regexes they replace found

def pieces(*frags):
    return st.lists(st.sampled_from(list(frags) + ["x", "\n", " ", ">", "<", '"']), max_size=14).map("".join)


EQ = settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@EQ
@given(pieces("<tool_call>", "</tool_call>", "<tool_call", "tool_call>"))
def test_tag_spans_equal_the_lazy_regex(text):
    expected = [m.span(1) for m in re.finditer(r"<tool_call>(.*?)</tool_call>", text, re.DOTALL)]
    assert list(_reply.tag_spans(text, "<tool_call>", "</tool_call>")) == expected


@EQ
@given(pieces("```", "```x", "``` ", "\t", "\r"))
def test_fenced_blocks_equal_the_multiline_regex(text):
    assert _reply.fenced_blocks(text) == re.findall(r"^```[^\n]*\n(.*?)^```[ \t]*$", text, re.DOTALL | re.MULTILINE)


@EQ
@given(pieces("<answer", "<answer>", "</answer>", ' path="a"', " path", "=", "\t"))
def test_answer_scan_equals_the_regex(text):
    regex = re.compile(r'<answer(?:\s+path\s*=\s*"([^"]*)")?\s*>(.*?)</answer>', re.DOTALL)
    assert list(answers(text)) == [(m.group(1), m.group(2)) for m in regex.finditer(text)]


@EQ
@given(pieces("<function=", "</function>", "f", "<parameter=", "</parameter>"))
def test_openhands_tags_equal_the_regexes(text):
    for name in ("function", "parameter"):
        regex = re.compile(rf"<{name}=([^>\n]*)>(.*?)</{name}>", re.DOTALL)
        assert [(n, s, e) for n, s, e, _ in _tags(text, name)] == [(m.group(1), *m.span(2)) for m in regex.finditer(text)]


@EQ
@given(pieces("CLICK", "STOP", "TYPE 1", "\t", "\r", "\x0c", "\n\n"))
def test_miniwob_command_lines_equal_the_old_regex(text):
    old = re.compile(r"^\s*(CLICK|TYPE|PRESS|STOP)\b(.*)$", re.MULTILINE)
    assert [m.groups() for m in COMMAND.finditer(text)] == [m.groups() for m in old.finditer(text)]


@EQ
@given(pieces("...", "...\n", " ...\n", "\t", "\r", "\x0c", "\n\n", "."))
def test_split_dots_equals_the_regex_split(text):
    assert ed.split_dots(text) == re.split(r"(^\s*\.\.\.\n)", text, flags=re.MULTILINE)


@EQ
@given(st.lists(st.sampled_from("ab"), max_size=30), st.lists(st.sampled_from("ab"), max_size=4))
def test_find_all_equals_brute_force(seq, pattern):
    n = len(pattern)
    assert list(ed.find_all(seq, pattern)) == [i for i in range(len(seq) - n + 1) if seq[i:i + n] == pattern]


def _closest_brute_force(search: str, content: str, threshold: float = 0.6) -> str:
    part, whole = search.splitlines(), content.splitlines()
    if not part or not whole:
        return ""
    best, best_i = 0.0, 0
    for i in range(max(1, len(whole) - len(part) + 1)):
        ratio = difflib.SequenceMatcher(None, part, whole[i:i + len(part)]).ratio()
        if ratio > best:
            best, best_i = ratio, i
    if best < threshold:
        return ""
    return "\n".join(whole[max(0, best_i - 3):min(len(whole), best_i + len(part) + 3)]) + "\n"


@EQ
@given(st.lists(st.sampled_from(["a", "b", "c", "d", " a"]), max_size=30), st.lists(st.sampled_from(["a", "b", "c", "z"]), max_size=6))
def test_closest_lines_equals_the_brute_force_search(content, search):
    text, part = "\n".join(content), "\n".join(search)
    assert ed.closest_lines(part, text) == _closest_brute_force(part, text)


def test_aider_matching_and_hint_are_fast_on_an_8000_line_file():
    file = "".join(f"    value_{i % 97} = compute({i % 89}, scale)  # step {i % 7}\n" for i in range(8000))
    repetitive = "    pass\n" * 8000
    for content, search in [(file, file.splitlines(True)[4000:4300]), (repetitive, ["    pass\n"] * 200 + ["    nope\n"]),
                            (file, ["x\n"] + ["\n"] * 50_000 + ["y\n"])]:
        search = "".join(search).replace("compute(", "compute (")
        t0 = time.process_time()  # CPU time: a busy machine does not fail this, a quadratic search does
        assert ed.apply_block(content, ed.EditBlock("a.py", search, "z\n")) is None
        ed.failure_report([(ed.EditBlock("a.py", search, "z\n"), content)], 0)
        assert time.process_time() - t0 < 2 * LIMIT_S


# ---------------------------------------------------------------------------------------
# the tools range-check numbers the parsers pass on

def test_swe_agent_0_7_tools_refuse_huge_line_numbers():
    env = MemEnv({"notes.txt": "a\nb\nc\n"})
    tools = Tools(env, shell=SimpleNamespace(cwd="/app"), state=WindowState(), python="python3")  # .txt: no lint run
    assert "must be a number" in tools.open("notes.txt", "9" * 5000)
    assert "using <line_number> 3 instead" in tools.open("notes.txt", "9" * 9)
    assert tools.goto("9" * 5000) == "Usage: goto <line>\nError: <line> must be a number"
    assert "Usage: edit" in tools.edit("1:" + "9" * 5000, "x")[0]
    assert tools.edit("2:2", "B")[1] and env.workspace.data["notes.txt"] == "a\nB\nc\n"


def test_openhands_editor_with_extreme_ranges():
    env = MemEnv({"a.txt": "one\ntwo\n"})
    editor = Editor(env, shell=None)
    for args in ({"view_range": [1, 10**17]}, {"view_range": [-10**17, 1]}, {"view_range": [1, 2, 3]}):
        with pytest.raises(EditorError):
            editor({"command": "view", "path": "/app/a.txt", **args})
    with pytest.raises(EditorError, match="insert_line"):
        editor({"command": "insert", "path": "/app/a.txt", "insert_line": 10**9, "new_str": "x"})
    calls = make_harness("openhands").parse("<function=str_replace_editor>\n<parameter=command>view</parameter>\n"
                                            "<parameter=path>/app/a.txt</parameter>\n<parameter=view_range>[1, 2]</parameter>\n</function>")
    assert "one" in editor(calls[0].args) and json.dumps(calls[0].args)
