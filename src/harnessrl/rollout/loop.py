"""The episode loop: step a group of sessions in lockstep, one batched `policy.act` per turn.

    items = [RolloutItem(harness, task, seed) for ...]
    episodes = run_group(policy, items, run_id="eval-1")

Each item gets its own environment (a fresh sandboxed workspace, a browser env) and its own
harness session. At every turn the still-running sessions are asked for their states, the
policy answers all of them at once (an LM generates the whole group with one KV-cached
batch), and each session applies its answer in two phases: every answer is sent first
(`Session.send`; a real agent program resumes at once), then each result is received
(`Session.receive`), so the programs of a group run their tools concurrently. An exception inside one session ends that
episode with status `crash` (the error is kept in its metadata) and the others go on;
policy errors (a dead endpoint, bad credentials) propagate, since no episode can continue.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from harnessrl.episode import Context, Episode, Turn
from harnessrl.harness.base import Harness, Session, Verdict
from harnessrl.policies.base import AgentState, Policy, Privileged
from harnessrl.rollout.envs import max_open as max_open_for
from harnessrl.rollout.envs import open_env as default_open_env
from harnessrl.tasks.contract import TaskLike


@dataclass(slots=True)
class RolloutItem:
    harness: Harness
    task: TaskLike  # harnessrl.tasks Task (task_id, kind, instruction, ...)
    seed: int


@dataclass(slots=True)
class _Running:
    item: RolloutItem
    env: Any
    session: Session | None
    state: AgentState | None
    turns: list[Turn]
    started: float
    tokens_in: int = 0
    tokens_out: int = 0
    crash: str = ""


def task_id_of(task: TaskLike) -> str:
    """The id every record carries: `task.task_id`, or `task.id` (harnessrl.tasks.Task)."""
    return getattr(task, "task_id", None) or task.id


def _last_user(messages: list[dict[str, str]]) -> str:
    for m in reversed(messages):
        if m["role"] == "user":
            return m["content"]
    return ""


def _start(item: RolloutItem, key: str, open_env: Callable[[Any, int], Any], privileged: bool) -> _Running:
    run = _Running(item, None, None, None, [], time.perf_counter())
    try:
        run.env = open_env(item.task, item.seed)
        run.session = item.harness.open(item.task, run.env, item.seed)
        run.state = AgentState(
            messages=run.session.messages, harness_id=item.harness.id, task_id=task_id_of(item.task),
            turn=0, episode_key=key, seed=item.seed,
            # the task, session and harness reach scripted oracles only: a learner sees the conversation
            privileged=Privileged(item.task, run.session, item.harness) if privileged else None,
        )
    except Exception:  # an env or harness that cannot start is a crashed episode, not a lost one
        run.crash = traceback.format_exc(limit=6)
    return run


#: bounds on the host copy of an episode's final workspace that reward functions read (never stored)
FINAL_FILES_MAX = 500
FINAL_FILE_BYTES = 256 * 1024
FINAL_FILES_BYTES = 1024 * 1024


def final_files(env: Any) -> dict[str, str] | None:
    """{path: text} of the workspace's UTF-8 files as the agent left them (read with the workspace's contained
    file operations: a symlink the agent planted is not followed); None for an env without a workspace."""
    ws = getattr(env, "workspace", None)
    if ws is None or not hasattr(ws, "files") or not hasattr(ws, "read_bytes"):
        return None
    out: dict[str, str] = {}
    total = 0
    for rel in ws.files()[:FINAL_FILES_MAX]:
        try:
            data = ws.read_bytes(rel)
            text = data.decode("utf-8")
        except Exception:  # replaced while we read, unreadable, or binary: left out
            continue
        if len(data) <= FINAL_FILE_BYTES and total + len(data) <= FINAL_FILES_BYTES:
            out[rel] = text
            total += len(data)
    return out


def _finish(run: _Running, policy: Policy, run_id: str) -> Episode:
    item, session = run.item, run.session
    verdict = Verdict(reward=0.0, success=False, outcome="crash", status="crash")
    files = None
    if not run.crash and session is not None:
        try:
            files = final_files(run.env)  # before grading: the tests' own files are not the agent's
        except Exception:  # a copy for reward functions must not lose the episode
            files = None
        try:
            verdict = session.finish()
        except Exception:
            run.crash = traceback.format_exc(limit=6)
    if run.crash:
        status = "crash"
        verdict = Verdict(reward=0.0, success=False, outcome="crash", status="crash")
    else:
        status = session.stop_status if session.stop_status != "ok" else verdict.status
    if run.state is not None:
        policy.end_episode(run.state)
    if run.env is not None:
        try:
            run.env.close()
        except Exception:  # closing must not lose the episode
            pass
    meta = dict(verdict.info)
    if run.crash:
        meta["crash"] = run.crash
    declared = getattr(getattr(item.task, "meta", None), "reward_hook", None)
    if callable(declared) and declared():  # the task's reward functions, applied on the host (harnessrl.rewards)
        meta["task_rewards"] = declared()
    return Episode(
        context=Context(task_id=task_id_of(item.task), harness_id=item.harness.id,
                        env_id=getattr(item.task, "suite", ""), seed=item.seed),
        turns=run.turns,
        reward=float(verdict.reward),
        raw_reward=verdict.raw_reward,
        success=bool(verdict.success),
        outcome=verdict.outcome,
        status=status,
        policy_id=policy.policy_id,
        run_id=run_id,
        skill_version=item.harness.spec.skill_version,
        tokens_in=run.tokens_in,
        tokens_out=run.tokens_out,
        format_errors=session.format_errors if session is not None else 0,
        wall_time=time.perf_counter() - run.started,
        metadata=meta,
        messages=[dict(m) for m in session.messages] if session is not None else [],
        final_files=files,
    )


def run_group(
    policy: Policy,
    items: list[RolloutItem],
    *,
    run_id: str = "",
    open_env: Callable[[Any, int], Any] = default_open_env,
    key_prefix: str = "",
    max_open: int | None = None,
    keys: list[str] | None = None,
) -> list[Episode]:
    """Run every item to its stop rule; returns Episodes in the order of `items`.

    At most `max_open` environments are open at once (default: what the tasks' kind allows,
    rollout.envs.max_open: a MiniWoB browser costs ~200 MB and a second to start, so a group of
    256 runs in waves of the browser pool's size). An episode's key is its index in `items`
    either way, so waves change nothing an episode draws.

    keys: one episode key per item (default `key_prefix` + index). An LM samples each episode
    from a stream seeded by its key (policies/sampling.py), so a key that names the episode
    itself (evaluation uses its job) makes the sample independent of the batch it ran in."""
    if keys is not None and len(keys) != len(items):
        raise ValueError(f"{len(keys)} episode keys for {len(items)} items")
    keys = keys or [f"{key_prefix}{i}" for i in range(len(items))]
    limit = max_open or max_open_for([item.task for item in items])
    if limit and len(items) > limit:
        return [ep for start in range(0, len(items), limit)
                for ep in _run_wave(policy, items[start:start + limit], run_id, open_env, keys[start:start + limit])]
    return _run_wave(policy, items, run_id, open_env, keys)


def _crashed(run: _Running, action: Any, observation: str) -> None:
    """A session raised while stepping: its episode ends as a crash, the turn is kept."""
    run.crash = traceback.format_exc(limit=6)
    run.turns.append(Turn(observation=observation, action=action.text, token_ids=action.token_ids,
                          logprobs=action.logprobs, loss_mask=action.loss_mask, status="ok",
                          tool_result="harness crashed: see episode metadata"))


def _run_wave(policy: Policy, items: list[RolloutItem], run_id: str, open_env: Callable[[Any, int], Any],
              keys: list[str]) -> list[Episode]:
    privileged = bool(getattr(policy, "privileged", False))
    runs = [_start(item, key, open_env, privileged) for item, key in zip(items, keys)]
    try:
        for r in runs:  # programs started above all start at once; each is waited for here
            if not r.crash and r.session is not None:
                try:
                    r.session.ready()
                except Exception:
                    r.crash = traceback.format_exc(limit=6)
        while True:
            active = [r for r in runs if not r.crash and r.session is not None and not r.session.done]
            if not active:
                break
            for r in active:
                r.state.turn = r.session.turn
                r.state.messages = r.session.messages
                limits = getattr(r.session, "call_limits", None)  # a real program's max_tokens / stop
                r.state.max_tokens, r.state.stop = limits() if limits is not None else (None, ())
                r.state.request = getattr(r.session, "request", None)  # a program's raw call (forward mode)
                if r.state.privileged is not None:
                    r.state.privileged.view = r.session.view()
            t0 = time.perf_counter()
            actions = policy.act([r.state for r in active])
            gen_time = (time.perf_counter() - t0) / len(active)
            # two phases: every answer of the turn goes out first (a program runs its tools at once),
            # then each session's result is collected, so a group's programs work concurrently
            sent = []
            for r, action in zip(active, actions):
                if action.info.get("stop"):  # the policy ended the episode (an LM's token budget is spent)
                    r.session.done, r.session.stop_status = True, str(action.info["stop"])
                    continue
                observation = _last_user(r.session.messages)
                t1 = time.perf_counter()
                try:
                    r.session.send(action.text, action)
                except Exception:
                    _crashed(r, action, observation)
                    continue
                sent.append((r, action, observation, time.perf_counter() - t1))
            for r, action, observation, send_time in sent:
                t1 = time.perf_counter()
                try:
                    result = r.session.receive()
                except Exception:
                    _crashed(r, action, observation)
                    continue
                r.tokens_in += int(action.prompt_tokens)
                r.tokens_out += (int(np.sum(action.loss_mask)) if len(action.loss_mask)
                                 else int(action.info.get("completion_tokens", 0)))  # endpoints report usage
                r.turns.append(
                    Turn(
                        observation=observation,
                        action=action.text,
                        token_ids=action.token_ids,
                        logprobs=action.logprobs,
                        loss_mask=action.loss_mask,
                        tool_call=result.tool_call_json,
                        tool_result=result.tool_result,
                        status=result.status,
                        reward=float(result.reward),
                        wall_time=gen_time + send_time + time.perf_counter() - t1,
                    )
                )
        return [_finish(r, policy, run_id) for r in runs]
    except BaseException:
        for r in runs:  # a policy error or Ctrl-C: release every env before propagating
            if r.env is not None:
                try:
                    r.env.close()
                except Exception:
                    pass
        raise
