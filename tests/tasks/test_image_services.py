"""A task with a second service (docker-compose.yaml): the sidecar is built from its own Dockerfile and
runs in its own root and uid, in the episode's network namespace; the agent and the grader's tests
reach it by name (/etc/hosts), nothing outside the episode does, and the machine's environment never
reaches it through `${VAR}`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessrl.tasks.images.build import BuildRefused, build_task, task_build_spec
from harnessrl.tasks.images.runtime import ImageTaskRuntime
from harnessrl.tasks.images.services import read_compose
from harnessrl.tasks.images.store import ImageStore, images_unavailable
from harnessrl.tasks.images.tasks import load_image_task
from harnessrl.tasks.sandbox import Limits, Sandbox, bwrap_path

FIXTURE = Path(__file__).parent / "fixtures" / "images" / "two-services"
WHY = images_unavailable() or (None if bwrap_path() else "needs bubblewrap")
needs_images = pytest.mark.skipif(WHY is not None, reason=f"task images unavailable here: {WHY}")


def test_compose_names_the_agents_service_and_its_sidecars(tmp_path):
    env = FIXTURE / "environment"
    (ctx, dockerfile, _), others = read_compose(env / "docker-compose.yaml", env)
    assert (ctx, dockerfile) == (env, env / "Dockerfile")  # Harbor's main: environment/Dockerfile
    (store,) = others
    assert (store.name, store.dockerfile, store.healthcheck[0]) == ("store", env / "store" / "Dockerfile", "python3")
    assert store.environment == {"GREETING": "hello from the store", "LEAKED": ""}  # never the machine's $HOME
    assert (store.interval_s, store.retries) == (1.0, 30)
    spec = task_build_spec(FIXTURE)
    assert spec.service_name == "main" and [s.name for s in spec.services] == ["store"]
    # several services and none is the agent's: refused with its reason
    folder = tmp_path / "t"
    (folder / "environment").mkdir(parents=True)
    (folder / "task.toml").write_text("")
    (folder / "environment" / "Dockerfile").write_text("FROM debian:13\n")
    (folder / "environment" / "docker-compose.yaml").write_text("services:\n  a: {image: 'debian:13'}\n  b: {image: 'debian:13'}\n")
    with pytest.raises(BuildRefused) as err:
        task_build_spec(folder)
    assert err.value.code == "compose_services"


@pytest.fixture(scope="module")
def two():
    store = ImageStore.default()
    return load_image_task(FIXTURE, "images"), store, build_task(store, task_build_spec(FIXTURE), say=lambda m: None)


@pytest.fixture(scope="module")
def sandbox():
    return Sandbox(Limits(timeout_s=120, cpu_s=120))


@needs_images
def test_the_agent_reaches_the_sidecar_by_name_and_cannot_stop_it(two, sandbox):
    task, store, built = two
    assert [s["name"] for s in built.services] == ["store"]
    with ImageTaskRuntime(task, sandbox, store=store, built=built) as rt:
        get = "python3 -c 'import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "
        r = rt.run(get + "http://store:5000/env")
        assert r.exit_code == 0, r.stderr
        seen = json.loads(r.stdout)
        assert seen["GREETING"] == "hello from the store" and seen["LEAKED"] == ""
        assert seen["uid"] == 0  # the store's image root, which on the host is the store's own uid, not the agent's
        assert "store" in rt.run("cat /etc/hosts").stdout
        # a task's own server on port 80 (the image's root has no capability, the port is free in the episode)
        bind = rt.run("python3 -c 'import socket; socket.socket().bind((\"127.0.0.1\", 80)); print(\"bound\")'")
        assert bind.stdout.strip() == "bound", bind.stderr
        rt.run("kill -9 -1")  # every process the agent may signal: its own only
        assert "alpha" in rt.run(get + "http://store:5000/items").stdout
        assert rt.metadata["services"] == ["store"]
    with ImageTaskRuntime(task, sandbox, store=store, built=built) as rt:  # a new episode: a new store
        assert "harbor" not in rt.run(get + "http://store:5000/items").stdout


@needs_images
def test_fails_untouched_and_passes_after_the_solution_with_the_tests_reaching_the_sidecar(two, sandbox):
    task, store, built = two
    with ImageTaskRuntime(task, sandbox, store=store, built=built) as rt:
        untouched = rt.score()
    assert (untouched.outcome, untouched.reward) == ("dropped_requirement", 0.0), untouched.detail
    with ImageTaskRuntime(task, sandbox, store=store, built=built) as rt:
        rt.apply_solution()
        solved = rt.score()
    assert solved.success, (solved.outcome, solved.detail, solved.run.stdout[-800:])
    # only the saved file, the store untouched (a new episode): the test that asks the store fails
    with ImageTaskRuntime(task, sandbox, store=store, built=built) as rt:
        rt.run("""echo '[{"id": 3, "name": "harbor"}]' > /app/items.json""")
        assert not rt.score().success
