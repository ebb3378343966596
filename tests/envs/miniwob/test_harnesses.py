"""The two MiniWoB harnesses: parsing (and its inverse), observations, control, verdicts, and the
scripted oracle through each harness's own syntax on real pages."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessrl.envs.miniwob import ORACLES, Click, MiniWoBTask, close_shared_pool, get_oracle
from harnessrl.harness.base import FormatError, Intent, ToolCall, load_spec, make_harness
from harnessrl.policies.base import AgentState, Privileged
from harnessrl.policies.registry import PolicySpec
from harnessrl.policies.scripted import MALFORMED, Oracle
from harnessrl.rollout.backends import Job, run_jobs

HARNESSES = ("miniwob-html", "miniwob-axtree")


@pytest.fixture(scope="module")
def html():
    return make_harness("miniwob-html")


@pytest.fixture(scope="module")
def axtree():
    return make_harness("miniwob-axtree")


# ----------------------------------------------------------------------------------------
# Parsing (no browser)


def test_html_parses_one_action_line_among_prose(html):
    assert html.parse("The target is ONE.\nCLICK 4") == [ToolCall("click", {"ref": 4})]
    assert html.parse("CLICK [12]") == [ToolCall("click", {"ref": 12})]
    assert html.parse('TYPE 5 "say \\"hi\\" \\\\ ok"') == [ToolCall("type", {"ref": 5, "text": 'say "hi" \\ ok'})]
    assert html.parse("PRESS Enter") == [ToolCall("press", {"key": "Enter"})]
    assert html.parse("STOP") == [ToolCall("stop", {})]


@pytest.mark.parametrize("reply, message", [
    ("I will click the button.", "no action found"),
    ("click 4", "no action found"),  # lower-case prose is not a command
    ("CLICK 4\nCLICK 5", "2 action lines"),
    ("CLICK four", "malformed CLICK"),
    ("TYPE 5 hello", "malformed TYPE"),
    ('TYPE 5 "bad \\q escape"', "not a valid quoted string"),
    ("STOP now", "malformed STOP"),
])
def test_html_format_errors(html, reply, message):
    err = html.parse(reply)
    assert isinstance(err, FormatError) and message in err.message


def test_axtree_parses_one_tool_call(axtree):
    reply = 'I need the box.\n<tool_call>{"name": "type", "arguments": {"ref": 5, "text": "x"}}</tool_call>'
    assert axtree.parse(reply) == [ToolCall("type", {"ref": 5, "text": "x"})]
    assert axtree.parse('<tool_call>{"name": "stop", "arguments": {}}</tool_call>') == [ToolCall("stop", {})]


@pytest.mark.parametrize("reply, message", [
    ("CLICK 4", "no <tool_call>"),
    ('<tool_call>{"name": "click", "arguments": {"ref": 4}}</tool_call>' * 2, "2 tool calls"),
    ('<tool_call>{"name": "click", "arguments": {"ref": 4}</tool_call>', "not valid JSON"),
    ('<tool_call>["click", 4]</tool_call>', "JSON object"),
    ('<tool_call>{"name": "scroll", "arguments": {}}</tool_call>', "unknown tool 'scroll'"),
    ('<tool_call>{"name": "click", "arguments": {"ref": "4"}}</tool_call>', "must be an integer"),
    ('<tool_call>{"name": "click", "arguments": {"ref": true}}</tool_call>', "must be an integer"),
    ('<tool_call>{"name": "click", "arguments": {}}</tool_call>', "missing ['ref']"),
    ('<tool_call>{"name": "press", "arguments": {"key": "a", "n": 2}}</tool_call>', "unexpected ['n']"),
])
def test_axtree_format_errors(axtree, reply, message):
    err = axtree.parse(reply)
    assert isinstance(err, FormatError) and message in err.message


def test_a_spec_without_a_tool_refuses_it():
    spec = load_spec("miniwob-html").model_copy(update={"tools": ["click", "type"]})
    harness = make_harness(spec)
    assert "not available" in harness.parse("PRESS Enter").message
    with pytest.raises(Exception, match="not tools of style"):
        make_harness(spec.model_copy(update={"tools": ["click", "scroll"]}))


intents = st.one_of(
    st.builds(lambda r: Intent("click", ref=r), st.integers(1, 10**6)),
    st.builds(lambda r, t: Intent("type", ref=r, text=t), st.integers(1, 10**6), st.text(max_size=40)),
    st.builds(lambda k: Intent("keys", keystrokes=k), st.sampled_from(["<Enter>", "<ArrowDown>", "<Tab>", "a", "C-a"])),
    st.just(Intent("finish")),
)


@settings(max_examples=150, deadline=None)
@given(intent=intents)
def test_render_intent_is_the_inverse_of_parse(html, axtree, intent):
    from harnessrl.harness._miniwob import intent_of, action_of

    for harness in (html, axtree):
        calls = harness.parse(harness.render_intent(intent, None))
        assert isinstance(calls, list) and len(calls) == 1, calls
        if intent.kind == "finish":
            assert calls[0].name == "stop"
        else:
            assert intent_of(action_of(calls[0])) == intent


# ----------------------------------------------------------------------------------------
# Sessions on real pages


def _state(session):
    return AgentState(messages=session.messages, harness_id=session.harness.id, task_id=session.task.task_id,
                      turn=session.turn, episode_key="k", seed=session.seed,
                      privileged=Privileged(session.task, session, session.harness, session.view()))


def _run_oracle(harness, env, task, seed):
    session = harness.open(task, env, seed)
    oracle, shown_refs = Oracle(), []
    while not session.done:
        page, observation = session.view()["page"], session.messages[-1]["content"]
        action = get_oracle(task.name)(page)
        if action is not None and hasattr(action, "ref"):
            shown_refs.append(f"[{action.ref}]" in observation)
        session.step(oracle.act([_state(session)])[0].text)
    return session, session.finish(), shown_refs


@pytest.mark.browser
@pytest.mark.parametrize("harness_id", HARNESSES)
@pytest.mark.slow
def test_oracle_solves_every_task_through_the_harness_and_sees_its_targets(pool, harness_id):
    harness = make_harness(harness_id)

    def job(env, task):
        return _run_oracle(harness, env, MiniWoBTask(task), seed=303)

    results = pool.map(job, [(t, t) for t in sorted(ORACLES)])
    for task, (session, verdict, shown) in zip(sorted(ORACLES), results):
        assert verdict.success and verdict.outcome == "solved", (task, verdict)
        assert verdict.raw_reward == 1.0 and 0 < verdict.reward < 1.0
        assert session.format_errors == 0 and session.stop_status == "ok"
        assert shown and all(shown), f"{task}: an oracle target's ref was not in the {harness_id} observation"


@pytest.mark.browser
def test_observations_differ_between_the_harnesses(pool, html, axtree):
    with pool.env("click-checkboxes") as env:
        a = html.open(MiniWoBTask("click-checkboxes"), env, 1).messages
        b = axtree.open(MiniWoBTask("click-checkboxes"), env, 1).messages
    assert "CLICK <ref>" in a[0]["content"] and "<tool_call>" in b[0]["content"]
    assert '<input type="checkbox" id="ch0">' in a[-1]["content"] and "Submit</button>" in a[-1]["content"]
    assert "checkbox" in b[-1]["content"] and "checked=false" in b[-1]["content"] and "<input" not in b[-1]["content"]
    assert a[-1]["content"].startswith("Instruction: Select") and b[-1]["content"].startswith("Instruction: Select")


@pytest.mark.browser
@pytest.mark.parametrize("harness_id", HARNESSES)
def test_control_format_errors_tool_errors_stop_and_turn_limit(pool, harness_id):
    harness = make_harness(harness_id)
    task = MiniWoBTask("click-test-2")
    with pool.env(task.name) as env:
        session = harness.open(task, env, 4)
        bad = session.step("let me think")
        assert bad.status == "format_error" and not bad.done and session.format_errors == 1
        missing = session.step(harness.render_intent(Intent("click", ref=999), session))
        assert missing.status == "tool_error" and "no element with ref 999" in missing.observation
        assert "[4]" in missing.observation  # the page is shown again
        stopped = session.step(harness.render_intent(Intent("finish"), session))
        assert stopped.done
        verdict = session.finish()
        assert (verdict.success, verdict.outcome, verdict.reward, verdict.raw_reward) == (False, "unfinished", -1.0, None)

        limited = make_harness(load_spec(harness_id).model_copy(update={"max_turns": 2, "id": "short"}))
        session = limited.open(task, env, 4)
        for _ in range(2):
            session.step(limited.render_intent(Intent("keys", keystrokes="<Tab>"), session))
        assert session.done and session.stop_status == "turn_limit" and session.finish().outcome == "unfinished"

        session = harness.open(task, env, 4)
        for _ in range(harness.spec.max_format_errors + 1):
            session.step(MALFORMED)
        assert session.done and session.stop_status == "format_error"


@pytest.mark.browser
def test_time_limit_option_reaches_the_page(pool):
    spec = load_spec("miniwob-html").model_copy(update={"options": {"time_limit_s": 0.2}})
    harness = make_harness(spec)
    with pool.env("click-test") as env:
        session = harness.open(MiniWoBTask("click-test"), env, 0)
        time.sleep(0.4)
        session.step("CLICK 4")
        verdict = session.finish()
        env.reset(0)  # the next episode gets the page's own limit back
        time.sleep(0.4)
        assert env.step(Click(4)).raw_reward == 1.0
    assert verdict.outcome == "timed_out" and verdict.raw_reward == -1.0


@pytest.mark.browser
def test_rollout_jobs_record_both_rewards_per_harness():
    jobs = [Job(load_spec(h), MiniWoBTask(t), seed) for h in HARNESSES for t in ("enter-text", "click-option")
            for seed in (0, 1)]
    try:
        episodes = run_jobs(PolicySpec.parse("oracle"), jobs, backend="local", workers=1, run_id="t")
        malformed = run_jobs(PolicySpec.parse("oracle-malformed"), jobs[:1], workers=1)[0]
    finally:
        close_shared_pool()
    assert [e.context.harness_id for e in episodes] == [j.harness.id for j in jobs]
    for e in episodes:
        assert e.success and e.raw_reward == 1.0 and 0 < e.reward < 1 and e.status == "ok"
        assert e.context.task_id.startswith("miniwob/") and e.turns[-1].reward == pytest.approx(e.reward)
        calls = json.loads(e.turns[0].tool_call)
        assert calls[0]["name"] in ("click", "type")
    assert malformed.status == "format_error" and malformed.format_errors == 3 and malformed.reward == -1.0
