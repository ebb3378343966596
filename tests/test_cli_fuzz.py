"""Issue 16: every command x a table of bad values -> exit 2, one line `error: ...`, no traceback, nothing
created or truncated. In-process (typer's CliRunner) so the whole table runs in seconds."""

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.records import RecordStore
from harnessrl.rollout.backends import loopback_only
from tests.helpers import make_episode

runner = CliRunner()
NOWHERE = "/proc/harnessrl-nowhere/x"  # cannot be created, even by root


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    store = RecordStore(root / "store")
    store.append([make_episode(i) for i in range(6)])
    RecordStore(root / "store").sql("SELECT count(*) FROM episodes")  # verdicts cached: reads change nothing
    (root / "binary.yaml").write_bytes(bytes(range(256)) * 4)
    (root / "folder.yaml").mkdir()
    (root / "folder.jsonl").mkdir()
    (root / "folder.csv").mkdir()
    (root / "keep.jsonl").write_text("precious\n")
    return root


def cases(w: Path) -> list[list[str]]:
    s = ["--store", str(w / "store")]
    bad_paths = {"unwritable": NOWHERE, "binary": str(w / "binary.yaml"), "folder": str(w / "folder.yaml"), "empty": ""}
    out = [
        # records: missing, empty, binary, folder, unwritable, wrong type
        ["records", "list", "--store"], ["records", "list", "--store", ""], ["records", "list", "--store", str(w / "binary.yaml")],
        ["records", "list", "--store", str(w / "folder.yaml")], ["records", "verify", "--store", str(w / "binary.yaml")],
        ["records", "show", *s], ["records", "show", "", *s], ["records", "show", "zzz-no-such", *s],
        ["records", "query", *s], ["records", "query", "", *s], ["records", "query", "   ", *s],
        ["records", "query", "SELECT 1", *s, "--limit", "abc"], ["records", "query", "SELECT nope FROM episodes", *s],
        ["records", "query", "SELECT 1", *s, "--csv", str(w / "folder.csv")],
        ["records", "query", "SELECT 1", *s, "--csv", str(w / "missing-folder" / "r.csv")],
        ["records", "query", "SELECT 1", *s, "--csv", NOWHERE], ["records", "query", "SELECT 1", *s, "--csv", ""],
        ["records", "query", f"COPY (SELECT 1) TO '{w / 'store' / 'manifest.jsonl'}'", *s],
        ["records", "query", f"ATTACH '{w / 'new.duckdb'}'", *s],
        ["records", "export", *s], ["records", "export", "", *s], ["records", "export", str(w / "folder.jsonl"), *s],
        ["records", "export", str(w / "x.csv"), *s], ["records", "export", NOWHERE + ".jsonl", *s],
        ["records", "export", str(w / "keep.jsonl"), *s, "--where", "no_such_column = 1"],
        ["records", "export", str(w / "e.parquet"), *s, "--where", "1 +"],
        ["records", "export", str(w / "e.jsonl"), "--store", str(w / "nostore")],
        ["records", "repair", "--store", str(w / "nostore")], ["records", "recover", "--store", str(w / "nostore")],
        ["records", "recover", *s],
        # eval
        ["eval", "--suite", "code-v1"], ["eval", "-p", "oracle"], ["eval", "-p", "oracle", "--suite", "code-v1", "--k", "abc", *s],
        ["eval", "-p", "oracle", "--suite", "code-v1", "--seeds", "abc", *s],
        ["eval", "-p", "oracle", "--suite", "code-v1", "--k", "5", *s],
        ["eval", "-p", "oracle", "--suite", "code-v1", "--workers", "x", *s],
        ["eval", "-p", "", "--suite", "code-v1", *s], ["eval", "-p", "oracle", "--suite", "", *s],
        ["eval", "-p", "oracle", "--suite", "no-such-suite", *s],
        ["eval", "-p", "no-such-policy", "--suite", "code-v1", *s],
        ["eval", "-p", "oracle", "--suite", "code-v1", "--store", ""],
        ["eval", "-p", "oracle", "--suite", "code-v1", "--store", str(w / "binary.yaml")],
        ["eval", "-p", "oracle", "--suite", "code-v1", "--store", NOWHERE],
        ["eval", "-p", "oracle", "--suite", "code-v1", *s, "--out", NOWHERE],
        ["eval", "-p", "oracle", "--suite", "code-v1", *s, "--out", str(w / "binary.yaml")],
        ["eval", "-p", "oracle", "--suite", "code-v1", *s, "--sealed", "x", "--seals", NOWHERE],
        # seal
        ["seal"], ["seal", "--name", ""], ["seal", "--name", "../escape", "--seals", str(w / "seals")],
        ["seal", "--name", "x", "--seals", NOWHERE], ["seal", "--name", "x", "--seals", str(w / "binary.yaml")],
        ["seal", "--name", "x", "--tasks", "a", "--seals", str(w / "seals")],
        ["seal", "verify"], ["seal", "verify", "no-such-seal", "--seals", str(w / "seals")],
        ["seal", "verify", str(w / "binary.yaml")], ["seal", "list", "--seals", str(w / "binary.yaml")],
        # analyze
        ["analyze"], ["analyze", ""], ["analyze", str(w / "binary.yaml")], ["analyze", str(w / "folder.yaml")],
        ["analyze", str(w / "store"), "--out", NOWHERE], ["analyze", str(w / "store"), "--out", str(w / "binary.yaml")],
        ["analyze", str(w / "store"), "--boot", "abc"], ["analyze", str(w / "store"), "--beta", "abc"],
        ["analyze", str(w / "store"), "--where", "1 +"],
        # bipa
        ["bipa", "audit"], ["bipa", "audit", ""], ["bipa", "audit", str(w / "folder.yaml")],
        ["bipa", "audit", str(w / "binary.yaml")], ["bipa", "audit", str(w / "store"), "--replays", "x"],
        ["bipa", "optimize", "-p", "oracle"], ["bipa", "optimize", "-p", "oracle", "--out", NOWHERE, *s],
        ["bipa", "optimize", "-p", "oracle", "--out", "", *s],
        ["bipa", "optimize", "-p", "oracle", "--out", str(w / "run"), "--store", NOWHERE],
        # train
        ["train", "agent", "--run-dir", NOWHERE], ["train", "agent", "--set", "bogus=1", "--run-dir", str(w / "r")],
        ["train", "agent", "--lora-rank", "x"],
    ]
    for kind, path in bad_paths.items():
        out += [["train", "agent", "-c", path], ["recipe", "bipa", "-c", path], ["recipe", "conditioned-critic", "-c", path],
                ["recipe", "reward-tilt", "-c", path], ["recipe", "multi-harness", "-c", path],
                ["recipe", "harness-teacher", "-c", path], ["study", "-c", path]]
        if kind != "folder":  # a folder is a good --out; a binary file is a file where a folder should be
            out += [["recipe", "conditioned-critic", "--out", path], ["recipe", "reward-tilt", "--out", path, *s],
                    ["recipe", "multi-harness", "--out", path], ["recipe", "harness-teacher", "--out", path],
                    ["study", "--out", path], ["recipe", "bipa", "--out", path]]
    out += [
        ["recipe", "conditioned-critic", "--store", NOWHERE, "--out", str(w / "cc")],
        ["recipe", "conditioned-critic", "-j", "x"], ["recipe", "conditioned-critic", "--scale", "huge"],
        ["recipe", "conditioned-critic", "--set", "nope=1", "--out", str(w / "cc")],
        ["recipe", "reward-tilt", "--store", NOWHERE, "--out", str(w / "rt")],
        ["recipe", "reward-tilt", "--task", "nope", "--out", str(w / "rt")],
        ["recipe", "multi-harness", "--set", "rules=[bogus]", "--out", str(w / "mh")],
        ["recipe", "multi-harness", "--set", "updates=abc", "--out", str(w / "mh")],
        ["recipe", "multi-harness", "--lora-rank", "x"], ["recipe", "multi-harness", "--model", "", "--out", str(w / "mh")],
        ["study", "--model", "/nonexistent", "--out", str(w / "st")], ["study", "--model", str(w / "folder.yaml"), "--out", str(w / "st")],
        ["study", "--scale", "paper", "--out", str(w / "st")], ["study", "-j", "0"],
        ["recipe", "harness-teacher", "--model", str(w / "binary.yaml"), "--out", str(w / "ht")],
        ["recipe", "bipa", "--iterations", "x"], ["recipe", "bipa", "--rule", "nope", "--out", str(w / "bp")],
    ]
    if not loopback_only():  # a local Ray is refused outside a loopback-only namespace, before any work
        out += [["study", "--backend", "ray", "--out", str(w / "st")]]
    return out


