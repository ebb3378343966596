import subprocess


def git(*args):
    return subprocess.run(["git", "-C", "/app", *args], capture_output=True, text=True).stdout.strip()


def test_repo_state():
    assert git("rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert git("log", "-1", "--format=%s") == "Step 16"
    assert git("status", "--porcelain") == ""
