"""A Hermes-style tool call whose JSON holds the text `</tool_call>` parses whole.

Every Hermes-style parser used to cut a call at the first `</tool_call>`, so writing a file (or
running a command) that contains the closing tag was a format error, or worse a cut call. Now
a body that starts a JSON object ends after that object (`_reply.call_spans`); anything else
is read as before, and malformed text stays a counted format error.
"""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessrl.harness import _reply
from harnessrl.harness._program_wire import to_reply
from harnessrl.harness.base import FormatError, ToolCall, make_harness
from harnessrl.harness.qwen_code_reconstruction import parse_calls, render_calls
from harnessrl.harness.swe_agent import parse_call

TRICKY = "x </tool_call> y"
WRITE = '<tool_call>{"name": "write", "arguments": {"content": "x </tool_call> y"}}</tool_call>'
TOOLS = [{"type": "function", "function": {"name": "write", "parameters": {"type": "object"}}}]


def test_qwen_code_parses_the_closing_tag_inside_an_argument():
    assert parse_calls(WRITE) == [ToolCall("write", {"content": TRICKY})]
    reply = 'Writing.\n<tool_call>\n{"name": "write_file", "arguments": {"file_path": "/app/t.md", "content": "a</tool_call>"}}\n</tool_call>'
    assert make_harness("qwen_code").parse(reply) == [ToolCall("write_file", {"file_path": "/app/t.md", "content": "a</tool_call>"})]
    # what the harness renders for such a call reads back as the same call (the oracle's replies)
    calls = [("write_file", {"file_path": "/app/t.md", "content": TRICKY}), ("read_file", {"file_path": "/app/</tool_call>"})]
    assert parse_calls(render_calls(calls)) == [ToolCall(n, a) for n, a in calls]
    # generation stopped at the closing tag: the reply ends with the object
    assert parse_calls(WRITE[:-len("</tool_call>")]) == [ToolCall("write", {"content": TRICKY})]


def test_swe_agent_parses_the_closing_tag_inside_an_argument():
    tools = ("bash", "str_replace_editor", "submit")
    text = 'Echo it.\n<tool_call>\n{"name": "bash", "arguments": {"command": "echo \'</tool_call>\'"}}\n</tool_call>'
    assert parse_call(text, tools) == [ToolCall("bash", {"command": "echo '</tool_call>'"})]
    assert make_harness("swe_agent").parse(text) == [ToolCall("bash", {"command": "echo '</tool_call>'"})]
    unknown = parse_call(WRITE, tools)  # the object parsed whole: only its tool name is wrong now
    assert isinstance(unknown, FormatError) and "'write' is not one of the available commands" in unknown.message


def test_miniwob_axtree_parses_the_closing_tag_inside_an_argument():
    h = make_harness("miniwob-axtree")
    text = '<tool_call>{"name": "type", "arguments": {"ref": 5, "text": "x </tool_call> y"}}</tool_call>'
    assert h.parse(text) == [ToolCall("type", {"ref": 5, "text": TRICKY})]


def test_a_programs_call_through_the_gateway_wire_parses_too():
    reply, unparsed = to_reply("Saving.\n" + WRITE, {"messages": [], "tools": TOOLS}, {})
    assert not unparsed and reply.content == "Saving."
    assert json.loads(reply.tool_calls[0]["function"]["arguments"]) == {"content": TRICKY}


@pytest.mark.parametrize("text", [
    '<tool_call>{"name": "write", "arguments": {"content": "x </tool_call>',        # the string never ends
    '<tool_call>{"name": "write", "arguments": {}} trailing</tool_call>',           # text between object and tag
    '<tool_call>{"name": "write", "arguments": {"content": "x </tool_call> y"}} oops',  # no closing tag after it
    '<tool_call>not json </tool_call> {"name": "x"}</tool_call>',
    '<tool_call>{"name": "write", "arguments": {"n": ' + "9" * 5000 + "}}</tool_call>",
])
def test_malformed_calls_stay_format_errors(text):
    for h in ("qwen_code", "swe_agent", "miniwob-axtree"):
        out = make_harness(h).parse(text)
        assert isinstance(out, FormatError) and not out.crash, (h, out)


def test_the_first_closing_tag_still_ends_a_body_that_is_not_an_object():
    text = "<tool_call>[1, </tool_call>]</tool_call><tool_call> plain </tool_call>"
    assert list(_reply.call_spans(text, "<tool_call>", "</tool_call>")) == list(_reply.tag_spans(text, "<tool_call>", "</tool_call>"))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["<tool_call>", "</tool_call>", "{", "}", '"', "\\", ":", ",", '"a"', " ", "1", "[", "]", "x"]),
                max_size=40).map("".join))
def test_call_spans_are_ordered_disjoint_bodies_and_equal_tag_spans_without_objects(text):
    spans = list(_reply.call_spans(text, "<tool_call>", "</tool_call>", open_end=True))
    for (a, b), (c, _) in zip(spans, spans[1:]):
        assert a <= b < c
    assert all(text[a - len("<tool_call>"):a] == "<tool_call>" and b <= len(text) for a, b in spans)
    if "{" not in text:
        assert spans == list(_reply.tag_spans(text, "<tool_call>", "</tool_call>"))


@pytest.mark.parametrize("unit", ['<tool_call>{"a": ["</tool_call><tool_call>{", "', '<tool_call>{"a": "\\"',
                                  '<tool_call>{"a": [1, ', '<tool_call>{"a": {"b": {"c": ["</tool_call>'])
def test_100kb_of_json_shaped_calls_parse_in_well_under_a_second(unit):
    text = unit * (100_000 // len(unit))
    start = time.process_time()
    for h in ("qwen_code", "swe_agent", "miniwob-axtree"):
        out = make_harness(h).parse(text)
        assert isinstance(out, (list, FormatError)) and not getattr(out, "crash", "")
    assert time.process_time() - start < 3.0
