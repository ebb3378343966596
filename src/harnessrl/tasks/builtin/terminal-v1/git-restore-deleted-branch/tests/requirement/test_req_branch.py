import subprocess


def git(*args):
    return subprocess.run(["git", "-C", "/app", *args], capture_output=True, text=True).stdout


def test_branch_restored():
    assert git("log", "-1", "--format=%s", "feature/login").strip() == "Login takes a user"
    assert git("show", "feature/login:login.py") == "def login(user): return user\n"
