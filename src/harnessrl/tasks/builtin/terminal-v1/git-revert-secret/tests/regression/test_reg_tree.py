import subprocess


def git(*args):
    return subprocess.run(["git", "-C", "/app", *args], capture_output=True, text=True).stdout


def test_other_content_and_clean_tree():
    assert git("show", "HEAD:app.txt") == "app\nv2\n"
    assert git("status", "--porcelain") == ""
