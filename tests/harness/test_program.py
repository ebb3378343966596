"""Agent programs as harness sessions of the ordinary rollout loop (harness/program.py).

The program here is tests/harness/programs/mini_text.py, a standard-library program speaking
mini-swe-agent's text protocol, run like the real one: inside the episode's sandbox, in its
own network namespace, talking HTTP to its own gateway. The real mini-swe-agent runs in
test_program_mini.py (slow: it installs the program when missing).
"""

from __future__ import annotations

import json
import os
import signal
import socket
from pathlib import Path

import numpy as np
import pytest

from harnessrl.gateway import Gateway
from harnessrl.harness.base import load_spec, make_harness
from harnessrl.policies.base import Action, Policy
from harnessrl.policies.registry import make_policy
from harnessrl.policies.replay import Replay
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.rollout.suites import load_suite
from harnessrl.tasks.netns import EpisodeNetwork
from harnessrl.tasks.sandbox import bwrap_path
from tests.tasks.conftest import uid_processes

pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(bwrap_path() is None or os.geteuid() != 0,
                                                      reason="needs bubblewrap and root (per-episode network namespace)")]

PROGRAM = Path(__file__).parent / "programs" / "mini_text.py"


def harness(*overrides: str):
    return make_harness(load_spec("mini-swe-agent", ["options.program=script", f"options.script={PROGRAM}", *overrides]))


def block(cmd: str) -> str:
    return f"THOUGHT: next.\n\n```mswea_bash_command\n{cmd}\n```"


SUBMIT = block("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")


@pytest.fixture(scope="module")
def tasks():
    return list(load_suite("code-v1").tasks)[:2]


def test_oracle_solves_and_noop_does_not_through_the_program(tasks):
    h = harness()
    solved = run_group(make_policy("oracle"), [RolloutItem(h, t, 0) for t in tasks])
    assert [(e.status, e.success) for e in solved] == [("ok", True)] * 2
    ep = solved[0]
    calls = ep.metadata["calls"]
    assert len(calls) == len(ep.turns) >= 2 and ep.metadata["stop_reason"] == "program exited (0)"
    assert all(c["line"] == "main" and c["requested"] == {} for c in calls)
    assert "Submitted" in ep.metadata["program_output"]
    noop = run_group(make_policy("noop"), [RolloutItem(h, t, 0) for t in tasks])
    assert [(e.success, len(e.turns)) for e in noop] == [(False, 1)] * 2


class Counting(Policy):
    """Replays `replies` and records how many pending calls each `act` answered."""

    def __init__(self, replies: list[str]):
        self.inner, self.batches = Replay(replies), []

    def act(self, states):
        self.batches.append(len(states))
        return self.inner.act(states)


def test_a_groups_calls_are_one_batched_act_and_programs_run_their_tools_concurrently(tasks):
    span = block("python3 -c 'import time; a = time.time(); time.sleep(1); print(\"span\", a, time.time())'")
    policy = Counting([span, SUBMIT])
    eps = run_group(policy, [RolloutItem(harness(), tasks[0], seed) for seed in range(4)])
    assert [e.metadata["stop_reason"] for e in eps] == ["program exited (0)"] * 4
    assert policy.batches == [4, 4]  # every turn: the four pending calls in one act
    # each program slept one second in its own sandbox; the two phases let all four sleep at once
    spans = [[float(x) for x in e.turns[1].observation.split("span ")[1].split()[:2]] for e in eps]
    assert max(a for a, _ in spans) < min(b for _, b in spans), spans


def test_the_turn_budget_ends_the_episode_and_refuses_later_calls(tasks):
    eps = run_group(Replay([block("true")] * 10), [RolloutItem(harness("max_turns=2"), tasks[0], 0)])
    ep = eps[0]
    assert ep.status == "turn_limit" and len(ep.turns) == 2
    assert ep.metadata["stop_reason"] == "turn budget spent"


class TenTokens(Replay):
    """Replays its replies as if each were ten generated tokens (the token budget counts mask-1 tokens)."""

    def act(self, states):
        return [Action(a.text, token_ids=np.arange(10), logprobs=np.zeros(10), loss_mask=np.ones(10, np.int8))
                for a in super().act(states)]


def test_the_token_and_wall_time_budgets_end_the_episode(tasks):
    ep = run_group(TenTokens([block("true")] * 10), [RolloutItem(harness("options.max_tokens=25"), tasks[0], 0)])[0]
    assert ep.status == "token_limit" and len(ep.turns) == 3 and ep.metadata["stop_reason"] == "token budget spent"
    ep = run_group(Replay([block("sleep 30")]), [RolloutItem(harness("options.wall_s=1"), tasks[0], 0)])[0]
    assert ep.status == "timeout" and ep.metadata["stop_reason"] == "wall-time budget of 1 s spent"
    assert ep.wall_time < 20


def test_start_up_has_its_own_budget_not_the_wall_time_one(tasks, tmp_path):
    """A program slow to make its first call (a loaded machine: OpenHands' imports) is not ended by
    `wall_s`, which counts from that call; `startup_s` bounds the time before it."""
    slow = tmp_path / "slow_start.py"
    slow.write_text(PROGRAM.read_text().replace("def main():\n", "def main():\n    __import__('time').sleep(4)\n", 1))
    slow_harness = lambda *o: make_harness(load_spec(  # noqa: E731
        "mini-swe-agent", ["options.program=script", f"options.script={slow}", *o]))
    ep = run_group(Replay([SUBMIT]), [RolloutItem(slow_harness("options.wall_s=2", "options.startup_s=60"), tasks[0], 0)])[0]
    assert ep.status == "ok" and ep.metadata["stop_reason"] == "program exited (0)"
    assert ep.metadata["startup_s"] >= 4
    ep = run_group(Replay([SUBMIT]), [RolloutItem(slow_harness("options.wall_s=60", "options.startup_s=1"), tasks[0], 0)])[0]
    assert ep.status == "timeout" and len(ep.turns) == 0
    assert ep.metadata["stop_reason"] == "start-up budget of 1 s spent before the program's first call"
    assert ep.metadata["startup_s"] is None


