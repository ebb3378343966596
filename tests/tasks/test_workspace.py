"""Workspace lifecycle and file operations (containment itself is in test_sandbox_adversarial)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harnessrl.tasks.workspace import EditError, Workspace, WorkspaceError, cleanup_stale


def test_copy_of_source_owned_by_its_own_uid(tmp_path):
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "a.py").write_text("A = 1\n")
    (src / "top.txt").write_text("top\n")
    with Workspace.create(src) as a, Workspace.create(src) as b:
        assert a.files() == ["pkg/a.py", "top.txt"]
        assert a.read_text("/app/pkg/a.py") == "A = 1\n"
        a.write_text("top.txt", "changed\n")
        assert (src / "top.txt").read_text() == "top\n"  # a copy, not the source
        assert b.read_text("top.txt") == "top\n"  # and one per episode
        if os.geteuid() == 0:
            assert a.uid != b.uid and a.uid >= 100_000
            assert (a.root / "pkg" / "a.py").stat().st_uid == a.uid
            assert a.quota_mb == 256 and os.path.ismount(a.root)


def test_close_unmounts_and_deletes():
    ws = Workspace.create(None, quota_mb=8)
    home, root = ws.home, ws.root
    ws.write_text("x", "1")
    ws.close()
    assert ws.closed and not home.exists() and not os.path.ismount(root)
    ws.close()  # idempotent


def test_stale_workspaces_of_dead_processes_are_cleaned(tmp_path):
    base = tmp_path / "base"
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parents[2] / 'src')!r}); "
            f"from harnessrl.tasks.workspace import Workspace; ws = Workspace.create(None, quota_mb=4, base={str(base)!r}); "
            "print(ws.home); import os; os._exit(0)")
    home = Path(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip())
    assert home.exists()
    assert cleanup_stale(base) == 1
    assert not home.exists()


def test_paths_are_normalised_and_confined(ws):
    assert ws.relpath("/app/a/./b/../c.py") == "a/c.py"
    assert ws.relpath("a//b") == "a/b"
    assert ws.relpath("/app") == ""
    for bad in ["..", "../x", "/etc/passwd", "/application/x", "a/../../x", "x\x00y"]:
        with pytest.raises(WorkspaceError):
            ws.relpath(bad)


def test_write_creates_parents_owned_by_the_workspace_uid(ws):
    ws.write_text("deep/er/file.py", "x = 1\n")
    assert ws.is_dir("deep/er") and ws.is_file("deep/er/file.py")
    if os.geteuid() == 0:
        assert (ws.root / "deep").stat().st_uid == ws.uid
        assert (ws.root / "deep/er/file.py").stat().st_uid == ws.uid


def test_str_replace_counts_occurrences(ws):
    ws.write_text("m.py", "a = 1\nb = 1\n")
    with pytest.raises(EditError) as err:
        ws.str_replace("m.py", "= 1", "= 2")
    assert err.value.occurrences == 2
    with pytest.raises(EditError) as err:
        ws.str_replace("m.py", "zzz", "y")
    assert err.value.occurrences == 0
    assert ws.str_replace("m.py", "= 1", "= 2", count=2) == 2
    assert ws.replace_all("m.py", "= 2", "= 3") == 2
    assert ws.read_text("m.py") == "a = 3\nb = 3\n"
    with pytest.raises(EditError):
        ws.str_replace("m.py", "", "x")


def test_insert_after_line(ws):
    ws.write_text("f.txt", "one\ntwo")
    ws.insert("f.txt", 0, "zero")
    ws.insert("f.txt", 3, "three\n")
    assert ws.read_text("f.txt") == "zero\none\ntwo\nthree\n"
    with pytest.raises(WorkspaceError):
        ws.insert("f.txt", 9, "x")


def test_listdir_files_snapshot_delete(ws):
    ws.write_text("b.py", "b")
    ws.write_text("a/x.txt", "x")
    ws.write_text(".git/HEAD", "ref")
    os.symlink("b.py", ws.root / "link")
    assert ws.listdir() == [".git/", "a/", "b.py", "link@"]
    assert ws.listdir("/app/a") == ["x.txt"]
    assert ws.files() == ["a/x.txt", "b.py"]
    assert ws.snapshot() == {"a/x.txt": b"x", "b.py": b"b"}
    ws.delete("link")
    assert ws.exists("b.py") and not ws.exists("link")
    with pytest.raises(WorkspaceError):
        ws.delete("missing")
    with pytest.raises(WorkspaceError):
        ws.read_text("a")  # a directory


def test_read_limit(ws):
    ws.write_bytes("big.bin", b"x" * 2000)
    assert len(ws.read_bytes("big.bin", limit=2000)) == 2000
    with pytest.raises(WorkspaceError):
        ws.read_bytes("big.bin", limit=1000)
