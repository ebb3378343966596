import datetime
import os
import subprocess
import tarfile


def test_archive_created():
    assert os.access("/app/backup.sh", os.X_OK)
    r = subprocess.run(["/app/backup.sh", "/app/data"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    expected = f"/app/backups/data-{datetime.date.today():%Y%m%d}.tar.gz"
    assert r.stdout.strip() == expected
    with tarfile.open(expected) as tar:
        names = sorted(m.name for m in tar.getmembers() if m.isfile())
        assert names == ["data/a.txt", "data/sub/b.txt"]
        assert tar.extractfile("data/sub/b.txt").read() == b"beta\n"


def test_bad_argument():
    r = subprocess.run(["/app/backup.sh", "/app/nope"], capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.strip()
