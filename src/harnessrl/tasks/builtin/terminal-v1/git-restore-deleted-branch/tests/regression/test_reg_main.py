import subprocess


def git(*args):
    return subprocess.run(["git", "-C", "/app", *args], capture_output=True, text=True, check=True).stdout


def test_main_unchanged():
    assert git("rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert git("log", "--format=%s", "main").splitlines() == ["Update README", "Initial commit"]
    assert git("status", "--porcelain") == ""
