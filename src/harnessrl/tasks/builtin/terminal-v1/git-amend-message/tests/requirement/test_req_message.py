import subprocess


def git(*args):
    return subprocess.run(["git", "-C", "/app", *args], capture_output=True, text=True, check=True).stdout


def test_message_fixed():
    assert git("log", "-1", "--format=%s").strip() == "Add parser module"
