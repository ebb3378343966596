"""Hostile model replies for every harness parser: hypothesis strategies and the check every
reply must pass, shared by tests/harness/test_parsers.py and `scripts/fuzz_parsers.py`.

Each parser gets a mix of
  * random text (any code point but surrogates, short),
  * fragments of its own syntax glued in random order (tags, markers, JSON pieces),
  * well-formed calls whose values are hostile: nesting thousands of levels deep, integers of
    19 to 5,000 digits, `1e999`, `NaN`, negative and fractional numbers, long repetitions,
  * runs of one fragment repeated hundreds of times (the quadratic-regex shapes).
Strings stay small (a few kB) so 2,000 examples per parser take seconds; the 100 kB shapes
are timed separately in test_parser_limits.py.
"""

from __future__ import annotations

import json
import time

from hypothesis import strategies as st

from harnessrl.harness.base import FormatError, HarnessSpec, StepResult, ToolCall, make_harness

#: harness id -> how to build it (built-in ids, plus the lookup style's call syntax)
PARSERS = ["answer_tag", "aider", "aider_whole", "aider_udiff", "swe_agent", "swe_agent_0_7", "openhands", "qwen_code", "terminus",
           "lookup-plain", "lookup-call", "miniwob-html", "miniwob-axtree"]


def harness_for(name: str):
    if name == "lookup-call":
        return make_harness(HarnessSpec(id="lookup-call", style="lookup", options={"syntax": "call"}))
    return make_harness(name)


NUMBERS = ["0", "-1", "1", "2.5", "-0", "1e-400", "1e999", "-1e400", "NaN", "Infinity", "-Infinity", "0x10", "1_000",
           "9" * 18, "9" * 19, "9" * 400, "9" * 4299, "9" * 4301, "-" + "9" * 5000, "1" + "0" * 309, "true", "null"]
numbers = st.one_of(st.sampled_from(NUMBERS), st.integers(-10**40, 10**40).map(str),
                    st.floats(allow_nan=False, allow_infinity=False).map(repr))
json_strings = st.text(max_size=20).map(lambda s: json.dumps(s))
CLOSE = {"[": "]", '{"a":': "}", "[[": "]]", '{"x": [': "]}"}
deep = st.builds(lambda o, n, core: o * n + core + CLOSE[o] * n,
                 st.sampled_from(list(CLOSE)), st.one_of(st.sampled_from([2, 33, 1000, 1500, 3000]), st.integers(1, 3000)), st.sampled_from(["1", "[]", '"s"', ""]))
values = st.one_of(deep, numbers, json_strings, st.sampled_from(["[1, 2]", "[0, -1]", "{}", "[]", '"/app/a.py"', '""']))
noise = st.text(max_size=12)

