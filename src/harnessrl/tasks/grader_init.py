"""pid 1 of the grader's sandbox (copied, as is, next to the plugin; no harnessrl imports).

    python -I /grader/harnessrl_init.py python -P -m pytest ...

Why not the usual shell init: a shell that waits for pytest keeps every fd it inherited —
the report fd included — and stays dumpable, so another process of the grader's uid could
write into it through /proc/1/mem. This init makes itself non-dumpable first, forks the runner
(which inherits the report fd), closes its own copy, then reaps every child until the runner
exits and exits with the runner's status (128+N for a signal, as a shell would). When it exits,
the kernel ends everything else in the sandbox's pid namespace.
"""

import ctypes
import json
import os
import sys

ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
fd = int(os.environ.get("HARNESSRL_REPORT_FD", "-1"))
# The agent-call bridge's child (grader_bridge.py) starts here, beside the runner, so its interpreter
# start-up overlaps pytest's instead of delaying the first test that imports the agent's code. It
# gets its two pipe ends and nothing else: not the report fd, no HARNESSRL_ variable but its paths.
child = json.loads(os.environ.pop("HARNESSRL_BRIDGE_CHILD", "null") or "null")
if child:
    down_r, down_w = os.pipe()
    up_r, up_w = os.pipe()
    if os.fork() == 0:
        try:
            if fd >= 0:
                os.close(fd)
            os.close(down_w)
            os.close(up_r)
            os.set_inheritable(down_r, True)
            os.set_inheritable(up_w, True)
            env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESSRL_") or k == "HARNESSRL_AGENT_PATHS"}
            os.execvpe(child[0], [*child, str(down_r), str(up_w)], env)
        finally:
            os._exit(127)
    os.close(down_r)
    os.close(up_w)
    os.set_inheritable(down_w, True)
    os.set_inheritable(up_r, True)
    os.environ["HARNESSRL_BRIDGE_FDS"] = f"{down_w},{up_r}"
runner = os.fork()
if runner == 0:
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
if fd >= 0:
    os.close(fd)
if child:
    os.close(down_w)
    os.close(up_r)
code = 1
while True:
    try:
        pid, status = os.wait()
    except ChildProcessError:
        break
    except InterruptedError:
        continue
    if pid == runner:
        code = os.waitstatus_to_exitcode(status)
        break
os._exit(code if code >= 0 else 128 - code)
