"""Nothing leaves loopback: every socket call of an episode (Python, chromedriver, every Chromium
process) is traced, and the same episode runs in a network namespace that has only `lo`."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.browser

EPISODES = textwrap.dedent(
    """
    import time
    from harnessrl.envs.miniwob import MiniWoBEnv, run_oracle_episode
    ok = 0
    with MiniWoBEnv("click-test") as env:
        for task in ("click-test", "enter-text", "choose-list"):
            env.set_task(task)
            # 60 s instead of the 10 s of the page: under strace on a loaded machine an episode can take longer
            ok += sum(run_oracle_episode(env, seed, time_limit_s=60).success for seed in range(2))
        time.sleep(3)  # idle time: when background services would phone home
    print("SOLVED", ok)
    """
)
LOOPBACK = re.compile(r"^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$")
# strace -yy decorates socket fds: 12<TCP:[127.0.0.1:4000->127.0.0.1:5000]>, 10<UDPv6:[12345]>
SOCKET_FD = re.compile(r"\d+<(TCP|UDP|TCPv6|UDPv6):\[([^\]]*)\]>")
INET_ADDR = re.compile(r'sin6?_addr=inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"')


def _endpoint_hosts(decoration: str) -> list[str]:
    hosts = []
    for end in decoration.split("->"):
        if ":" in end and not end.isdigit():
            host = end.rsplit(":", 1)[0].strip("[]")
            hosts.append(host)
    return hosts


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
@pytest.mark.slow
def test_no_packet_or_connection_leaves_loopback(tmp_path):
    log = tmp_path / "strace.log"
    run = subprocess.run(
        ["strace", "-f", "-qq", "-yy", "-e", "trace=connect,sendto,sendmsg,sendmmsg,write", "-o", str(log),
         sys.executable, "-c", EPISODES],
        capture_output=True, text=True, timeout=300,
    )
    if run.returncode != 0 and "PTRACE" in run.stderr:
        pytest.skip(f"ptrace is not permitted here: {run.stderr[:200]}")
    assert "SOLVED 6" in run.stdout, run.stderr[-2000:]
    problems = []
    inet_connects = 0
    for line in log.read_text(errors="replace").splitlines():
        sock = SOCKET_FD.search(line)
        if "connect(" in line and ("AF_INET" in line):
            inet_connects += 1
            addr = INET_ADDR.search(line)
            host = addr and (addr.group(1) or addr.group(2))
            if host and not LOOPBACK.match(host):
                # Chromium's IPv6 route probe: a UDP connect() that sends nothing. Anything else fails.
                if not (sock and sock.group(1).startswith("UDP")) or "htons(53)" in line:
                    problems.append(line)
        elif sock and sock.group(1).startswith("UDP"):
            problems.append(line)  # any datagram sent at all (DNS, QUIC, mDNS...)
        elif sock and any(not LOOPBACK.match(h) for h in _endpoint_hosts(sock.group(2))):
            problems.append(line)  # a TCP stream to somewhere else
    assert inet_connects > 0  # the trace saw the WebDriver connections, so it would see others
    assert problems == [], "\n".join(problems[:10])


@pytest.mark.slow
def test_episodes_run_with_no_network_at_all():
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True, text=True)
        flags = "-rn"
    else:
        flags = "-n"
    if probe.returncode != 0:
        pytest.skip(f"cannot create a network namespace here: {probe.stderr.strip()}")
    script = f"ip link set lo up 2>/dev/null; ip -o link | grep -v ' lo:' && exit 9; exec {sys.executable} -c '{EPISODES}'"
    run = subprocess.run(["unshare", flags, "sh", "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "SOLVED 6" in run.stdout, run.stdout + run.stderr[-2000:]
