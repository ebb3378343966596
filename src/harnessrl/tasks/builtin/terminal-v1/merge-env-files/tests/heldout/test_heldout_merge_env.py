import subprocess


def merge(*paths):
    r = subprocess.run(["/app/merge_env", *map(str, paths)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_three_files(tmp_path):
    base, staging, local = tmp_path / "base.env", tmp_path / "staging.env", tmp_path / "local.env"
    base.write_text("REPLICA=db1\nREPLICA2=db2\nCOLOR=#fff\nTIMEOUT=5\n  # tuned below\nTIMEOUT=10\n")
    staging.write_text("\n# staging\nREPLICA=db-staging\nTOKEN=\nURL=https://x.test/?a=1&b=2\n")
    local.write_text("TIMEOUT=30\nURL=http://localhost:8080\n")
    assert merge(base, staging, local) == [
        "COLOR=#fff", "REPLICA=db-staging", "REPLICA2=db2", "TIMEOUT=30", "TOKEN=", "URL=http://localhost:8080"]


def test_one_file(tmp_path):
    only = tmp_path / ".env"
    only.write_text("# one file\nZETA=1\nALPHA=a=b\n\nMID=m\n")
    assert merge(only) == ["ALPHA=a=b", "MID=m", "ZETA=1"]
