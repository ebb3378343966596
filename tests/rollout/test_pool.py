"""The one process pool (rollout/pool.py) under both of its users: evaluation's rollout workers
die with the process that started them, as the recipes' workers do
(tests/recipes/test_resume_workers.py kills a whole recipe the same way)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil

from harnessrl.rollout.pool import run_pool
from tests.recipes.pool_jobs import square

ROOT = Path(__file__).resolve().parents[2]

#: evaluation with two local workers whose policy waits on an endpoint that never answers
DRIVER = textwrap.dedent("""
    import sys
    from harnessrl.envs.lookup import lookup_tasks
    from harnessrl.harness.base import make_harness
    from harnessrl.policies.registry import PolicySpec
    from harnessrl.rollout.backends import Job, run_jobs

    spec = make_harness("lookup-plain").spec
    policy = PolicySpec("endpoint", "m", {"base_url": f"http://127.0.0.1:{sys.argv[1]}/v1", "timeout_s": 3600,
                                          "max_retries": 0})
    run_jobs(policy, [Job(spec, t, 0) for t in lookup_tasks()[:2]], workers=2)
""")


class SilentServer:
    """A loopback listener that accepts connections and never answers them."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                self.conns.append(self.sock.accept()[0])
            except OSError:
                return

    def close(self):
        for c in self.conns:
            c.close()
        self.sock.close()


def test_rollout_workers_die_with_a_killed_parent():
    server = SilentServer()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OPENAI_API_KEY": "test-key"}
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(server.port)], env=env, start_new_session=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    workers: list[psutil.Process] = []
    try:
        deadline = time.time() + 120
        while len(server.conns) < 2:  # both workers are inside an episode, waiting on the policy
            assert driver.poll() is None, driver.stdout.read()
            assert time.time() < deadline, "the workers did not call the endpoint in 120 s"
            time.sleep(0.1)
        workers = [p for p in psutil.Process(driver.pid).children(recursive=True)
                   if "resource_tracker" not in " ".join(p.cmdline())]
        assert len(workers) >= 2
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
        _, alive = psutil.wait_procs(workers, timeout=15)
        assert alive == [], f"rollout workers outlived their parent: {[p.pid for p in alive]}"
    finally:
        if driver.poll() is None:
            driver.kill()
        for p in workers:  # survivors of a failed run of this test, not left to load the machine
            if p.is_running():
                p.kill()
        server.close()


def test_results_arrive_as_jobs_end_and_in_order():
    seen, messages = [], []
    out = run_pool(square, [(1,), (2,), (3,)], workers=2, on_result=lambda i, r: seen.append((i, r)),
                   on_message=lambda *m: messages.append(m))
    assert out == [1, 4, 9] and sorted(seen) == [(0, 1), (1, 4), (2, 9)] and len(messages) == 3
    seen.clear()
    assert run_pool(square, [(5,)], workers=2, on_result=lambda i, r: seen.append((i, r))) == [25] and seen == [(0, 25)]
