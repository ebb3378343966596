"""Each real program is one module of harnessrl.programs (pin, launch, tool table) on one harness class;
the renamed reconstruction styles still load under their old names; a program harness has no parser."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from harnessrl.harness.base import (HARNESS_STYLES, STYLE_ALIASES, HarnessSpec, Intent, TextHarness, _import_styles,
                                    load_spec, make_harness, program_specs)
from harnessrl.harness.program import ProgramHarness
from harnessrl.programs import BUILTIN, PROGRAMS
from harnessrl.tasks.workspace import Workspace


@pytest.mark.parametrize("old,new,cls", [("aider", "aider_reconstruction", "AiderReconstruction"),
                                         ("openhands", "openhands_reconstruction", "OpenHandsReconstruction"),
                                         ("qwen_code", "qwen_code_reconstruction", "QwenCodeReconstruction")])
def test_a_renamed_style_still_loads_under_its_old_name(old, new, cls, tmp_path):
    h = make_harness(HarnessSpec(id="stored", style=old))  # a run file written before the rename
    assert type(h).__name__ == cls and h.style == new and h.spec.style == new
    spec = tmp_path / "old.toml"
    spec.write_text(f'id = "old-{old}"\nstyle = "{old}"\n')
    assert make_harness(spec).style == new
    assert old not in HARNESS_STYLES and STYLE_ALIASES[old] == new
    assert load_spec(old).style == new  # the harness ids did not change: `aider` is still the Aider reconstruction


def test_every_style_either_parses_replies_or_is_a_program():
    _import_styles()
    for style, cls in HARNESS_STYLES.items():
        if issubclass(cls, ProgramHarness):
            assert not hasattr(cls, "parse") and not issubclass(cls, TextHarness), style
        else:
            assert issubclass(cls, TextHarness) and not getattr(cls.parse, "__isabstractmethod__", False), style


def test_each_builtin_program_is_one_module_with_its_style_specs_and_lock():
    assert len(BUILTIN) == len(PROGRAMS) == 6
    styles = {load_spec(i).style: i for i in program_specs()}
    for name, prog in PROGRAMS.items():
        cls = HARNESS_STYLES[prog.style]
        assert issubclass(cls, ProgramHarness) and cls.default_program == name
        assert cls.all_tools == tuple(prog.tools.tools) and prog.style in styles, name
        assert prog.lock is not None and prog.lock.is_file(), name
        assert prog.pin.startswith(prog.package) and prog.version in prog.pin


def test_a_program_harness_pickles_as_its_spec():
    import pickle

    for name in program_specs():
        h = make_harness(name)
        again = pickle.loads(pickle.dumps(h))
        assert type(again) is type(h) and again.spec == h.spec and again.table == h.table


def test_a_program_style_cannot_take_another_styles_name():
    import dataclasses

    from harnessrl.config import ConfigError
    from harnessrl.harness.program import program_style

    clash = dataclasses.replace(PROGRAMS["codex-cli"], name="other", style="aider_reconstruction")
    with pytest.raises(ConfigError, match="taken by AiderReconstruction"):
        program_style(clash)


def test_constants_the_programs_share_with_the_runtime_agree():
    from harnessrl.agents.launch import STATE
    from harnessrl.programs import base
    from harnessrl.tasks.workspace import APP

    assert base.WORKDIR == APP and base.STATE == STATE


@pytest.mark.parametrize("name", [n for n in PROGRAMS if PROGRAMS[n].tools.wire != "search_replace"])
def test_every_table_entry_renders_for_every_kind_and_file_state(name):
    """Every template names only values the renderer has, in every state a file can be in."""
    h = make_harness(name)
    with Workspace.create(None, quota_mb=16) as ws:
        ws.write_text("a.py", "x = 1\n")
        ws.write_text("empty.txt", "")
        session = SimpleNamespace(env=SimpleNamespace(workspace=ws), read_paths=set())
        for path in ("a.py", "empty.txt", "new/b.py"):
            for intent in (Intent("write", path=path, content="y\n"), Intent("replace", path=path, old="x", new="z"),
                           Intent("read", path=path), Intent("run", command="ls"), Intent("finish", message="ok"),
                           Intent("answer", text="ok")):
                assert h.expressible(intent)
                try:
                    text = h.render_intent(intent, session)
                except ValueError as err:
                    assert "must exist" in str(err) and name == "codex-cli" and path == "new/b.py"
                    continue
                if "<tool_call>" in text:
                    json.loads(text.split("<tool_call>\n")[1].split("\n</tool_call>")[0])


def test_aider_cli_names_files_from_its_root_as_the_session_launched_it():
    """Without git Aider's root is the common folder of its chat files (the launch's `files`)."""
    h = make_harness("aider-cli")
    with Workspace.create(None, quota_mb=16) as ws:
        ws.write_text("plugins/a.py", "a = 1\n")
        ws.write_text("plugins/b.py", "b = 1\n")
        session = SimpleNamespace(env=SimpleNamespace(workspace=ws), launch_opts={"files": ["plugins/a.py", "plugins/b.py"]})
        text, used = h.render_turn([Intent("replace", path="plugins/a.py", old="a = 1", new="a = 2"),
                                    Intent("write", path="plugins/c.py", content="c\n")], session)
        assert used == 2 and text.startswith("a.py\n```\n<<<<<<< SEARCH") and "\nc.py\n```\n<<<<<<< SEARCH" in text
        session.launch_opts = {}
        assert make_harness("aider-cli").render_turn([Intent("write", path="plugins/c.py", content="c\n")], session)[0] \
            .startswith("plugins/c.py\n")
