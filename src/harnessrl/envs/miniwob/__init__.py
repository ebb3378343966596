"""MiniWoB++ in real headless Chromium: env adapter, browser pool, tasks, scripted oracles.

    from harnessrl.envs.miniwob import MiniWoBEnv, Click, Type
    with MiniWoBEnv("click-button") as env:
        page = env.reset(seed=0)               # Page: utterance, fields, elements (ref, tag, text, value, ...)
        result = env.step(Click(ref))          # StepResult: page, reward (time-discounted), raw_reward, done
"""

from harnessrl.envs.miniwob.browser import EXTRA_CHROMIUM_FLAGS, BrowserError, close_all
from harnessrl.envs.miniwob.env import TASKS, ActionError, MiniWoBEnv, StepResult, check_task
from harnessrl.envs.miniwob.oracles import ORACLES, get_oracle
from harnessrl.envs.miniwob import oracles_more  # noqa: F401  (registers more oracles)
from harnessrl.envs.miniwob.page import (
    ALLOWED_KEYS,
    MAX_WAIT_MS,
    AXNode,
    Click,
    Element,
    Page,
    PressKey,
    Type,
    Wait,
    WebAction,
    action_to_dict,
)
from harnessrl.envs.miniwob.pool import BrowserPool, PooledEnv, close_shared_pool, shared_pool
from harnessrl.envs.miniwob.scripted import run_oracle_episode, success_of
from harnessrl.envs.miniwob.suite import SUITE, MiniWoBSuite, MiniWoBTask, load_suite, miniwob_tasks, open_env, task_name

__all__ = [
    "EXTRA_CHROMIUM_FLAGS", "BrowserError", "close_all", "TASKS", "ActionError", "MiniWoBEnv", "StepResult",
    "check_task", "ORACLES", "get_oracle", "AXNode", "Click", "Element", "Page", "PressKey", "Type", "Wait", "WebAction", "ALLOWED_KEYS", "MAX_WAIT_MS",
    "action_to_dict", "BrowserPool", "PooledEnv", "close_shared_pool", "shared_pool", "run_oracle_episode",
    "success_of", "SUITE", "MiniWoBSuite", "load_suite", "MiniWoBTask", "miniwob_tasks", "open_env", "task_name",
]