COMMON = ["\n", " ", "\t", "\r", "\x00", "\ud7ff", "é", "`", '"', "'", "\\", "{", "}", "[", "]", "<", ">", "/", "="]
FRAGMENTS = {
    "answer_tag": ["<answer>", '<answer path="a.py">', '<answer path="', "<answer ", "</answer>", " path=", '"/app/x"'],
    "aider": ["a.py\n", "```\n", "```python\n", "~~~\n", "<<<<<<< SEARCH\n", "=======\n", ">>>>>>> REPLACE\n",
              "<<<<<<<<< SEARCH>\n", "...\n", "    x = 1\n", "# a.py\n", "`a.py`:\n"],
    "swe_agent": ["<tool_call>", "</tool_call>", '{"name": "bash", "arguments": {"command": ', '{"name": "submit", ',
                  '{"name": "str_replace_editor", "arguments": {"command": "view", ', '"path": "/app/a.py"', '"view_range": ',
                  '"insert_line": ', '"arguments": "', "<\\/", ", ", ":", '"', "}"],
    "swe_agent_0_7": ["DISCUSSION\n", "```\n", "```bash\n", "```x", "edit 1:2\n", "edit ", ":", "end_of_edit\n", 'open "a.py" ',
                  "goto ", "scroll_up", "create b.py", "search_dir x", "find_file a", "submit", "ls\n", "'", '"'],
    "openhands": ["<function=", "execute_bash>", "str_replace_editor>", "finish>", "<function=execute_bash>\n",
                  "<function=str_replace_editor>\n", "<parameter=", "command>", "path>", "view_range>", "insert_line>",
                  "timeout>", "is_input>", "</parameter>\n", "</function>", "view", "insert", "/app/a.py", "true",
                  "security_risk>", "LOW", "<function=think>\n", "thought>", "<function=finish>\n<parameter=message>x"],
    "qwen_code": ["<tool_call>", "</tool_call>", '{"name": "edit", "arguments": {', '{"name": "read_file", "arguments": ',
                  '"file_path": "/app/a.py"', '"offset": ', '"limit": ', '"timeout": ', '"arguments": "', ", ", ":", '"'],
    "terminus": ['{"analysis": "", "plan": "", "commands": [', '{"keystrokes": "ls\\n", "duration": ', '"duration": ',
                 '"task_complete": ', "true", "]", "}", ", ", '"commands": ', '"analysis": "a"'],
    "lookup": ["look ", "answer ", "look(", "answer(", ")", "box", "red and small", "\n"],
    "miniwob-html": ["CLICK ", "TYPE ", "PRESS ", "STOP", "[", "]", '"hello"', "Enter", "\n", "  ", "C-a", "click 3"],
    "miniwob-axtree": ["<tool_call>", "</tool_call>", '{"name": "click", "arguments": {"ref": ', '{"name": "type", ',
                       '"arguments": {"ref": 5, "text": ', '{"name": "press", "arguments": {"key": "Enter"}}',
                       '{"name": "stop", "arguments": {}}', "}", "]"],
}
FRAGMENTS["aider_whole"] = FRAGMENTS["aider"]
FRAGMENTS["aider_udiff"] = ["```diff\n", "```\n", "--- a/x.py\n", "+++ b/x.py\n", "--- /dev/null\n", "@@ -1,2 +1,2 @@\n",
                            "@@ @@\n", "-old\n", "+new\n", " same\n", "\n", "--- ", "+++ "]


def _syntax(name: str) -> str:
    return "lookup" if name.startswith("lookup") else name


