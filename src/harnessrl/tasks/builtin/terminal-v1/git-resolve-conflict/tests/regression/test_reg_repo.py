import subprocess


def git(*args):
    return subprocess.run(["git", "-C", "/app", *args], capture_output=True, text=True).stdout


def test_branches_and_other_files():
    assert "Add timeout" in git("log", "--format=%s", "feature")
    assert git("show", "HEAD:NOTES.md") == "notes\n"
