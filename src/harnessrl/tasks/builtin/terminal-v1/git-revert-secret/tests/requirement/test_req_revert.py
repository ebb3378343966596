import subprocess


def git(*args):
    return subprocess.run(["git", "-C", "/app", *args], capture_output=True, text=True).stdout


def test_reverted_with_new_commit():
    assert "secrets.env" not in git("ls-tree", "--name-only", "HEAD")
    subjects = git("log", "--format=%s").splitlines()
    assert len(subjects) == 4 and subjects[1:] == ["Add env", "Second", "Initial"]
