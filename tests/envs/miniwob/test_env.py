"""MiniWoBEnv on real task pages: observations, actions, both rewards, errors, the AX tree."""

from __future__ import annotations

import pytest

from harnessrl.envs.miniwob import TASKS, ActionError, Click, MiniWoBEnv, PressKey, Type, check_task

pytestmark = pytest.mark.browser


def _button(page, text):
    return next(e for e in page.elements if e.tag == "button" and e.text == text)


def test_reset_gives_utterance_fields_and_elements(env):
    env.set_task("click-test-2")
    page = env.reset(3)
    assert page.utterance in ("Click button ONE.", "Click button TWO.")
    assert page.field("target") in ("ONE", "TWO")
    assert {e.text for e in page.elements if e.tag == "button"} == {"ONE", "TWO"}
    assert page.elements[0].parent == 0 and page.elements[0].depth == 0
    assert all(page.get(e.parent) is not None for e in page.elements[1:])
    assert not page.done


def test_same_seed_same_page_and_seeds_differ(env):
    env.set_task("click-button")
    first = [env.reset(s).utterance for s in range(6)]
    again = [env.reset(s).utterance for s in range(6)]
    assert first == again
    assert len(set(first)) > 1


def test_right_click_gets_discounted_and_raw_reward(env):
    env.set_task("click-test-2")
    page = env.reset(5)
    result = env.step(Click(_button(page, page.field("target")).ref))
    assert result.done and result.page.done and result.page.elements == ()
    assert result.raw_reward == 1.0
    assert 0.5 < result.reward < 1.0  # scaled by the time left
    assert result.elapsed >= 0.0


def test_wrong_click_gets_minus_one(env):
    env.set_task("click-test-2")
    page = env.reset(5)
    wrong = "TWO" if page.field("target") == "ONE" else "ONE"
    result = env.step(Click(_button(page, wrong).ref))
    assert result.done and result.raw_reward == -1.0 and result.reward == -1.0


def test_type_fills_the_input_and_submit_scores(env):
    env.set_task("enter-text")
    page = env.reset(2)
    box = next(e for e in page.elements if e.tag == "input_text")
    result = env.step(Type(box.ref, page.field("target")))
    assert not result.done
    assert result.page.get(box.ref).value == page.field("target")
    assert result.page.get(box.ref).tampered
    result = env.step(Click(_button(result.page, "Submit").ref))
    assert result.done and result.raw_reward == 1.0


def test_invalid_actions_raise_action_error_and_leave_the_page(env):
    env.set_task("click-link")
    page = env.reset(0)
    with pytest.raises(ActionError, match="no element with ref 999"):
        env.step(Click(999))
    text_run = next(e for e in page.elements if e.ref < 0)
    with pytest.raises(ActionError, match="text run"):
        env.step(Click(text_run.ref))
    with pytest.raises(ActionError, match="unsupported key"):
        env.step(PressKey("<NoSuchKey>"))
    with pytest.raises(ActionError, match="not a MiniWoB action"):
        env.step("click 3")
    assert env.page == page  # nothing ran
    link = next(e for e in page.elements if "alink" in e.classes and e.text == page.field("target"))
    assert env.step(Click(link.ref)).raw_reward == 1.0
    with pytest.raises(ActionError, match="episode is over"):
        env.step(Click(link.ref))


def test_unknown_task_names_the_fix():
    with pytest.raises(ValueError, match="Did you mean click-test"):
        check_task("clik-test")
    with pytest.raises(ValueError, match="unknown MiniWoB task"):
        MiniWoBEnv("no-such-task")
    assert len(TASKS) > 100 and "click-test" in TASKS and not any(t.startswith("flight") for t in TASKS)


def test_set_task_reuses_the_browser(env):
    pids = env.pids
    env.set_task("login-user")
    page = env.reset(0)
    assert "username" in page.utterance and env.task == "login-user"
    assert env.pids[0] == pids[0]  # same chromedriver


def test_select_options_are_visible(env):
    env.set_task("choose-list")
    page = env.reset(4)
    select = next(e for e in page.elements if e.tag == "select")
    assert page.field("target") in select.options and len(select.options) >= 3
    assert select.value == select.options[0]


def test_accessibility_tree_ties_nodes_to_refs(env):
    env.set_task("click-checkboxes")
    page = env.reset(1)
    tree = env.accessibility_tree()
    boxes = [n for n in tree if n.role == "checkbox"]
    inputs = [e for e in page.elements if e.tag == "input_checkbox"]
    assert len(boxes) == len(inputs) and {n.ref for n in boxes} == {e.ref for e in inputs}
    assert all(n.name and dict(n.properties)["checked"] == "false" for n in boxes)
    assert all(n.ref is None or page.get(n.ref) is not None for n in tree)
    names = " ".join(n.name for n in tree)
    assert "Last reward" not in names and page.utterance not in names  # miniwob's own chrome is left out
    submit = next(n for n in tree if n.role == "button")
    assert submit.name == "Submit" and submit.ref == _button(page, "Submit").ref
    env.step(Click(boxes[0].ref))
    assert dict(next(n for n in env.accessibility_tree() if n.ref == boxes[0].ref).properties)["checked"] == "true"
