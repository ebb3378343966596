"""A real program added from a package outside src/ (tests/agents/ext_program/tiny_agent_pkg), through
the entry-point group `harnessrl.programs` alone: found by name, its style made from its tool table,
its harness spec known by id, and one episode run with it through the ordinary rollout loop (the
program in the episode's sandbox, its one call through the gateway)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harnessrl.config import ConfigError
from harnessrl.harness.base import HARNESS_STYLES, TextHarness, make_harness, program_specs
from harnessrl.harness.program import ProgramHarness
from harnessrl.programs import PROGRAMS, all_programs, program
from harnessrl.tasks.sandbox import bwrap_path

PACKAGE = Path(__file__).parent / "ext_program"


@pytest.fixture
def registered(tmp_path, monkeypatch):
    """The package on sys.path with a dist-info that names its program, as `pip install` would leave it."""
    dist = tmp_path / "tiny_agent-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-agent\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[harnessrl.programs]\ntiny-agent = tiny_agent_pkg:PROGRAM\n")
    monkeypatch.syspath_prepend(str(PACKAGE))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    HARNESS_STYLES.pop("tiny_agent", None)


def test_without_the_package_the_program_is_unknown():
    with pytest.raises(ConfigError, match="not known; known: .*mini-swe-agent"):
        program("tiny-agent")
    assert "tiny-agent" not in program_specs()


def test_an_entry_point_adds_a_program_its_style_and_its_harness(registered):
    prog = program("tiny-agent")
    assert prog.kind == "local" and "tiny-agent" in all_programs() and "tiny-agent" not in PROGRAMS
    assert program_specs()["tiny-agent"] == PACKAGE / "tiny_agent_pkg" / "tiny-agent.toml"
    h = make_harness("tiny-agent")
    assert isinstance(h, ProgramHarness) and not isinstance(h, TextHarness) and h.style == "tiny_agent"
    assert h.capabilities == {"edit"} and h.tools == ("write_file", "replace_text")
    import pickle

    again = pickle.loads(pickle.dumps(h))  # as a worker process gets it: rebuilt from its spec, found by entry point
    assert type(again) is type(h) and again.spec == h.spec
    from harnessrl.harness.base import Intent

    assert h.expressible(Intent("replace", path="a.py", old="a", new="b")) and not h.expressible(Intent("run", command="ls"))
    from harnessrl.agents.install import installed, is_installed, listing

    assert is_installed("tiny-agent") and installed("tiny-agent").ro_paths == ()
    assert {r["name"]: r for r in listing()}["tiny-agent"]["installed"] is True


@pytest.mark.sandbox
@pytest.mark.skipif(bwrap_path() is None or os.geteuid() != 0, reason="needs bubblewrap and root (per-episode network namespace)")
def test_one_episode_with_the_external_program(registered):
    from harnessrl.policies.registry import make_policy
    from harnessrl.rollout.loop import RolloutItem, run_group
    from harnessrl.rollout.suites import load_suite

    task = load_suite("code-v1")["fix-leap-year"]  # one edit: the program's one call carries it
    h = make_harness("tiny-agent")
    solved = run_group(make_policy("oracle"), [RolloutItem(h, task, 0)])[0]
    assert (solved.status, solved.success) == ("ok", True), (solved.outcome, solved.metadata.get("program_output"))
    calls = solved.metadata["calls"]
    assert len(calls) == len(solved.turns) == 1 and calls[0]["tools"] == ["write_file", "replace_text"]
    assert calls[0]["tool_calls"] == 1 and solved.metadata["stop_reason"] == "program exited (0)"
    assert solved.metadata["program"] == "tiny-agent" and solved.context.harness_id == "tiny-agent"
    noop = run_group(make_policy("noop"), [RolloutItem(h, task, 0)])[0]
    assert noop.success is False and len(noop.metadata["calls"]) == 1
