"""Task images: stand-in bases, a synthetic Dockerfile with every construct built as written, the
grader layer, the cache (key, lock), refusals with reasons, du/prune.

Real podman/buildah on harnessrl's image store ($HARNESSRL_IMAGES). The Debian 13 stand-in is
built once per store (debootstrap from the configured mirror, about a minute) and reused; the
synthetic task image is built once per store too (its key hashes its inputs), so a second run
of this file takes seconds.
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

from harnessrl.tasks.images import bases
from harnessrl.tasks.images.build import BuildRefused, build_key, build_task, external_froms, task_build_spec
from harnessrl.tasks.images.grader_layer import test_dependencies as runner_deps
from harnessrl.tasks.images.registry import registry_mounts
from harnessrl.tasks.images.store import ImageStore, images_unavailable

FIXTURE = Path(__file__).parent / "fixtures" / "images" / "constructs"
WHY = images_unavailable()
needs_images = pytest.mark.skipif(WHY is not None, reason=f"task images unavailable here: {WHY}")


# -- pure parts: no images needed ----------------------------------------------------------------


def test_substitutions_are_named_and_never_another_python():
    ubuntu = bases.resolve("ubuntu:24.04")
    assert ubuntu.suite == "trixie" and ubuntu.tag == "docker.io/library/ubuntu:24.04"
    assert "Debian 13" in ubuntu.note and "Ubuntu" in ubuntu.note
    py = bases.resolve("python:3.13-slim-bookworm")
    assert py.suite == "trixie" and "CPython 3.13" in py.note and "instead of bookworm" in py.note
    assert bases.resolve("python:3.11-slim").suite == "bookworm"
    for name in ("python:3.12-slim", "python:3.10", "ghcr.io/laude-institute/t-bench/python-3-12:latest"):
        with pytest.raises(bases.Unreachable, match="never carries another Python"):
            bases.resolve(name)
    with pytest.raises(bases.Unreachable, match="no stand-in"):
        bases.resolve("alpine:3.20")
    tb = bases.resolve("ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624")
    assert "tmux" in tb.recipe and tb.note.endswith(ubuntu.note)


def test_froms_skip_stages_and_substitute_args():
    text = "ARG BASE=python:3.13-slim\nFROM ${BASE} AS build\nRUN x\nFROM build\nFROM --platform=linux/amd64 debian:13\n"
    assert external_froms(text, {}) == ("python:3.13-slim", "debian:13")
    assert external_froms(text, {"BASE": "ubuntu:24.04"}) == ("ubuntu:24.04", "debian:13")


def test_runner_packages_come_from_the_test_script():
    tb = (FIXTURE / "run-tests.sh").read_text()
    assert runner_deps(tb) == ["pytest==8.4.1", "iniconfig"]
    assert runner_deps("uvx -p 3.13 --with pytest==8.4.1 --with requests pytest /tests") == ["pytest==8.4.1", "requests"]
    assert runner_deps("bash /tests/check.sh") == ["pytest"]


def test_build_key_follows_every_input(tmp_path):
    task = tmp_path / "t"
    shutil.copytree(FIXTURE, task)
    spec = task_build_spec(task)
    key = build_key(spec, ["base1"], ["pytest"])
    assert key == build_key(task_build_spec(task), ["base1"], ["pytest"])
    assert key != build_key(spec, ["base2"], ["pytest"])
    assert key != build_key(spec, ["base1"], ["pytest==8"])
    (task / "data" / "input.txt").write_text("changed\n")
    assert key != build_key(task_build_spec(task), ["base1"], ["pytest"])


def test_a_sidecar_without_a_stand_in_or_no_dockerfile_is_refused(tmp_path):
    from harnessrl.tasks.images.check import image_row

    (tmp_path / "task.yaml").write_text("instruction: x\n")
    with pytest.raises(BuildRefused) as err:
        task_build_spec(tmp_path)
    assert err.value.code == "no_dockerfile"
    (tmp_path / "Dockerfile").write_text("FROM debian:13\n")
    (tmp_path / "docker-compose.yaml").write_text("services:\n  client:\n    build: .\n  db:\n    image: postgres:16\n")
    spec = task_build_spec(tmp_path)  # a second service is fine; its base decides
    assert [s.name for s in spec.services] == ["db"] and spec.froms == ("debian:13", "postgres:16")
    row = image_row(None, tmp_path)
    assert (row.status, row.reason) == ("refused", "unreachable_base") and "postgres" in row.detail


# -- real builds ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store() -> ImageStore:
    if WHY is not None:
        pytest.skip(f"task images unavailable here: {WHY}")
    return ImageStore.default()


@pytest.fixture(scope="module")
def built(store):
    return build_task(store, task_build_spec(FIXTURE), say=lambda m: None)


@needs_images
def test_stand_in_carries_its_substitution_record(store):
    tag = bases.build_stand_in(store, bases.resolve("debian:13"), say=lambda m: None)
    record = bases.stand_in_of(store, tag)
    assert record["asked"] == "debian:13" and record["suite"] == "trixie"
    assert "debootstrap minbase of Debian 13" in record["note"]
    with store.mounted(tag) as root:
        assert "trixie" in (root / "etc/os-release").read_text() or "13" in (root / "etc/debian_version").read_text()


@needs_images
def test_every_construct_builds_as_written(store, built):
    assert [s["asked"] for s in built.stand_ins] == ["debian:13"]
    config = store.inspect(built.image)["Config"]
    assert "TASK_MODE=synthetic" in config["Env"]
    assert config["WorkingDir"] == "/app" and config["User"] in ("root", "")
    assert config["Entrypoint"] == ["/bin/sh", "-c"] and config["Cmd"] == ["python3 -m http.server 8000"]
    assert json.loads(config["Labels"]["harnessrl.stand_ins"])[0]["asked"] == "debian:13"
    with store.mounted(built.image) as root:
        assert (root / "usr/bin/python").is_symlink()  # RUN writing outside /app
        assert (root / "srv/data/x.txt").read_text() == "outside\n"
        assert (root / "opt/artifact.txt").read_text() == "made in stage one\n"  # multi-stage COPY --from
        assert (root / "app/data/input.txt").read_text() == "one\ntwo\nthree\n"  # COPY
        assert (root / "app/work/whoami.txt").read_text() == "hello from worker\n"  # ARG default, USER
        assert not (root / "opt/harnessrl").exists()  # the runner is only in the grader layer
    packages = json.loads(Path(built.packages["file"]).read_text())
    assert packages["python"]["iniconfig"] == "2.0.0"  # pip with a pin
    assert packages["deb"]["jq"] and packages["deb"]["python3"].startswith("3.13")  # apt


@needs_images
def test_registry_configuration_is_mounted_never_baked(store, built):
    targets = [inside for _, inside in registry_mounts(store)]
    assert "/etc/ssl/certs/ca-certificates.crt" in targets
    with store.mounted(built.image) as root:
        for target in targets:
            path = root / target.lstrip("/")
            if target == "/etc/ssl/certs/ca-certificates.crt":  # the image's own, from its ca-certificates package
                assert path.stat().st_size > 0
                continue
            assert not path.exists(), f"{target} left in the image"
    hist = store.podman("history", "--no-trunc", "--format", "{{.CreatedBy}}", built.image).stdout.decode()
    assert "pip.conf" not in hist and "npmrc" not in hist


@needs_images
def test_grader_layer_runs_the_tests_offline(store, built):
    assert built.runner == ["pytest==8.4.1", "iniconfig"] and built.python == "3.13"
    with store.mounted(built.grader_image) as root:
        assert (root / "opt/harnessrl/grader/pytest").is_dir() or (root / "opt/harnessrl/grader/_pytest").is_dir()
        assert list((root / "opt/harnessrl/grader").glob("pytest-8.4.1.dist-info"))
    # pytest from the grader layer, in the image, with no network: fails untouched, passes after the solution
    tests = str(FIXTURE / "tests")
    base = ["run", "--rm", "--network", "none", "-v", f"{tests}:/tests:ro", "-e", "PYTHONPATH=/opt/harnessrl/grader",
            "--entrypoint", "", "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096", built.grader_image]
    untouched = store.podman(*base, "python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "/tests", check=False)
    assert untouched.returncode == 1, untouched.stdout.decode()[-500:]
    script = "wc -l < /app/data/input.txt > /app/count.txt && python3 -m pytest -q -p no:cacheprovider /tests"
    solved = store.podman(*base, "sh", "-c", script, check=False)
    assert solved.returncode == 0, solved.stdout.decode()[-500:]


@needs_images
def test_second_build_is_a_cache_hit_and_concurrent_builders_share_one_build(store, built):
    results = []
    threads = [threading.Thread(target=lambda: results.append(build_task(store, task_build_spec(FIXTURE), say=lambda m: None)))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.cached for r in results] == [True, True] and {r.image for r in results} == {built.image}
    assert (Path(store.root) / "builds" / built.key / "build.log").stat().st_size > 0
    assert any(row["key"] == built.key for row in store.du()["builds"])


@needs_images
def test_failing_step_and_unreachable_base_are_refused_with_their_reason(store, tmp_path):
    (tmp_path / "task.yaml").write_text("instruction: x\n")
    (tmp_path / "Dockerfile").write_text("FROM alpine:3.20\nRUN true\n")
    with pytest.raises(BuildRefused) as err:
        build_task(store, task_build_spec(tmp_path), say=lambda m: None)
    assert err.value.code == "unreachable_base"
    (tmp_path / "Dockerfile").write_text("FROM debian:13\nRUN echo about to fail && exit 3\n")
    with pytest.raises(BuildRefused) as err:
        build_task(store, task_build_spec(tmp_path), say=lambda m: None)
    assert err.value.code == "build_failed"
    log = Path(err.value.reason.split("log: ")[1].rstrip(")"))
    assert "about to fail" in log.read_text()


def test_check_rows_say_runtime_status_reason_and_substitutions(tmp_path):
    from harnessrl.tasks.images.check import image_rows

    def task(name, dockerfile, compose=None, solution=None):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "task.yaml").write_text("instruction: x\n")
        if dockerfile:
            (folder / "Dockerfile").write_text(dockerfile)
        if compose:
            (folder / "docker-compose.yaml").write_text(compose)
        if solution:
            (folder / "solution.sh").write_text(solution)
        return folder

    folders = [
        task("a-plain", "FROM python:3.13-slim\nRUN apt-get install -y curl\nCMD [\"bash\"]\n"),
        task("b-download", "FROM ubuntu:24.04\nRUN curl -fsSL https://example.org/x.sh | sh\nENTRYPOINT [\"/srv.sh\"]\n",
             solution="pip install requests\n"),
        task("c-alpine", "FROM alpine:3.20\n"),
        task("d-py312", "FROM python:3.12-slim\n"),
        task("e-two", "FROM debian:13\n", compose="services:\n  a:\n    build: .\n  b:\n    image: redis\n"),
        task("f-none", None),
    ]
    rows = {r.name: r for r in image_rows(None, folders)}
    assert {n: (r.runtime, r.status, r.reason) for n, r in rows.items()} == {
        "a-plain": ("image", "buildable", ""), "b-download": ("image", "buildable", ""),
        "c-alpine": ("image", "refused", "unreachable_base"), "d-py312": ("image", "refused", "unreachable_base"),
        "e-two": ("image", "refused", "compose_services"), "f-none": ("image", "refused", "no_dockerfile")}
    assert rows["a-plain"].notes == [] and "CPython 3.13" in rows["a-plain"].substitutions[0]
    assert rows["b-download"].notes == ["build_network", "solution_network", "service"]
    assert "Debian 13" in rows["b-download"].substitutions[0] and "CPython 3.12" in rows["d-py312"].detail


@needs_images
def test_check_row_of_a_built_task_is_built(store, built):
    from harnessrl.tasks.images.check import image_row

    row = image_row(store, FIXTURE)
    assert (row.status, row.detail) == ("built", built.image)
    assert row.notes == ["service"]  # its ENTRYPOINT/CMD runs a server


@needs_images
def test_prune_removes_least_recently_used_task_builds_until_the_budget_fits(tmp_path):
    import io
    import os
    import tarfile
    import time

    store = ImageStore(tmp_path / "store")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:  # a one-file root: enough for an image in the store
        data = os.urandom(2 << 20)
        info = tarfile.TarInfo("blob")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    for i, key in enumerate(("old", "new")):
        ref = f"localhost/harnessrl-task/t{i}:{key}"
        store.podman("import", "-", ref, input=buf.getvalue())
        meta = store.build_dir(key) / "meta.json"
        meta.write_text(json.dumps({"task": f"t{i}", "key": key, "image": ref, "grader_image": "", "bytes": 2 << 20}))
        os.utime(meta, (time.time() - 100 + i, time.time() - 100 + i))
    assert [b["key"] for b in store.du()["builds"]] == ["old", "new"]
    budget = store.du()["storage_bytes"] - 1  # one byte too many: the least recently used build goes
    assert store.prune(budget) == ["old"]
    assert not store.exists("localhost/harnessrl-task/t0:old") and store.exists("localhost/harnessrl-task/t1:new")
    assert store.prune(10 << 30) == []  # within budget: nothing goes


def test_cli_refuses_bad_runtime_and_budget_with_one_line(tmp_path):
    from typer.testing import CliRunner

    from harnessrl.cli import app

    runner = CliRunner()
    r = runner.invoke(app, ["tasks", "check", "--runtime", "docker", str(tmp_path)])
    assert r.exit_code == 2 and "--runtime docker: use jail or image" in r.output
    if WHY is None:
        r = runner.invoke(app, ["images", "prune", "--budget", "lots"])
        assert r.exit_code == 2 and "give a size such as 500M or 20G" in r.output
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "task.yaml").write_text("instruction: x\n")
    (tmp_path / "t" / "Dockerfile").write_text("FROM alpine:3.20\n")
    r = runner.invoke(app, ["tasks", "check", "--runtime", "image", "--strict", str(tmp_path)])
    assert r.exit_code == 1 and "0 buildable or built, 1 refused" in r.output
