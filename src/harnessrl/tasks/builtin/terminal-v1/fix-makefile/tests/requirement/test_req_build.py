import subprocess


def test_make_and_make_test():
    subprocess.run(["make", "-C", "/app", "clean"], check=True, capture_output=True)
    build = subprocess.run(["make", "-C", "/app"], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    out = subprocess.run(["/app/bin/calc", "7", "2"], capture_output=True, text=True, check=True).stdout
    assert out == "9 5 14\n"
    assert subprocess.run(["make", "-C", "/app", "test"], capture_output=True).returncode == 0
