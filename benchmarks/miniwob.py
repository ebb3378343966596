"""MiniWoB++: reset and step latency through harnessrl's MiniWoBEnv vs the raw `miniwob` gym env,
in the same run, on the same tasks and seeds, both headless Chromium without screenshots.

Workload per episode: reset(seed), then the oracle's actions (click-test-2: one click;
enter-text: type into the field, click Submit). Blocks of episodes alternate between the two
so both see the same machine load. Ours = MiniWoBEnv (Page building, action checks); the
anchor = gym.make("miniwob/<task>-v1") with `create_action`, as the miniwob docs show.

Target (issue 6): overhead <= 10%, i.e. ratio = ours / anchor mean episode latency <= 1.10.
Also reported: the same episodes through the two harnesses (observation rendering + parsing on
top of the adapter), as `through_harness_ratio`.
Run: .venv/bin/python benchmarks/miniwob.py [--episodes 80] [--block 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

# This file is named like the package it measures: keep its folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
os.environ.setdefault("MINIWOB_CHROME_BINARY", "/usr/bin/chromium")
os.environ.setdefault("MINIWOB_CHROMEDRIVER", "/usr/bin/chromedriver")

import gymnasium as gym  # noqa: E402
import miniwob  # noqa: E402
from miniwob.action import ActionTypes  # noqa: E402

from harnessrl.envs.miniwob import Click, MiniWoBEnv, MiniWoBTask, Type, get_oracle  # noqa: E402
from harnessrl.harness._miniwob import intent_of  # noqa: E402
from harnessrl.harness.base import make_harness  # noqa: E402

TASKS = ("click-test-2", "enter-text")


def ours_episode(env: MiniWoBEnv, task: str, seed: int) -> tuple[float, list[float], float]:
    t0 = time.perf_counter()
    page = env.reset(seed)
    reset = time.perf_counter() - t0
    if task == "click-test-2":
        plan = [lambda p: Click(next(e.ref for e in p.elements if e.tag == "button" and e.text == p.field("target")))]
    else:
        plan = [lambda p: Type(next(e.ref for e in p.elements if e.tag == "input_text"), p.field("target")),
                lambda p: Click(next(e.ref for e in p.elements if e.tag == "button"))]
    steps, raw = [], 0.0
    for act in plan:
        t0 = time.perf_counter()
        result = env.step(act(page))
        steps.append(time.perf_counter() - t0)
        page, raw = result.page, result.raw_reward
    return reset, steps, raw


def raw_episode(env: gym.Env, task: str, seed: int) -> tuple[float, list[float], float]:
    base = env.unwrapped
    t0 = time.perf_counter()
    obs, info = env.reset(seed=seed, options={"record_screenshots": False})
    reset = time.perf_counter() - t0
    target = dict(obs["fields"]).get("target")

    def ref(o, tag, text=None):
        return next(e["ref"] for e in o["dom_elements"] if e["tag"] == tag and (text is None or e["text"] == text))

    if task == "click-test-2":
        plan = [lambda o: base.create_action(ActionTypes.CLICK_ELEMENT, ref=ref(o, "button", target))]
    else:
        plan = [lambda o: base.create_action(ActionTypes.FOCUS_ELEMENT_AND_TYPE_TEXT, ref=ref(o, "input_text"), text=target),
                lambda o: base.create_action(ActionTypes.CLICK_ELEMENT, ref=ref(o, "button"))]
    steps, raw = [], 0.0
    for act in plan:
        t0 = time.perf_counter()
        obs, reward, done, _, info = env.step(act(obs))
        steps.append(time.perf_counter() - t0)
        raw = info.get("raw_reward", 0.0) if done else 0.0
    return reset, steps, raw


def harness_episode(harness, env: MiniWoBEnv, task: str, seed: int) -> tuple[float, list[float], float]:
    """The same episode through a harness: reset + rendering, then parse + step + rendering per turn."""
    t0 = time.perf_counter()
    session = harness.open(MiniWoBTask(task), env, seed)
    reset = time.perf_counter() - t0
    steps = []
    while not session.done:
        text = harness.render_intent(intent_of(get_oracle(task)(session.page)), session)
        t0 = time.perf_counter()
        session.step(text)
        steps.append(time.perf_counter() - t0)
    return reset, steps, session.finish().raw_reward or 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=80, help="episodes per task per system")
    ap.add_argument("--block", type=int, default=1, help="episodes per alternating block (1: strict alternation)")
    args = ap.parse_args()
    gym.register_envs(miniwob)

    names = ("ours", "raw", "miniwob-html", "miniwob-axtree")
    stats = {name: {"reset": [], "step": [], "episode": [], "solved": 0} for name in names}
    harnesses = {h: make_harness(h) for h in names[2:]}
    for task in TASKS:
        # One browser per system, so that no system inherits another's browser state.
        envs = {"ours": MiniWoBEnv(task), "raw": gym.make(f"miniwob/{task}-v1")}
        envs.update({h: MiniWoBEnv(task) for h in harnesses})
        fns = {"ours": ours_episode, "raw": raw_episode}
        fns.update({h: (lambda env, t, s, h=h: harness_episode(harnesses[h], env, t, s)) for h in harnesses})
        try:
            for name in names:  # warm-up, not timed
                fns[name](envs[name], task, 10_000)
            for start in range(0, args.episodes, args.block):
                seeds = range(start, min(start + args.block, args.episodes))
                for name in names:
                    for seed in seeds:
                        reset, steps, raw = fns[name](envs[name], task, seed)
                        s = stats[name]
                        s["reset"].append(reset)
                        s["step"].extend(steps)
                        s["episode"].append(reset + sum(steps))
                        s["solved"] += raw == 1.0
        finally:
            for env in envs.values():
                env.close()

    ms = lambda xs: 1000 * statistics.median(xs)  # noqa: E731
    n = args.episodes * len(TASKS)
    for name in names:
        s = stats[name]
        print(f"{name:14s} reset median {ms(s['reset']):6.1f} ms   step median {ms(s['step']):6.1f} ms   "
              f"episode mean {1000 * statistics.mean(s['episode']):6.1f} ms   solved {s['solved']}/{n}")
    ours = statistics.mean(stats["ours"]["episode"]) * 1000
    anchor = statistics.mean(stats["raw"]["episode"]) * 1000
    print(json.dumps({
        "benchmark": "miniwob_reset_step_latency",
        "ours": round(ours, 2),
        "anchor": round(anchor, 2),
        "unit": "ms per episode (reset + oracle steps), mean",
        "ratio": round(ours / anchor, 3),
        "target": "<= 1.10",
        "ratio_of_medians": round(statistics.median(stats["ours"]["episode"]) / statistics.median(stats["raw"]["episode"]), 3),
        "reset_ms_median": {"ours": round(ms(stats["ours"]["reset"]), 2), "anchor": round(ms(stats["raw"]["reset"]), 2)},
        "step_ms_median": {"ours": round(ms(stats["ours"]["step"]), 2), "anchor": round(ms(stats["raw"]["step"]), 2)},
        "episodes": n,
        "through_harness_ratio": {h: round(statistics.mean(stats[h]["episode"]) * 1000 / anchor, 3) for h in harnesses},
        "note": "ratio = MiniWoBEnv adapter vs raw miniwob; through_harness_ratio adds rendering + parsing "
                "(the AX tree is two more DevTools calls per observation)",
    }))


if __name__ == "__main__":
    main()
