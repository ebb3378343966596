"""A Ctrl-C that lands in a finaliser is not lost: the next stage boundary ends the run."""

from __future__ import annotations

import gc

import pytest

from harnessrl import interrupts
from harnessrl.recipes.stages import json_stage


def test_a_sigint_swallowed_by_a_finaliser_still_stops_the_next_stage(tmp_path, monkeypatch):
    monkeypatch.setattr(interrupts, "_pending", False)

    class Finalised:
        def __del__(self):  # where the study's lost Ctrl-C landed: a regex group's __del__
            interrupts._on_sigint(2, None)

    json_stage(tmp_path, "before", lambda: {"ok": 1})
    Finalised()
    gc.collect()  # Python prints "Exception ignored in ..." and carries on
    assert interrupts.pending()
    with pytest.raises(KeyboardInterrupt):
        json_stage(tmp_path, "after", lambda: {"ok": 2})
    assert not (tmp_path / "stages" / "after.json").exists()
    assert json_stage(tmp_path, "before", lambda: {"ok": 3})["ok"] == 1  # a finished stage is still read back


def test_in_process_commands_keep_the_callers_handler_and_start_with_no_stale_interrupt(monkeypatch):
    """A test process runs many commands through CliRunner and may SIGINT itself (the MiniWoB teardown
    test): only a real command line takes SIGINT over, and each command starts with no interrupt pending
    (once, a remembered SIGINT made every later recipe in that pytest worker exit 130)."""
    import signal

    from typer.testing import CliRunner

    from harnessrl.cli import app

    before = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(interrupts, "_pending", True)
    r = CliRunner().invoke(app, ["--version"])
    assert r.exit_code == 0, r.output
    assert signal.getsignal(signal.SIGINT) is before and not interrupts.pending()
