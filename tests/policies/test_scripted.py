"""Scripted policies: baselines stay at the floor, the oracle plans from solution scripts through
harnesses without a shell (via the script's effect), and the registry builds them by name."""

import pytest

from harnessrl.config import ConfigError
from harnessrl.harness.base import make_harness
from harnessrl.policies.registry import PolicySpec, make_policy
from harnessrl.policies.scripted import POLICIES, Oracle, regression_only_name, solution_plan
from harnessrl.rollout.loop import RolloutItem, run_group
from tests.harness.agent_fixtures import make_suite

pytestmark = pytest.mark.sandbox
SIX = ["answer_tag", "aider", "aider_whole", "swe_agent", "openhands", "qwen_code", "terminus"]


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    return make_suite(tmp_path_factory.mktemp("s"), {
        "fix-add": {},
        # a code task whose reference solution is a script (no edit steps), solvable by edits alone
        "scripted-fix": {"edits": "", "script": "sed -i 's/a - b/a + b/' calc.py\nmkdir -p docs && echo ok > docs/NOTE\n",
                         "req": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
                                "def test_note():\n    assert open('/app/docs/NOTE').read() == 'ok\\n'\n"},
    })


def test_baselines_stay_at_the_floor_through_every_harness(suite):
    items = [RolloutItem(make_harness(h), suite["fix-add"], 0) for h in SIX]
    for name in ("noop", "explore"):
        eps = run_group(POLICIES[name](), items)
        assert all(not e.success and e.outcome == "dropped_requirement" for e in eps), (
            name, [(e.context.harness_id, e.outcome, e.status) for e in eps])
    explored = {e.context.harness_id: e for e in eps}
    assert '"read_file"' in explored["qwen_code"].turns[0].tool_call  # reads went through the harness's own tool
    assert "view" in explored["swe_agent"].turns[0].tool_call and "view" in explored["openhands"].turns[0].tool_call


def test_script_solutions_become_file_writes_for_harnesses_without_a_shell(suite):
    task = suite["scripted-fix"]
    assert [i.kind for i in solution_plan(task, shell=True)] == ["run"]
    writes = solution_plan(task, shell=False)
    assert {i.args["path"] for i in writes} == {"calc.py", "docs/NOTE"} and all(i.kind == "write" for i in writes)
    eps = run_group(Oracle(), [RolloutItem(make_harness(h), task, 0) for h in ("aider", "aider_whole", "swe_agent")])
    assert all(e.success for e in eps), [(e.context.harness_id, e.outcome) for e in eps]
    assert '"name": "edit"' not in eps[0].turns[0].tool_call and "docs/NOTE" in eps[0].turns[0].action


def test_registry_builds_policies_by_name_and_rejects_unknown_ones():
    assert make_policy("oracle").policy_id == "oracle" and make_policy(PolicySpec.parse("oracle-break")).policy_id == "oracle-break"
    with pytest.raises(ConfigError, match="unknown policy 'nope'"):
        make_policy("nope")
    with pytest.raises(ConfigError, match="takes no argument"):
        make_policy("oracle:extra")
    with pytest.raises(ConfigError, match="needs a model"):
        make_policy("lm")


def test_break_targets_only_names_the_requirement_tests_leave_alone(suite):
    assert regression_only_name(suite["fix-add"]) == ("calc", "mul")  # requirement uses add, regression uses mul
