"""Episodes in a task image: the image's root under the existing jail, as the image's root inside and the
episode's unprivileged uid outside; changes go to the episode's own upper layer.

Uses the synthetic task image of test_task_images.py (built once per image store)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harnessrl.tasks.images.build import build_task, task_build_spec
from harnessrl.tasks.images.rootfs import EpisodeRoot
from harnessrl.tasks.images.store import ImageStore, images_unavailable
from harnessrl.tasks.sandbox import Limits, Sandbox, bwrap_path
from harnessrl.tasks.workspace import Workspace

FIXTURE = Path(__file__).parent / "fixtures" / "images" / "constructs"
WHY = images_unavailable() or (None if bwrap_path() else "needs bubblewrap")
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"task images unavailable here: {WHY}")


@pytest.fixture(scope="module")
def image():
    store = ImageStore.default()
    return store, build_task(store, task_build_spec(FIXTURE), say=lambda m: None).image


@pytest.fixture(scope="module")
def sandbox():
    return Sandbox(Limits(timeout_s=30, cpu_s=30))


@pytest.fixture
def episode(image, sandbox):
    store, ref = image
    with Workspace.create(None, quota_mb=64) as ws:
        root = EpisodeRoot.create(store, ref, ws)
        sandbox.attach_image(ws, root)
        yield ws, root


def test_commands_run_in_the_image_as_its_root_never_the_hosts(episode, sandbox):
    ws, root = episode
    r = sandbox.run("id -u; . /etc/os-release; echo $VERSION_CODENAME; pwd; echo $TASK_MODE; cat work/whoami.txt; "
                    "python -c 'import iniconfig, sys; print(sys.version_info[:2])'", ws, cwd=root.workdir)
    assert r.status == "ok" and r.exit_code == 0, r.stderr
    assert r.stdout.splitlines() == ["0", "trixie", "/app", "synthetic", "hello from worker", "(3, 13)"]
    # the image's root may write anywhere in the image; on the host the file belongs to the episode's uid
    r = sandbox.run("echo planted > /etc/agent-file && echo x > /usr/bin/agent-tool && ls -ln /etc/agent-file",
                    ws, cwd=root.workdir)
    assert r.exit_code == 0, r.stderr
    host = root.upper / "etc" / "agent-file"
    assert host.read_text() == "planted\n" and os.stat(host).st_uid == ws.uid != 0
    # still jailed: no capabilities, no network, no host paths, cannot give a file to another uid
    r = sandbox.run("grep CapEff /proc/self/status; ls /work /root/.cache 2>&1 | head -2; "
                    "chown 1000 /etc/agent-file || echo chown-refused; "
                    "python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), timeout=2)' "
                    "2>/dev/null || echo no-network", ws, cwd=root.workdir)
    assert "CapEff:\t0000000000000000" in r.stdout
    assert "chown-refused" in r.stdout and "no-network" in r.stdout
    assert "No such file" in r.stdout  # neither /work nor the host's caches exist in the image


def test_each_episode_has_its_own_upper_layer_and_the_image_never_changes(image, sandbox):
    store, ref = image
    with Workspace.create(None, quota_mb=64) as ws1, Workspace.create(None, quota_mb=64) as ws2:
        r1, r2 = EpisodeRoot.create(store, ref, ws1), EpisodeRoot.create(store, ref, ws2)
        sandbox.attach_image(ws1, r1)
        sandbox.attach_image(ws2, r2)
        done = sandbox.run("rm /app/data/input.txt && echo mine > /app/count.txt", ws1, cwd="/app")
        assert done.exit_code == 0, done.stderr
        r = sandbox.run("ls /app/data; cat /app/count.txt 2>&1", ws2, cwd="/app")
        assert "input.txt" in r.stdout and "No such file" in r.stdout
        # /app/work belongs to the image's `worker` (chown in the Dockerfile): the agent is the image's root
        # WITHOUT CAP_DAC_OVERRIDE, so, unlike Docker's root, it cannot create files there (documented)
        assert "Permission denied" in sandbox.run("echo x > /app/work/new.txt", ws1, cwd="/app").stderr
        merged = r1.merged
    assert not os.path.ismount(merged)  # the episode's mounts went with its workspace
    with store.mounted(ref) as root:
        assert (root / "app/data/input.txt").exists() and not (root / "app/count.txt").exists()


def test_host_jail_is_unchanged_for_workspaces_without_an_image(sandbox, tmp_path):
    with Workspace.create(None, quota_mb=16) as ws:
        r = sandbox.run(". /etc/os-release; echo $VERSION_CODENAME; pwd; id -u", ws)
        assert r.stdout.split() == ["bookworm" if "bookworm" in Path("/etc/os-release").read_text() else r.stdout.split()[0],
                                    "/app", str(ws.uid)]


def test_entrypoint_and_cmd_start_in_the_background(image, sandbox, tmp_path):
    from harnessrl.tasks.images.rootfs import start_in_background

    store, ref = image
    with Workspace.create(None, quota_mb=64) as ws:
        root = EpisodeRoot.create(store, ref, ws)
        sandbox.attach_image(ws, root)
        assert root.start == ["/bin/sh", "-c", "python3 -m http.server 8000"]
        root.start = ["/bin/sh", "-c", "echo started > /srv/data/service.txt; exec sleep 60"]  # same path, visible effect
        proc = start_in_background(sandbox, ws, root, lifetime_s=60)
        try:
            for _ in range(100):
                r = sandbox.run("cat /srv/data/service.txt 2>/dev/null", ws, cwd="/")
                if r.stdout:
                    break
            assert r.stdout == "started\n"
        finally:
            proc.close()
        root.start = ["bash"]
        assert start_in_background(sandbox, ws, root) is None


def test_image_task_runtime_fails_untouched_solves_with_the_solution_and_records_substitutions(image, sandbox):
    from harnessrl.tasks.fileops import WorkspaceError
    from harnessrl.tasks.images.runtime import ImageTaskRuntime
    from harnessrl.tasks.images.tasks import load_image_task

    task = load_image_task(FIXTURE, "images")
    assert task.runtime == "image" and task.solution is not None and "Debian 13" in task.notes[0]
    with ImageTaskRuntime(task, sandbox) as rt:
        assert rt.metadata["substitutions"] == list(task.notes) and rt.metadata["image"] == image[1]
        assert rt.score().outcome == "dropped_requirement"
    with ImageTaskRuntime(task, sandbox) as rt:
        # harness-side file operations resolve in the image: relative to WORKDIR, absolute anywhere
        assert rt.workspace.read_text("data/input.txt") == "one\ntwo\nthree\n"
        assert rt.workspace.read_text("/srv/data/x.txt") == "outside\n"
        rt.workspace.write_text("/etc/harness-wrote", "ok\n")
        assert rt.run("cat /etc/harness-wrote").stdout == "ok\n"
        assert "data/input.txt" in rt.workspace.files()
        rt.run("ln -s /root/../../../proc/1/root/etc/shadow /app/escape")
        rt.run("ln -s ../etc/hostname /app/up")
        with pytest.raises(WorkspaceError):  # `..` never climbs above the image's root on the host
            rt.workspace.read_text("/app/../../../../work")
        with pytest.raises(WorkspaceError):  # nor does a link: it is resolved inside the image's root
            rt.workspace.read_text("escape")
        assert rt.workspace.read_text("up") == (rt.root.merged / "etc/hostname").read_text()
        rt.apply_solution()
        score = rt.score()
        assert score.outcome == "solved" and score.reward == 1.0, score.detail


def test_image_root_without_capabilities_cannot_mount_unshare_or_fill_the_disk(episode, sandbox):
    ws, root = episode
    r = sandbox.run("unshare -r true 2>&1 || echo no-unshare; mount -t tmpfs x /mnt 2>&1 || echo no-mount; "
                    "echo 1 > /proc/sys/kernel/sysrq 2>&1 || echo no-sysctl", ws, cwd="/")
    assert "no-unshare" in r.stdout and "no-mount" in r.stdout and "no-sysctl" in r.stdout
    # the agent's changes live on the episode's scratch tmpfs: its size caps them (256 MB by default)
    r = sandbox.run("for i in 1 2 3 4 5 6 7 8; do head -c 50000000 /dev/zero > /srv/big$i || break; done", ws,
                    cwd="/", timeout_s=60)
    assert "No space left on device" in r.stderr, (r.stdout, r.stderr)


def test_image_commands_join_the_episode_network_and_reach_only_its_listener(episode, sandbox):
    """A program in a task image must reach its own gateway (tasks/netns.py) and nothing else."""
    import socket

    from harnessrl.tasks.netns import EpisodeNetwork

    ws, root = episode
    probe = ("python3 -c 'import socket,sys\n"
             "for port in sys.argv[1:]:\n"
             "    try: socket.create_connection((\"127.0.0.1\", int(port)), timeout=2); print(\"open\", port)\n"
             "    except OSError: print(\"closed\", port)' ")
    host = socket.socket()
    host.bind(("127.0.0.1", 0))
    host.listen(1)
    with EpisodeNetwork() as net, EpisodeNetwork() as other:
        mine, theirs = net.listen(), other.listen()
        ports = [s.getsockname()[1] for s in (mine, theirs, host)]
        r = sandbox.run(probe + " ".join(map(str, ports)), ws, cwd=root.workdir, network=net)
        assert r.exit_code == 0, r.stderr
        assert r.stdout.split("\n")[:3] == [f"open {ports[0]}", f"closed {ports[1]}", f"closed {ports[2]}"]
        without = sandbox.run(probe + str(ports[0]), ws, cwd=root.workdir)  # no network given: a fresh, empty one
        assert without.stdout.strip() == f"closed {ports[0]}"
        mine.close()
        theirs.close()
    host.close()
