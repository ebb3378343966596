import shutil
import subprocess


def test_build_elsewhere_other_inputs(tmp_path):
    # a fresh copy of the project builds from clean, and the program computes other inputs
    proj = tmp_path / "proj"
    shutil.copytree("/app", proj, ignore=shutil.ignore_patterns(".git"))
    subprocess.run(["make", "-C", str(proj), "clean"], check=True, capture_output=True)
    build = subprocess.run(["make", "-C", str(proj)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    out = subprocess.run([str(proj / "bin" / "calc"), "-4", "6"], capture_output=True, text=True, check=True).stdout
    assert out == "2 -10 -24\n"
    assert subprocess.run(["make", "-C", str(proj), "test"], capture_output=True).returncode == 0
