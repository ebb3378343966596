"""Model text, task names and help lines print literally: nothing in square brackets is read as Rich markup."""

import re

import typer
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.records import RecordStore
from tests.helpers import make_episode

runner = CliRunner()
HOSTILE = ["x = days[month - 1]", "cat [/tmp/notes] now", "[bold]not bold[/bold]", "[/]", "a \\[b] c"]


def flat(text: str) -> str:
    """Help panels wrap lines and draw borders; compare words only."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def test_records_show_prints_hostile_brackets_literally(tmp_path):
    ep = make_episode(1)
    for turn, text in zip(ep.turns, HOSTILE):
        turn.observation, turn.action, turn.tool_result = f"obs {text}", f"act {text}", f"res {text}"
    ep.outcome = "[red]failed[/red] on [/tmp/x]"
    store = RecordStore(tmp_path / "store")
    store.append([ep])
    r = runner.invoke(app, ["records", "show", ep.episode_id, "--store", str(store.root)])
    assert r.exit_code == 0, r.output
    out = r.output
    for text in HOSTILE[:len(ep.turns)]:
        for prefix in ("obs", "act", "res"):
            assert f"{prefix} {text}" in out, (prefix, text, out)
    assert "[red]failed[/red] on [/tmp/x]" in out


def test_records_list_cells_print_literally(tmp_path):
    ep = make_episode(2)
    ep.run_id = "run[/tmp/notes]"
    store = RecordStore(tmp_path / "store")
    store.append([ep])
    r = runner.invoke(app, ["records", "query", "SELECT run_id FROM episodes", "--store", str(store.root)])
    assert r.exit_code == 0, r.output
    assert "run[/tmp/notes]" in r.output


def _commands(cmd, path: list[str]):
    yield path, cmd
    if hasattr(cmd, "commands"):  # typer may vendor its own click: no isinstance
        for name, sub in cmd.commands.items():
            yield from _commands(sub, path + [name])


def test_every_help_line_with_brackets_prints_them():
    """Each option and command help that holds `[...]` shows it in --help (the store option's
    `[env HARNESSRL_STORE, default runs/store]` was dropped as a markup tag)."""
    checked = 0
    for path, cmd in _commands(typer.main.get_command(app), []):
        texts = [p.help for p in cmd.params if getattr(p, "help", None)] + [cmd.help or ""]
        texts = [t for t in texts if re.search(r"\[[a-z#/@]", t)]
        if not texts:
            continue
        r = runner.invoke(app, path + ["--help"], terminal_width=200)
        assert r.exit_code == 0, (path, r.output)
        for text in texts:
            first = text.split("\n\n")[0]  # the panel shows a command's first paragraph
            want = flat(first.replace("\\[", "["))
            assert want in flat(r.output), (path, want)
            checked += 1
    assert checked >= 5  # the store option alone appears in several commands