def _tree(*roots: Path) -> dict[str, tuple]:
    seen = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                p = Path(dirpath) / name
                st = p.lstat()
                # a folder's mtime moves when a write probe comes and goes; its entries are what count
                seen[str(p)] = (st.st_size, st.st_mtime_ns) if p.is_file() else (-1, 0)
    return seen


def test_every_command_answers_bad_values_with_one_error_line(world, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # default paths (runs/...) would appear here
    monkeypatch.delenv("HARNESSRL_STORE", raising=False)
    monkeypatch.delenv("HARNESSRL_SEALS", raising=False)
    failures = []
    table = cases(world)
    for args in table:
        before = _tree(world, tmp_path)
        r = runner.invoke(app, args)
        lines = [ln for ln in r.output.splitlines() if ln.strip()]
        after = _tree(world, tmp_path)
        why = []
        if r.exit_code != 2:
            why.append(f"exit {r.exit_code}")
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            why.append(f"raised {type(r.exception).__name__}: {r.exception}")
        if "Traceback" in r.output or len(lines) != 1 or not lines[0].startswith("error:"):
            why.append(f"output {r.output[-600:]!r}")
        if after != before:
            changed = sorted(set(after) ^ set(before) | {k for k in after if k in before and after[k] != before[k]})
            why.append(f"files changed: {changed}")
        if why:
            failures.append(f"{args}: {'; '.join(why)}")
    assert (world / "keep.jsonl").read_text() == "precious\n"
    assert not failures, f"{len(failures)} of {len(table)} cases:\n" + "\n".join(failures)
