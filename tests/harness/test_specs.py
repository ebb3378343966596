"""Harnesses are data: a user's TOML defines a new one; variants change the ceiling; the scope
rule (task needs vs harness capabilities) is explicit and tested."""

import pytest

from harnessrl.config import ConfigError
from harnessrl.evaluate.run import plan_eval
from harnessrl.harness.base import FormatError, builtin_specs, load_spec, make_harness
from harnessrl.policies.scripted import Oracle
from harnessrl.rollout.loop import RolloutItem, run_group
from tests.harness.agent_fixtures import make_suite

pytestmark = pytest.mark.sandbox
SIX = ["answer_tag", "aider", "aider_whole", "swe_agent", "openhands", "qwen_code", "terminus"]


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    two_files = {"calc.py": "def add(a, b):\n    return a - b\n", "util.py": "def twice(x):\n    return x * x\n"}
    return make_suite(tmp_path_factory.mktemp("s"), {
        "fix-add": {},
        "two-files": {"files": two_files, "req": "from calc import add\nfrom util import twice\n\n\ndef test_both():\n"
                      "    assert add(2, 3) == 5 and twice(4) == 8\n", "reg": "def test_nothing():\n    assert True\n",
                      "edits": 'path = "calc.py"\nold = "    return a - b\\n"\nnew = "    return a + b\\n"\n\n'
                               '[[step]]\npath = "util.py"\nold = "    return x * x\\n"\nnew = "    return 2 * x\\n"\n'},
        "count-lines": {"kind": "terminal", "needs_shell": True, "files": {"data.txt": "a\nb\nc\n"}, "edits": "",
                        "instruction": "Write the number of lines of data.txt to count.txt.",
                        "req": "from pathlib import Path\n\n\ndef test_count():\n    assert Path('/app/count.txt').read_text().strip() == '3'\n",
                        "reg": "def test_data_kept():\n    assert open('/app/data.txt').read() == 'a\\nb\\nc\\n'\n",
                        "script": "wc -l < data.txt > count.txt\n"},
    })


def test_builtin_specs_cover_the_six_styles():
    specs = builtin_specs()
    for hid in SIX:
        style = "aider" if hid == "aider_whole" else hid
        style = {"aider": "aider_reconstruction", "openhands": "openhands_reconstruction",
                 "qwen_code": "qwen_code_reconstruction"}.get(style, style)  # the reconstructions' styles, renamed
        assert hid in specs and make_harness(hid).style == style


def test_a_user_toml_defines_a_new_harness(tmp_path, suite):
    path = tmp_path / "mini-openhands.toml"
    path.write_text(
        'id = "mini-openhands"\nstyle = "openhands"\nmax_turns = 2\n'
        'tools = ["str_replace_editor", "finish"]\n'
        'system_prompt = "Fix the code with these tools only:\\n$tool_docs"\n'
        'task_template = "TASK: $instruction"\n'
        '[options.tool_docs]\nstr_replace_editor = "str_replace_editor: edit files"\nfinish = "finish: stop"\n'
    )
    h = make_harness(path)
    assert h.id == "mini-openhands" and h.tools == ("str_replace_editor", "finish") and h.capabilities == {"edit"}
    assert isinstance(h.parse("<function=execute_bash>\n<parameter=command>ls</parameter>\n</function>"), FormatError)
    ep = run_group(Oracle(), [RolloutItem(h, suite["fix-add"], 0)])[0]
    assert ep.success and ep.num_turns == 2  # str_replace, then finish: fits the cap of 2
    assert ep.turns[0].observation.startswith("TASK: Make `add`")
    one_turn = make_harness(load_spec(path, ["max_turns=1"]))  # a command-line style override
    ep = run_group(Oracle(), [RolloutItem(one_turn, suite["two-files"], 0)])[0]
    assert not ep.success and ep.status == "turn_limit" and ep.num_turns == 1  # one of two edits made
    ep = run_group(Oracle(), [RolloutItem(make_harness(load_spec(path, ["max_turns=3"])), suite["two-files"], 0)])[0]
    assert ep.success and ep.num_turns == 3
    assert h.compatibility(suite["count-lines"]) == "task needs shell; harness 'mini-openhands' has only edit"


@pytest.mark.parametrize("text,field", [
    ('id = "x"\nstyle = "openhands"\ntools = ["browser"]\n', "tools"),
    ('id = "x"\nstyle = "openhands"\nmax_turnz = 3\n', "max_turnz"),
    ('id = "x"\nstyle = "no-such-style"\n', "style"),
    ('id = "x"\nstyle = "swe_agent"\nmax_turns = 0\n', "max_turns"),
])
def test_bad_user_specs_get_errors_naming_the_field(tmp_path, text, field):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=field):
        make_harness(path)


def test_scope_rule_is_explicit_and_reported(suite):
    plan = plan_eval(suite, SIX, seeds=1)
    out = {(t, h): reason for t, h, reason in plan.out_of_scope}
    # Aider has no shell: the terminal task that needs one is out of its scope, with the reason
    assert out[("t-v1/count-lines", "aider")] == "task needs shell; harness 'aider' has only edit"
    assert ("t-v1/count-lines", "aider_whole") in out and len(out) == 2
    assert len(plan.cells) == 3 * len(SIX) - 2


def test_ceiling_variants_are_specs(suite):
    window = make_harness("swe_agent_window30")
    assert window.spec.options["window"] == 30 and window.style == "swe_agent_0_7"
    editor_only = make_harness("openhands_editor_only")
    assert "shell" not in editor_only.capabilities and editor_only.compatibility(suite["count-lines"])
    capped = make_harness("qwen_code_3turns")
    assert capped.spec.max_turns == 3
    eps = run_group(Oracle(), [RolloutItem(make_harness(h), suite["fix-add"], 0)
                               for h in ("swe_agent_window30", "aider_blind", "openhands_editor_only", "qwen_code_3turns")])
    assert all(e.success for e in eps), [(e.context.harness_id, e.outcome) for e in eps]
    assert "Files in the repository (their contents are not shown)" in eps[1].turns[0].observation
    assert "def add" not in eps[1].turns[0].observation


def test_the_udiff_variant_solves_through_unified_diffs(suite):
    # Aider 0.86's udiff format: the oracle's edits as ```diff hunks, parsed and applied back
    h = make_harness("aider_udiff")
    for task in ("fix-add", "two-files"):
        ep = run_group(Oracle(), [RolloutItem(h, suite[task], 0)])[0]
        assert ep.success and ep.num_turns == 1 and "```diff\n--- calc.py\n+++ calc.py\n@@ @@\n" in ep.turns[0].action
