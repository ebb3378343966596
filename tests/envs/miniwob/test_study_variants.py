"""What the MiniWoB++ harness study (`harnessrl study --suite miniwob`) stands on: its harness
variants change exactly what they say, the preference contrast is the oracle's action against a
distractor in every harness's syntax, and a lockstep group opens at most the pool's browsers."""

from __future__ import annotations

import pytest

from harnessrl.envs.miniwob import MiniWoBTask, close_shared_pool, get_oracle
from harnessrl.evaluate.contrasts import contrasts
from harnessrl.harness.base import make_harness
from harnessrl.policies.scripted import Oracle
from harnessrl.recipes.harness_teacher_config import MINIWOB_HARNESSES, MINIWOB_TASKS
from harnessrl.rollout.envs import open_env
from harnessrl.rollout.loop import RolloutItem, run_group


@pytest.fixture(scope="module", autouse=True)
def _close_pool():
    yield
    close_shared_pool()


def first_messages(harness_id: str, task: str = "click-link", seed: int = 3) -> tuple[list[dict[str, str]], str]:
    """The messages a session starts with, and the page's utterance."""
    harness, t = make_harness(harness_id), MiniWoBTask(task)
    env = open_env(t, seed)
    try:
        session = harness.open(t, env, seed)
        return [dict(m) for m in session.messages], session.page.utterance
    finally:
        env.close()


def test_instruction_variants_hide_or_move_the_utterance():
    base, utterance = first_messages("miniwob-html")
    assert utterance and f"Instruction: {utterance}" in base[-1]["content"]
    blind, same = first_messages("miniwob-html-blind")
    assert same == utterance  # the same page (refs and seed), only what is shown differs
    assert all(utterance not in m["content"] for m in blind) and blind[-1]["content"].startswith("Page:")
    moved, _ = first_messages("miniwob-html-instsys")
    assert f"Your task: {utterance}" in moved[0]["content"] and utterance not in moved[-1]["content"]
    # the page itself is the same element list in all three
    assert base[-1]["content"].split("Page:\n", 1)[1] == blind[-1]["content"].split("Page:\n", 1)[1]


def test_other_variants_change_one_thing():
    base, _ = first_messages("miniwob-html")
    noclass, _ = first_messages("miniwob-html-noclass")
    other, _ = first_messages("miniwob-html-sys")
    assert noclass[0] == base[0] and noclass[-1] != base[-1] and "class=" not in noclass[-1]["content"]
    assert other[0] != base[0] and other[-1] == base[-1]  # another system prompt, the same page
    assert make_harness("miniwob-html-1turn").spec.max_turns == 1 and make_harness("miniwob-html").spec.max_turns == 10


def test_one_turn_variant_cuts_multi_step_tasks_but_not_one_step_ones():
    items = [RolloutItem(make_harness(h), MiniWoBTask(t), s) for h in ("miniwob-html", "miniwob-html-1turn")
             for t in ("click-option", "click-link") for s in range(2)]
    got = {(e.context.harness_id, e.context.task_id, e.context.seed): e.success for e in run_group(Oracle(), items)}
    for s in range(2):
        assert got[("miniwob-html", "miniwob/click-option", s)] and not got[("miniwob-html-1turn", "miniwob/click-option", s)]
        assert got[("miniwob-html-1turn", "miniwob/click-link", s)]


def test_contrast_is_the_oracle_action_against_a_distractor_in_each_syntax():
    task = MiniWoBTask("click-link")
    items = contrasts([make_harness(h) for h in ("miniwob-html", "miniwob-axtree")], [task], seeds=(5,))
    assert [c.harness_id for c in items] == ["miniwob-html", "miniwob-axtree"]
    html, ax = items
    env = open_env(task, 5)
    try:
        page = make_harness("miniwob-html").open(task, env, 5).page
        target = get_oracle("click-link")(page).ref
    finally:
        env.close()
    assert html.better == f"CLICK {target}" and html.worse.startswith("CLICK ") and html.worse != html.better
    worse_ref = int(html.worse.split()[1])
    assert f'"ref": {target}' in ax.better and f'"ref": {worse_ref}' in ax.worse  # the same pair, the other syntax


def test_a_lockstep_group_opens_at_most_the_pool_size(monkeypatch):
    monkeypatch.setenv("HARNESSRL_MINIWOB_BROWSERS", "2")
    close_shared_pool()  # the next pool reads the new size
    open_now, peak, keys = [0], [0], []

    def counting(task, seed):
        env = open_env(task, seed)
        open_now[0] += 1
        peak[0] = max(peak[0], open_now[0])
        close = env.close

        def closed():
            open_now[0] -= 1
            close()

        env.close = closed
        return env

    class Recording(Oracle):
        def act(self, states):
            keys.extend(s.episode_key for s in states)
            return super().act(states)

    items = [RolloutItem(make_harness("miniwob-html"), MiniWoBTask("click-test-2"), s) for s in range(5)]
    episodes = run_group(Recording(), items, open_env=counting)
    assert peak[0] == 2 and open_now[0] == 0
    assert [e.context.seed for e in episodes] == list(range(5)) and all(e.success for e in episodes)
    assert sorted(set(keys), key=int) == [str(i) for i in range(5)]  # an episode's key is its index in the group
    close_shared_pool()


def test_the_preset_is_six_tasks_six_harnesses_and_a_sealed_one():
    from harnessrl.recipes.harness_teacher import tasks_of
    from harnessrl.recipes.harness_teacher_config import HarnessTeacherConfig, preset

    cfg = HarnessTeacherConfig(**preset("miniwob"))
    assert len(MINIWOB_TASKS) >= 6 and len(MINIWOB_HARNESSES) >= 5 and cfg.sealed_harness not in cfg.harnesses
    train, held = tasks_of(cfg)
    assert [t.name for t in train] == MINIWOB_TASKS and held == train  # held_out=seeds: the same tasks, new pages
    assert all(t.has_oracle for t in train)  # demonstrations need the scripted oracle