def _calls(name: str) -> st.SearchStrategy[str]:
    """Well-formed calls of the style with hostile values."""
    v = values
    s = _syntax(name)
    if s == "answer_tag":
        return st.builds(lambda p, b: f'<answer path="{p}">\n{b}</answer>', noise, st.one_of(noise, deep))
    if s == "aider_udiff":
        return st.builds(lambda p, a, b: f"```diff\n--- {p}\n+++ {p}\n@@ @@\n-{a}\n+{b}\n```\n", noise, st.one_of(noise, deep), noise)
    if s in ("aider", "aider_whole"):
        return st.builds(lambda p, a, b: f"{p}\n```\n<<<<<<< SEARCH\n{a}\n=======\n{b}\n>>>>>>> REPLACE\n```\n",
                         noise, st.one_of(noise, deep), noise)
    if s == "swe_agent":
        keys = ["insert_line", "view_range", "file_text", "old_str", "new_str", "timeout"]
        editor = st.builds(lambda k, x: f'{{"name": "str_replace_editor", "arguments": {{"command": "view", "path": "/app/a.py", '
                           f'"{k}": {x}}}}}', st.sampled_from(keys), v)
        other = st.builds(lambda n, x: f'{{"name": "{n}", "arguments": {{"command": {x}}}}}', st.sampled_from(["bash", "submit"]), v)
        return st.one_of(editor, other).map(lambda c: f"thought\n<tool_call>\n{c}\n</tool_call>")
    if s == "swe_agent_0_7":
        cmd = st.one_of(st.builds(lambda a, b: f"edit {a}:{b}\nx\nend_of_edit", numbers, numbers),
                        st.builds(lambda a: f'open "a.py" {a}', numbers), st.builds(lambda a: f"goto {a}", numbers))
        return cmd.map(lambda c: f"DISCUSSION\nx\n```\n{c}\n```\n")
    if s == "openhands":
        param = st.sampled_from(["view_range", "view_range", "insert_line", "timeout", "is_input", "new_str"])
        return st.builds(lambda f, p, x: f"<function={f}>\n<parameter=command>view</parameter>\n<parameter=path>/app/a"
                         f"</parameter>\n<parameter=security_risk>LOW</parameter>\n<parameter={p}>{x}</parameter>\n</function>",
                         st.sampled_from(["str_replace_editor", "execute_bash"]), param, v)
    if s in ("qwen_code", "miniwob-axtree"):
        keys = ["offset", "limit", "timeout", "file_path", "ref", "text", "key", "command"]
        names = ["read_file", "run_shell_command", "edit", "click", "type", "press"]
        return st.builds(lambda n, k, x: f'<tool_call>{{"name": "{n}", "arguments": {{"{k}": {x}}}}}</tool_call>',
                         st.sampled_from(names), st.sampled_from(keys), v)
    if s == "terminus":
        return st.builds(lambda d, c: f'{{"analysis": "", "plan": "", "commands": [{{"keystrokes": "ls\\n", '
                         f'"duration": {d}}}], "task_complete": {c}}}', v, st.one_of(st.just("false"), v))
    if s == "lookup":
        return st.builds(lambda w, x: f"{w} {x}" if name == "lookup-plain" else f"{w}({x})",
                         st.sampled_from(["look", "answer"]), st.one_of(noise, deep))
    return st.one_of(st.builds(lambda a: f"CLICK {a}", numbers), st.builds(lambda a: f"CLICK [{a}]", numbers),
                     st.builds(lambda a, x: f"TYPE {a} {x}", numbers, st.one_of(json_strings, numbers)),
                     st.builds(lambda k: f"PRESS {k}", st.one_of(noise, numbers)))


def replies(name: str) -> st.SearchStrategy[str]:
    """Hostile replies for the parser of harness `name` (one of PARSERS).

    Fragment sequences are drawn as bytes (each byte picks a fragment): one cheap draw instead
    of a list of draws keeps 2,000 examples within seconds."""
    table = FRAGMENTS[_syntax(name)] + COMMON + NUMBERS[:12]
    glued = st.binary(max_size=40).map(lambda b: "".join(table[x % len(table)] for x in b))
    runs = st.builds(lambda f, n: f * n, st.sampled_from(table), st.integers(2, 400))
    return st.one_of(
        st.text(max_size=200),
        glued,
        st.builds(lambda a, call, b: a + call + b, glued, _calls(name), glued),
        st.builds(lambda a, r, b: a + r + b, glued, st.one_of(runs, deep), st.one_of(glued, _calls(name))),
        _calls(name),
    )


def check_reply(harness, text: str, max_seconds: float = 2.0) -> list[ToolCall] | FormatError:
    """What every parser must do with any reply: return tool calls or a FormatError that is not
    a caught crash, within `max_seconds` of CPU time (CPU, not wall-clock: a busy machine must
    not fail the check, a quadratic parser still does), with calls the episode can record."""
    t0 = time.process_time()
    out = harness.parse(text)
    elapsed = time.process_time() - t0
    assert elapsed < max_seconds, f"{harness.id}: {elapsed:.2f} s for a reply of {len(text)} characters"
    if isinstance(out, FormatError):
        assert not out.crash, f"{harness.id}: the parser raised {out.crash} ({out.message})"
        assert isinstance(out.message, str) and out.message
    else:
        assert isinstance(out, list) and all(isinstance(c, ToolCall) for c in out), out
        StepResult("", tool_calls=out).tool_call_json  # the turn's record can be written
    return out


