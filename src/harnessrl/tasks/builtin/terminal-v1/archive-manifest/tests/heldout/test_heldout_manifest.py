import hashlib
import io
import subprocess
import tarfile


def run(*args):
    return subprocess.run(["/app/extract_manifest", *args], capture_output=True, text=True)


def add(tar, name, data=b"", **kw):
    info = tarfile.TarInfo(name)
    for k, v in kw.items():
        setattr(info, k, v)
    info.size = len(data) if info.type == tarfile.REGTYPE else 0
    tar.addfile(info, io.BytesIO(data) if info.type == tarfile.REGTYPE else None)


def test_other_archive(tmp_path):
    archive = tmp_path / "release 2.tgz"
    files = {"./README": b"read me\n", "./src/Main.c": b"int main(){}\n", "./src/lib/util c.h": b"#pragma once\n",
             "./empty.txt": b"", "./bin/tool": b"#!/bin/sh\necho tool\n"}
    with tarfile.open(archive, "w:gz") as tar:
        add(tar, "./src/lib", type=tarfile.DIRTYPE, mode=0o755)
        for name, data in files.items():
            add(tar, name, data, mode=0o755 if name.startswith("./bin") else 0o644)
        add(tar, "./latest", type=tarfile.SYMTYPE, linkname="README")
    out = tmp_path / "a" / "b" / "out"  # parents do not exist yet
    r = run(str(archive), str(out))
    assert r.returncode == 0, r.stderr
    lines = (out / "MANIFEST.sha256").read_text().splitlines()
    expected = sorted(files, key=lambda n: n[2:].encode())
    assert lines == [f"{hashlib.sha256(files[n]).hexdigest()}  {n[2:]}" for n in expected]
    assert subprocess.run(["sha256sum", "-c", "MANIFEST.sha256"], cwd=out, capture_output=True).returncode == 0


def test_other_bad_archives(tmp_path):
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(b"this is not gzip data\n")
    for archive in (broken, tmp_path / "missing.tar.gz"):
        out = tmp_path / f"out-{archive.name}"
        r = run(str(archive), str(out))
        assert r.returncode == 1 and r.stderr.strip(), archive
        assert not (out / "MANIFEST.sha256").exists()
    assert run().returncode == 2