HOSTILE = """
def hostile():
    url, key = os.environ["OPENAI_BASE_URL"] + "/chat/completions", os.environ["OPENAI_API_KEY"]
    msg = [{"role": "user", "content": "x"}]
    bodies = [(b"{}", "sk-guessed")] * 5000 + [(json.dumps(b).encode(), key) for b in (
        {"messages": msg, "tools": [1]}, {"messages": msg, "stream": True, "stream_options": 5})]
    for body, k in bodies + [(b"[" * 200000 + b"]" * 200000, key)]:
        req = urllib.request.Request(url, body, {"Authorization": "Bearer " + k, "Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=60)
        except urllib.error.HTTPError as err:
            assert err.code in (400, 401), err.code


def main():
    hostile()
"""


def test_a_hostile_programs_refusals_are_counted_and_its_record_stays_small(tasks, tmp_path):
    """5,000 calls with a guessed key and bodies that crashed the gateway's threads once, then an
    ordinary episode: every refusal is counted by kind, at most 20 are kept, the record stays small."""
    prog = tmp_path / "hostile.py"
    prog.write_text(PROGRAM.read_text().replace("def main():\n", HOSTILE.lstrip("\n"), 1))
    h = make_harness(load_spec("mini-swe-agent", ["options.program=script", f"options.script={prog}"]))
    ep = run_group(Replay([SUBMIT]), [RolloutItem(h, tasks[0], 0)])[0]
    assert ep.status == "ok" and ep.metadata["stop_reason"] == "program exited (0)" and len(ep.turns) == 1
    assert ep.metadata["refusal_counts"] == {"bad_key": 5000, "malformed": 2, "too_deep": 1}
    assert len(ep.metadata["refusals"]) == 20 and all(r[:2] == (401, "invalid_api_key") for r in ep.metadata["refusals"])
    assert len(json.dumps([ep.metadata["refusals"], ep.metadata["refusal_counts"]])) < 4096


def test_an_unparsed_reply_is_a_counted_format_error(tasks):
    eps = run_group(Replay(["no block at all", SUBMIT]), [RolloutItem(harness(), tasks[0], 0)])
    # the text protocol has no tools: the program itself handles the malformed reply (and says so)
    assert eps[0].metadata["stop_reason"] == "program exited (0)" and len(eps[0].turns) == 2


class KillMidCall(Policy):
    """Kills the program (SIGKILL to its processes) while its call waits for this answer."""

    privileged = True

    def __init__(self):
        self.uid = None

    def act(self, states):
        session = states[0].privileged.session
        self.uid = session.env.workspace.uid
        for pid in uid_processes(self.uid):
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"python3\x00/agent/program.py"):  # not pid 1 (sh)
                os.kill(pid, signal.SIGKILL)
        return [Action(SUBMIT)]


def test_kill_9_mid_call_leaves_no_orphan_and_a_failed_episode_with_its_reason(tasks):
    policy = KillMidCall()
    ep = run_group(policy, [RolloutItem(harness(), tasks[0], 0)])[0]
    assert ep.status == "crash" and not ep.success
    assert ep.metadata["stop_reason"].startswith("program exited (") and ep.metadata["program_exit"] != 0
    assert uid_processes(policy.uid) == []


def test_a_program_reaches_its_own_gateway_only(tasks):
    host = socket.create_server(("127.0.0.1", 0))  # a host service on loopback
    other_net = EpisodeNetwork()
    other = Gateway(api_key="sk-other", model="m", sock=other_net.listen()).start()  # another episode's gateway
    try:
        probe = ("python3 -c \"import socket,sys\nfor p in sys.argv[1:]:\n"
                 " try: socket.create_connection(('127.0.0.1', int(p)), 2); print(p, 'open')\n"
                 " except OSError as e: print(p, 'refused')\" " f"{host.getsockname()[1]} {other.port}")
        own = ("python3 -c \"import os,urllib.request as u\ntry: u.urlopen(u.Request(os.environ['OPENAI_BASE_URL']"
               "+'/models', headers={'Authorization': 'Bearer sk-other'}))\nexcept Exception as e: print('own', e)\"")
        ep = run_group(Replay([block(probe), block(own), SUBMIT]), [RolloutItem(harness(), tasks[0], 0)])[0]
        seen = "\n".join(t.observation for t in ep.turns)
        assert f"{host.getsockname()[1]} refused" in seen and f"{other.port} refused" in seen
        assert "own HTTP Error 401" in seen
        assert other.n_calls == 0 and other.refusals == []
    finally:
        other.close()
        other_net.close()
        host.close()


def test_replay_reads_assistant_messages_and_names_bad_lines(tmp_path):
    from harnessrl.config import ConfigError

    f = tmp_path / "t.jsonl"
    f.write_text(json.dumps({"role": "user", "content": "u"}) + "\n" + json.dumps({"role": "assistant", "content": "a"}) + "\n")
    assert make_policy(f"replay:{f}").replies == ["a"]
    f.write_text("{broken\n")
    with pytest.raises(ConfigError, match="t.jsonl:1"):
        make_policy(f"replay:{f}")
