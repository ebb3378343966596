import stat
import subprocess
from pathlib import Path


def mode(p):
    return stat.S_IMODE(Path(p).stat().st_mode)


def run(*args):
    return subprocess.run(["/app/fix_perms", *args], capture_output=True, text=True)


def test_other_tree(tmp_path):
    root = tmp_path / "my project"
    for d in ("bin", "tools.sh", "certs/old", ".ssh"):
        (root / d).mkdir(parents=True)
    (root / "tools.sh").chmod(0o750)  # a directory, not a script
    layout = {"bin/build.sh": (0o600, 0o711), "bin/test.sh": (0o640, 0o751), "bin/own.sh": (0o700, 0o711),
              "bin/ok.sh": (0o755, 0o755), "my tool.sh": (0o444, 0o555), "tools.sh/inner.txt": (0o644, 0o644),
              "bin/build.sh.txt": (0o644, 0o644), "certs/old/site.key": (0o644, 0o600),
              ".ssh/id.key": (0o666, 0o600), "certs/keys.list": (0o644, 0o644), "certs/a.keys": (0o664, 0o664)}
    for rel, (before, _) in layout.items():
        (root / rel).write_text("x\n")
        (root / rel).chmod(before)
    r = run(str(root))
    assert r.returncode == 0, r.stderr
    assert {rel: oct(mode(root / rel)) for rel in layout} == {rel: oct(after) for rel, (_, after) in layout.items()}
    assert mode(root / "tools.sh") == 0o750


def test_other_bad_arguments(tmp_path):
    (tmp_path / "a.sh").write_text("x\n")
    (tmp_path / "a.sh").chmod(0o644)
    for args in ((str(tmp_path / "a.sh"),), (str(tmp_path / "nope"),), (str(tmp_path), str(tmp_path))):
        r = run(*args)
        assert r.returncode == 2 and "usage" in r.stderr.lower(), args
    assert mode(tmp_path / "a.sh") == 0o644