def adversarial(size: int = 100_000) -> dict[str, list[tuple[str, str]]]:
    """Replies of about `size` characters shaped to make a backtracking or rescanning parser
    quadratic (the shapes the reward-integrity audit found, and their neighbours), per parser:
    {harness id: [(label, reply)]}. Built on demand (they are large)."""
    def rep(unit: str, head: str = "", tail: str = "") -> str:
        return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail

    json_deep = '{"analysis": "", "plan": "", "commands": ' + "[" * (size // 2) + "]" * (size // 2) + "}"
    oh_view = ("<function=str_replace_editor>\n<parameter=command>view</parameter>\n<parameter=path>/app/a.py</parameter>\n"
               "<parameter=view_range>" + "[" * (size // 2) + "]" * (size // 2) + "</parameter>\n</function>")
    tool_json = '<tool_call>{"name": "read_file", "arguments": ' + "[" * (size // 2) + "]" * (size // 2) + "}</tool_call>"
    big_int = "9" * (size // 20)
    half_and_half = "</tool_call>" * (size // 23) + "<tool_call>" * (size // 23)
    return {
        "swe_agent": [("closing then opening runs", half_and_half), ("opening runs", rep("<tool_call>")),
                      ("deep arguments", tool_json.replace("read_file", "str_replace_editor")),
                      ("many calls", rep('<tool_call>{"name": "submit", "arguments": {}}</tool_call>'))],
        "swe_agent_0_7": [("fence openings", rep("```x\n")), ("fence then openings", rep("```x\n", "```\n")),
                      ("bare fences", rep("```")), ("edit without end", rep("x\n", "```\nedit 1:2\n", "```\n")),
                      ("quotes in open", rep('"', "```\nopen ", "\n```\n"))],
        "openhands": [("function openings", rep("<function=")), ("closed then open", rep("<function=a>", "</function>")),
                      ("parameter openings", rep("<parameter=", "<function=execute_bash>\n")),
                      ("names across lines", rep("<function=x\n")), ("deep view_range", oh_view),
                      ("huge insert_line", "<function=str_replace_editor>\n<parameter=command>insert</parameter>\n"
                       f"<parameter=path>/app/a</parameter>\n<parameter=insert_line>{big_int}</parameter>\n</function>")],
        "qwen_code": [("closing then opening runs", half_and_half),
                      ("opening runs", rep("<tool_call>")), ("deep arguments", tool_json),
                      ("many calls", rep('<tool_call>{"name": "read_file", "arguments": {}}</tool_call>')),
                      ("huge int", '<tool_call>{"name": "read_file", "arguments": {"offset": ' + big_int + "}}</tool_call>")],
        "answer_tag": [("answer openings", rep("<answer>")), ("unclosed paths", rep('<answer path="')),
                       ("spaced openings", rep("<answer ", "</answer>")), ("closers", rep("</answer>"))],
        "aider": [("search markers", rep("<<<<<<< SEARCH\n", "a.py\n```\n")), ("dividers", rep("=======\n")),
                  ("fences", rep("```\n"))],
        "aider_whole": [("fences", rep("```\n", "a.py\n")), ("unclosed listing", rep("x\n", "a.py\n```\n"))],
        "aider_udiff": [("diff openings", rep("```diff\n")), ("headers", rep("--- a\n+++ b\n", "```diff\n")),
                        ("hunk markers", rep("@@ @@\n-x\n", "```diff\n--- a.py\n+++ a.py\n"))],
        "terminus": [("deep commands", json_deep), ("braces", rep("{")), ("huge duration", '{"analysis": "", "plan": "", '
                     f'"commands": [{{"keystrokes": "x", "duration": {big_int}}}]}}')],
        "lookup-plain": [("long line", rep(" ", "look ", "x")), ("newlines", rep("\n"))],
        "lookup-call": [("parens", rep("(", "look(", ")")), ("unclosed", rep("(", "answer("))],
        "miniwob-html": [("newline runs", rep("\n")), ("blank lines", rep(" \n")), ("command lines", rep("CLICK 1\n")),
                         ("escaped text", rep("\\\\", 'TYPE 1 "', "x")), ("huge ref", f"CLICK {big_int}")],
        "miniwob-axtree": [("closing then opening runs", half_and_half),
                           ("deep arguments", tool_json.replace("read_file", "click"))],
    }
