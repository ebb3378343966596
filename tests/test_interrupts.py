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
