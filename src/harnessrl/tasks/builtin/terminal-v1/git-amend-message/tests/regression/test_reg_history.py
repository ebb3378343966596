import subprocess


def git(*args):
    return subprocess.run(["git", "-C", "/app", *args], capture_output=True, text=True, check=True).stdout


def test_history_and_content_kept():
    assert git("log", "--format=%s").splitlines()[1:] == ["Initial commit"]
    assert git("show", "HEAD:parser.py") == "def parse(s): return s.split()\n"
    assert git("log", "-1", "--format=%an <%ae>").strip() == "Dev <dev@example.com>"
    assert git("status", "--porcelain") == ""
