"""Env-level scripted episodes: an oracle drives a `MiniWoBEnv` directly, one `Episode` per seed.

This is the check below the harnesses (is every task solvable through the abstract actions at
all?) and a source of demonstrations. Harness-level episodes come from the harnesses' own loop.
Each Episode keeps both rewards: `reward` is miniwob's time-discounted one, `raw_reward` the
undiscounted verdict; `success` means full marks (raw_reward >= 1).
"""

from __future__ import annotations

import json
import time

from harnessrl.episode import Context, Episode, Turn
from harnessrl.envs.miniwob.env import MiniWoBEnv
from harnessrl.envs.miniwob.oracles import Oracle, get_oracle
from harnessrl.envs.miniwob.page import Page, action_to_dict

ENV_ID = "miniwob"
DEFAULT_MAX_STEPS = 16


def success_of(raw_reward: float | None) -> bool:
    return raw_reward is not None and raw_reward >= 1.0 - 1e-9


def describe(page: Page) -> str:
    """A one-line observation for env-level records (harnesses render pages their own way)."""
    return f"{page.utterance} [{len(page.elements)} elements]"


def run_oracle_episode(env: MiniWoBEnv, seed: int, oracle: Oracle | None = None,
                       max_steps: int = DEFAULT_MAX_STEPS, policy_id: str = "oracle",
                       time_limit_s: float | None = None) -> Episode:
    """Reset `env` with `seed` (and `time_limit_s` instead of the page's own limit, if given),
    let the oracle act until done, give-up or `max_steps`."""
    oracle = oracle or get_oracle(env.task)
    start = time.perf_counter()
    page = env.reset(seed, time_limit_s=time_limit_s)
    turns: list[Turn] = []
    reward, raw_reward, status, outcome = 0.0, None, "ok", ""
    for _ in range(max_steps):
        t0 = time.perf_counter()
        action = oracle(page)
        if action is None:
            status, outcome = "ok", "oracle_gave_up"
            turns.append(Turn(observation=describe(page), action="", status="tool_error",
                              wall_time=time.perf_counter() - t0))
            break
        result = env.step(action)
        call = json.dumps(action_to_dict(action), ensure_ascii=False)
        turns.append(Turn(observation=describe(page), action=call, tool_call=call,
                          tool_result="done" if result.done else describe(result.page),
                          reward=result.reward, wall_time=time.perf_counter() - t0))
        page = result.page
        if result.done:
            reward, raw_reward = result.reward, result.raw_reward
            outcome = "solved" if success_of(raw_reward) else f"failed: {result.reason or 'wrong answer'}"
            break
    else:
        status, outcome = "turn_limit", "turn_limit"
    return Episode(
        context=Context(task_id=f"{ENV_ID}/{env.task}", harness_id="", env_id=ENV_ID, seed=int(seed)),
        turns=turns,
        reward=float(reward),
        raw_reward=raw_reward,
        success=success_of(raw_reward),
        outcome=outcome,
        status=status,
        policy_id=policy_id,
        wall_time=time.perf_counter() - start,
    )
