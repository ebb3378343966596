import datetime
import subprocess
import tarfile


def test_other_directory(tmp_path):
    src = tmp_path / "notes"
    (src / "2024" / "q1").mkdir(parents=True)
    (src / "todo.md").write_text("write tests\n")
    (src / "2024" / "q1" / "plan.txt").write_text("ship it\n")
    r = subprocess.run(["/app/backup.sh", str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    expected = f"/app/backups/notes-{datetime.date.today():%Y%m%d}.tar.gz"
    assert r.stdout.strip() == expected
    with tarfile.open(expected) as tar:
        names = sorted(m.name for m in tar.getmembers() if m.isfile())
        assert names == ["notes/2024/q1/plan.txt", "notes/todo.md"]
        assert tar.extractfile("notes/2024/q1/plan.txt").read() == b"ship it\n"


def test_a_file_is_not_a_directory(tmp_path):
    (tmp_path / "plain.txt").write_text("x\n")
    r = subprocess.run(["/app/backup.sh", str(tmp_path / "plain.txt")], capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.strip()
