"""MiniWoB++ in real headless Chromium: env adapter, browser pool, scripted oracles."""

from harnessrl.envs.miniwob.browser import EXTRA_CHROMIUM_FLAGS, BrowserError, close_all
from harnessrl.envs.miniwob.env import TASKS, ActionError, MiniWoBEnv, StepResult, check_task
from harnessrl.envs.miniwob.page import AXNode, Click, Element, Page, PressKey, Type, WebAction, action_to_dict

__all__ = [
    "EXTRA_CHROMIUM_FLAGS", "BrowserError", "close_all", "TASKS", "ActionError", "MiniWoBEnv", "StepResult",
    "check_task", "AXNode", "Click", "Element", "Page", "PressKey", "Type", "WebAction", "action_to_dict",
]
