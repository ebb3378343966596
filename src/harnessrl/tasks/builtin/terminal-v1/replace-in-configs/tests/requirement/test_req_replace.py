import os
import shutil
import subprocess
from pathlib import Path

MAIN_BEFORE = "url = http://old.example.com/api\nmirror = http://old.example.com\nother = http://old.example.org\n"
MAIN_AFTER = "url = https://new.example.com/api\nmirror = https://new.example.com\nother = http://old.example.org\n"


def run(*args):
    return subprocess.run(["/app/replace_in_configs", *args], capture_output=True, text=True)


def test_replaced():
    assert Path("/app/etc/main.conf").read_text() == MAIN_AFTER
    assert Path("/app/etc/site/nested/proxy.conf").read_text() == "upstream https://new.example.com:8080;\n"


def test_script_on_a_copy(tmp_path):
    assert os.access("/app/replace_in_configs", os.X_OK)
    etc = tmp_path / "etc"
    shutil.copytree("/app/etc", etc)
    (etc / "main.conf").write_text(MAIN_BEFORE)
    (etc / "site/nested/proxy.conf").write_text("upstream http://old.example.com:8080;\n")
    r = run(str(etc), "http://old.example.com", "https://new.example.com")
    assert r.returncode == 0, r.stderr
    assert (etc / "main.conf").read_text() == MAIN_AFTER
    assert (etc / "site/nested/proxy.conf").read_text() == "upstream https://new.example.com:8080;\n"
    assert (etc / "main.conf.bak").read_text() == "url = http://old.example.com/api\n"


def test_usage():
    r = run("/app/etc", "http://old.example.com")
    assert r.returncode == 2 and "usage" in r.stderr.lower()
